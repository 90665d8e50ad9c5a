package top

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/kcd-project/kcd/tui/printer"
)

// View implements tea.Model: the whole screen, in the alternate screen.
func (m Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = "kcctl top"
	return v
}

func (m *Model) size() (int, int) {
	if m.w == 0 && m.h == 0 {
		return MinWidth, MinHeight // no size reported yet
	}
	return m.w, m.h
}

// layout is how many rows each list shows at the current size.
type layout struct {
	wide  bool
	body  int // lines between the header and the status line
	rows  [numPanes]int
	tasks int // drill-in: task rows, trace lines, offset rows
	trace int
	offs  int
}

// The main view, top to bottom: header (2 lines), members (title, column
// heads, rows) and workers (title, rows) — side by side when wide —,
// connectors (title, column heads, rows), rebalances (title, rows), status
// line, help line. Connectors get what the others leave.
func (m *Model) layout() layout {
	w, h := m.size()
	l := layout{wide: w >= 140, body: max(h-4, 0)}
	small := max(2, (l.body-8)/4)
	l.rows[paneMembers] = min(max(len(m.snap.Members), 1), small)
	l.rows[paneWorkers] = min(max(len(m.snap.Workers), 1), small)
	l.rows[paneJournal] = min(max(len(m.snap.Rebalances), 1), max(small-1, 1))
	top := 2 + l.rows[paneMembers] + 1 + l.rows[paneWorkers]
	if l.wide {
		top = max(2+l.rows[paneMembers], 1+l.rows[paneWorkers])
	}
	// As many connector rows as connectors (so a filter does not move the
	// pane below), up to what the other panes leave.
	l.rows[paneConnectors] = min(max(len(m.snap.Connectors), 1), max(l.body-top-2-(1+l.rows[paneJournal]), 1))

	if c := m.drilled(); c != nil {
		fixed := 6 // title, summary, task heads, trace title, offsets title, offsets heads
		if c.Trace != "" {
			fixed++
		}
		free := max(l.body-fixed, 3)
		l.tasks = min(max(len(c.Tasks), 1), max(3, free/3))
		l.offs = min(max(len(m.offsets), 1), max(2, free/5))
		l.trace = max(free-l.tasks-l.offs, 1)
	}
	return l
}

func (m *Model) render() string {
	w, h := m.size()
	if w < MinWidth || h < MinHeight {
		return cut(fmt.Sprintf("terminal %dx%d is too small: kcctl top needs at least %dx%d", w, h, MinWidth, MinHeight), w)
	}
	l := m.layout()
	lines := make([]string, 0, h)
	for _, s := range m.header() {
		lines = append(lines, cut(s, w))
	}
	switch {
	case m.fullHelp:
		lines = m.helpBody(lines, w)
	case !m.have:
		lines = append(lines, cut(m.st.r(m.st.dim, "waiting for the first snapshot…"), w))
	case m.drill != "":
		lines = m.drillBody(lines, w, l)
	default:
		lines = m.mainBody(lines, w, l)
	}
	for len(lines) < h-2 {
		lines = append(lines, "")
	}
	lines = lines[:h-2]
	lines = append(lines, cut(m.statusLine(), w))
	m.help.SetWidth(w)
	lines = append(lines, m.help.ShortHelpView(m.shortHelp()))
	// Table rows are built to fit; free text is cut where it is written.
	return strings.Join(lines, "\n")
}

