package activestore

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/raft/raftstore"
	"github.com/kcd-project/kcd/raft/rafttest"
	"github.com/kcd-project/kcd/store"
)

// startStore runs an active store on a one-node Raft cluster whose Raft
// store already holds rec (nil: none) and keys, and waits until it has
// taken charge as leader.
func startStore(t *testing.T, rec *Record, keys map[string]string) (*Store, *raftstore.Store) {
	t.Helper()
	rc := rafttest.NewCluster(t, 1, nil)
	node := rc.Leader(10 * time.Second)
	rs := raftstore.New(node)
	t.Cleanup(func() { rs.Close() })
	ctx := t.Context()
	for k, v := range keys {
		if _, err := rs.Put(ctx, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if rec != nil {
		b, _ := json.Marshal(rec)
		if _, err := rs.Put(ctx, RecordKey, b); err != nil {
			t.Fatal(err)
		}
	}
	s := New(Config{Raft: node, RaftStore: rs, OpenTimeout: 100 * time.Millisecond})
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { s.Close(); <-done })
	waitFor(t, "the leader's mark", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.mark.term == node.Term()
	})
	return s, rs
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSettleSealsTheRecord: a record proposed under the leader's mark is
// found applied; one never proposed is found not applied, and a late copy
// of it proposed under the same mark (as a proposal lost in a timeout may
// still reach the log) can no longer apply.
func TestSettleSealsTheRecord(t *testing.T) {
	s, rs := startStore(t, nil, nil)
	ctx := t.Context()
	s.mu.Lock()
	mark := s.mark
	s.mu.Unlock()

	rec := Record{Backend: "x", LastSwitch: &api.StoreSwitch{ID: "applied"}}
	b, _ := json.Marshal(rec)
	if _, ok, err := rs.Batch(ctx, []store.Cond{{Key: LeaderKey, ModRevision: mark.modRev}}, []store.Op{store.Put(RecordKey, b)}); err != nil || !ok {
		t.Fatalf("record: ok %v, %v", ok, err)
	}
	applied, err := s.settle(mark, rec)
	if err != nil || !applied {
		t.Fatalf("settle of an applied record: %v, %v; want applied", applied, err)
	}

	s.mu.Lock()
	mark = s.mark
	s.mu.Unlock()
	late := Record{Backend: "y", LastSwitch: &api.StoreSwitch{ID: "late"}}
	applied, err = s.settle(mark, late)
	if err != nil || applied {
		t.Fatalf("settle of a record never proposed: %v, %v; want not applied", applied, err)
	}
	b, _ = json.Marshal(late)
	if _, ok, err := rs.Batch(ctx, []store.Cond{{Key: LeaderKey, ModRevision: mark.modRev}}, []store.Op{store.Put(RecordKey, b)}); err != nil || ok {
		t.Fatalf("a late copy of the record settled as not applied: ok %v, %v; want refused", ok, err)
	}
	if cur, _ := s.Record(); cur.Backend != "x" {
		t.Fatalf("the record names %q after the late copy, want x", cur.Backend)
	}
	// The leader's own mark moved with the seal: it can still record.
	s.mu.Lock()
	now := s.mark
	s.mu.Unlock()
	if _, ok, err := rs.Batch(ctx, []store.Cond{{Key: LeaderKey, ModRevision: now.modRev}}, []store.Op{store.Put(RecordKey, b)}); err != nil || !ok {
		t.Fatalf("a record under the leader's mark after a seal: ok %v, %v; want applied", ok, err)
	}
}

// TestNewLeaderTidiesAnInterruptedSwitch: a leader that finds a switch
// noted running by its predecessor notes it failed, interrupted in its
// phase, and drops the Raft copy of the metadata while another backend is
// active, keeping the cluster's own keys.
func TestNewLeaderTidiesAnInterruptedSwitch(t *testing.T) {
	rec := Record{Backend: "elsewhere", LastSwitch: &api.StoreSwitch{
		ID: "gone", From: "elsewhere", To: "raft", State: api.SwitchRunning, Phase: api.PhaseHold, StartedAt: time.Now().UTC(),
	}}
	keys := map[string]string{"kcd/members/1": "m"}
	for i := range 2000 {
		keys[fmt.Sprintf("connect/offset/c/%04d", i)] = "stale"
	}
	s, rs := startStore(t, &rec, keys)
	ctx := t.Context()
	waitFor(t, "the interrupted switch noted", func() bool {
		cur, err := s.Record()
		return err == nil && cur.LastSwitch != nil && cur.LastSwitch.State == api.SwitchFailed
	})
	cur, _ := s.Record()
	if e := cur.LastSwitch.Error; cur.Backend != "elsewhere" || cur.LastSwitch.ID != "gone" || !strings.Contains(e, "interrupted in phase hold") {
		t.Errorf("the record after the new leader's tidy: %+v, last switch %+v", cur, cur.LastSwitch)
	}
	waitFor(t, "the stale Raft copy dropped", func() bool {
		kvs, _, err := rs.Scan(ctx, "connect/", 1)
		return err == nil && len(kvs) == 0
	})
	if _, found, err := rs.Get(ctx, "kcd/members/1"); err != nil || !found {
		t.Errorf("the tidy dropped a member's record: found %v, %v", found, err)
	}
	if frozen, _ := rs.Frozen(); !frozen {
		t.Error("the Raft store is not frozen while another backend is active")
	}
}
