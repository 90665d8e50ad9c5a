package top

import (
	"context"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"
)

// The smallest terminal the dashboard draws in; below it says so.
const (
	MinWidth  = 80
	MinHeight = 24
)

const (
	flashFor      = 4 * time.Second  // how long a leader change stays highlighted
	actionTimeout = 30 * time.Second // bound on one Backend call
)

// Options configure the dashboard.
type Options struct {
	Backend  Backend // what r, p and the drill-in's offsets call
	ReadOnly bool    // r and p are refused and hidden from the help
	NoColor  bool    // plain text, no ANSI styling at all
	Context  string  // the kcctl context's name, shown in the header
	// Now is the clock (time.Now when nil); tests fix it for golden frames.
	Now func() time.Time
}

// pane is one focusable part of the main view.
type pane int

const (
	paneMembers pane = iota
	paneWorkers
	paneConnectors
	paneJournal
	numPanes
)

// Model is the dashboard: the latest snapshot, what is indexed from it, and
// the operator's focus, selection, filter and pending confirmation. It owns
// the snapshots it receives: StatusMsg and LeaderMsg change them in place.
type Model struct {
	opt  Options
	keys keyMap
	help help.Model
	st   styles
	w, h int

	seq  uint64
	have bool
	snap Snapshot
	ix   index

	// The freshest leader known, from snapshots or LeaderMsg; lastLeader is
	// the last non-zero one, so an election (1 → none → 2) flashes once.
	leader, term, lastLeader, prevLeader uint64
	flashUntil                           time.Time

	feed      FeedStateMsg
	feedKnown bool

	focus   pane
	sel     [numPanes]int // selected row per pane
	off     [numPanes]int // first visible row per pane
	selConn string        // the selected connector, kept across snapshots

	filter  string
	editing bool // typing the filter

	drill      string // the connector drilled into; "" in the main view
	dsel, doff int    // selected task and first visible task
	offsets    []Offset
	offErr     error
	offLoading bool

	confirm  *confirmation
	note     string
	noteBad  bool
	fullHelp bool
}

// index is what the view needs from a snapshot, built once per snapshot
// and kept current by StatusMsg.
type index struct {
	byName  map[string]int // connector name → position in Snapshot.Connectors
	workers map[string]int // worker id → position in Snapshot.Workers
	lower   []string       // lowercased names, for the filter
	running []int          // running tasks per connector
	failed  []int          // failed tasks per connector
	failing []bool         // the connector or one of its tasks FAILED
	order   []int          // connectors, failing first, then by name
	shown   []int          // order after the filter
}

// confirmation is an action waiting for y/n.
type confirmation struct {
	prompt string
	what   string
	run    func(context.Context, Backend) error
}

type flashEndMsg struct{}

// New returns the dashboard's model; run it with tea.NewProgram(m) and
// feed it SnapshotMsg, StatusMsg, LeaderMsg and FeedStateMsg.
func New(o Options) Model {
	m := Model{opt: o, keys: newKeys(o.ReadOnly), help: help.New(), st: newStyles(o.NoColor), focus: paneConnectors}
	m.help.Styles = m.st.help
	m.ix.byName = map[string]int{}
	m.ix.workers = map[string]int{}
	return m
}

// Init implements tea.Model; the feed sends everything the model shows.
func (m Model) Init() tea.Cmd { return nil }

func (m *Model) now() time.Time {
	if m.opt.Now != nil {
		return m.opt.Now()
	}
	return time.Now()
}

// Update implements tea.Model.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
	case SnapshotMsg:
		cmd = m.setSnapshot(msg)
	case StatusMsg:
		m.applyStatus(msg)
	case LeaderMsg:
		cmd = m.setLeader(msg.Leader, msg.Term)
	case FeedStateMsg:
		m.feed, m.feedKnown = msg, true
	case ActionDoneMsg:
		if msg.Err != nil {
			m.setNote(msg.What+" failed: "+msg.Err.Error(), true)
		} else {
			m.setNote(msg.What+": done", false)
		}
	case OffsetsMsg:
		if msg.Connector == m.drill {
			m.offsets, m.offErr, m.offLoading = msg.Offsets, msg.Err, false
		}
	case flashEndMsg:
		// Redraw: the header drops the highlight once the clock passes it.
	case tea.KeyPressMsg:
		cmd = m.onKey(msg)
	}
	m.clampScroll()
	return m, cmd
}

func (m *Model) setNote(s string, bad bool) { m.note, m.noteBad = s, bad }