// header is two lines: who leads and what this is; health and the feed.
func (m *Model) header() []string {
	st := &m.st
	ctx := m.opt.Context
	if ctx == "" {
		ctx = "-"
	}
	if !m.have {
		return []string{"context " + clean(ctx), m.feedText()}
	}
	c := m.snap.Cluster
	var one []string
	if m.opt.ReadOnly {
		one = append(one, st.r(st.warn, "read-only"))
	}
	one = append(one, "cluster "+orDash(clean(c.ID)))
	switch {
	case m.now().Before(m.flashUntil):
		one = append(one, st.r(st.flash, fmt.Sprintf("NEW LEADER %d (was %d) term %d", c.Leader, m.prevLeader, c.Term)))
	case c.Leader == 0:
		one = append(one, st.r(st.bad, fmt.Sprintf("NO LEADER term %d", c.Term)))
	default:
		one = append(one, fmt.Sprintf("leader %d term %d", c.Leader, c.Term))
	}
	one = append(one, "store "+orDash(clean(c.Store)), "context "+clean(ctx))

	var two []string
	q := fmt.Sprintf(" %d/%d voters up, quorum %d", c.VotersUp, c.Voters, c.Quorum)
	switch {
	case c.QuorumOK && c.VotersUp >= c.Voters:
		two = append(two, st.r(st.ok, "healthy")+q)
	case c.QuorumOK:
		two = append(two, st.r(st.warn, "degraded")+q)
	default:
		two = append(two, st.r(st.bad, "NO QUORUM")+q)
	}
	if len(c.Alarms) > 0 {
		two = append(two, st.r(st.bad, "alarms "+clean(strings.Join(c.Alarms, ","))))
	} else {
		two = append(two, "no alarms")
	}
	two = append(two, m.feedText())
	if !m.snap.At.IsZero() {
		two = append(two, printer.Age(m.now().Sub(m.snap.At))+" ago")
	}
	return []string{strings.Join(one, " · "), strings.Join(two, " · ")}
}

func (m *Model) feedText() string {
	st := &m.st
	f := m.feed
	server := f.Server
	if server == "" {
		server = m.snap.Server
	}
	server = strings.TrimPrefix(strings.TrimPrefix(clean(server), "http://"), "https://")
	switch {
	case !m.feedKnown:
		return "connecting " + server
	case f.Err != nil:
		return st.r(st.bad, "feed error: "+clean(f.Err.Error())) + " (last tried " + orDash(server) + ")"
	case f.Live:
		return st.r(st.ok, "live") + " " + server
	case f.Polling:
		return st.r(st.warn, "polling") + " " + server + " (events down)"
	}
	return "feed idle " + server
}

// title is a pane's first line; the focused pane's is heavy.
func (m *Model) title(text string, w int, focused bool) string {
	ch, st := "─", m.st.title
	if focused {
		ch, st = "━", m.st.titleFocus
	}
	s := cut(ch+ch+" "+clean(text)+" ", w)
	if n := w - ansi.StringWidth(s); n > 0 {
		s += strings.Repeat(ch, n)
	}
	return m.st.r(st, s)
}

func (m *Model) mainBody(lines []string, w int, l layout) []string {
	if l.wide {
		lw := (w - 3) / 2
		left := m.membersPane(nil, lw, l.rows[paneMembers])
		right := m.workersPane(nil, w-lw-3, l.rows[paneWorkers])
		for i := range max(len(left), len(right)) {
			var a, b string
			if i < len(left) {
				a = left[i]
			}
			if i < len(right) {
				b = right[i]
			}
			lines = append(lines, padCells(a, lw)+" │ "+b)
		}
	} else {
		lines = m.membersPane(lines, w, l.rows[paneMembers])
		lines = m.workersPane(lines, w, l.rows[paneWorkers])
	}
	lines = m.connectorsPane(lines, w, l.rows[paneConnectors])
	return m.journalPane(lines, w, l.rows[paneJournal])
}

func padCells(s string, w int) string {
	if n := w - ansi.StringWidth(s); n > 0 {
		return s + strings.Repeat(" ", n)
	}
	return s
}

// column is one column of a table: its head, minimal width, share of the
// spare width, alignment.
type column struct {
	head  string
	min   int
	flex  int
	right bool
}

// widths spreads w cells (after the 2-cell gutter) over cols.
func widths(cols []column, w int) []int {
	ws := make([]int, len(cols))
	total, flex, last := len(cols)-1+2, 0, -1
	for i, c := range cols {
		ws[i] = c.min
		total += c.min
		flex += c.flex
		if c.flex > 0 {
			last = i
		}
	}
	if extra := w - total; extra > 0 && flex > 0 {
		used := 0
		for i, c := range cols {
			add := extra * c.flex / flex
			ws[i] += add
			used += add
		}
		ws[last] += extra - used
	} else if extra < 0 {
		// Too narrow: the last columns give up cells first.
		for i := len(ws) - 1; i >= 0 && extra < 0; i-- {
			take := min(-extra, ws[i]-1)
			ws[i] -= take
			extra += take
		}
	}
	return ws
}

// cell is one table cell; state names the colour ("" plain, "bad" red).
type cell struct {
	text  string
	state string
}

