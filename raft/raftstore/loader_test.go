package raftstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/raft/rafttest"
	"github.com/kcd-project/kcd/store"
	"github.com/kcd-project/kcd/store/storetest"
)

// The store.Loader suite on a single node and through a follower of a
// three-node cluster.
func TestLoaderConformanceSingleNode(t *testing.T) {
	storetest.RunLoader(t, func(t *testing.T) store.Loader {
		c := rafttest.NewCluster(t, 1, nil)
		return New(c.Leader(5 * time.Second))
	})
}

func TestLoaderConformanceOnFollower(t *testing.T) {
	storetest.RunLoader(t, func(t *testing.T) store.Loader {
		c := rafttest.NewCluster(t, 3, nil)
		c.Leader(5 * time.Second)
		return New(c.Follower())
	})
}

// exempt are the prefixes a switch leaves writable in Raft.
var exempt = []string{"kcd/cluster/", "kcd/members/"}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wantFrozen checks that the store of node n refuses every kind of write
// outside the exempt prefixes, changing nothing, and takes exempt ones.
func wantFrozen(ctx context.Context, t *testing.T, n *raft.Node) {
	t.Helper()
	s := New(n)
	defer s.Close()
	waitFor(t, 10*time.Second, fmt.Sprintf("node %d to apply the freeze", n.ID()), func() bool {
		frozen, _ := s.Frozen()
		return frozen
	})
	if _, ex := s.Frozen(); !slices.Equal(ex, exempt) {
		t.Fatalf("node %d: exempt prefixes %q, want %q", n.ID(), ex, exempt)
	}
	before, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"Put":           func() error { _, err := s.Put(ctx, "connectors/x", []byte("v")); return err },
		"Delete":        func() error { _, _, err := s.Delete(ctx, "connectors/a"); return err },
		"CompareAndSet": func() error { _, _, err := s.CompareAndSet(ctx, "connectors/a", 0, []byte("v")); return err },
		"Batch": func() error {
			_, _, err := s.Batch(ctx, nil, []store.Op{store.Put("kcd/cluster/x", nil), store.Put("offsets/x", nil)})
			return err
		},
	} {
		err := call()
		if !errors.Is(err, ErrFrozen) || !errors.Is(err, fsm.ErrFrozen) {
			t.Errorf("node %d: %s while frozen: %v, want raftstore.ErrFrozen", n.ID(), name, err)
		}
	}
	if rev, err := s.Revision(ctx); err != nil || rev != before {
		t.Fatalf("node %d: refused writes moved the revision %d → %d (%v)", n.ID(), before, rev, err)
	}
	if kv, found, err := s.Get(ctx, "connectors/a"); err != nil || !found || string(kv.Value) != "a" {
		t.Fatalf("node %d: connectors/a = %q, %v, %v after refused writes", n.ID(), kv.Value, found, err)
	}
	key := fmt.Sprintf("kcd/members/%d", n.ID())
	if _, err := s.Put(ctx, key, []byte("ok")); err != nil {
		t.Fatalf("node %d: exempt Put while frozen: %v", n.ID(), err)
	}
}

