package worker

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/store"
)

// units is an Assignment that tells which connectors have a unit here
// (holder) and which changed (TakeChanged), as the coordinator's Member
// does; the test moves units between two of them.
type units struct {
	mu      sync.Mutex
	conns   map[string]bool         // connector instances here
	tasks   map[string]map[int]bool // tasks here
	told    []string
	changed chan struct{}
}

func newUnits() *units {
	return &units{conns: map[string]bool{}, tasks: map[string]map[int]bool{}, changed: make(chan struct{}, 1)}
}

func (u *units) Connector(name string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.conns[name]
}

func (u *units) Task(name string, id int) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.tasks[name][id]
}

func (u *units) Changed() <-chan struct{}             { return u.changed }
func (u *units) Fence(string, int) connectstore.Fence { return nil }

func (u *units) Holds(name string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.conns[name] || len(u.tasks[name]) > 0
}

func (u *units) Held() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for c := range u.conns {
		out = append(out, c)
	}
	for c, ids := range u.tasks {
		if len(ids) > 0 && !u.conns[c] {
			out = append(out, c)
		}
	}
	return out
}

func (u *units) TakeChanged() ([]string, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	told := u.told
	u.told = nil
	return told, false
}

// set gives this worker connector name's instance (conn) and tasks ids.
func (u *units) set(name string, conn bool, ids ...int) {
	u.mu.Lock()
	u.conns[name] = conn
	if !conn {
		delete(u.conns, name)
	}
	u.tasks[name] = map[int]bool{}
	for _, id := range ids {
		u.tasks[name][id] = true
	}
	if len(ids) == 0 {
		delete(u.tasks, name)
	}
	u.told = append(u.told, name)
	u.mu.Unlock()
	select {
	case u.changed <- struct{}{}:
	default:
	}
}

// readCounter is a store that counts the reads (Get, Scan) of keys that
// name a watched connector.
type readCounter struct {
	store.Store
	mu    sync.Mutex
	names []string // escaped, as in keys
	reads atomic.Int64
	keys  []string
}

func (c *readCounter) watch(name string) {
	c.mu.Lock()
	c.names = append(c.names, "/"+url.PathEscape(name))
	c.mu.Unlock()
}

func (c *readCounter) count(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.names {
		if strings.HasSuffix(key, n) || strings.Contains(key, n+"/") {
			c.reads.Add(1)
			c.keys = append(c.keys, key)
			return
		}
	}
}

func (c *readCounter) Get(ctx context.Context, key string) (store.KV, bool, error) {
	c.count(key)
	return c.Store.Get(ctx, key)
}

func (c *readCounter) Scan(ctx context.Context, prefix string, limit int) ([]store.KV, int64, error) {
	c.count(prefix)
	return c.Store.Scan(ctx, prefix, limit)
}