// setSnapshot shows a new snapshot unless an older poll's arrives late.
func (m *Model) setSnapshot(msg SnapshotMsg) tea.Cmd {
	if m.have && msg.Seq < m.seq {
		return nil
	}
	m.seq, m.have, m.snap = msg.Seq, true, msg.Snapshot
	m.reindex()
	c := m.snap.Cluster
	if c.Term < m.term {
		// A LeaderMsg already told of a newer term than this poll saw.
		m.markLeader(m.leader, m.term)
		return nil
	}
	return m.setLeader(c.Leader, c.Term)
}

// setLeader records the Raft leader and flashes the header when a new one
// replaces a known one.
func (m *Model) setLeader(leader, term uint64) tea.Cmd {
	if term < m.term {
		return nil
	}
	m.leader, m.term = leader, term
	if m.have {
		m.markLeader(leader, term)
	}
	if leader == 0 || leader == m.lastLeader {
		return nil
	}
	prev := m.lastLeader
	m.lastLeader = leader
	if prev == 0 {
		return nil
	}
	m.prevLeader = prev
	m.flashUntil = m.now().Add(flashFor)
	return tea.Tick(flashFor, func(time.Time) tea.Msg { return flashEndMsg{} })
}

func (m *Model) markLeader(leader, term uint64) {
	m.snap.Cluster.Leader, m.snap.Cluster.Term = leader, term
	for i := range m.snap.Members {
		m.snap.Members[i].Leader = m.snap.Members[i].ID == leader
	}
	for i := range m.snap.Workers {
		w := &m.snap.Workers[i]
		w.Leader = w.NodeID != 0 && w.NodeID == leader
	}
}

// reindex rebuilds the index of a new snapshot: one pass over the tasks
// and one sort of the connectors.
func (m *Model) reindex() {
	cs := m.snap.Connectors
	n := len(cs)
	ix := &m.ix
	ix.byName = make(map[string]int, n)
	ix.lower = make([]string, n)
	ix.running = make([]int, n)
	ix.failed = make([]int, n)
	ix.failing = make([]bool, n)
	for i := range cs {
		ix.byName[cs[i].Name] = i
		ix.lower[i] = strings.ToLower(cs[i].Name)
		m.count(i)
	}
	ix.workers = make(map[string]int, len(m.snap.Workers))
	for i, w := range m.snap.Workers {
		ix.workers[w.ID] = i
	}
	m.sortConnectors()
}

// count refreshes connector i's task counts.
func (m *Model) count(i int) {
	c := &m.snap.Connectors[i]
	r, f := 0, 0
	for _, t := range c.Tasks {
		switch t.State {
		case "RUNNING":
			r++
		case "FAILED":
			f++
		}
	}
	m.ix.running[i], m.ix.failed[i] = r, f
	m.ix.failing[i] = c.State == "FAILED" || f > 0
}

func (m *Model) sortConnectors() {
	cs, ix := m.snap.Connectors, &m.ix
	ix.order = ix.order[:0]
	for i := range cs {
		ix.order = append(ix.order, i)
	}
	slices.SortFunc(ix.order, func(a, b int) int {
		if ix.failing[a] != ix.failing[b] {
			if ix.failing[a] {
				return -1
			}
			return 1
		}
		return strings.Compare(cs[a].Name, cs[b].Name)
	})
	m.refilter()
}

// refilter applies the filter to the sorted connectors and keeps the
// selected connector selected when it is still shown.
func (m *Model) refilter() {
	ix := &m.ix
	if m.filter == "" {
		ix.shown = ix.order
	} else {
		f := strings.ToLower(m.filter)
		ix.shown = make([]int, 0, len(ix.order))
		for _, i := range ix.order {
			if strings.Contains(ix.lower[i], f) {
				ix.shown = append(ix.shown, i)
			}
		}
	}
	if m.selConn != "" {
		for pos, i := range ix.shown {
			if m.snap.Connectors[i].Name == m.selConn {
				m.sel[paneConnectors] = pos
				return
			}
		}
	}
	m.sel[paneConnectors] = min(m.sel[paneConnectors], max(len(ix.shown)-1, 0))
	m.rememberConn()
}

func (m *Model) rememberConn() {
	m.selConn = ""
	if p := m.sel[paneConnectors]; p >= 0 && p < len(m.ix.shown) {
		m.selConn = m.snap.Connectors[m.ix.shown[p]].Name
	}
}

