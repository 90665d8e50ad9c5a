package systemtest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/kcd-project/kcd/internal/testenv"
)

// placementOf maps each task to the node that runs it, when every task
// runs on exactly one of nodes and reports RUNNING from it.
func placementOf(ctx context.Context, via *Node, nodes []*Node, tasks int) (map[int]*Node, bool) {
	p, ok := ReadPlacement(ctx, via, nodes, tasks)
	return p.Where, ok
}

// startsOf reads every node's start counts: node → task → starts.
func startsOf(t *testing.T, ctx context.Context, nodes []*Node) map[*Node]map[int]int {
	t.Helper()
	out := map[*Node]map[int]int{}
	for _, n := range nodes {
		_, starts, err := UnitsOf(ctx, n)
		if err != nil {
			t.Fatalf("node %d: %v", n.ID, err)
		}
		out[n] = starts
	}
	return out
}

// TestIntegrationProcessCoordinator: three raft+worker kcd processes and
// one worker-only process on the real Kafka broker run a data generator
// with 12 tasks. A worker is killed with SIGKILL, then the Raft leader, then
// a worker is frozen with SIGSTOP and resumed. Each time the lost tasks run
// again elsewhere, tasks on the workers that were not touched are never
// stopped, a task never runs on two workers at once, and in the end no
// generated record is missing from the topic.
func TestIntegrationProcessCoordinator(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	c := StartCluster(t, bin, Options{Bootstrap: brokers, ExtraArgs: []string{"--offset-flush-interval", "300ms"}})
	if _, err := WaitLeader(ctx, c.Nodes()...); err != nil {
		t.Fatal(err)
	}
	w4 := c.NewWorker(4)
	if err := w4.Start(); err != nil {
		t.Fatal(err)
	}
	all := c.Nodes()
	via := c.Node(1)
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		n, err := AliveWorkers(ctx, via)
		return err == nil && n == 4, nil
	}); err != nil {
		t.Fatalf("four workers did not register: %v", err)
	}

	const tasks = 12
	topic := fmt.Sprintf("kcd-systemtest-coord-%d", time.Now().UnixNano())
	body := fmt.Sprintf(`{"name":"gen","config":{"connector.class":"Datagen","topic":%q,"tasks.max":"%d","rate.per.task":"200","key":"task","shape":"counter","value.converter":"org.apache.kafka.connect.storage.StringConverter"}}`, topic, tasks)
	if _, err := via.do(ctx, "POST", "/connectors", []byte(body), nil); err != nil {
		t.Fatal(err)
	}
	settle := func(what string, nodes []*Node) (map[int]*Node, time.Duration) {
		t.Helper()
		start := time.Now()
		var where map[int]*Node
		if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
			var ok bool
			where, ok = placementOf(ctx, nodes[0], nodes, tasks)
			return ok, nil
		}); err != nil {
			for _, n := range nodes {
				t.Logf("node %d log:\n%s", n.ID, n.LogTail(30))
			}
			t.Fatalf("%s: tasks did not all run exactly once: %v", what, err)
		}
		return where, time.Since(start)
	}
	// untouched checks that every task that ran on a node in before and
	// still runs there was not started again.
	untouched := func(what string, before, after map[*Node]map[int]int, where map[int]*Node, skip *Node) {
		t.Helper()
		for n, starts := range before {
			if n == skip {
				continue
			}
			for id, s := range starts {
				if where[id] == n && after[n][id] != s {
					t.Errorf("%s: task %d on node %d was stopped and started again (starts %d → %d)", what, id, n.ID, s, after[n][id])
				}
			}
		}
	}
	onlyRunning := func(where map[int]*Node) map[*Node]map[int]int {
		out := map[*Node]map[int]int{}
		for id, n := range where {
			if out[n] == nil {
				out[n] = map[int]int{}
			}
			out[n][id] = 0
		}
		return out
	}
	where, _ := settle("start", all)
	spread := map[uint64]int{}
	for _, n := range where {
		spread[n.ID]++
	}
	t.Logf("placement at start: %v (node → tasks)", spread)
	if len(spread) < 3 {
		t.Errorf("12 tasks piled on %d workers: %v", len(spread), spread)
	}

	// 1. kill -9 the worker-only node: its tasks run elsewhere, nobody
	// else's restart.
	before := startsOf(t, ctx, all)
	w4.Kill()
	survivors := c.Nodes()[:3]
	after, took := settle("kill -9 of a worker", survivors)
	t.Logf("kill -9 of worker node 4 (%d tasks): all tasks RUNNING elsewhere after %v", countOn(where, w4), took.Round(time.Millisecond))
	untouched("kill -9 of a worker", before, startsOf(t, ctx, survivors), after, w4)
	where = after

	// 2. kill -9 the Raft leader: a new leader; tasks on the other workers
	// keep running through it.
	lead, err := WaitLeader(ctx, survivors...)
	if err != nil {
		t.Fatal(err)
	}
	leader := c.Node(lead)
	before = startsOf(t, ctx, survivors)
	leader.Kill()
	rest := c.Except(lead)
	rest = slices.DeleteFunc(rest, func(n *Node) bool { return n == w4 })
	after, took = settle("kill -9 of the leader", rest)
	t.Logf("kill -9 of the leader (node %d, %d tasks): all tasks RUNNING elsewhere after %v", lead, countOn(where, leader), took.Round(time.Millisecond))
	untouched("kill -9 of the leader", before, startsOf(t, ctx, rest), after, leader)
	where = after

	// Bring both back.
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	if err := w4.Start(); err != nil {
		t.Fatal(err)
	}
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		n, err := AliveWorkers(ctx, rest[0])
		return err == nil && n == 4, nil
	}); err != nil {
		t.Fatalf("restarted workers did not register: %v", err)
	}
	// Wait until the worker-only node runs something again.
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		var ok bool
		where, ok = placementOf(ctx, rest[0], all, tasks)
		return ok && countOn(where, w4) > 0, nil
	}); err != nil {
		t.Fatalf("worker-only node got no tasks back: %v", err)
	}

	// 3. Freeze the worker-only node: its session lapses, its tasks run
	// elsewhere; resumed, it runs none of them (it stopped them itself)
	// and rejoins.
	frozen := onlyRunning(where)[w4]
	if err := w4.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	others := slices.DeleteFunc(slices.Clone(all), func(n *Node) bool { return n == w4 })
	after, took = settle("SIGSTOP of a worker", others)
	t.Logf("SIGSTOP of worker node 4 (%d tasks): all tasks RUNNING elsewhere after %v", len(frozen), took.Round(time.Millisecond))
	if err := w4.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// Resumed, it stops by itself what moved away. (That it sends nothing
	// for them meanwhile is the clock check of its session, proven in
	// coordinator's fence tests, and the transactional fencing of
	// worker's txn tests.)
	resumed := time.Now()
	var zombies []int
	stopCtx, stopCancel := context.WithTimeout(ctx, 20*time.Second)
	defer stopCancel()
	if err := WaitFor(stopCtx, 50*time.Millisecond, func() (bool, error) {
		running, _, err := UnitsOf(stopCtx, w4)
		if err != nil {
			return false, nil
		}
		zombies = zombies[:0]
		for id := range frozen {
			if running[id] && after[id] != w4 {
				zombies = append(zombies, id)
			}
		}
		return len(zombies) == 0, nil
	}); err != nil {
		t.Fatalf("resumed worker still runs tasks %v, which moved away while it was frozen: %v", zombies, err)
	}
	t.Logf("resumed worker stopped the tasks that moved away within %v", time.Since(resumed).Round(time.Millisecond))
	if _, ok := placementOf(ctx, via, all, tasks); !ok {
		// It may be rejoining: what matters is that nothing runs twice.
		if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
			_, ok := placementOf(ctx, via, all, tasks)
			return ok, nil
		}); err != nil {
			t.Fatalf("after SIGCONT the tasks did not settle: %v", err)
		}
	}

	// Stop generating, then read the topic: per task, every number from 0
	// to the highest seen is there.
	if _, err := via.do(ctx, "PUT", "/connectors/gen/stop", nil, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	checkNoGaps(t, ctx, brokers, topic, tasks)
}