func (m *Model) heads(cols []column, ws []int) string {
	var b strings.Builder
	b.WriteString("  ")
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(fit(c.head, ws[i], c.right))
	}
	return m.st.r(m.st.colHead, strings.TrimRight(b.String(), " "))
}

// row renders one table row; the selected row of the focused list is
// marked with > and shown reversed.
func (m *Model) row(cols []column, ws []int, cells []cell, selected bool) string {
	var b strings.Builder
	if selected {
		b.WriteString("> ")
	} else {
		b.WriteString("  ")
	}
	for i, c := range cells {
		if i > 0 {
			b.WriteByte(' ')
		}
		t := fit(c.text, ws[i], cols[i].right)
		if !selected && c.state != "" {
			switch c.state {
			case "bad":
				t = m.st.r(m.st.bad, t)
			case "lead":
				t = m.st.r(m.st.titleFocus, t)
			default:
				t = m.st.byState(c.state, t)
			}
		}
		b.WriteString(t)
	}
	if selected {
		return m.st.r(m.st.sel, b.String())
	}
	return b.String()
}

var memberCols = []column{
	{head: "ID", min: 3, right: true}, {head: "ROLES", min: 11}, {head: "RAFT", min: 7},
	{head: "REACH", min: 5}, {head: "WORKER", min: 8, flex: 1}, {head: "WEIGHT", min: 6, right: true},
	{head: "TASKS", min: 5, right: true}, {head: "", min: 6},
}

func (m *Model) membersPane(lines []string, w, vis int) []string {
	focused := m.focus == paneMembers && m.drill == ""
	ms := m.snap.Members
	lines = append(lines, m.title(fmt.Sprintf("Members %d", len(ms))+span(m.off[paneMembers], vis, len(ms)), w, focused))
	ws := widths(memberCols, w)
	lines = append(lines, m.heads(memberCols, ws))
	if len(ms) == 0 {
		return append(lines, "  no members known")
	}
	off := m.off[paneMembers]
	for i := off; i < len(ms) && i < off+vis; i++ {
		mb := ms[i]
		reach, rs := "yes", ""
		if !mb.Reachable {
			reach, rs = "NO", "bad"
		}
		worker, weight, tasks := "-", "-", "-"
		if mb.WorkerID != "" {
			worker = mb.WorkerID
			if wi, ok := m.ix.workers[mb.WorkerID]; ok {
				wk := &m.snap.Workers[wi]
				weight = strconv.FormatFloat(wk.Weight, 'g', 3, 64)
				tasks = strconv.Itoa(taskTotal(wk))
			}
		}
		lead := ""
		if mb.Leader {
			lead = "leader"
		}
		lines = append(lines, m.row(memberCols, ws, []cell{
			{text: strconv.FormatUint(mb.ID, 10)}, {text: strings.Join(mb.Roles, ",")}, {text: orDash(mb.Raft)},
			{text: reach, state: rs}, {text: worker}, {text: weight}, {text: tasks}, {text: lead, state: stateIf(mb.Leader, "lead")},
		}, focused && i == m.sel[paneMembers]))
	}
	return lines
}

// span says which rows of a list show when not all do.
func span(off, vis, n int) string {
	if n <= vis {
		return ""
	}
	return fmt.Sprintf(" · %d-%d", off+1, min(off+vis, n))
}

func stateIf(b bool, s string) string {
	if b {
		return s
	}
	return ""
}

func taskTotal(w *Worker) int {
	n := 0
	for _, c := range w.Tasks {
		n += c
	}
	return n
}

// The order and glyphs of task states in a worker's bar; every state has
// its own glyph so the bar reads the same without colour.
var barStates = []struct {
	state, glyph, label string
}{
	{"RUNNING", "█", "run"}, {"RESTARTING", "▓", "restart"}, {"PAUSED", "▒", "paused"},
	{"STOPPED", "-", "stopped"}, {"UNASSIGNED", "░", "unasg"}, {"FAILED", "X", "failed"},
}

var workerCols = []column{
	{head: "WORKER", min: 10, flex: 1}, {head: "", min: 8}, {head: "TASKS", min: 5, right: true},
	{head: "SHARE", min: 4, right: true}, {head: "", min: 8}, {head: "", min: 10, flex: 3},
}

