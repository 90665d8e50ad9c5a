package transport

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// memCluster joins ids to a fresh network, all peers of each other. Closing
// the network at the end lets synctest.Test prove no goroutine is left.
func memCluster(t *testing.T, opts []NetworkOption, ids ...uint64) (*Network, map[uint64]*MemTransport, map[uint64]*recorder) {
	t.Helper()
	n := NewNetwork(opts...)
	t.Cleanup(func() { n.Close() })
	trs, recs := map[uint64]*MemTransport{}, map[uint64]*recorder{}
	for _, id := range ids {
		recs[id] = newRecorder()
		tr, err := n.Transport(id, recs[id])
		if err != nil {
			t.Fatal(err)
		}
		trs[id] = tr
	}
	for _, a := range ids {
		for _, b := range ids {
			trs[a].AddPeer(b, "")
		}
	}
	return n, trs, recs
}

// send sends count messages from→to with Index first, first+1, ...
func send(tr *MemTransport, from, to, first uint64, count int) {
	for i := range uint64(count) {
		tr.Send([]*raftpb.Message{appMsg(from, to, first+i, nil)})
	}
}

// reach sends one message and reports whether it arrived.
func reach(trs map[uint64]*MemTransport, recs map[uint64]*recorder, from, to uint64) bool {
	before := recs[to].count(from)
	send(trs[from], from, to, 1, 1)
	synctest.Wait()
	return recs[to].count(from) > before
}

func TestNetworkDeliversInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, trs, recs := memCluster(t, nil, 1, 2, 3)
		for a := range trs {
			for b := range trs {
				if a != b {
					go send(trs[a], a, b, 1, 1000)
				}
			}
		}
		synctest.Wait()
		for a := range trs {
			for b := range trs {
				if a != b {
					wantSeq(t, recs[b].seqs(a), 1, 1000)
				}
			}
		}
		if st := trs[1].Stats()[2]; !st.Reachable || st.Sent != 1000 || st.Dropped != 0 || st.LastContact.IsZero() {
			t.Errorf("stats %+v", st)
		}
	})
}

func TestNetworkPartitionAndHeal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, trs, recs := memCluster(t, nil, 1, 2, 3)
		n.Partition([]uint64{1}, []uint64{2, 3})
		for _, c := range []struct {
			from, to uint64
			want     bool
		}{{1, 2, false}, {2, 1, false}, {1, 3, false}, {3, 1, false}, {2, 3, true}, {3, 2, true}} {
			if got := reach(trs, recs, c.from, c.to); got != c.want {
				t.Errorf("partitioned: %d→%d delivered=%v, want %v", c.from, c.to, got, c.want)
			}
		}
		if recs[1].unreachableCount(2) == 0 {
			t.Error("a partitioned sender got no unreachable report")
		}
		if st := trs[1].Stats()[2]; st.Reachable || st.Dropped == 0 {
			t.Errorf("partitioned link stats %+v", st)
		}

		// Nodes named in no group form a group of their own.
		n.Partition([]uint64{1})
		if reach(trs, recs, 1, 2) || !reach(trs, recs, 2, 3) {
			t.Error("Partition({1}) should cut 1 from 2 and 3 and keep 2↔3")
		}

		n.Heal()
		n.Isolate(3)
		if reach(trs, recs, 3, 1) || reach(trs, recs, 2, 3) || !reach(trs, recs, 1, 2) {
			t.Error("Isolate(3) should cut 3 only")
		}

		n.Heal()
		for a := range trs {
			for b := range trs {
				if a != b && !reach(trs, recs, a, b) {
					t.Errorf("healed: %d→%d not delivered", a, b)
				}
			}
		}
	})
}

func TestNetworkOneWayCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, trs, recs := memCluster(t, nil, 1, 2, 3)
		n.Cut(1, 2)
		if reach(trs, recs, 1, 2) {
			t.Error("1→2 delivered across a cut")
		}
		if !reach(trs, recs, 2, 1) || !reach(trs, recs, 1, 3) {
			t.Error("a one-way cut stopped other traffic")
		}
		n.Cut(0, 3) // wildcard: nothing reaches 3
		if reach(trs, recs, 1, 3) || reach(trs, recs, 2, 3) || !reach(trs, recs, 3, 2) {
			t.Error("Cut(0, 3) should stop everything to 3 and nothing from it")
		}
	})
}

func TestNetworkPartitionLosesInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, trs, recs := memCluster(t, nil, 1, 2)
		n.Delay(1, 2, 50*time.Millisecond, 50*time.Millisecond)
		send(trs[1], 1, 2, 1, 10)
		time.Sleep(10 * time.Millisecond)
		n.Isolate(2)
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if got := recs[2].count(1); got != 0 {
			t.Errorf("%d messages crossed a partition made while they were in flight", got)
		}
	})
}

// delivered returns the sequence numbers 2 got from 1 after sending count
// messages through a lossy, duplicating network seeded with seed.
func delivered(t *testing.T, seed uint64, count int) []uint64 {
	var got []uint64
	synctest.Test(t, func(t *testing.T) {
		n, trs, recs := memCluster(t, []NetworkOption{WithSeed(seed), WithLinkQueue(count * 2)}, 1, 2)
		n.Drop(1, 2, 0.3)
		n.Duplicate(0.2)
		send(trs[1], 1, 2, 1, count)
		synctest.Wait()
		got = recs[2].seqs(1)
	})
	return got
}

