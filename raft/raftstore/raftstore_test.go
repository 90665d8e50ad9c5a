package raftstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/rafttest"
	"github.com/kcd-project/kcd/store"
	"github.com/kcd-project/kcd/store/storetest"
)

// The conformance suite against a follower of a three-node cluster: its
// writes go through the leader, its reads need the ReadIndex barrier.
func TestConformanceOnFollower(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		c := rafttest.NewCluster(t, 3, nil)
		c.Leader(5 * time.Second)
		return New(c.Follower())
	})
}

// And against a single-node cluster, where the node leads itself.
func TestConformanceSingleNode(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		c := rafttest.NewCluster(t, 1, nil)
		return New(c.Leader(5 * time.Second))
	})
}

// A follower cut off from the others: a read under store.AllowStale is
// answered from its replica within the wait, marked stale with a bound no
// larger than the time since it last synced; a linearizable read is not
// answered; once the staleness passes StaleReadMax, stale reads fail too.
// Healed, reads are linearizable again.
func TestStaleReadsWithoutQuorum(t *testing.T) {
	c := rafttest.NewCluster(t, 3, nil)
	c.Leader(5 * time.Second)
	f := c.Follower()
	const maxStale = 2 * time.Second
	s := NewWithOptions(f, Options{StaleReadWait: 200 * time.Millisecond, StaleReadMax: maxStale})
	defer s.Close()
	ctx := t.Context()
	if _, err := s.Put(ctx, "k", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, "k"); err != nil { // a read barrier: the replica is synced
		t.Fatal(err)
	}
	cutAt := time.Now()
	c.Net().Isolate(f.ID())
	for i := range 3 {
		sctx, st := store.AllowStale(ctx)
		start := time.Now()
		kv, found, err := s.Get(sctx, "k")
		took := time.Since(start)
		if err != nil || !found || string(kv.Value) != "v1" {
			t.Fatalf("stale read %d: %q, %v, %v; want v1", i, kv.Value, found, err)
		}
		age, stale := st.Stale()
		if !stale || age <= 0 || age > time.Since(cutAt)+time.Second {
			t.Fatalf("stale read %d: stale=%v age %v, want a stale mark bounded by the time since the cut (%v) plus the sync interval", i, stale, age, time.Since(cutAt))
		}
		if took > time.Second {
			t.Fatalf("stale read %d took %v", i, took)
		}
	}
	lctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, _, err := s.Get(lctx, "k")
	cancel()
	if err == nil {
		t.Fatal("a linearizable read without a quorum was answered")
	}
	// Stale reads are served until the replica may be maxStale behind
	// (it last synced at most a second before the cut); then a read waits
	// for the barrier, as a linearizable one, and fails without a quorum.
	for {
		rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		sctx, _ := store.AllowStale(rctx)
		_, _, err := s.Get(sctx, "k")
		cancel()
		if errors.Is(err, raft.ErrTooStale) {
			if cut := time.Since(cutAt); cut < maxStale-time.Second {
				t.Fatalf("stale read refused %v after the cut, before StaleReadMax %v", cut, maxStale)
			}
			break
		}
		if err != nil {
			t.Fatalf("stale read: %v", err)
		}
		if time.Since(cutAt) > maxStale+time.Second {
			t.Fatalf("stale read still served %v after the cut, past StaleReadMax %v", time.Since(cutAt), maxStale)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.Net().Heal()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sctx, st := store.AllowStale(ctx)
		_, _, err := s.Get(sctx, "k")
		if _, stale := st.Stale(); err == nil && !stale {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("healed, reads are still stale or failing: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