// A frozen store refuses non-exempt writes on every member, those a
// follower proposes too; exempt keys stay writable; Thaw from any member
// ends it everywhere.
func TestFreezeRefusesOnEveryMember(t *testing.T) {
	c := rafttest.NewCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	lead := New(c.Leader(5 * time.Second))
	defer lead.Close()
	if _, err := lead.Put(ctx, "connectors/a", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if frozen, _ := lead.Frozen(); frozen {
		t.Fatal("a new store is frozen")
	}
	if err := lead.Freeze(ctx, exempt...); err != nil {
		t.Fatalf("Freeze: %v", err)
	}
	for _, n := range c.Nodes() {
		wantFrozen(ctx, t, n)
	}

	f := New(c.Follower())
	defer f.Close()
	if err := f.Thaw(ctx); err != nil {
		t.Fatalf("Thaw through a follower: %v", err)
	}
	for _, n := range c.Nodes() {
		s := New(n)
		waitFor(t, 10*time.Second, fmt.Sprintf("node %d to thaw", n.ID()), func() bool {
			frozen, _ := s.Frozen()
			return !frozen
		})
		if _, err := s.Put(ctx, fmt.Sprintf("connectors/%d", n.ID()), []byte("v")); err != nil {
			t.Fatalf("node %d: Put after Thaw: %v", n.ID(), err)
		}
		s.Close()
	}
}

// snapshotLog counts the snapshots each node installs from the leader.
type snapshotLog struct {
	mu    sync.Mutex
	count map[uint64]int
}

func (l *snapshotLog) installed(id uint64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count[id]
}

type snapshotHandler struct {
	slog.Handler
	l  *snapshotLog
	id uint64
}

func (h *snapshotHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *snapshotHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "installed snapshot from the leader") {
		h.l.mu.Lock()
		h.l.count[h.id]++
		h.l.mu.Unlock()
	}
	if h.Handler.Enabled(ctx, r.Level) {
		return h.Handler.Handle(ctx, r)
	}
	return nil
}

func (h *snapshotHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &snapshotHandler{Handler: h.Handler.WithAttrs(as), l: h.l, id: h.id}
}

func (h *snapshotHandler) WithGroup(name string) slog.Handler {
	return &snapshotHandler{Handler: h.Handler.WithGroup(name), l: h.l, id: h.id}
}

