package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connectstore"
)

func TestWorkerLifecycle(t *testing.T)      { t.Parallel(); scenarioLifecycle(fakeEnv(t)) }
func TestIntegrationLifecycle(t *testing.T) { t.Parallel(); scenarioLifecycle(kafkaEnv(t)) }

func TestWorkerFailuresAndRestarts(t *testing.T)      { scenarioFailures(fakeEnv(t)) }
func TestIntegrationFailuresAndRestarts(t *testing.T) { scenarioFailures(kafkaEnv(t)) }

func (e *env) sumRecords(w *running, name string) int64 {
	n := int64(0)
	for _, ts := range w.Stats().Tasks {
		if ts.ID.Connector == name {
			n += ts.Records
		}
	}
	return n
}

// Pause, resume, stop, start and delete, as Kafka Connect does them.
func scenarioLifecycle(e *env) {
	t := e.t
	ctx := context.Background()
	topic, src := e.name("life"), e.name("life")
	e.create(src, map[string]string{"connector.class": "Datagen", "topic": topic, "tasks.max": "2", "rate.per.task": "200",
		"value.converter": StringConverter})
	w := e.start(nil)
	for _, id := range []int{-1, 0, 1} {
		e.waitState(src, id, connectstore.StateRunning)
	}
	waitFor(t, 10*time.Second, "records flowing", func() (bool, string) { return e.sumRecords(w, src) > 20, "" })

	// Pause: statuses say PAUSED, nothing more is produced, tasks stay.
	if err := e.cs.SetTarget(ctx, src, connectstore.TargetPaused); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int{-1, 0, 1} {
		e.waitState(src, id, connectstore.StatePaused)
	}
	// What was produced before the pause is acknowledged first (a loaded
	// broker may take a while); after that the count must not move.
	waitFor(t, 10*time.Second, "records produced before the pause acknowledged", func() (bool, string) {
		st := w.Stats()
		return st.InFlightRecords == 0, fmt.Sprintf("%d in flight", st.InFlightRecords)
	})
	before := e.sumRecords(w, src)
	time.Sleep(500 * time.Millisecond)
	if after := e.sumRecords(w, src); after != before {
		t.Fatalf("paused tasks produced: %d then %d", before, after)
	}
	if len(w.Stats().Tasks) != 2 {
		t.Fatalf("paused tasks must keep running: %+v", w.Stats().Tasks)
	}

	// Resume.
	if err := e.cs.SetTarget(ctx, src, connectstore.TargetStarted); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int{-1, 0, 1} {
		e.waitState(src, id, connectstore.StateRunning)
	}
	waitFor(t, 10*time.Second, "records flowing again", func() (bool, string) { return e.sumRecords(w, src) > before+20, "" })

	// Stop: the task configs become empty, the tasks and their statuses go.
	if err := e.cs.SetTarget(ctx, src, connectstore.TargetStopped); err != nil {
		t.Fatal(err)
	}
	e.waitState(src, -1, connectstore.StateStopped)
	waitFor(t, 10*time.Second, "no tasks", func() (bool, string) {
		tc, _ := e.cs.Tasks(ctx, src)
		st, _ := e.cs.Statuses(ctx, src)
		return len(tc.Tasks) == 0 && len(st.Tasks) == 0 && len(w.Stats().Tasks) == 0, fmt.Sprintf("tasks %v statuses %v", tc, st.Tasks)
	})
	seqs := map[int]json.Number{}
	for tk := range 2 {
		off, _ := e.cs.SourceOffset(ctx, src, map[string]any{"task": tk})
		seqs[tk] = off["seq"].(json.Number)
	}

	// Start again: tasks come back and continue after their offsets.
	if err := e.cs.SetTarget(ctx, src, connectstore.TargetStarted); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int{-1, 0, 1} {
		e.waitState(src, id, connectstore.StateRunning)
	}
	tc, _ := e.cs.Tasks(ctx, src)
	if len(tc.Tasks) != 2 || tc.Generation < 3 {
		t.Fatalf("task configs after a restart: %+v", tc)
	}

	// Delete: everything stops and no status comes back.
	if deleted, err := e.cs.DeleteConnector(ctx, src); err != nil || !deleted {
		t.Fatalf("delete: %v %v", deleted, err)
	}
	waitFor(t, 10*time.Second, "tasks gone", func() (bool, string) { return len(w.Stats().Tasks) == 0, "" })
	time.Sleep(300 * time.Millisecond)
	if st, _ := e.cs.Statuses(ctx, src); st.Connector != nil || len(st.Tasks) != 0 {
		t.Fatalf("statuses after delete: %+v", st)
	}
	// Offsets stay, as in Kafka Connect, and they moved on after the restart.
	off, _ := e.cs.SourceOffset(ctx, src, map[string]any{"task": 0})
	if off["seq"] == seqs[0] {
		t.Errorf("task 0 did not continue after start: %v", off)
	}
}

