package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/raftstore"
	"github.com/kcd-project/kcd/raft/rafttest"
	"github.com/kcd-project/kcd/store"
)

// freezer freezes chosen loops of a Member (its hold hook), as a SIGSTOP
// freezes the whole process.
type freezer struct {
	mu     sync.Mutex
	gates  map[string]chan struct{}
	parked map[string]bool
}

func newFreezer() *freezer {
	return &freezer{gates: map[string]chan struct{}{}, parked: map[string]bool{}}
}

func (f *freezer) hold(loop string) {
	f.mu.Lock()
	g := f.gates[loop]
	if g != nil {
		f.parked[loop] = true
	}
	f.mu.Unlock()
	if g != nil {
		<-g
		f.mu.Lock()
		f.parked[loop] = false
		f.mu.Unlock()
	}
}

func (f *freezer) freeze(loops ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range loops {
		if f.gates[l] == nil {
			f.gates[l] = make(chan struct{})
		}
	}
}

func (f *freezer) release(loops ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range loops {
		if g := f.gates[l]; g != nil {
			close(g)
			delete(f.gates, l)
		}
	}
}

func (f *freezer) allParked(loops ...string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range loops {
		if !f.parked[l] {
			return false
		}
	}
	return true
}

// heartbeatServer answers members' heartbeats with coord, as the REST API
// does.
func heartbeatServer(t *testing.T, coord *Coordinator) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var hb Heartbeat
		if err := json.NewDecoder(r.Body).Decode(&hb); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		reply, err := coord.Heartbeat(r.Context(), hb)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(reply)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// storedOwners reads every unit's owner and pending revoke from the store.
func storedOwners(t *testing.T, s store.Store) (owners map[Unit]string, revokes map[Unit]Revoke) {
	t.Helper()
	kvs, _, err := s.Scan(t.Context(), AssignPrefix, 0)
	if err != nil {
		t.Fatal(err)
	}
	owners, revokes = map[Unit]string{}, map[Unit]Revoke{}
	for _, kv := range kvs {
		u, isRevoke, ok := ParseUnitKey(kv.Key)
		if !ok {
			continue
		}
		if isRevoke {
			var r Revoke
			if json.Unmarshal(kv.Value, &r) == nil {
				revokes[u] = r
			}
			continue
		}
		var o Owner
		if json.Unmarshal(kv.Value, &o) == nil {
			owners[u] = o.Worker
		}
	}
	return owners, revokes
}

func ownedBy(owners map[Unit]string, w string) []Unit {
	var out []Unit
	for u, o := range owners {
		if o == w {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b Unit) int { return a.Task - b.Task })
	return out
}

func (m *Member) ownsUnit(u Unit) bool {
	if u.Task < 0 {
		return m.Connector(u.Connector)
	}
	return m.Task(u.Connector, u.Task)
}

// fenceRig is a coordinator on a one-node Raft cluster and two members
// that heartbeat it over HTTP, with 6 units split 3/3 between them. w1
// can be frozen (fz), w2 never gives back a unit revoked from it, and its
// capacity is 4: when w1's session expires, one of w1's units moves to w2
// and two stay with w1.
type fenceRig struct {
	st     store.Store
	coord  *Coordinator
	w1, w2 *Member
	fz     *freezer
	// gate, once armed, stops the next rebalance that writes before it
	// does: entered receives, and it goes on when release is closed.
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
	// releaseGate closes release once.
	releaseGate func()
}

