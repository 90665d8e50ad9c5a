package raft_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/raft/rafttest"
	"github.com/kcd-project/kcd/store"
)

// Fault tests on an in-process cluster: partitions, message loss,
// duplication and delay, crashes and restarts, snapshot catch-up. Timeouts
// are generous and every expectation is polled for, so that a slow (or
// -race) run takes longer rather than fails.

// A leader cut off in a minority commits nothing; the majority elects a new
// leader and goes on; after the heal the old leader follows, its uncommitted
// entry is gone, and every node holds the same state.
func TestFaultMinorityPartitionCannotCommit(t *testing.T) {
	c := rafttest.NewCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for i := range 10 {
		mustPutOnLeader(ctx, t, c, fmt.Sprintf("before/%d", i), "v")
	}
	// Isolate the leader, making sure it still led (in term oldTerm) once
	// cut off: any later leader then has a later term.
	var old *raft.Node
	var oldTerm uint64
	for attempt := 1; ; attempt++ {
		old = c.Leader(10 * time.Second)
		oldTerm = old.Term()
		c.Net().Isolate(old.ID())
		if old.IsLeader() && old.Term() == oldTerm {
			break
		}
		c.Net().Heal() // leadership moved meanwhile
		if attempt == 10 {
			t.Fatal("leadership keeps moving")
		}
	}
	pctx, pcancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	_, err := putKV(pctx, old, "minority/x", "must not commit")
	pcancel()
	if err == nil {
		t.Fatal("the isolated leader committed a write")
	}
	t.Logf("write on the isolated leader: %v", err)
	rctx, rcancel := context.WithTimeout(ctx, time.Second)
	err = old.LinearizableRead(rctx)
	rcancel()
	if err == nil {
		t.Fatal("the isolated node served a linearizable read")
	}

	// The majority elects a leader of a later term and commits.
	var lead *raft.Node
	waitFor(t, 10*time.Second, "a leader in the majority", func() bool {
		lead = currentLeader(c, old.ID())
		return lead != nil && lead.Term() > oldTerm
	})
	for i := range 10 {
		mustPutOnLeader(ctx, t, c, fmt.Sprintf("after/%d", i), "w", old.ID())
	}
	// Nothing of that reaches the old leader while it is cut off; CheckQuorum
	// has made it step down by itself.
	if _, found, _ := old.FSM().Get("after/0"); found {
		t.Fatal("the isolated node applied a write of the majority")
	}
	waitFor(t, 10*time.Second, "the isolated leader to step down", func() bool { return !old.IsLeader() })

	c.Net().Heal()
	waitFor(t, 10*time.Second, "the old leader to follow the new one", func() bool {
		l := currentLeader(c)
		return l != nil && l.ID() != old.ID() && old.Leader() == l.ID() && old.Term() == l.Term()
	})
	waitConverged(t, c, 3, 20*time.Second)
	for _, n := range c.Nodes() {
		if _, found, _ := n.FSM().Get("minority/x"); found {
			t.Errorf("node %d applied the write proposed in the minority", n.ID())
		}
		if _, found, _ := n.FSM().Get("after/9"); !found {
			t.Errorf("node %d lacks a write of the majority", n.ID())
		}
	}
}

