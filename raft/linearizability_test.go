package raft_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/raftstore"
	"github.com/kcd-project/kcd/raft/rafttest"
)

// The linearizability check: clients run concurrent gets, puts and
// compare-and-sets on a few keys through raftstore stores on every node
// (followers forward writes and read through ReadIndex) while a nemesis
// isolates and partitions nodes, cuts links one way, drops and delays
// messages, crashes and restarts nodes, and moves leadership; then, after a
// heal and a final read of every key on every node, porcupine checks the
// recorded history against rafttest.KVModel.
//
// KCD_LINCHECK_SECONDS sets the length of the faulty phase,
// and KCD_LINCHECK_SEED the random choices (the timing still varies).

func TestLinearizability3Nodes(t *testing.T) {
	runLinearizability(t, 3, linDuration(t, 8*time.Second), nil)
}

// Five nodes, and frequent snapshots with a short log behind them, so that
// nodes that were cut off or down catch up by snapshot.
func TestLinearizability5Nodes(t *testing.T) {
	runLinearizability(t, 5, linDuration(t, 5*time.Second), func(cfg *raft.Config) {
		cfg.SnapshotEntries = 50
		cfg.SnapshotCatchUp = 10
	})
}

func linDuration(t *testing.T, def time.Duration) time.Duration {
	if s := os.Getenv("KCD_LINCHECK_SECONDS"); s != "" {
		secs, err := strconv.ParseFloat(s, 64)
		if err != nil || secs <= 0 {
			t.Fatalf("KCD_LINCHECK_SECONDS=%q: want a positive number", s)
		}
		return time.Duration(secs * float64(time.Second))
	}
	if testing.Short() {
		return def / 3
	}
	return def
}

func linSeed(t *testing.T) uint64 {
	if s := os.Getenv("KCD_LINCHECK_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("KCD_LINCHECK_SEED=%q: %v", s, err)
		}
		return seed
	}
	return uint64(time.Now().UnixNano())
}

const (
	linClients   = 8
	linOpTimeout = time.Second
)

var linKeys = []string{"lin/a", "lin/b", "lin/c", "lin/d", "lin/e"}

