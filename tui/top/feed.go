package top

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kcd-project/kcd/daemon/client"
)

// Defaults and bounds of a Feed.
const (
	DefaultInterval = 2 * time.Second
	// maxBackoff bounds the wait after a failed poll or a lost stream.
	maxBackoff = 10 * time.Second
	minBackoff = 250 * time.Millisecond
	// minPollGap debounces the polls events trigger.
	minPollGap = 500 * time.Millisecond
	// rebalanceLimit is how much of the journal a snapshot holds.
	rebalanceLimit = 20
	// maxServers bounds the servers the feed knows: the configured ones
	// and the cluster's members it learns from its polls.
	maxServers = 64
	// maxStatusPerSec bounds the status events passed on one by one; above
	// it the feed polls instead (a rebalance of thousands of tasks).
	maxStatusPerSec = 200
	// streamSilence: a stream with no line for this long (the server
	// sends a comment every 15 s) is dead.
	streamSilence = 40 * time.Second
	// workerFanout bounds the concurrent requests to workers' own views.
	workerFanout = 8
)

// FeedConfig configures a Feed.
type FeedConfig struct {
	// Servers are REST URLs of the cluster, tried in turn. The feed adds
	// the members' REST URLs it learns, so it moves to another member
	// when the one it talks to dies.
	Servers []string
	// Client makes a client of the REST API at a URL (a server, or a
	// worker's own URL), with the user's credentials and TLS settings.
	Client func(url string) *client.Client
	// Interval is the time between polls; 0: DefaultInterval.
	Interval time.Duration
	// Timeout bounds each request of a poll; 0: 5 s.
	Timeout time.Duration
}

// Feed polls the REST API and follows its event stream, and sends the
// model SnapshotMsg, StatusMsg, LeaderMsg and FeedStateMsg values.
type Feed struct {
	cfg FeedConfig

	pollNow chan struct{} // an event asks for a poll (capacity 1)
	moved   chan struct{} // a poll moved to another server (capacity 1)

	mu      sync.Mutex
	servers []string
	current int // index in servers of the one that last answered
	state   FeedStateMsg
	stateOK bool // state was sent at least once
	stream  bool // the event stream is open
	pollErr error
	send    func(any)

	// Poll state, only touched by the polling goroutine.
	seq        uint64
	prevAt     time.Time
	prevUnits  map[string]map[unitKey]int64 // worker → unit → records
	prevStore  string
	prevJournl []Rebalance

	errServer    string // the last server a failed poll tried
	statusSeen   uint64 // status events passed on so far
	statusWindow time.Time
	statusCount  int
}

type unitKey struct {
	connector string
	task      int // -1: the connector instance
}

// NewFeed returns a feed; Run starts it.
func NewFeed(cfg FeedConfig) *Feed {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	f := &Feed{cfg: cfg, pollNow: make(chan struct{}, 1), moved: make(chan struct{}, 1)}
	for _, s := range cfg.Servers {
		f.addServer(s)
	}
	return f
}

func (f *Feed) addServer(s string) {
	s = strings.TrimRight(s, "/")
	if s == "" || slices.Contains(f.servers, s) || len(f.servers) >= maxServers {
		return
	}
	f.servers = append(f.servers, s)
}

// Run polls and follows events until ctx ends, sending messages with send
// (from the feed's own goroutines, one at a time).
func (f *Feed) Run(ctx context.Context, send func(any)) {
	var sendMu sync.Mutex
	f.mu.Lock()
	f.send = func(m any) {
		sendMu.Lock()
		defer sendMu.Unlock()
		if ctx.Err() == nil {
			send(m)
		}
	}
	f.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { f.follow(ctx) })
	f.pollLoop(ctx)
	wg.Wait()
}

// trigger asks for a poll soon; requests while one is pending merge.
func (f *Feed) trigger() {
	select {
	case f.pollNow <- struct{}{}:
	default:
	}
}