func (m *Model) workersPane(lines []string, w, vis int) []string {
	focused := m.focus == paneWorkers && m.drill == ""
	ws := m.snap.Workers
	lines = append(lines, m.title(fmt.Sprintf("Workers %d", len(ws))+span(m.off[paneWorkers], vis, len(ws))+" · █ run ▓ restart ▒ paused - stopped ░ unasg X failed", w, focused))
	if len(ws) == 0 {
		return append(lines, "  no workers")
	}
	most, all := 0, 0
	for i := range ws {
		n := taskTotal(&ws[i])
		most, all = max(most, n), all+n
	}
	cols := append([]column(nil), workerCols...)
	for i := range ws {
		cols[4].min = max(cols[4].min, min(len(counts(&ws[i])), 32))
	}
	cw := widths(cols, w)
	off := m.off[paneWorkers]
	for i := off; i < len(ws) && i < off+vis; i++ {
		wk := &ws[i]
		n := taskTotal(wk)
		var flags []string
		if wk.Leader {
			flags = append(flags, "leader")
		}
		if wk.Draining {
			flags = append(flags, "draining")
		}
		if !wk.Alive {
			flags = append(flags, "DOWN")
		}
		share := "-"
		if all > 0 {
			share = strconv.Itoa(n*100/all) + "%"
		}
		sel := focused && i == m.sel[paneWorkers]
		fs := ""
		if !wk.Alive || wk.Draining {
			fs = "bad"
		}
		r := m.row(cols[:5], cw[:5], []cell{
			{text: wk.ID}, {text: strings.Join(flags, ","), state: fs}, {text: strconv.Itoa(n)}, {text: share}, {text: counts(wk)},
		}, sel)
		lines = append(lines, r+" "+m.bar(wk, cw[5], most, sel))
	}
	return lines
}

// counts is a worker's non-zero task counts by state.
func counts(w *Worker) string {
	var parts []string
	for _, s := range barStates {
		if n := w.Tasks[s.state]; n > 0 {
			parts = append(parts, strconv.Itoa(n)+" "+s.label)
		}
	}
	if len(parts) == 0 {
		return "no tasks"
	}
	return strings.Join(parts, " ")
}

// bar draws a worker's tasks by state, scaled to the busiest worker so a
// smaller share (the leader's) shows as a shorter bar.
func (m *Model) bar(w *Worker, width, most int, sel bool) string {
	if most == 0 || width <= 0 {
		return ""
	}
	var b strings.Builder
	left := width
	for _, s := range barStates {
		n := w.Tasks[s.state]
		if n == 0 || left == 0 {
			continue
		}
		cells := min(max((n*width+most/2)/most, 1), left)
		left -= cells
		seg := strings.Repeat(s.glyph, cells)
		if !sel {
			seg = m.st.byState(s.state, seg)
		}
		b.WriteString(seg)
	}
	return b.String()
}

var connCols = []column{
	{head: "NAME", min: 12, flex: 3}, {head: "STATE", min: 10}, {head: "TYPE", min: 6},
	{head: "TASKS", min: 7, right: true}, {head: "FAILED", min: 6, right: true},
	{head: "REC/S", min: 7, right: true}, {head: "LAG", min: 7, right: true}, {head: "WORKER", min: 8, flex: 1},
}

func (m *Model) connectorsPane(lines []string, w, vis int) []string {
	focused := m.focus == paneConnectors && m.drill == ""
	cs, shown := m.snap.Connectors, m.ix.shown
	failing := 0
	for _, f := range m.ix.failing {
		if f {
			failing++
		}
	}
	t := fmt.Sprintf("Connectors %d · %d failing", len(cs), failing)
	if m.filter != "" {
		t += fmt.Sprintf(" · /%s: %d match", m.filter, len(shown))
	}
	if len(shown) > 0 {
		t += fmt.Sprintf(" · %d/%d", m.sel[paneConnectors]+1, len(shown))
	}
	lines = append(lines, m.title(t, w, focused))
	ws := widths(connCols, w)
	lines = append(lines, m.heads(connCols, ws))
	// The pane keeps its height when the filter shortens the list, so
	// the panes below do not move.
	rows := 0
	if len(shown) == 0 {
		rows++
		if len(cs) == 0 {
			lines = append(lines, "  no connectors")
		} else {
			lines = append(lines, "  no connector matches the filter")
		}
	}
	off := m.off[paneConnectors]
	for p := off; p < len(shown) && p < off+vis; p++ {
		rows++
		i := shown[p]
		c := &cs[i]
		failed, fs := "", ""
		if n := m.ix.failed[i]; n > 0 {
			failed, fs = strconv.Itoa(n), "bad"
		}
		lines = append(lines, m.row(connCols, ws, []cell{
			{text: c.Name}, {text: orDash(c.State), state: c.State}, {text: orDash(c.Type)},
			{text: fmt.Sprintf("%d/%d", m.ix.running[i], len(c.Tasks))}, {text: failed, state: fs},
			{text: rate(c.RecordsPerSec)}, {text: lag(c.SinkLag, c.Type)}, {text: orDash(c.WorkerID)},
		}, focused && p == m.sel[paneConnectors]))
	}
	for ; rows < vis; rows++ {
		lines = append(lines, "")
	}
	return lines
}