func runLinearizability(t *testing.T, size int, dur time.Duration, tweak func(*raft.Config)) {
	seed := linSeed(t)
	t.Logf("%d nodes, %v of faults, seed %d (KCD_LINCHECK_SEED)", size, dur, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	c := rafttest.NewCluster(t, size, tweak)
	c.Leader(10 * time.Second)
	h := rafttest.NewHistory()

	// Clients: each op goes through a random running node.
	stop := make(chan struct{})
	var stopOnce sync.Once
	var wg sync.WaitGroup
	stopClients := func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }
	t.Cleanup(stopClients) // before the cluster's cleanup, should the test fail
	for i := range linClients {
		crng := rand.New(rand.NewPCG(seed, uint64(i)+1))
		wg.Go(func() { linClient(c, h, size, i, crng, stop) })
	}

	// The nemesis runs here, on the test goroutine (it starts nodes, which
	// may fail the test).
	began := time.Now()
	faults := linNemesis(t, c, h, size, rng, began.Add(dur))
	stopClients()
	elapsed := time.Since(began)

	// Heal, and read every key on every node: the final reads are part of
	// the history, so porcupine also checks that no acknowledged write was
	// lost.
	c.Net().Heal()
	c.Leader(10 * time.Second)
	final := h.NewClient()
	for id := uint64(1); id <= uint64(size); id++ {
		n := c.Node(id)
		s := raftstore.New(n)
		for _, key := range linKeys {
			deadline := time.Now().Add(15 * time.Second)
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, _, err := final.Get(ctx, s, fmt.Sprintf("node %d (final)", id), key)
				cancel()
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("final read of %s on node %d: %v", key, id, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		s.Close()
	}

	st := h.Stats()
	t.Logf("recorded %s in %v, under %d faults", st, elapsed.Round(time.Millisecond), faults)
	if st.Puts+st.CASes-st.Unknown < 20 || st.Gets < 20 { // a broken run, not a slow one
		t.Errorf("too few completed operations to mean much: %s", st)
	}
	h.Check(t, 60*time.Second)
	waitConverged(t, c, size, 20*time.Second)
}

// linClient runs random operations until stop is closed.
func linClient(c *rafttest.Cluster, h *rafttest.History, size, idx int, rng *rand.Rand, stop <-chan struct{}) {
	rec := h.NewClient()
	stores := map[*raft.Node]*raftstore.Store{}
	defer func() {
		for _, s := range stores {
			s.Close()
		}
	}()
	lastRev := map[string]int64{} // the ModRevision this client last saw, per key
	for seq := 0; ; seq++ {
		select {
		case <-stop:
			return
		default:
		}
		id := uint64(rng.IntN(size)) + 1
		n := c.Node(id)
		if n == nil { // down
			time.Sleep(5 * time.Millisecond)
			continue
		}
		s := stores[n]
		if s == nil {
			s = raftstore.New(n)
			stores[n] = s
		}
		via := fmt.Sprintf("node %d", id)
		key := linKeys[rng.IntN(len(linKeys))]
		value := fmt.Sprintf("c%d-%d", idx, seq) // unique
		ctx, cancel := context.WithTimeout(context.Background(), linOpTimeout)
		switch p := rng.IntN(10); {
		case p < 4:
			if kv, found, err := rec.Get(ctx, s, via, key); err == nil {
				lastRev[key] = 0
				if found {
					lastRev[key] = kv.ModRevision
				}
			}
		case p < 7:
			if rev, err := rec.Put(ctx, s, via, key, value); err == nil {
				lastRev[key] = rev
			}
		default:
			// On the revision last seen (0: create if absent), which is
			// often stale: such compare-and-sets must fail.
			if rev, ok, err := rec.CompareAndSet(ctx, s, via, key, lastRev[key], value); err == nil && ok {
				lastRev[key] = rev
			}
		}
		cancel()
	}
}

// linNemesis injects one fault after another until deadline and returns how
// many; it leaves every node running, and the network as the last fault
// left it.
func linNemesis(t *testing.T, c *rafttest.Cluster, h *rafttest.History, size int, rng *rand.Rand, deadline time.Time) int {
	net := c.Net()
	ids := make([]uint64, size)
	for i := range ids {
		ids[i] = uint64(i) + 1
	}
	pause := func(lo, hi time.Duration) { time.Sleep(lo + rand.N(hi-lo+1)) }
	// target is the leader (of the highest term) or, without one, any node.
	target := func() uint64 {
		if l := currentLeader(c); l != nil {
			return l.ID()
		}
		return ids[rng.IntN(size)]
	}
	// split puts target and size/2-1 others (a minority) apart from the
	// rest, or, with targetInMinority false, size/2 nodes other than target.
	split := func(target uint64, targetInMinority bool) (minority []uint64) {
		others := make([]uint64, 0, size-1)
		for _, id := range ids {
			if id != target {
				others = append(others, id)
			}
		}
		rng.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
		if targetInMinority {
			return append([]uint64{target}, others[:size/2-1]...)
		}
		return others[:size/2]
	}
	type fault struct {
		name string
		do   func() (desc string, undo func())
	}
	faults := []fault{
		{"isolate the leader", func() (string, func()) {
			id := target()
			net.Isolate(id)
			return fmt.Sprintf("isolate %d", id), net.Heal
		}},
		{"leader in a minority", func() (string, func()) {
			minority := split(target(), true)
			net.Partition(minority)
			return fmt.Sprintf("partition %v | rest", minority), net.Heal
		}},
		{"leader in the majority", func() (string, func()) {
			minority := split(target(), false)
			net.Partition(minority)
			return fmt.Sprintf("partition %v | rest", minority), net.Heal
		}},
		{"leader cannot send", func() (string, func()) {
			id := target()
			net.Cut(id, 0)
			return fmt.Sprintf("cut %d → all", id), net.Heal
		}},
		{"a node cannot receive", func() (string, func()) {
			id := ids[rng.IntN(size)]
			net.Cut(0, id)
			return fmt.Sprintf("cut all → %d", id), net.Heal
		}},
		{"drop", func() (string, func()) {
			net.Drop(0, 0, 0.25)
			return "drop 25%", net.Heal
		}},
		{"delay", func() (string, func()) {
			net.Delay(0, 0, 2*time.Millisecond, 40*time.Millisecond)
			return "delay 2-40ms", net.Heal
		}},
		{"kill the leader", func() (string, func()) {
			id := target()
			c.Kill(id)
			return fmt.Sprintf("kill %d", id), func() { c.Start(id, false) }
		}},
		{"kill a follower", func() (string, func()) {
			lead := target()
			id := ids[rng.IntN(size)]
			for id == lead {
				id = ids[rng.IntN(size)]
			}
			c.Kill(id)
			return fmt.Sprintf("kill %d", id), func() { c.Start(id, false) }
		}},
		{"transfer leadership", func() (string, func()) {
			l := currentLeader(c)
			if l == nil {
				return "transfer leadership: no leader", func() {}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := l.TransferLeadership(ctx, 0); err != nil {
				return fmt.Sprintf("transfer leadership from %d: %v", l.ID(), err), func() {}
			}
			return fmt.Sprintf("transfer leadership from %d to %d", l.ID(), l.Leader()), func() {}
		}},
	}
	{
		faults = append(faults, fault{"duplicate", func() (string, func()) {
			net.Duplicate(0.3)
			net.Delay(0, 0, 0, 15*time.Millisecond)
			return "duplicate 30%, delay 0-15ms", net.Heal
		}})
	}
	count := 0
	began := time.Now()
	for time.Now().Before(deadline) {
		pause(150*time.Millisecond, 400*time.Millisecond) // calm: let stuck ops finish
		f := faults[rng.IntN(len(faults))]
		end := h.Fault()
		desc, undo := f.do()
		pause(300*time.Millisecond, 900*time.Millisecond)
		undo()
		end(desc)
		count++
		t.Logf("fault %d (%s) at %v: %s", count, f.name, time.Since(began).Round(time.Millisecond), desc)
	}
	return count
}

// TestKVModel makes sure the model (and the way the history records
// unknown outcomes) accepts what it must and rejects what it must: a check
// that cannot fail proves nothing.
func TestKVModel(t *testing.T) {
	type op struct {
		client int
		in     rafttest.KVInput
		out    rafttest.KVOutput
		call   int64
		ret    int64 // math.MaxInt64: never returned
	}
	get := func(key string) rafttest.KVInput { return rafttest.KVInput{Op: rafttest.OpGet, Key: key} }
	put := func(key, v string) rafttest.KVInput { return rafttest.KVInput{Op: rafttest.OpPut, Key: key, Value: v} }
	cas := func(key string, expect int64, v string) rafttest.KVInput {
		return rafttest.KVInput{Op: rafttest.OpCAS, Key: key, Value: v, Expect: expect}
	}
	seen := func(v string, rev int64) rafttest.KVOutput { return rafttest.KVOutput{Found: true, Value: v, Rev: rev} }
	absent := rafttest.KVOutput{}
	acked := func(rev int64) rafttest.KVOutput { return rafttest.KVOutput{Rev: rev, OK: true} }
	failed := rafttest.KVOutput{}
	unknown := rafttest.KVOutput{Unknown: true}
	const never = math.MaxInt64

	cases := []struct {
		name string
		ops  []op
		want bool
	}{
		{"read your write", []op{
			{client: 0, in: put("k", "a"), out: acked(5), call: 0, ret: 10},
			{client: 0, in: get("k"), out: seen("a", 5), call: 11, ret: 20},
		}, true},
		{"stale read after an acknowledged write", []op{
			{client: 0, in: put("k", "a"), out: acked(5), call: 0, ret: 10},
			{client: 1, in: put("k", "b"), out: acked(6), call: 11, ret: 20},
			{client: 2, in: get("k"), out: seen("a", 5), call: 21, ret: 30},
		}, false},
		{"lost acknowledged write", []op{
			{client: 0, in: put("k", "a"), out: acked(5), call: 0, ret: 10},
			{client: 1, in: get("k"), out: absent, call: 11, ret: 20},
		}, false},
		{"concurrent read may see either", []op{
			{client: 0, in: put("k", "a"), out: acked(5), call: 0, ret: 10},
			{client: 1, in: put("k", "b"), out: acked(6), call: 11, ret: 30},
			{client: 2, in: get("k"), out: seen("a", 5), call: 12, ret: 20},
		}, true},
		{"unknown write seen later", []op{
			{client: 0, in: put("k", "a"), out: unknown, call: 0, ret: never},
			{client: 1, in: get("k"), out: absent, call: 1, ret: 2},
			{client: 1, in: get("k"), out: seen("a", 9), call: 3, ret: 4},
			{client: 2, in: cas("k", 9, "b"), out: acked(10), call: 5, ret: 6},
		}, true},
		{"unknown write never seen", []op{
			{client: 0, in: put("k", "a"), out: unknown, call: 0, ret: never},
			{client: 1, in: put("k", "b"), out: acked(3), call: 1, ret: 2},
			{client: 1, in: get("k"), out: seen("b", 3), call: 3, ret: 4},
		}, true},
		{"unknown write seen before it was made", []op{
			{client: 1, in: get("k"), out: seen("a", 1), call: 0, ret: 1},
			{client: 0, in: put("k", "a"), out: unknown, call: 2, ret: never},
		}, false},
		{"value reappears after being overwritten", []op{
			{client: 0, in: put("k", "a"), out: acked(1), call: 0, ret: 1},
			{client: 0, in: put("k", "b"), out: acked(2), call: 2, ret: 3},
			{client: 0, in: get("k"), out: seen("a", 3), call: 4, ret: 5},
		}, false},
		{"cas on the current revision must succeed", []op{
			{client: 0, in: put("k", "a"), out: acked(4), call: 0, ret: 1},
			{client: 0, in: cas("k", 4, "b"), out: failed, call: 2, ret: 3},
		}, false},
		{"cas on a stale revision must fail", []op{
			{client: 0, in: put("k", "a"), out: acked(4), call: 0, ret: 1},
			{client: 0, in: put("k", "b"), out: acked(5), call: 2, ret: 3},
			{client: 0, in: cas("k", 4, "c"), out: acked(6), call: 4, ret: 5},
		}, false},
		{"create if absent twice", []op{
			{client: 0, in: cas("k", 0, "a"), out: acked(1), call: 0, ret: 1},
			{client: 1, in: cas("k", 0, "b"), out: acked(2), call: 2, ret: 3},
		}, false},
		{"create if absent races", []op{
			{client: 0, in: cas("k", 0, "a"), out: acked(1), call: 0, ret: 3},
			{client: 1, in: cas("k", 0, "b"), out: failed, call: 1, ret: 2},
			{client: 1, in: get("k"), out: seen("a", 1), call: 4, ret: 5},
		}, true},
		{"revision goes back", []op{
			{client: 0, in: put("k", "a"), out: acked(7), call: 0, ret: 1},
			{client: 0, in: put("k", "b"), out: acked(6), call: 2, ret: 3},
		}, false},
		{"keys are independent", []op{
			{client: 0, in: put("x", "a"), out: acked(1), call: 0, ret: 1},
			{client: 0, in: put("y", "b"), out: acked(2), call: 2, ret: 3},
			{client: 0, in: get("x"), out: seen("a", 1), call: 4, ret: 5},
		}, true},
	}
	for _, tc := range cases {
		var hist []porcupine.Operation
		for _, o := range tc.ops {
			hist = append(hist, porcupine.Operation{ClientId: o.client, Input: o.in, Call: o.call, Output: o.out, Return: o.ret})
		}
		got := porcupine.CheckOperationsTimeout(rafttest.KVModel(), hist, 10*time.Second)
		want := porcupine.Illegal
		if tc.want {
			want = porcupine.Ok
		}
		if got != want {
			t.Errorf("%s: %s, want %s", tc.name, got, want)
		}
	}
}