// applyStatus applies one status event to the shown snapshot.
func (m *Model) applyStatus(s StatusMsg) {
	if !m.have {
		return
	}
	i, ok := m.ix.byName[s.Connector]
	if s.Deleted {
		if ok {
			for _, t := range m.snap.Connectors[i].Tasks {
				m.workerTasks(t.WorkerID, t.State, -1)
			}
			m.workerConns(m.snap.Connectors[i].WorkerID, -1)
			m.snap.Connectors = slices.Delete(m.snap.Connectors, i, i+1)
			m.reindex()
		}
		return
	}
	if !ok {
		m.snap.Connectors = append(m.snap.Connectors, Connector{Name: s.Connector, RecordsPerSec: -1, SinkLag: -1})
		m.reindex()
		i = m.ix.byName[s.Connector]
	}
	c := &m.snap.Connectors[i]
	was := m.ix.failing[i]
	if s.Task < 0 {
		if c.WorkerID != s.WorkerID {
			m.workerConns(c.WorkerID, -1)
			m.workerConns(s.WorkerID, 1)
		}
		c.State, c.WorkerID, c.Trace = s.State, s.WorkerID, s.Trace
	} else {
		j, found := slices.BinarySearchFunc(c.Tasks, s.Task, func(t Task, id int) int { return t.ID - id })
		if found {
			m.workerTasks(c.Tasks[j].WorkerID, c.Tasks[j].State, -1)
			c.Tasks[j] = Task{ID: s.Task, State: s.State, WorkerID: s.WorkerID, Trace: s.Trace}
		} else {
			c.Tasks = slices.Insert(c.Tasks, j, Task{ID: s.Task, State: s.State, WorkerID: s.WorkerID, Trace: s.Trace})
		}
		m.workerTasks(s.WorkerID, s.State, 1)
	}
	m.count(i)
	if m.ix.failing[i] != was {
		m.sortConnectors()
	}
}

func (m *Model) workerTasks(worker, state string, d int) {
	if wi, ok := m.ix.workers[worker]; ok && state != "" {
		w := &m.snap.Workers[wi]
		if w.Tasks == nil {
			w.Tasks = map[string]int{}
		}
		w.Tasks[state] = max(w.Tasks[state]+d, 0)
	}
}

func (m *Model) workerConns(worker string, d int) {
	if wi, ok := m.ix.workers[worker]; ok {
		w := &m.snap.Workers[wi]
		w.Connectors = max(w.Connectors+d, 0)
	}
}

// drilled is the connector drilled into, nil when it is gone.
func (m *Model) drilled() *Connector {
	if i, ok := m.ix.byName[m.drill]; ok && m.drill != "" {
		return &m.snap.Connectors[i]
	}
	return nil
}

// selected is the connector r and p act on: the drilled one, or the
// selected row of the focused connectors pane.
func (m *Model) selected() *Connector {
	if m.drill != "" {
		return m.drilled()
	}
	if m.focus != paneConnectors {
		return nil
	}
	if p := m.sel[paneConnectors]; p < len(m.ix.shown) {
		return &m.snap.Connectors[m.ix.shown[p]]
	}
	return nil
}

// rows is how many rows pane p has.
func (m *Model) rows(p pane) int {
	switch p {
	case paneMembers:
		return len(m.snap.Members)
	case paneWorkers:
		return len(m.snap.Workers)
	case paneConnectors:
		return len(m.ix.shown)
	case paneJournal:
		return len(m.snap.Rebalances)
	}
	return 0
}

// clampScroll keeps every selection in range and visible.
func (m *Model) clampScroll() {
	l := m.layout()
	for p := range numPanes {
		n := m.rows(p)
		m.sel[p] = min(max(m.sel[p], 0), max(n-1, 0))
		m.off[p] = follow(m.sel[p], m.off[p], l.rows[p], n)
	}
	if c := m.drilled(); c != nil {
		n := len(c.Tasks)
		m.dsel = min(max(m.dsel, 0), max(n-1, 0))
		m.doff = follow(m.dsel, m.doff, l.tasks, n)
	}
}

// follow is the first visible row of a list of n rows, vis of them on
// screen, so that sel is visible and the last page is full.
func follow(sel, off, vis, n int) int {
	if vis <= 0 {
		return 0
	}
	if sel < off {
		off = sel
	}
	if sel >= off+vis {
		off = sel - vis + 1
	}
	return min(max(off, 0), max(n-vis, 0))
}