var journalCols = []column{
	{head: "", min: 8, right: true}, {head: "", min: 11}, {head: "", min: 12, flex: 1},
	{head: "", min: 9, right: true}, {head: "", min: 10, right: true}, {head: "", min: 12},
}

func (m *Model) journalPane(lines []string, w, vis int) []string {
	focused := m.focus == paneJournal && m.drill == ""
	rs := m.snap.Rebalances
	lines = append(lines, m.title(fmt.Sprintf("Rebalances %d", len(rs))+span(m.off[paneJournal], vis, len(rs)), w, focused))
	if len(rs) == 0 {
		return append(lines, "  no rebalance yet")
	}
	ws := widths(journalCols, w)
	now := m.now()
	off := m.off[paneJournal]
	for i := off; i < len(rs) && i < off+vis; i++ {
		r := rs[i]
		lines = append(lines, m.row(journalCols, ws, []cell{
			{text: printer.Age(now.Sub(r.At)) + " ago"}, {text: "epoch " + r.Epoch}, {text: orDash(strings.Join(r.Triggers, ","))},
			{text: fmt.Sprintf("%d moves", r.Moves)}, {text: fmt.Sprintf("%d units", r.Units)}, {text: "took " + took(r.Took)},
		}, focused && i == m.sel[paneJournal]))
	}
	return lines
}

var taskCols = []column{
	{head: "TASK", min: 4, right: true}, {head: "STATE", min: 10}, {head: "WORKER", min: 10, flex: 1}, {head: "TRACE", min: 10, flex: 3},
}

var offsetCols = []column{{head: "PARTITION", min: 20, flex: 1}, {head: "OFFSET", min: 20, flex: 1}}