// A worker follows only the connectors it has a unit of: it reads nothing
// of a connector that runs elsewhere, however that connector changes.
// When the connector's units move onto it, it starts the instance and the
// tasks there; the worker they left stops them and forgets the connector.
func TestWorkerFollowsOnlyTheConnectorsItRuns(t *testing.T) {
	t.Parallel()
	e := fakeEnv(t)
	a, b := e.name("follow-a"), e.name("follow-b")
	u1, u2 := newUnits(), newUnits()
	u1.set(a, true, 0, 1)
	u2.set(b, true, 0, 1)
	counter := &readCounter{Store: e.cs.Raw()}
	w1 := e.start(func(c *Config) {
		c.WorkerID, c.Assignment, c.Store = "w1:8083", u1, connectstore.New(counter)
	})
	w2 := e.start(func(c *Config) { c.WorkerID, c.Assignment = "w2:8083", u2 })
	for _, name := range []string{a, b} {
		e.create(name, map[string]string{"connector.class": "Datagen", "topic": e.name("t"), "tasks.max": "2", "rate.per.task": "50",
			"value.converter": StringConverter})
	}
	runs := func(w *running) []string {
		var ids []string
		for _, id := range w.Running() {
			ids = append(ids, fmt.Sprintf("%s/%d", id.Connector, id.Task))
		}
		slices.Sort(ids)
		return ids
	}
	waitRuns := func(w *running, want ...string) {
		t.Helper()
		slices.Sort(want)
		waitFor(t, 20*time.Second, fmt.Sprintf("%s runs %v", w.cfg.WorkerID, want), func() (bool, string) {
			got := runs(w)
			return slices.Equal(got, want), fmt.Sprint(got)
		})
	}
	waitRuns(w1, a+"/-1", a+"/0", a+"/1")
	waitRuns(w2, b+"/-1", b+"/0", b+"/1")
	for id := range 2 {
		e.waitState(b, id, connectstore.StateRunning)
	}

	// w1 has no unit of b: b's config, target state, task configs, restart
	// requests and statuses are none of its business, even as they change.
	counter.watch(b)
	ctx := context.Background()
	if err := e.cs.SetTarget(ctx, b, connectstore.TargetPaused); err != nil {
		t.Fatal(err)
	}
	e.waitState(b, 0, connectstore.StatePaused)
	if err := e.cs.SetTarget(ctx, b, connectstore.TargetStarted); err != nil {
		t.Fatal(err)
	}
	e.waitState(b, 0, connectstore.StateRunning)
	if err := e.cs.RequestRestart(ctx, b, connectstore.RestartRequest{IncludeTasks: true}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "b restarted on w2", func() (bool, string) {
		n := w2.Starts()[TaskID{Connector: b, Task: 0}]
		return n >= 2, fmt.Sprint(n, " starts")
	})
	if n := counter.reads.Load(); n != 0 {
		t.Errorf("w1 read %d keys of %s, none of whose units it has: %q", n, b, counter.keys)
	}
	w1.mu.Lock()
	_, followed := w1.sups[b]
	w1.mu.Unlock()
	if followed {
		t.Errorf("w1 runs a supervisor of %s, none of whose units it has", b)
	}

	// b's instance and task 1 move to w1 (w2 lets go of them first, as the
	// coordinator's revoke has it); task 0 stays on w2.
	u2.set(b, false, 0)
	waitRuns(w2, b+"/0")
	u1.set(b, true, 1)
	waitRuns(w1, a+"/-1", a+"/0", a+"/1", b+"/-1", b+"/1")
	runningOn(e, b, 1, "w1:8083")
	runningOn(e, b, -1, "w1:8083")
	if counter.reads.Load() == 0 {
		t.Errorf("w1 runs units of %s without having read it", b)
	}
	// Restart requests of b reach its instance on w1.
	from := w1.Starts()[TaskID{Connector: b, Task: -1}]
	if err := e.cs.RequestRestart(ctx, b, connectstore.RestartRequest{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "b's instance restarted on w1", func() (bool, string) {
		n := w1.Starts()[TaskID{Connector: b, Task: -1}]
		return n > from, fmt.Sprint(n, " starts")
	})

	// The last unit of b leaves w2: it stops it and ends b's supervisor.
	u2.set(b, false)
	u1.set(b, true, 0, 1)
	waitRuns(w2)
	waitRuns(w1, a+"/-1", a+"/0", a+"/1", b+"/-1", b+"/0", b+"/1")
	waitFor(t, 20*time.Second, "w2 forgetting "+b, func() (bool, string) {
		w2.mu.Lock()
		defer w2.mu.Unlock()
		_, ok := w2.sups[b]
		return !ok, fmt.Sprint(len(w2.sups), " supervisors")
	})
	runningOn(e, b, 0, "w1:8083")
}

// runningOn waits until worker reports the connector (task -1) or task
// RUNNING.
func runningOn(e *env, name string, task int, worker string) {
	e.t.Helper()
	waitFor(e.t, 20*time.Second, fmt.Sprintf("%s task %d RUNNING on %s", name, task, worker), func() (bool, string) {
		all, err := e.cs.Statuses(context.Background(), name)
		if err != nil {
			return false, err.Error()
		}
		st, ok := all.Tasks[task]
		if task < 0 {
			ok = all.Connector != nil
			if ok {
				st = *all.Connector
			}
		}
		return ok && st.State == connectstore.StateRunning && st.WorkerID == worker, fmt.Sprintf("%+v", all)
	})
}

// readGauge is a store whose reads of the watched connectors' keys take a
// while, and that records how many of them ran at once. With noBulk its
// scans of connect/target/ fail, so that a resync's bulk read does.
type readGauge struct {
	store.Store
	prefix string // of the watched connectors' names
	noBulk bool
	mu     sync.Mutex
	now    int
	most   int
	reads  int
}

func (g *readGauge) Scan(ctx context.Context, prefix string, limit int) ([]store.KV, int64, error) {
	if g.noBulk && prefix == connectstore.Prefix+"target/" {
		return nil, 0, errors.New("readGauge: no bulk reads")
	}
	return g.Store.Scan(ctx, prefix, limit)
}

func (g *readGauge) Get(ctx context.Context, key string) (store.KV, bool, error) {
	if !strings.Contains(key, url.PathEscape(g.prefix)) {
		return g.Store.Get(ctx, key)
	}
	g.mu.Lock()
	g.now++
	g.most = max(g.most, g.now)
	g.reads++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.now--
		g.mu.Unlock()
	}()
	// A read through the leader's store API takes a few milliseconds.
	t := time.NewTimer(5 * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return store.KV{}, false, ctx.Err()
	}
	return g.Store.Get(ctx, key)
}