// Writes commit through a network that loses, duplicates and delays
// messages, and every node ends up with the same state.
func TestFaultLossyNetworkConverges(t *testing.T) {
	c := rafttest.NewCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c.Leader(10 * time.Second)
	net := c.Net()
	phases := []struct {
		name   string
		inject func()
	}{
		{"drop 25%", func() { net.Drop(0, 0, 0.25) }},
		{"duplicate 50%", func() { net.Duplicate(0.5) }},
		{"delay 1-30ms", func() { net.Delay(0, 0, time.Millisecond, 30*time.Millisecond) }},
		{"drop 20%, duplicate 30%, delay 0-20ms", func() {
			net.Drop(0, 0, 0.2)
			net.Duplicate(0.3)
			net.Delay(0, 0, 0, 20*time.Millisecond)
		}},
	}
	acked := map[string]string{}
	for p, phase := range phases {
		phase.inject()
		began := time.Now()
		// Every node writes its own keys concurrently, retrying until the
		// write is acknowledged (a retry writes the same value again).
		var mu sync.Mutex
		var wg sync.WaitGroup
		for id := uint64(1); id <= 3; id++ {
			n := c.Node(id)
			wg.Go(func() {
				for i := range 10 {
					key, value := fmt.Sprintf("lossy/%d/%d/%02d", p, id, i), fmt.Sprintf("v%d", i)
					if err := putRetry(ctx, n, key, value); err != nil {
						t.Errorf("%s: node %d: put %s: %v", phase.name, id, key, err)
						return
					}
					mu.Lock()
					acked[key] = value
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		t.Logf("%s: 30 writes acknowledged in %v", phase.name, time.Since(began).Round(time.Millisecond))
		net.Heal()
		if t.Failed() {
			return
		}
	}
	waitConverged(t, c, 3, 20*time.Second)
	checkAcked(ctx, t, c, acked)
}

// Every node in turn (the leader first) crashes and restarts from its data
// dir while a writer keeps writing: no acknowledged write is lost, and the
// nodes converge.
func TestFaultRollingCrashRestart(t *testing.T) {
	c := rafttest.NewCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	first := c.Leader(10 * time.Second).ID()
	order := []uint64{first}
	for id := uint64(1); id <= 3; id++ {
		if id != first {
			order = append(order, id)
		}
	}

	// The writer writes unique keys through random running nodes; it keeps
	// what was acknowledged. A write of unknown outcome is not retried: it
	// may or may not be there, and the check only concerns acknowledged ones.
	var mu sync.Mutex
	acked := map[string]string{}
	stop := make(chan struct{})
	var stopOnce sync.Once
	var wg sync.WaitGroup
	stopWriter := func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }
	t.Cleanup(stopWriter) // before the cluster's cleanup, should the test fail
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			n := c.Node(uint64(rand.IntN(3)) + 1)
			if n == nil {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			key, value := fmt.Sprintf("roll/%04d", i), fmt.Sprint(i)
			wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
			if _, err := putKV(wctx, n, key, value); err == nil {
				mu.Lock()
				acked[key] = value
				mu.Unlock()
			}
			wcancel()
		}
	})
	countAcked := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	// waitWrites waits until the writer got more writes acknowledged.
	waitWrites := func(more int, what string) {
		want := countAcked() + more
		waitFor(t, 20*time.Second, what, func() bool { return countAcked() >= want })
	}

	for _, id := range order {
		waitWrites(12, fmt.Sprintf("writes before crashing node %d", id))
		wasLeader := c.Node(id).IsLeader()
		c.Kill(id)
		waitWrites(12, fmt.Sprintf("writes while node %d is down (leader: %v)", id, wasLeader))
		n := c.Start(id, false)
		waitWrites(12, fmt.Sprintf("writes after restarting node %d", id))
		// It catches up with what the others applied while it was down.
		if err := readBarrier(ctx, n, 20*time.Second); err != nil {
			t.Fatalf("node %d after restart: %v", id, err)
		}
	}
	stopWriter()
	t.Logf("%d writes acknowledged across 3 crashes", len(acked))
	waitConverged(t, c, 3, 20*time.Second)
	checkAcked(ctx, t, c, acked)
}

// A follower cut off while the others compact their logs catches up by
// snapshot after the heal, then follows the log again.
func TestFaultSnapshotCatchUpAfterPartition(t *testing.T) {
	logs := &logCapture{}
	c := rafttest.NewCluster(t, 3, func(cfg *raft.Config) {
		cfg.SnapshotEntries = 20
		cfg.SnapshotCatchUp = 5
		cfg.Logger = slog.New(logs.handler(cfg.Logger.Handler()))
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c.Leader(10 * time.Second)
	for i := range 10 {
		mustPutOnLeader(ctx, t, c, fmt.Sprintf("early/%d", i), "v")
	}
	f := c.Follower()
	// Nothing more to apply once the follower is where the leader is.
	waitFor(t, 10*time.Second, "the follower to apply the early writes", func() bool {
		l := currentLeader(c)
		return l != nil && l != f && f.AppliedIndex() == l.AppliedIndex()
	})

	snapsBefore := logs.count(f.ID(), "installed snapshot from the leader") // a slow start may need one
	c.Net().Isolate(f.ID())
	behind := f.AppliedIndex()
	for i := range 150 { // 7 snapshots of 20 entries, 5 kept
		mustPutOnLeader(ctx, t, c, fmt.Sprintf("missed/%03d", i), fmt.Sprint(i), f.ID())
	}
	lead := currentLeader(c, f.ID())
	if lead == nil {
		t.Fatal("no leader in the majority")
	}
	if got := f.AppliedIndex(); got != behind {
		t.Fatalf("the cut-off follower applied %d → %d", behind, got)
	}

	c.Net().Heal()
	waitFor(t, 20*time.Second, "the follower to catch up", func() bool {
		return f.AppliedIndex() >= lead.AppliedIndex()
	})
	if logs.count(f.ID(), "installed snapshot from the leader") == snapsBefore {
		t.Errorf("node %d caught up from %d to %d without installing a snapshot", f.ID(), behind, f.AppliedIndex())
	}
	for i := range 150 {
		kv, found, err := f.FSM().Get(fmt.Sprintf("missed/%03d", i))
		if err != nil || !found || string(kv.Value) != fmt.Sprint(i) {
			t.Fatalf("follower: missed/%03d = %q found=%v err=%v", i, kv.Value, found, err)
		}
	}
	// Back to ordinary replication.
	for i := range 10 {
		mustPutOnLeader(ctx, t, c, fmt.Sprintf("late/%d", i), "w")
	}
	waitConverged(t, c, 3, 20*time.Second)
	if _, found, _ := f.FSM().Get("late/9"); !found {
		t.Error("the follower does not apply new writes after the snapshot")
	}
}

// A proposal that reaches the leader twice (the network duplicated the
// follower's forwarded MsgProp) must still change the store once: raft
// appends both copies, and the state machine applies a request id once.
// Before it did, a put acknowledged at revision r was re-applied at r+1, and
// when the copy came after another client's write, an acknowledged write
// was lost.
func TestFaultDuplicatedProposalAppliedOnce(t *testing.T) {
	c := rafttest.NewCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c.Leader(10 * time.Second)
	f := c.Follower()
	c.Net().Duplicate(1)
	res, err := putKV(ctx, f, "dup/k", "v")
	if err != nil {
		t.Fatal(err)
	}
	// A second write through the same follower: the link to the leader is
	// FIFO, so by the time it is acknowledged the leader has seen both
	// copies of the first.
	if _, err := putKV(ctx, f, "dup/barrier", "x"); err != nil {
		t.Fatal(err)
	}
	kv, _, err := f.FSM().Get("dup/k")
	if err != nil {
		t.Fatal(err)
	}
	if kv.ModRevision != res.Rev {
		t.Errorf("put acknowledged at revision %d (index %d), but the key's ModRevision is now %d: the proposal was applied again",
			res.Rev, res.Index, kv.ModRevision)
	}
}

// --- helpers ---

func putKV(ctx context.Context, n *raft.Node, key, value string) (fsm.Result, error) {
	return n.Propose(ctx, fsm.Command{Kind: fsm.KindPut, Key: key, Value: []byte(value)})
}

// mustPutOnLeader writes through the current leader (not one of except),
// again through the next when leadership moves.
func mustPutOnLeader(ctx context.Context, t *testing.T, c *rafttest.Cluster, key, value string, except ...uint64) {
	t.Helper()
	for {
		l := currentLeader(c, except...)
		if l != nil {
			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := putKV(wctx, l, key, value)
			cancel()
			if err == nil {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("put %s: %v", key, err)
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("put %s: no leader: %v", key, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// putRetry writes key=value through n until it is acknowledged (or ctx
// ends); whatever failed is tried again, which writes the same value. A try
// times out soon: a proposal that a follower forwards and the network loses
// is never answered.
func putRetry(ctx context.Context, n *raft.Node, key, value string) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err := putKV(wctx, n, key, value)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readBarrier makes n's state machine current (a linearizable read),
// trying again for up to timeout: one try gives up after a few seconds
// without a leader.
func readBarrier(ctx context.Context, n *raft.Node, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := n.LinearizableRead(ctx)
		if err == nil || ctx.Err() != nil || errors.Is(err, raft.ErrStopped) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// currentLeader is a running node that believes it leads, of the highest
// term if several do, and none of except; nil when there is none.
func currentLeader(c *rafttest.Cluster, except ...uint64) *raft.Node {
	var best *raft.Node
	for _, n := range c.Nodes() {
		if n.IsLeader() && !slices.Contains(except, n.ID()) && (best == nil || n.Term() > best.Term()) {
			best = n
		}
	}
	return best
}

func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitConverged waits until size nodes run, have applied the same index and
// hold the same state machine contents (revisions included).
func waitConverged(t testing.TB, c *rafttest.Cluster, size int, timeout time.Duration) {
	t.Helper()
	type image struct {
		applied uint64
		rev     int64
		kvs     []store.KV
	}
	deadline := time.Now().Add(timeout)
	var why string
	for {
		nodes := c.Nodes()
		slices.SortFunc(nodes, func(a, b *raft.Node) int { return int(a.ID()) - int(b.ID()) })
		why = ""
		if len(nodes) != size {
			why = fmt.Sprintf("%d of %d nodes run", len(nodes), size)
		}
		var first image
		for i, n := range nodes {
			if why != "" {
				break
			}
			var im image
			im.applied = n.AppliedIndex()
			kvs, rev, err := n.FSM().Scan("", 0)
			if err != nil {
				why = fmt.Sprintf("node %d: scan: %v", n.ID(), err)
				break
			}
			im.kvs, im.rev = kvs, rev
			if n.AppliedIndex() != im.applied {
				why = fmt.Sprintf("node %d is applying", n.ID())
				break
			}
			if i == 0 {
				first = im
				continue
			}
			switch {
			case im.applied != first.applied:
				why = fmt.Sprintf("node %d applied %d, node %d applied %d", nodes[0].ID(), first.applied, n.ID(), im.applied)
			case im.rev != first.rev || !reflect.DeepEqual(im.kvs, first.kvs):
				why = fmt.Sprintf("at applied index %d node %d has revision %d and %d keys, node %d revision %d and %d keys",
					im.applied, nodes[0].ID(), first.rev, len(first.kvs), n.ID(), im.rev, len(im.kvs))
			}
		}
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nodes did not converge in %v: %s", timeout, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkAcked makes sure every node holds every acknowledged write, after a
// linearizable read.
func checkAcked(ctx context.Context, t *testing.T, c *rafttest.Cluster, acked map[string]string) {
	t.Helper()
	for _, n := range c.Nodes() {
		if err := readBarrier(ctx, n, 20*time.Second); err != nil {
			t.Fatalf("node %d: read barrier: %v", n.ID(), err)
		}
		lost := 0
		for key, value := range acked {
			kv, found, err := n.FSM().Get(key)
			if err != nil || !found || string(kv.Value) != value {
				if lost++; lost <= 5 {
					t.Errorf("node %d lost acknowledged write %s=%s: found=%v value=%q err=%v", n.ID(), key, value, found, kv.Value, err)
				}
			}
		}
		if lost > 0 {
			t.Errorf("node %d lost %d of %d acknowledged writes", n.ID(), lost, len(acked))
		}
	}
}

// logCapture counts log messages per node, passing them on to next.
type logCapture struct {
	mu   sync.Mutex
	msgs map[uint64][]string
}

func (l *logCapture) handler(next slog.Handler) slog.Handler {
	return &captureHandler{l: l, next: next}
}

func (l *logCapture) count(node uint64, msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs[node] {
		if strings.Contains(m, msg) {
			n++
		}
	}
	return n
}

type captureHandler struct {
	l    *logCapture
	next slog.Handler
	node uint64
}

func (h *captureHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelInfo || h.next.Enabled(ctx, level)
}

func (h *captureHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelInfo && h.node != 0 {
		h.l.mu.Lock()
		if h.l.msgs == nil {
			h.l.msgs = map[uint64][]string{}
		}
		h.l.msgs[h.node] = append(h.l.msgs[h.node], r.Message)
		h.l.mu.Unlock()
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *captureHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	for _, a := range as {
		if a.Key == "node" {
			if v, ok := a.Value.Any().(uint64); ok {
				c.node = v
			}
		}
	}
	c.next = h.next.WithAttrs(as)
	return &c
}

func (h *captureHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.next = h.next.WithGroup(name)
	return &c
}