// drillBody is one connector: its summary, its tasks, the selected task's
// trace and the connector's offsets.
func (m *Model) drillBody(lines []string, w int, l layout) []string {
	st := &m.st
	c := m.drilled()
	if c == nil {
		lines = append(lines, m.title("Connector "+m.drill+" · esc back", w, true))
		return append(lines, cut("  connector "+clean(m.drill)+" no longer exists", w))
	}
	i := m.ix.byName[c.Name]
	lines = append(lines, m.title("Connector "+c.Name+" · esc back", w, true))
	sum := []string{st.byState(c.State, orDash(c.State)), orDash(c.Type), orDash(c.WorkerID),
		fmt.Sprintf("%d/%d running", m.ix.running[i], len(c.Tasks))}
	if n := m.ix.failed[i]; n > 0 {
		sum = append(sum, st.r(st.bad, fmt.Sprintf("%d failed", n)))
	}
	sum = append(sum, rate(c.RecordsPerSec)+" rec/s", "lag "+lag(c.SinkLag, c.Type))
	lines = append(lines, cut("  "+strings.Join(sum, " · "), w))
	if c.Trace != "" {
		lines = append(lines, cut("  "+st.r(st.bad, "trace: "+clean(firstLine(c.Trace))), w))
	}

	ws := widths(taskCols, w)
	lines = append(lines, m.heads(taskCols, ws))
	shown := 0
	if len(c.Tasks) == 0 {
		lines = append(lines, "  no tasks")
		shown++
	}
	for j := m.doff; j < len(c.Tasks) && j < m.doff+l.tasks; j++ {
		shown++
		t := c.Tasks[j]
		lines = append(lines, m.row(taskCols, ws, []cell{
			{text: strconv.Itoa(t.ID)}, {text: orDash(t.State), state: t.State}, {text: orDash(t.WorkerID)}, {text: firstLine(t.Trace)},
		}, j == m.dsel))
	}
	for ; shown < l.tasks; shown++ {
		lines = append(lines, "")
	}

	if m.dsel < len(c.Tasks) {
		t := c.Tasks[m.dsel]
		lines = append(lines, m.title(fmt.Sprintf("Trace of task %d", t.ID), w, false))
		var tl []string
		if t.Trace == "" {
			tl = []string{"  no trace"}
		} else {
			for _, s := range strings.Split(t.Trace, "\n") {
				if len(tl) >= l.trace {
					break
				}
				s = clean(strings.TrimRight(s, "\r"))
				for _, p := range strings.Split(ansi.Hardwrap(s, w-2, true), "\n") {
					tl = append(tl, "  "+p)
				}
			}
		}
		for j := range l.trace {
			if j < len(tl) {
				lines = append(lines, st.r(st.dim, tl[j]))
			} else {
				lines = append(lines, "")
			}
		}
	} else {
		lines = append(lines, m.title("Trace", w, false))
		for range l.trace {
			lines = append(lines, "")
		}
	}

	lines = append(lines, m.title(fmt.Sprintf("Offsets %d", len(m.offsets)), w, false))
	ows := widths(offsetCols, w)
	lines = append(lines, m.heads(offsetCols, ows))
	switch {
	case m.offLoading:
		lines = append(lines, "  loading…")
	case m.offErr != nil:
		lines = append(lines, cut(st.r(st.bad, "  offsets: "+clean(m.offErr.Error())), w))
	case len(m.offsets) == 0:
		lines = append(lines, "  no offsets committed")
	}
	for j := 0; j < len(m.offsets) && j < l.offs; j++ {
		o := m.offsets[j]
		lines = append(lines, m.row(offsetCols, ows, []cell{{text: o.Partition}, {text: o.Offset}}, false))
	}
	return lines
}

func (m *Model) helpBody(lines []string, w int) []string {
	lines = append(lines, m.title("Keys · ? or esc closes", w, true))
	m.help.SetWidth(w)
	text := strings.Split(m.help.FullHelpView(m.fullHelpKeys()), "\n")
	text = append(text, "",
		"  Connectors list failures first, then by name; / filters them by name.",
		"  enter shows a connector's tasks with their traces and its offsets.")
	if m.opt.ReadOnly {
		text = append(text, "  read-only (--readonly): no key changes the cluster.")
	} else {
		text = append(text,
			"  r restarts a connector with its tasks (in a connector: the selected task);",
			"  p pauses a running connector or resumes a paused one; both ask y/n first.")
	}
	for _, s := range text {
		lines = append(lines, cut(s, w))
	}
	return lines
}

func (m *Model) statusLine() string {
	st := &m.st
	switch {
	case m.confirm != nil:
		return st.r(st.flash, clean(m.confirm.prompt))
	case m.editing:
		return "filter: " + clean(m.filter) + "▏  (enter keeps it, esc clears it)"
	case m.note != "":
		if m.noteBad {
			return st.r(st.bad, clean(m.note))
		}
		return clean(m.note)
	case m.filter != "":
		return fmt.Sprintf("filter %q: %d of %d connectors · esc clears it", m.filter, len(m.ix.shown), len(m.snap.Connectors))
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimRight(s, "\r")
}

// rate is records per second, "-" when unknown.
func rate(r float64) string {
	switch {
	case r < 0:
		return "-"
	case r < 1000:
		return strconv.FormatFloat(r, 'f', 1, 64)
	case r < 1e6:
		return strconv.FormatFloat(r/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(r/1e6, 'f', 1, 64) + "M"
}

// lag is a sink's records behind, "-" when unknown or not a sink.
func lag(n int64, typ string) string {
	switch {
	case n < 0 || typ == "source":
		return "-"
	case n < 10000:
		return strconv.FormatInt(n, 10)
	case n < 10_000_000:
		return strconv.FormatInt(n/1000, 10) + "k"
	}
	return strconv.FormatInt(n/1_000_000, 10) + "M"
}

func took(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
