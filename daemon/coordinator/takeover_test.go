package coordinator

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/raftstore"
	"github.com/kcd-project/kcd/raft/rafttest"
)

// asMember is a Raft node seen as member id leading term: two coordinators
// on one store, one after the other, are an old leader and a new one.
type asMember struct {
	*raft.Node
	id, term uint64
}

func (r asMember) ID() uint64     { return r.id }
func (r asMember) Term() uint64   { return r.term }
func (r asMember) IsLeader() bool { return true }

// beater heartbeats workers to a coordinator every 50 ms, each from the
// time set for it on (none before one is set).
type beater struct {
	mu    sync.Mutex
	coord *Coordinator
	from  map[string]time.Time
	infos map[string]WorkerInfo
}

func (b *beater) run(ctx context.Context) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b.mu.Lock()
		coord, now := b.coord, time.Now()
		var due []WorkerInfo
		for id, at := range b.from {
			if !now.Before(at) {
				due = append(due, b.infos[id])
			}
		}
		b.mu.Unlock()
		if coord == nil {
			continue
		}
		for _, w := range due {
			hctx, cancel := context.WithTimeout(ctx, time.Second)
			// Running nothing, having seen every revision: a unit revoked
			// from it is released at once. Refused until coord leads.
			_, _ = coord.Heartbeat(hctx, Heartbeat{Worker: w, SeenRevision: math.MaxInt64})
			cancel()
		}
	}
}

// set makes b heartbeat coord, each worker from its time in from.
func (b *beater) set(coord *Coordinator, from map[string]time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.coord, b.from = coord, from
}

// A new leader's coordinator carries on with the stored assignment as it
// is. Workers whose first heartbeat to it comes late, up to 60 % of the
// session timeout plus fence margin after it started, lose nothing, and
// it rebalances nothing while it waits for them. A worker that died with
// the old leader is given that whole grace, from the takeover: its units
// move then, not earlier. One worker carries the new leader's node id,
// which does not make it the leader's worker (the new leader runs none).
func TestNewLeaderAdoptsTheAssignmentAsItIs(t *testing.T) {
	const (
		sessionTimeout = 2 * time.Second
		fenceMargin    = 500 * time.Millisecond
		grace          = sessionTimeout + fenceMargin
		conns, tasks   = 20, 10
		units          = conns * (tasks + 1)
		workers        = 10
		dead           = "w09"
	)
	rc := rafttest.NewCluster(t, 1, nil)
	node := rc.Leader(10 * time.Second)
	st := raftstore.New(node)
	t.Cleanup(func() { st.Close() })
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })

	cs := connectstore.New(st)
	for i := range conns {
		name := fmt.Sprintf("gen-%02d", i)
		if _, err := cs.CreateConnector(ctx, name, map[string]string{"connector.class": "x"}, connectstore.StateRunning); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.SetTasks(ctx, name, make([]map[string]string, tasks), nil); err != nil {
			t.Fatal(err)
		}
	}
	b := &beater{infos: map[string]WorkerInfo{}}
	all := map[string]time.Time{}
	for i := range workers {
		id := fmt.Sprintf("w%02d", i)
		b.infos[id] = WorkerInfo{ID: id, Weight: 1, NodeID: uint64(10 + i)}
		all[id] = time.Time{}
	}
	b.infos["w03"] = WorkerInfo{ID: "w03", Weight: 1, NodeID: 2} // the new leader's id
	wg.Add(1)
	go func() { defer wg.Done(); b.run(ctx) }()

	start := func(id, term uint64) (*Coordinator, context.CancelFunc, chan struct{}) {
		c, err := New(Config{Store: st, Raft: asMember{node, id, term}, SessionTimeout: sessionTimeout, FenceMargin: fenceMargin,
			Logger: rafttest.Logger()})
		if err != nil {
			t.Fatal(err)
		}
		cctx, ccancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); c.Run(cctx) }()
		return c, ccancel, done
	}
	even := func(owners map[Unit]string) bool {
		n := map[string]int{}
		for _, w := range owners {
			n[w]++
		}
		for id := range b.infos {
			if n[id] != units/workers {
				return false
			}
		}
		return len(owners) == units
	}

	// The old leader, member 1, spreads the units evenly.
	old, stopOld, oldDone := start(1, 1)
	b.set(old, all)
	waitFor(t, 20*time.Second, "the old leader to spread every unit evenly", func() bool {
		owners, revokes := storedOwners(t, st)
		return even(owners) && len(revokes) == 0
	})

	// It dies, with w09. The new leader, member 2, takes over; the live
	// workers' first heartbeats reach it one after another, the last
	// 60 % into the grace.
	stopOld()
	<-oldDone
	b.set(nil, nil)
	before, _ := storedOwners(t, st)
	started := time.Now()
	next, _, _ := start(2, 2)
	from := map[string]time.Time{}
	for i := range workers - 1 {
		from[fmt.Sprintf("w%02d", i)] = started.Add(time.Duration(i) * grace * 6 / 10 / (workers - 2))
	}
	b.set(next, from)

	var movedAt time.Time
	waitFor(t, 20*time.Second, "the dead worker's units to move and nothing else to", func() bool {
		owners, revokes := storedOwners(t, st)
		left := 0
		for u, w := range before {
			switch {
			case w == dead:
				if owners[u] == dead {
					left++
				}
			case owners[u] != w:
				t.Fatalf("%s moved off %s, a live worker, to %q %v after the takeover", u, w, owners[u], time.Since(started))
			case revokes[u] != (Revoke{}):
				t.Fatalf("%s is being revoked from %s, a live worker, %v after the takeover: %+v", u, w, time.Since(started), revokes[u])
			}
		}
		if left < units/workers && movedAt.IsZero() {
			movedAt = time.Now()
		}
		if left > 0 {
			return false
		}
		plan, err := next.Plan(ctx, "")
		return err == nil && len(plan.Moves) == 0 && len(revokes) == 0
	})
	if took := movedAt.Sub(started); took < grace {
		t.Errorf("the dead worker's units moved %v after the takeover began, within the grace of %v", took, grace)
	}
	t.Logf("the dead worker's units moved %v after the takeover began (grace %v)", movedAt.Sub(started).Round(time.Millisecond), grace)
}