func TestNetworkDropAndDuplicateRates(t *testing.T) {
	const count = 10000
	got := delivered(t, 42, count)
	// Expected deliveries: count × 0.7 × 1.2 = 8400, σ ≈ 60.
	if d := math.Abs(float64(len(got)) - 8400); d > 300 {
		t.Errorf("%d deliveries, want 8400 ± 300", len(got))
	}
	distinct := slices.Compact(slices.Clone(got))
	if d := math.Abs(float64(len(distinct)) - 7000); d > 250 {
		t.Errorf("%d distinct deliveries, want 7000 ± 250 (30%% dropped)", len(distinct))
	}
	if !slices.IsSorted(got) {
		t.Error("a link reordered messages")
	}
	if again := delivered(t, 42, count); !slices.Equal(got, again) {
		t.Error("the same seed gave a different outcome")
	}
	if other := delivered(t, 43, count); slices.Equal(got, other) {
		t.Error("another seed gave the same outcome")
	}
}

func TestNetworkDelay(t *testing.T) {
	const lo, hi = 10 * time.Millisecond, 20 * time.Millisecond
	// Sent 1 ms apart, a message often waits behind an earlier, slower one
	// (links are FIFO) but never beyond hi; sent 25 ms apart, the delays are
	// the drawn ones, uniform in [lo, hi].
	for _, gap := range []time.Duration{time.Millisecond, 25 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			n, trs, recs := memCluster(t, []NetworkOption{WithSeed(7)}, 1, 2)
			n.Delay(1, 2, lo, hi)
			const count = 400
			sent := map[uint64]time.Time{}
			for i := range uint64(count) {
				sent[i] = time.Now()
				send(trs[1], 1, 2, i, 1)
				time.Sleep(gap)
			}
			time.Sleep(hi)
			synctest.Wait()
			r := recs[2]
			r.mu.Lock()
			defer r.mu.Unlock()
			if len(r.msgs) != count {
				t.Fatalf("%d of %d delivered", len(r.msgs), count)
			}
			var sum time.Duration
			for i, m := range r.msgs {
				if m.GetIndex() != uint64(i) {
					t.Fatalf("message %d delivered as number %d", m.GetIndex(), i)
				}
				d := r.at[i].Sub(sent[m.GetIndex()])
				if d < lo || d > hi {
					t.Fatalf("gap %v: message %d took %v, want within [%v, %v]", gap, i, d, lo, hi)
				}
				sum += d
			}
			// The mean of 400 uniform draws: 15 ms, σ ≈ 0.15 ms.
			if mean := sum / count; gap > hi && (mean < 14*time.Millisecond || mean > 16*time.Millisecond) {
				t.Errorf("mean delay %v, want about 15ms", mean)
			}
		})
	}
}

// gated blocks Process until the gate opens, like a busy raft node.
type gated struct {
	*recorder
	gate chan struct{}
}

func (g gated) Process(ctx context.Context, m *raftpb.Message) error {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.recorder.Process(ctx, m)
}

func TestNetworkLinkQueueBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(WithLinkQueue(10))
		defer n.Close()
		rec1 := newRecorder()
		a, _ := n.Transport(1, rec1)
		slow := gated{newRecorder(), make(chan struct{})}
		if _, err := n.Transport(2, slow); err != nil {
			t.Fatal(err)
		}
		a.AddPeer(2, "")
		send(a, 1, 2, 1, 100) // must not block although 2 takes nothing
		synctest.Wait()
		st := a.Stats()[2]
		if st.QueueLen > 10 || st.Dropped < 89 || rec1.unreachableCount(2) < 89 {
			t.Errorf("stats %+v, %d unreachable reports: want ≤ 10 queued, ≥ 89 dropped and reported", st, rec1.unreachableCount(2))
		}
		close(slow.gate)
		synctest.Wait()
		// Everything was either dropped at once or delivered later (10 queued,
		// perhaps 1 more already taken by the link before the queue filled).
		if got := slow.count(1); got+int(st.Dropped) != 100 || got > 11 {
			t.Errorf("%d delivered after the receiver caught up, %d dropped; want ≤ 11 and 100 in all", got, st.Dropped)
		}
	})
}

func TestNetworkSnapshotReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, trs, recs := memCluster(t, nil, 1, 2)
		trs[1].Send([]*raftpb.Message{snapMsg(1, 2, []byte("state"))})
		synctest.Wait()
		n.Cut(1, 2)
		trs[1].Send([]*raftpb.Message{snapMsg(1, 2, []byte("state"))})
		synctest.Wait()
		want := []raft.SnapshotStatus{raft.SnapshotFinish, raft.SnapshotFailure}
		if got := recs[1].snapshots(); !slices.Equal(got, want) {
			t.Errorf("reports %v, want %v", got, want)
		}
	})
}

func TestNetworkRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, trs, recs := memCluster(t, nil, 1, 2)
		if _, err := n.Transport(2, newRecorder()); !errors.Is(err, ErrNodeExists) {
			t.Errorf("second live transport for 2: %v, want ErrNodeExists", err)
		}
		trs[2].Close()
		if reach(trs, recs, 1, 2) || recs[1].unreachableCount(2) == 0 {
			t.Error("a closed node was reached, or its sender not told")
		}
		rec := newRecorder()
		tr2, err := n.Transport(2, rec)
		if err != nil {
			t.Fatal(err)
		}
		tr2.AddPeer(1, "")
		send(trs[1], 1, 2, 1, 1)
		synctest.Wait()
		if rec.count(1) != 1 {
			t.Error("the restarted node is not reached")
		}
	})
}