func countOn(where map[int]*Node, n *Node) int {
	c := 0
	for _, m := range where {
		if m == n {
			c++
		}
	}
	return c
}

// checkNoGaps reads the whole topic and fails when a task's sequence of
// counter values ("task-<t>-<n>") has a hole.
func checkNoGaps(t *testing.T, ctx context.Context, brokers, topic string, tasks int) {
	t.Helper()
	seen := readCounters(t, ctx, brokers, topic)
	records := 0
	for _, nums := range seen {
		for _, c := range nums {
			records += c
		}
	}
	dups := 0
	for task := range tasks {
		nums := slices.Sorted(maps.Keys(seen[task]))
		if len(nums) == 0 {
			t.Errorf("task %d produced nothing", task)
			continue
		}
		for i, n := range nums {
			if int64(i) != n {
				t.Errorf("task %d: record %d is missing (have %d numbers up to %d)", task, i, len(nums), nums[len(nums)-1])
				break
			}
		}
		for _, c := range seen[task] {
			dups += c - 1
		}
	}
	keys := make([]string, 0, len(seen))
	for task := range seen {
		keys = append(keys, strconv.Itoa(task))
	}
	sort.Strings(keys)
	t.Logf("read %d records of %d tasks; %d delivered more than once (at-least-once: since the last offset commit of a moved task)", records, len(keys), dups)
}

func reached(got, want map[int32]int64) bool {
	for p, end := range want {
		if got[p] < end {
			return false
		}
	}
	return true
}