func newFenceRig(t *testing.T) *fenceRig {
	const (
		sessionTimeout = time.Second
		interval       = 100 * time.Millisecond
	)
	rc := rafttest.NewCluster(t, 1, nil)
	node := rc.Leader(10 * time.Second)
	st := raftstore.New(node)
	t.Cleanup(func() { st.Close() })
	ctx, cancel := context.WithCancel(t.Context())
	r := &fenceRig{st: st, fz: newFreezer(), entered: make(chan struct{}, 1), release: make(chan struct{})}

	coord, err := New(Config{Store: st, Raft: node, SessionTimeout: sessionTimeout, FenceMargin: 200 * time.Millisecond,
		Logger: rafttest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	coord.hold = func() {
		if r.armed.CompareAndSwap(true, false) {
			r.entered <- struct{}{}
			<-r.release
		}
	}
	r.coord = coord
	var wg sync.WaitGroup
	var releaseOnce sync.Once
	t.Cleanup(func() {
		r.fz.release("heartbeat", "watchdog", "watch")
		releaseOnce.Do(func() { close(r.release) })
		cancel()
		wg.Wait()
	})
	wg.Add(1)
	go func() { defer wg.Done(); coord.Run(ctx) }()
	srv := heartbeatServer(t, coord)

	// One connector with 5 tasks: 6 units.
	cs := connectstore.New(st)
	if _, err := cs.CreateConnector(ctx, "gen", map[string]string{"connector.class": "x"}, connectstore.StateRunning); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.SetTasks(ctx, "gen", make([]map[string]string, 5), nil); err != nil {
		t.Fatal(err)
	}
	member := func(id string, capacity int) *Member {
		m, err := NewMember(MemberConfig{
			Worker:         WorkerInfo{ID: id, Weight: 1, Capacity: capacity},
			Store:          st,
			Endpoints:      func() []string { return []string{srv.URL} },
			SessionTimeout: sessionTimeout, HeartbeatInterval: interval,
			Logger: rafttest.Logger(),
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// w1 reports nothing running, so what is revoked from it moves at
	// once; w2 reports everything it owns as running, so nothing revoked
	// from it ever moves back (a unit moved to w2 stays there).
	r.w1 = member("w1", 0)
	r.w1.hold = r.fz.hold
	r.w2 = member("w2", 4)
	r.w2.SetRunning(r.w2.Owned)
	wg.Add(1)
	go func() { defer wg.Done(); r.w1.Run(ctx) }()
	waitFor(t, 10*time.Second, "w1 to own all 6 units", func() bool {
		owners, _ := storedOwners(t, st)
		return len(ownedBy(owners, "w1")) == 6 && r.w1.Alive()
	})
	wg.Add(1)
	go func() { defer wg.Done(); r.w2.Run(ctx) }()
	waitFor(t, 10*time.Second, "3 units on each worker", func() bool {
		owners, revokes := storedOwners(t, st)
		return len(ownedBy(owners, "w1")) == 3 && len(ownedBy(owners, "w2")) == 3 && len(revokes) == 0 && r.w2.Alive()
	})
	r.releaseGate = func() { releaseOnce.Do(func() { close(r.release) }) }
	return r
}

// freeze freezes w1's loops and waits until they are parked (a harmless
// key under the watched prefix wakes its watch).
func (r *fenceRig) freeze(t *testing.T, loops ...string) {
	t.Helper()
	r.fz.freeze(loops...)
	if _, err := r.st.Put(t.Context(), AssignPrefix+"nudge", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, fmt.Sprintf("w1's loops %v to park", loops), func() bool { return r.fz.allParked(loops...) })
}

// split waits until one of units has moved to w2 and two stayed with w1.
func (r *fenceRig) split(t *testing.T, units []Unit) (moved, kept []Unit) {
	t.Helper()
	waitFor(t, 10*time.Second, "a unit of w1 to move to w2", func() bool {
		owners, _ := storedOwners(t, r.st)
		moved, kept = nil, nil
		for _, u := range units {
			switch owners[u] {
			case "w2":
				moved = append(moved, u)
			case "w1":
				kept = append(kept, u)
			}
		}
		return len(moved) == 1 && len(kept) == 2
	})
	return moved, kept
}

// answeredSince waits until a heartbeat of w1 sent after since is answered.
func (r *fenceRig) answeredSince(t *testing.T, since time.Time, what string) {
	t.Helper()
	waitFor(t, 10*time.Second, what, func() bool {
		r.w1.mu.Lock()
		defer r.w1.mu.Unlock()
		return r.w1.lastAck.After(since)
	})
}

// poller checks from now on, as fast as it can, that w1 never owns any of
// units.
type poller struct {
	stop       atomic.Bool
	done       chan struct{}
	violations atomic.Int64
	first      atomic.Value
}

func pollNeverOwns(m *Member, units []Unit) *poller {
	p := &poller{done: make(chan struct{})}
	start := time.Now()
	go func() {
		defer close(p.done)
		for !p.stop.Load() {
			for _, u := range units {
				if m.ownsUnit(u) && p.violations.Add(1) == 1 {
					p.first.Store(fmt.Sprintf("%s, %v after polling began", u, time.Since(start)))
				}
			}
			runtime.Gosched()
		}
	}()
	return p
}

func (p *poller) check(t *testing.T, what string) {
	t.Helper()
	p.stop.Store(true)
	<-p.done
	if n := p.violations.Load(); n > 0 {
		t.Fatalf("%s: w1 owned a unit that had moved to w2, %d times; first: %v", what, n, p.first.Load())
	}
}

// caughtUp waits until w1 runs what stayed its own and sees what moved.
func (r *fenceRig) caughtUp(t *testing.T, moved, kept []Unit) {
	t.Helper()
	waitFor(t, 10*time.Second, "w1 to catch up and own what it kept", func() bool {
		for _, u := range moved {
			if r.w1.hasOwner(u, "w1") {
				return false
			}
		}
		for _, u := range kept {
			if !r.w1.ownsUnit(u) {
				return false
			}
		}
		return r.w1.Alive()
	})
}

// A worker frozen for longer than its session (SIGSTOP), whose units
// moved meanwhile, must not own any of the moved units at any moment after
// it resumes, even when its heartbeats are answered before its watch of
// the assignment delivers the moves.
func TestFrozenWorkerNeverOwnsMovedUnitsAfterResume(t *testing.T) {
	r := newFenceRig(t)
	r.freeze(t, "heartbeat", "watchdog", "watch")
	before, _ := storedOwners(t, r.st)
	moved, kept := r.split(t, ownedBy(before, "w1"))
	for _, u := range moved {
		if !r.w1.hasOwner(u, "w1") {
			t.Fatalf("w1's frozen watch saw %s move: the test does not test what it should", u)
		}
	}

	// Resume: the heartbeat loop first, the watch later (SIGCONT resumes
	// every goroutine; nothing orders them). From that moment on, w1 must
	// never own a moved unit.
	resumed := time.Now()
	r.fz.release("heartbeat", "watchdog")
	p := pollNeverOwns(r.w1, moved)
	// w1's heartbeats are answered, and the coordinator counts w1 again:
	// it asks w2 to give a unit back (which w2 never does).
	r.answeredSince(t, resumed, "a heartbeat of w1 answered after it resumed")
	waitFor(t, 10*time.Second, "a revoke from w2 to w1", func() bool {
		_, revokes := storedOwners(t, r.st)
		for _, rv := range revokes {
			if rv.From == "w2" && rv.To == "w1" {
				return true
			}
		}
		return false
	})
	r.answeredSince(t, time.Now(), "a heartbeat of w1 answered after that rebalance")
	for _, u := range moved {
		if r.w1.ownsUnit(u) {
			t.Errorf("w1 owns %s, moved to w2 while it was frozen, with its watch still frozen", u)
		}
	}
	r.w1.mu.Lock()
	lastAck := r.w1.lastAck.String()
	r.w1.mu.Unlock()
	if !strings.Contains(lastAck, "m=+") {
		t.Errorf("the lease is not measured on the monotonic clock: lastAck %s", lastAck)
	}

	// Now the watch resumes; w1 catches up, and runs what stayed its own.
	r.fz.release("watch")
	r.caughtUp(t, moved, kept)
	p.check(t, "after resume")
}

// A worker whose expired session comes back while the coordinator is
// writing the rebalance that moves its units (planned without it) must
// not be told it holds them: it gets nothing until a rebalance that
// counts it is written, and so never owns what that first one moved.
func TestWorkerBackDuringAMovingRebalanceGetsNothingUntilCounted(t *testing.T) {
	r := newFenceRig(t)
	r.freeze(t, "heartbeat", "watchdog", "watch")
	before, _ := storedOwners(t, r.st)
	mine := ownedBy(before, "w1")
	r.armed.Store(true)
	select {
	case <-r.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no rebalance after w1's session expired")
	}
	if owners, _ := storedOwners(t, r.st); len(ownedBy(owners, "w1")) != 3 {
		t.Fatalf("the rebalance wrote before the gate: owners %v", owners)
	}

	// w1 resumes while that rebalance waits to write; its heartbeats and
	// its watch run (three heartbeats answered).
	r.fz.release("heartbeat", "watchdog", "watch")
	for i := range 3 {
		r.answeredSince(t, time.Now(), fmt.Sprintf("heartbeat %d of w1 answered after it resumed", i+1))
	}
	// Its watch stops again (the moves would otherwise reach it at once);
	// the rebalance writes.
	r.freeze(t, "watch")
	r.releaseGate()
	moved, kept := r.split(t, mine)
	p := pollNeverOwns(r.w1, moved)
	r.answeredSince(t, time.Now(), "a heartbeat of w1 answered after the move")
	for _, u := range moved {
		if r.w1.ownsUnit(u) {
			t.Errorf("w1 owns %s, which the rebalance moved to w2 after w1 came back", u)
		}
	}
	r.fz.release("watch")
	r.caughtUp(t, moved, kept)
	p.check(t, "after the move")
}

// hasOwner tells whether the member's view of the assignment has u owned
// by w, whatever its session.
func (m *Member) hasOwner(u Unit, w string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owners[u].worker == w
}

// Leadership that goes A→B→A faster than anyone polls it must not leave A
// running the coordinator of its older term, refusing every heartbeat:
// after each flap, A answers heartbeats again within an election timeout.
func TestCoordinatorFollowsTermThroughLeadershipFlaps(t *testing.T) {
	const tick = 50 * time.Millisecond
	rc := rafttest.NewCluster(t, 3, func(c *raft.Config) { c.TickInterval = tick })
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	coords := map[uint64]*Coordinator{}
	for _, n := range rc.Nodes() {
		st := raftstore.New(n)
		t.Cleanup(func() { st.Close() })
		c, err := New(Config{Store: st, Raft: n, Logger: rafttest.Logger()})
		if err != nil {
			t.Fatal(err)
		}
		coords[n.ID()] = c
		wg.Add(1)
		go func() { defer wg.Done(); c.Run(ctx) }()
	}
	a := rc.Leader(10 * time.Second)
	hb := Heartbeat{Worker: WorkerInfo{ID: "w", Weight: 1, NodeID: a.ID()}}
	// answered waits up to d for a heartbeat to a's coordinator to be
	// answered.
	answered := func(d time.Duration) error {
		deadline := time.Now().Add(d)
		for {
			hctx, hcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			_, err := coords[a.ID()].Heartbeat(hctx, hb)
			hcancel()
			if err == nil {
				return nil
			}
			if time.Now().After(deadline) {
				return err
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if err := answered(10 * time.Second); err != nil {
		t.Fatalf("the first coordinator never answered: %v", err)
	}
	electionTimeout := 2 * raft.DefaultElectionTicks * tick
	for i := range 8 {
		var b *raft.Node
		for _, n := range rc.Nodes() {
			if n.ID() != a.ID() {
				b = n
				break
			}
		}
		term := a.Term()
		tctx, tcancel := context.WithTimeout(ctx, 10*time.Second)
		err := a.TransferLeadership(tctx, b.ID())
		if err == nil {
			err = b.TransferLeadership(tctx, a.ID())
		}
		tcancel()
		if err != nil {
			t.Fatalf("flap %d: %v", i, err)
		}
		if !a.IsLeader() || a.Term() < term+2 {
			t.Fatalf("flap %d: leader %d at term %d, want %d at term ≥ %d", i, a.Leader(), a.Term(), a.ID(), term+2)
		}
		flapped := time.Now()
		if err := answered(electionTimeout); err != nil {
			if errors.Is(err, ErrNotLeader) && a.IsLeader() {
				t.Fatalf("flap %d: the leader refuses heartbeats %v after regaining leadership (term %d): %v", i, time.Since(flapped), a.Term(), err)
			}
			t.Fatalf("flap %d: heartbeat not answered within %v: %v", i, electionTimeout, err)
		}
	}
}