// The freeze is replicated state: a member restarted after snapshots that
// cover it, and one that was down and catches up from a snapshot, are
// frozen.
func TestFreezeSurvivesRestartAndSnapshot(t *testing.T) {
	snaps := &snapshotLog{count: map[uint64]int{}}
	c := rafttest.NewCluster(t, 3, func(cfg *raft.Config) {
		cfg.SnapshotEntries = 20
		cfg.SnapshotCatchUp = 5
		cfg.Logger = slog.New(&snapshotHandler{Handler: cfg.Logger.Handler(), l: snaps, id: cfg.ID})
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	lead := New(c.Leader(5 * time.Second))
	defer lead.Close()
	if _, err := lead.Put(ctx, "connectors/a", []byte("a")); err != nil {
		t.Fatal(err)
	}
	leadID := c.Leader(5 * time.Second).ID()
	var restarted, behind uint64
	for _, n := range c.Nodes() {
		if n.ID() != leadID {
			if behind == 0 {
				behind = n.ID()
			} else {
				restarted = n.ID()
			}
		}
	}
	waitFor(t, 10*time.Second, "every node to apply the first write", func() bool {
		for _, n := range c.Nodes() {
			if _, found, _ := n.FSM().Get("connectors/a"); !found {
				return false
			}
		}
		return true
	})
	// One member is down while the store is frozen, and many entries
	// (several snapshots' worth) pass.
	c.Kill(behind)
	if err := lead.Freeze(ctx, exempt...); err != nil {
		t.Fatalf("Freeze: %v", err)
	}
	for i := range 120 {
		if _, err := lead.Put(ctx, fmt.Sprintf("kcd/cluster/n%03d", i), []byte("v")); err != nil {
			t.Fatalf("exempt Put %d: %v", i, err)
		}
	}
	waitFor(t, 10*time.Second, "the other follower to apply the exempt writes", func() bool {
		_, found, _ := c.Node(restarted).FSM().Get("kcd/cluster/n119")
		return found
	})
	c.Kill(restarted)
	wantFrozen(ctx, t, c.Start(restarted, false))

	before := snaps.installed(behind)
	n := c.Start(behind, false)
	waitFor(t, 20*time.Second, "the member that was down to catch up", func() bool {
		_, found, _ := n.FSM().Get("kcd/cluster/n119")
		return found
	})
	if snaps.installed(behind) == before {
		t.Fatalf("node %d caught up without installing a snapshot", behind)
	}
	wantFrozen(ctx, t, n)
}

// A Load on the leader reaches every member with the same revisions, and
// members hash alike after Load and Clear.
func TestLoadAndClearReplicate(t *testing.T) {
	c := rafttest.NewCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	lead := New(c.Leader(5 * time.Second))
	defer lead.Close()
	for _, k := range []string{"kcd/cluster/store", "connectors/old", "offsets/p0"} {
		if _, err := lead.Put(ctx, k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	kvs := []store.KV{
		{Key: "connectors/a", Value: []byte("A"), CreateRevision: 3, ModRevision: 70},
		{Key: "offsets/p0", Value: []byte("42"), CreateRevision: 10, ModRevision: 99},
	}
	if err := lead.Load(ctx, 100, kvs, []string{"connectors/old"}); err != nil {
		t.Fatalf("Load: %v", err)
	}
	wantState := func(rev int64, want []store.KV) {
		t.Helper()
		for _, n := range c.Nodes() {
			s := New(n)
			got, at, err := s.Scan(ctx, "", 0)
			s.Close()
			if err != nil || at != rev || len(got) != len(want) {
				t.Fatalf("node %d: Scan = %d keys at %d, %v; want %d at %d", n.ID(), len(got), at, err, len(want), rev)
			}
			for i := range got {
				g, w := got[i], want[i]
				if g.Key != w.Key || string(g.Value) != string(w.Value) || g.CreateRevision != w.CreateRevision || g.ModRevision != w.ModRevision {
					t.Fatalf("node %d: %+v, want %+v", n.ID(), g, w)
				}
			}
		}
		sameHashes(t, c)
	}
	store1, _, _ := lead.Get(ctx, "kcd/cluster/store")
	wantState(100, []store.KV{kvs[0], store1, kvs[1]})

	f := New(c.Follower())
	defer f.Close()
	if err := f.Clear(ctx, "kcd/cluster/"); err != nil {
		t.Fatalf("Clear through a follower: %v", err)
	}
	wantState(100, []store.KV{store1}) // the revision stays when keys are kept

	// Without kept keys the revision starts again from 0, and a watch from
	// a revision of the replaced history fails on every member instead of
	// waiting for the new history to get there.
	if err := f.Clear(ctx); err != nil {
		t.Fatalf("Clear: %v", err)
	}
	wantState(0, nil)
	for _, n := range c.Nodes() {
		s := New(n)
		w, err := s.Watch(ctx, "", 100)
		if err == nil {
			w.Close()
		}
		if !errors.Is(err, store.ErrCompacted) {
			t.Fatalf("node %d: Watch from 100 after Clear: %v, want store.ErrCompacted", n.ID(), err)
		}
		s.Close()
	}
	// A revision a follower has not applied yet, but the store made, is
	// watched from as ever.
	rev, err := lead.Put(ctx, "connectors/b", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.Watch(ctx, "connectors/", rev)
	if err != nil {
		t.Fatalf("follower: Watch from the revision just written: %v", err)
	}
	defer w.Close()
	next, err := lead.Put(ctx, "connectors/b", []byte("2"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.Events():
		if ev.KV.ModRevision != next || string(ev.KV.Value) != "2" {
			t.Fatalf("follower's watch from %d delivered %+v, want the put at %d", rev, ev.KV, next)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("follower's watch from %d delivered nothing: %v", rev, w.Err())
	}
}

// sameHashes waits until every member has applied the same index, then
// compares their state hashes there.
func sameHashes(t *testing.T, c *rafttest.Cluster) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var hs []fsm.StateHash
		for _, n := range c.Nodes() {
			v, err := n.FSM().ViewForHash()
			if err != nil {
				t.Fatal(err)
			}
			h, err := v.Sum(t.Context())
			v.Close()
			if err != nil {
				t.Fatal(err)
			}
			hs = append(hs, h)
		}
		same := true
		for _, h := range hs[1:] {
			if h.Index != hs[0].Index {
				same = false
			} else if h != hs[0] {
				t.Fatalf("members' states differ at index %d: %+v", h.Index, hs)
			}
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("members did not reach one applied index: %+v", hs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