// A failing task is restarted automatically, with backoff, and its status
// counts the restarts; an unknown class fails the connector with a clear
// trace; a restart request and a reconfiguration request are carried out.
func scenarioFailures(e *env) {
	t := e.t
	ctx := context.Background()
	flaky.failRuns.Store(2)
	topic, name := e.name("flaky"), e.name("flaky")
	e.create(name, map[string]string{"connector.class": flakyClass, "topic": topic, "value.converter": StringConverter})
	bad := e.name("bad")
	e.create(bad, map[string]string{"connector.class": "org.example.Nope"})
	w := e.start(nil)

	st := e.waitState(name, 0, connectstore.StateFailed)
	if !strings.Contains(st.Trace, "boom") || st.WorkerID != "127.0.0.1:8083" {
		t.Errorf("failed status %+v", st)
	}
	// Run 2 reports RUNNING before its first poll fails: wait for the run
	// that stays up.
	deadline := time.Now().Add(30 * time.Second)
	for st = e.waitState(name, 0, connectstore.StateRunning); st.Restarts < 2 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		st = e.waitState(name, 0, connectstore.StateRunning)
	}
	if st.Restarts != 2 {
		t.Errorf("running again after %d restarts, want 2: %+v", st.Restarts, st)
	}
	e.consumeN(topic, 5, 0)
	// The count survives a restart of the worker.
	w.stop()
	w = e.start(nil)
	if st := e.waitState(name, 0, connectstore.StateRunning); st.Restarts != 2 {
		t.Errorf("after a worker restart: %+v", st)
	}
	cst := e.waitState(bad, -1, connectstore.StateFailed)
	if !strings.Contains(cst.Trace, "org.example.Nope") {
		t.Errorf("unknown class: %+v", cst)
	}

	// A connector that fails to start is restarted too.
	flaky.failStarts.Store(2)
	fs := e.name("failstart")
	e.create(fs, map[string]string{"connector.class": flakyClass, "topic": topic, "fail.start": "true", "value.converter": StringConverter})
	if st := e.waitState(fs, -1, connectstore.StateRunning); st.Restarts != 2 {
		t.Errorf("connector running after %d restarts, want 2: %+v", st.Restarts, st)
	}
	// Its task counts in flaky.starts too: let it start before counting.
	e.waitState(fs, 0, connectstore.StateRunning)

	// A restart request restarts the task (a new run of it).
	starts := flaky.starts.Load()
	if err := e.cs.RequestRestart(ctx, name, connectstore.RestartRequest{IncludeTasks: true}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the task restarted", func() (bool, string) { return flaky.starts.Load() > starts, "" })
	e.waitState(name, 0, connectstore.StateRunning)

	// Restarting one task, and only the failed ones (none is failed).
	starts = flaky.starts.Load()
	zero := 0
	if err := e.cs.RequestRestart(ctx, name, connectstore.RestartRequest{Task: &zero}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "task 0 restarted", func() (bool, string) { return flaky.starts.Load() == starts+1, "" })
	if err := e.cs.RequestRestart(ctx, name, connectstore.RestartRequest{IncludeTasks: true, OnlyFailed: true}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := flaky.starts.Load(); n != starts+1 {
		t.Errorf("onlyFailed restarted a running task: %d starts, want %d", n, starts+1)
	}

	// RequestTaskReconfiguration: the connector asks for three tasks.
	reconf.mu.Lock()
	reconf.tasks = 1
	reconf.mu.Unlock()
	rc := e.name("reconf")
	e.create(rc, map[string]string{"connector.class": reconfClass, "topic": topic, "tasks.max": "3", "value.converter": StringConverter})
	e.waitState(rc, 0, connectstore.StateRunning)
	reconf.mu.Lock()
	reconf.tasks = 3
	rctx := reconf.ctx
	reconf.mu.Unlock()
	rctx.RequestTaskReconfiguration()
	for id := range 3 {
		e.waitState(rc, id, connectstore.StateRunning)
	}
	if tc, _ := e.cs.Tasks(ctx, rc); len(tc.Tasks) != 3 || tc.Generation != 2 {
		t.Errorf("task configs after reconfiguration: %+v", tc)
	}
}

// ownership is an Assignment the test changes.
type ownership struct {
	mu      sync.Mutex
	tasks   map[int]bool
	changed chan struct{}
}

func (o *ownership) Connector(string) bool { return true }
func (o *ownership) Task(_ string, id int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.tasks[id]
}
func (o *ownership) Changed() <-chan struct{}             { return o.changed }
func (o *ownership) Fence(string, int) connectstore.Fence { return nil }

func (o *ownership) set(ids ...int) {
	o.mu.Lock()
	o.tasks = map[int]bool{}
	for _, id := range ids {
		o.tasks[id] = true
	}
	o.mu.Unlock()
	o.changed <- struct{}{}
}

// The worker runs only the tasks its Assignment gives it, and follows
// changes of the assignment.
func TestWorkerFollowsAssignment(t *testing.T) {
	t.Parallel()
	e := fakeEnv(t)
	own := &ownership{tasks: map[int]bool{1: true}, changed: make(chan struct{})}
	w := e.start(func(c *Config) { c.Assignment = own })
	name := e.name("own")
	e.create(name, map[string]string{"connector.class": "Datagen", "topic": e.name("t"), "tasks.max": "3", "rate.per.task": "50",
		"value.converter": StringConverter})
	running := func(want ...int) {
		t.Helper()
		waitFor(t, 10*time.Second, fmt.Sprintf("tasks %v running", want), func() (bool, string) {
			var ids []int
			for _, ts := range w.Stats().Tasks {
				ids = append(ids, ts.ID.Task)
			}
			return slices.Equal(ids, want), fmt.Sprint(ids)
		})
	}
	running(1)
	e.waitState(name, 1, connectstore.StateRunning)
	own.set(0, 2)
	running(0, 2)
	e.waitState(name, 0, connectstore.StateRunning)
	e.waitState(name, 2, connectstore.StateRunning)
}

// toldOwnership gives each connector its own tasks and tells which
// connectors changed (TakeChanged), as the coordinator's Member does.
type toldOwnership struct {
	mu      sync.Mutex
	tasks   map[string]map[int]bool
	told    []string
	all     bool
	changed chan struct{}
}

func (o *toldOwnership) Connector(string) bool { return true }
func (o *toldOwnership) Task(name string, id int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.tasks[name][id]
}
func (o *toldOwnership) Changed() <-chan struct{}             { return o.changed }
func (o *toldOwnership) Fence(string, int) connectstore.Fence { return nil }
func (o *toldOwnership) TakeChanged() ([]string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	told, all := o.told, o.all
	o.told, o.all = nil, false
	return told, all
}

// set gives connector name the tasks ids and tells that the connectors
// tell changed (all when tell is nil).
func (o *toldOwnership) set(name string, tell []string, ids ...int) {
	o.mu.Lock()
	o.tasks[name] = map[int]bool{}
	for _, id := range ids {
		o.tasks[name][id] = true
	}
	o.told, o.all = tell, tell == nil
	o.mu.Unlock()
	o.changed <- struct{}{}
}

// An assignment that tells which connectors changed has the worker look
// again at those only; one that tells all, at every connector.
func TestWorkerLooksAgainOnlyAtTheConnectorsTheAssignmentNames(t *testing.T) {
	t.Parallel()
	e := fakeEnv(t)
	a, b := e.name("told-a"), e.name("told-b")
	own := &toldOwnership{tasks: map[string]map[int]bool{a: {0: true}, b: {0: true}}, changed: make(chan struct{})}
	w := e.start(func(c *Config) { c.Assignment = own })
	for _, name := range []string{a, b} {
		e.create(name, map[string]string{"connector.class": "Datagen", "topic": e.name("t"), "tasks.max": "2", "rate.per.task": "50",
			"value.converter": StringConverter})
	}
	running := func() []string {
		var ids []string
		for _, ts := range w.Stats().Tasks {
			ids = append(ids, fmt.Sprintf("%s/%d", ts.ID.Connector, ts.ID.Task))
		}
		slices.Sort(ids)
		return ids
	}
	waitRunning := func(want ...string) {
		t.Helper()
		slices.Sort(want)
		waitFor(t, 10*time.Second, fmt.Sprintf("tasks %v running", want), func() (bool, string) {
			got := running()
			return slices.Equal(got, want), fmt.Sprint(got)
		})
	}
	waitRunning(a+"/0", b+"/0")
	// Reported RUNNING: b's supervisor took its task's start (a poke of its
	// own, which would look at the assignment too) before the window.
	e.waitState(b, 0, connectstore.StateRunning)
	own.set(a, []string{a}, 0, 1)
	waitRunning(a+"/0", a+"/1", b+"/0")
	// b gets a task, but only a is named: b's supervisor is not told.
	own.set(b, []string{a}, 0, 1)
	// An absence over a window: the waiting is what is under test.
	for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if got := running(); slices.Contains(got, b+"/1") {
			t.Fatalf("%s/1 started though the assignment named only %s: %v", b, a, got)
		}
	}
	own.set(a, nil, 0, 1)
	waitRunning(a+"/0", a+"/1", b+"/0", b+"/1")
}