// pollLoop polls every Interval, sooner when an event asks (but never
// twice within minPollGap); after errors it waits longer, backing off up
// to maxBackoff, unless an event asks. Polls never overlap: this
// goroutine makes them all.
func (f *Feed) pollLoop(ctx context.Context) {
	backoff := time.Duration(0)
	for {
		started := time.Now()
		err := f.poll(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := f.cfg.Interval
		if err != nil {
			backoff = min(max(2*backoff, minBackoff), maxBackoff)
			wait = backoff
		} else {
			backoff = 0
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-f.pollNow:
			// An event, or the stream lost: poll soon, even while backing
			// off (events come at most once per stream retry, which backs
			// off too), but never twice within minPollGap.
			t.Stop()
			if !sleep(ctx, time.Until(started.Add(minPollGap))) {
				return
			}
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// poll builds one snapshot, trying the servers in turn from the one that
// last answered, and sends it.
func (f *Feed) poll(ctx context.Context) error {
	f.seq++
	seq := f.seq
	f.mu.Lock()
	servers := slices.Clone(f.servers)
	first := f.current
	seen := f.statusSeen
	f.mu.Unlock()
	var errs []error
	last := ""
	for i := range servers {
		idx := (first + i) % len(servers)
		last = servers[idx]
		snap, members, err := f.pollServer(ctx, servers[idx])
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		f.mu.Lock()
		if f.current != idx {
			f.current = idx
			select {
			case f.moved <- struct{}{}:
			default:
			}
		}
		for _, m := range members {
			f.addServer(m)
		}
		f.mu.Unlock()
		f.send(SnapshotMsg{Seq: seq, Snapshot: snap})
		f.setState(func() { f.pollErr = nil })
		f.mu.Lock()
		raced := f.statusSeen != seen
		f.mu.Unlock()
		if raced {
			// Status events came while the poll ran: the snapshot may be
			// older than some of them, which it replaced; poll again soon.
			f.trigger()
		}
		return nil
	}
	err := errors.New("no server to ask")
	if len(errs) > 0 {
		err = errs[len(errs)-1] // the last server's, as FeedStateMsg.Server says
	}
	f.setState(func() { f.pollErr, f.errServer = err, last })
	return err
}

// setState applies change and sends the model how the feed gets its data
// now, when that changed.
func (f *Feed) setState(change func()) {
	f.mu.Lock()
	change()
	st := FeedStateMsg{Err: f.pollErr}
	if st.Err != nil {
		st.Server = f.errServer
	} else if len(f.servers) > 0 {
		st.Server = f.servers[f.current]
	}
	st.Live = f.stream && st.Err == nil
	st.Polling = !f.stream && st.Err == nil
	same := f.stateOK && f.state.Live == st.Live && f.state.Polling == st.Polling &&
		f.state.Server == st.Server && errText(f.state.Err) == errText(st.Err)
	f.state, f.stateOK = st, true
	send := f.send
	f.mu.Unlock()
	if !same && send != nil {
		send(st)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// currentServer is the server that last answered a poll.
func (f *Feed) currentServer() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.servers) == 0 {
		return ""
	}
	return f.servers[f.current]
}

// pollServer builds a snapshot from server's answers, and returns the
// members' REST URLs too.
func (f *Feed) pollServer(ctx context.Context, server string) (Snapshot, []string, error) {
	c := f.cfg.Client(server)
	rctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	snap := Snapshot{Server: server}

	ci, err := c.ClusterInfo(rctx)
	if err != nil {
		return snap, nil, err
	}
	var urls []string
	snap.Cluster = Cluster{
		ID: ci.ClusterID, Leader: ci.Leader, Term: ci.Term,
		Voters: ci.Health.Voters, VotersUp: ci.Health.VotersUp, Quorum: ci.Health.Quorum,
		QuorumOK: ci.Health.QuorumOK, Alarms: ci.Health.Alarms,
	}
	for _, m := range ci.Members {
		snap.Members = append(snap.Members, Member{
			ID: m.ID, RESTURL: m.RESTURL, Roles: m.Roles, Raft: m.Raft,
			Reachable: m.Reachable, Leader: m.ID == ci.Leader && ci.Leader != 0,
		})
		if m.RESTURL != "" {
			urls = append(urls, m.RESTURL)
		}
	}
	sort.Slice(snap.Members, func(i, j int) bool { return snap.Members[i].ID < snap.Members[j].ID })

	ws, err := c.Workers(rctx)
	if err != nil {
		return snap, nil, err
	}
	cs, err := c.Connectors(rctx)
	if err != nil {
		return snap, nil, err
	}
	// Optional parts: on an error the last poll's value stays.
	snap.Cluster.Store = f.prevStore
	if st, err := c.StoreStatus(rctx); err == nil {
		snap.Cluster.Store = st.Backend
		f.prevStore = st.Backend
	}
	snap.Rebalances = f.prevJournl
	if rbs, err := c.Rebalances(rctx, rebalanceLimit); err == nil {
		snap.Rebalances = make([]Rebalance, 0, min(len(rbs), rebalanceLimit))
		for _, rb := range rbs {
			snap.Rebalances = append(snap.Rebalances, Rebalance{
				At: rb.At, Epoch: rb.Epoch.String(), Leader: rb.Leader, Triggers: rb.Triggers,
				Moves: len(rb.Moves), Units: rb.Units, Workers: rb.Workers,
				Took: time.Duration(rb.DurationMS * float64(time.Millisecond)),
			})
			if len(snap.Rebalances) == rebalanceLimit {
				break
			}
		}
		f.prevJournl = snap.Rebalances
	}

	byID := map[string]*Worker{}
	restURL := map[string]string{}
	for _, w := range ws {
		snap.Workers = append(snap.Workers, Worker{
			ID: w.ID, NodeID: w.NodeID, Leader: w.NodeID != 0 && w.NodeID == ci.Leader,
			Weight: w.Weight, Draining: w.Draining, Alive: w.State == "alive" || w.State == "draining",
			Tasks: map[string]int{},
		})
		if w.State == "alive" || w.State == "draining" {
			restURL[w.ID] = w.RESTURL
		}
	}
	sort.Slice(snap.Workers, func(i, j int) bool { return snap.Workers[i].ID < snap.Workers[j].ID })
	for i := range snap.Workers {
		w := &snap.Workers[i]
		byID[w.ID] = w
		for j := range snap.Members {
			if snap.Members[j].ID == w.NodeID && w.NodeID != 0 {
				snap.Members[j].WorkerID = w.ID
			}
		}
	}

	for name, e := range cs {
		st := e.Status
		typ := string(st.Type)
		if typ == "" || typ == "unknown" {
			typ = string(e.Info.Type)
		}
		if typ == "unknown" {
			typ = ""
		}
		conn := Connector{
			Name: name, Type: typ, State: st.Connector.State, WorkerID: st.Connector.WorkerID,
			Trace: st.Connector.Trace, RecordsPerSec: -1, SinkLag: -1,
		}
		if w := byID[conn.WorkerID]; w != nil && conn.WorkerID != "" {
			w.Connectors++
		}
		for _, t := range st.Tasks {
			conn.Tasks = append(conn.Tasks, Task{ID: t.ID, State: t.State, WorkerID: t.WorkerID, Trace: t.Trace})
			if w := byID[t.WorkerID]; w != nil && t.WorkerID != "" {
				w.Tasks[t.State]++
			}
		}
		sort.Slice(conn.Tasks, func(i, j int) bool { return conn.Tasks[i].ID < conn.Tasks[j].ID })
		snap.Connectors = append(snap.Connectors, conn)
	}
	sort.Slice(snap.Connectors, func(i, j int) bool { return snap.Connectors[i].Name < snap.Connectors[j].Name })

	f.rates(ctx, &snap, restURL)
	snap.At = time.Now()
	return snap, urls, nil
}

// rates asks every live worker what its units moved and sets each
// connector's RecordsPerSec from the difference with the last poll, and
// each sink's SinkLag from its tasks' lags. A connector with a unit on a
// worker that did not answer (now or last time) keeps an unknown rate
// (-1); a sink with a running task whose lag is not known (its worker did
// not answer, or it has not fetched yet) keeps an unknown lag.
func (f *Feed) rates(ctx context.Context, snap *Snapshot, restURL map[string]string) {
	now := time.Now()
	cur := map[string]map[unitKey]int64{}
	lags := map[string]map[unitKey]int64{} // worker → sink task → lag, when known
	var mu sync.Mutex
	sem := make(chan struct{}, workerFanout)
	var wg sync.WaitGroup
	for id, u := range restURL {
		if u == "" {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			rctx, cancel := context.WithTimeout(ctx, min(f.cfg.Timeout, 2*time.Second))
			defer cancel()
			v, err := f.cfg.Client(u).LocalWorker(rctx)
			if err != nil || v.ID != id {
				return
			}
			units := make(map[unitKey]int64, len(v.Units))
			lag := map[unitKey]int64{}
			for _, lu := range v.Units {
				k := unitKey{connector: lu.Connector, task: -1}
				if lu.Task != nil {
					k.task = *lu.Task
				}
				units[k] = lu.Records
				if lu.Lag != nil {
					lag[k] = *lu.Lag
				}
			}
			mu.Lock()
			cur[id], lags[id] = units, lag
			mu.Unlock()
		})
	}
	wg.Wait()
	for i := range snap.Connectors {
		snap.Connectors[i].SinkLag = sinkLag(&snap.Connectors[i], lags)
	}
	prev, prevAt := f.prevUnits, f.prevAt
	f.prevUnits, f.prevAt = cur, now
	if prev == nil {
		return
	}
	dt := now.Sub(prevAt).Seconds()
	if dt <= 0 {
		return
	}
	for i := range snap.Connectors {
		c := &snap.Connectors[i]
		known := true
		var moved int64
		on := map[string]bool{}
		for _, t := range c.Tasks {
			if t.WorkerID != "" {
				on[t.WorkerID] = true
			}
		}
		for w := range on {
			units, ok := cur[w]
			before, okPrev := prev[w]
			if !ok || !okPrev {
				known = false
				break
			}
			for k, n := range units {
				if k.connector != c.Name {
					continue
				}
				if d := n - before[k]; d > 0 {
					moved += d
				}
			}
		}
		if known {
			c.RecordsPerSec = float64(moved) / dt
		}
	}
}

// sinkLag sums the lags of a sink's running tasks as their workers report
// them; -1 when the connector is no sink, runs no task, or a running task's
// lag is not known.
func sinkLag(c *Connector, lags map[string]map[unitKey]int64) int64 {
	if c.Type != "sink" {
		return -1
	}
	sum, n := int64(0), 0
	for _, t := range c.Tasks {
		if t.State != "RUNNING" {
			continue
		}
		l, ok := lags[t.WorkerID][unitKey{connector: c.Name, task: t.ID}]
		if !ok {
			return -1
		}
		sum += l
		n++
	}
	if n == 0 {
		return -1
	}
	return sum
}

// follow keeps the event stream open on the server the polls use, and
// passes its events on; while it is down the feed says Polling.
func (f *Feed) follow(ctx context.Context) {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		server := f.currentServer()
		opened := time.Now()
		err := f.stream1(ctx, server)
		if ctx.Err() != nil {
			return
		}
		f.setState(func() { f.stream = false })
		// The server may be gone: a poll finds out, and moves to another
		// that the next attempt then uses.
		f.trigger()
		if err != nil && time.Since(opened) < 10*time.Second {
			backoff = min(max(2*backoff, minBackoff), maxBackoff)
		} else {
			backoff = minBackoff
		}
		// Retry after the backoff, or at once on the server a poll moved to.
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-f.moved:
			t.Stop()
			backoff = 0
		}
	}
}

// stream1 follows one event stream from server until it ends.
func (f *Feed) stream1(ctx context.Context, server string) error {
	if server == "" {
		return errors.New("no server")
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Opening is bounded by Timeout; the stream itself is not.
	openTimer := time.AfterFunc(f.cfg.Timeout, cancel)
	es, err := f.cfg.Client(server).Events(sctx)
	if !openTimer.Stop() && err == nil {
		es.Close()
		err = errors.New("opening the event stream timed out")
	}
	if err != nil {
		return err
	}
	defer es.Close()
	f.setState(func() { f.stream = true })
	// A connection silent for streamSilence is dead: close it.
	watchdog := time.AfterFunc(streamSilence, func() { es.Close() })
	defer watchdog.Stop()
	// A poll catches up with what changed while the stream was down.
	f.trigger()
	for {
		ev, err := es.Next(func() { watchdog.Reset(streamSilence) })
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		f.handle(ev)
	}
}

// handle passes one event on.
func (f *Feed) handle(ev client.Event) {
	switch ev.Type {
	case "status":
		var se struct {
			Connector string `json:"connector"`
			Task      *int   `json:"task"`
			State     string `json:"state"`
			WorkerID  string `json:"worker_id"`
			Trace     string `json:"trace"`
			Deleted   bool   `json:"deleted"`
		}
		if json.Unmarshal(ev.Data, &se) != nil || se.Connector == "" {
			return
		}
		if !f.statusAllowed() {
			f.trigger() // too many to pass one by one: a poll sums them up
			return
		}
		msg := StatusMsg{Connector: se.Connector, Task: -1, State: se.State, WorkerID: se.WorkerID, Trace: se.Trace, Deleted: se.Deleted}
		if se.Task != nil {
			msg.Task = *se.Task
		}
		f.send(msg)
	case "leader":
		var le struct {
			Leader uint64 `json:"leader"`
			Term   uint64 `json:"term"`
		}
		if json.Unmarshal(ev.Data, &le) == nil {
			f.send(LeaderMsg{Leader: le.Leader, Term: le.Term})
		}
		f.trigger()
	case "rebalance", "worker":
		f.trigger()
	}
}

// statusAllowed counts a status event against maxStatusPerSec.
func (f *Feed) statusAllowed() bool {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if now.Sub(f.statusWindow) >= time.Second {
		f.statusWindow, f.statusCount = now, 0
	}
	f.statusCount++
	f.statusSeen++
	return f.statusCount <= maxStatusPerSec
}