// A resync (a watch ended with ErrCompacted, as after a store switch, or
// the worker's start) whose bulk read fails has every supervisor read its
// connector again; at most maxStoreReaders of them read at once, so that
// those reads leave connections and the database pool to the offset and
// status writes.
func TestWorkerBoundsSupervisorReads(t *testing.T) {
	t.Parallel()
	e := fakeEnv(t)
	prefix := e.name("reads")
	u := newUnits()
	const n = 24
	ctx := context.Background()
	for i := range n {
		name := fmt.Sprintf("%s-%02d", prefix, i)
		cfg := map[string]string{"connector.class": "Datagen", "name": name, "topic": e.name("t"), "tasks.max": "1"}
		if created, err := e.cs.CreateConnector(ctx, name, cfg, connectstore.TargetStopped); err != nil || !created {
			t.Fatalf("create %s: %v %v", name, created, err)
		}
		u.set(name, true)
	}
	g := &readGauge{Store: e.cs.Raw(), prefix: prefix, noBulk: true}
	e.start(func(c *Config) {
		c.WorkerID, c.Assignment, c.Store = "reads:8083", u, connectstore.New(g)
	})
	waitFor(t, 20*time.Second, "every supervisor read its connector", func() (bool, string) {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.reads >= 4*n, fmt.Sprint(g.reads, " reads")
	})
	g.mu.Lock()
	most := g.most
	g.mu.Unlock()
	if most > maxStoreReaders {
		t.Errorf("%d reads of connectors ran at once; want at most %d", most, maxStoreReaders)
	}
}

// endableWatches is a store whose watches the test can end with
// ErrCompacted, as activestore ends them when the node moves to another
// backend; it counts the reads of the watched connectors' keys.
type endableWatches struct {
	store.Store
	prefix string // of the watched connectors' names, escaped
	reads  atomic.Int64
	mu     sync.Mutex
	live   []*endable
}

func (s *endableWatches) Get(ctx context.Context, key string) (store.KV, bool, error) {
	if strings.Contains(key, s.prefix) {
		s.reads.Add(1)
	}
	return s.Store.Get(ctx, key)
}

func (s *endableWatches) Watch(ctx context.Context, prefix string, afterRev int64) (store.Watcher, error) {
	inner, err := s.Store.Watch(ctx, prefix, afterRev)
	if err != nil {
		return nil, err
	}
	w := &endable{Watcher: inner}
	s.mu.Lock()
	s.live = append(s.live, w)
	s.mu.Unlock()
	return w, nil
}

// endAll ends every watch so far with ErrCompacted.
func (s *endableWatches) endAll() {
	s.mu.Lock()
	live := s.live
	s.live = nil
	s.mu.Unlock()
	for _, w := range live {
		w.ended.Store(true)
		w.Close()
	}
}

type endable struct {
	store.Watcher
	ended atomic.Bool
}

func (w *endable) Err() error {
	if w.ended.Load() {
		return store.ErrCompacted
	}
	return w.Watcher.Err()
}

// A worker that follows many connectors reads them in bulk when it
// resyncs (at its start, and when its watch ends with ErrCompacted, as
// after a store switch): four scans, not four reads per connector, which
// every node would otherwise send at once. A change after the resync is
// still read and acted on.
func TestWorkerResyncReadsInBulk(t *testing.T) {
	t.Parallel()
	e := fakeEnv(t)
	prefix := e.name("bulk")
	u := newUnits()
	const n = 24
	ctx := context.Background()
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("%s-%02d", prefix, i)
		cfg := map[string]string{"connector.class": "Datagen", "name": names[i], "topic": e.name("t"), "tasks.max": "1",
			"rate.per.task": "20", "value.converter": StringConverter}
		if created, err := e.cs.CreateConnector(ctx, names[i], cfg, connectstore.TargetStopped); err != nil || !created {
			t.Fatalf("create %s: %v %v", names[i], created, err)
		}
		u.set(names[i], true)
	}
	st := &endableWatches{Store: e.cs.Raw(), prefix: url.PathEscape(prefix)}
	e.start(func(c *Config) {
		c.WorkerID, c.Assignment, c.Store = "bulk:8083", u, connectstore.New(st)
	})
	for _, name := range names {
		e.waitState(name, -1, connectstore.StateStopped)
	}
	if r := st.reads.Load(); r != 0 {
		t.Errorf("the worker's start read the connectors' keys %d times one by one; want a bulk read", r)
	}

	st.endAll()
	waitFor(t, 20*time.Second, "the worker watches again", func() (bool, string) {
		st.mu.Lock()
		defer st.mu.Unlock()
		return len(st.live) > 0, "no watch"
	})
	if err := e.cs.SetTarget(ctx, names[0], connectstore.TargetStarted); err != nil {
		t.Fatal(err)
	}
	e.waitState(names[0], -1, connectstore.StateRunning)
	// names[0]'s keys are read after the change and after the task
	// configs its start writes (four reads each, a few times); a resync
	// reading one by one would read 4*n.
	if r := st.reads.Load(); r > 16 {
		t.Errorf("after the resync and one change the connectors' keys were read %d times one by one; want only the changed connector's", r)
	}
}
