package remotestore

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/store"
)

// frozenNode listens but never accepts, as a SIGSTOPped process does: a
// connection completes in the kernel and nothing ever answers.
func frozenNode(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return "http://" + ln.Addr().String()
}

// A read whose first node is frozen is answered by another within the
// hedge delay and a round trip; the frozen node then ranks last, so reads,
// writes and the seed for leader-only requests avoid it.
func TestReadsMoveOffAFrozenNode(t *testing.T) {
	c := newCluster(t, 3)
	good := c.url[follower(c).ID()]
	frozen := frozenNode(t)
	w, err := New([]string{good}, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Put(t.Context(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	// RefreshInterval keeps the store from learning the other members:
	// the frozen node and one good one are all it knows.
	s, err := New([]string{frozen, good}, Options{RefreshInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 5 {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		start := time.Now()
		kv, found, err := s.Get(ctx, "k")
		cancel()
		if err != nil || !found || string(kv.Value) != "v" {
			t.Fatalf("read %d with a frozen node first: %q, %v, %v (after %v)", i, kv.Value, found, err, time.Since(start))
		}
		if took := time.Since(start); took > 500*time.Millisecond {
			t.Errorf("read %d took %v with a frozen node", i, took)
		}
	}
	if eps := s.Endpoints(); len(eps) < 2 || eps[0] == frozen || eps[len(eps)-1] != frozen {
		t.Fatalf("endpoints %v: the frozen node should rank last", eps)
	}
	// A write goes to the best-ranked node, not the frozen one.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.Put(ctx, "k2", []byte("v")); err != nil {
		t.Fatalf("write after the frozen node was demoted: %v", err)
	}
}

// A read that may be stale, sent to a node whose peers are down, is
// answered from its replica and reports how stale it may be.
func TestStaleReadThroughTheStoreAPI(t *testing.T) {
	c := newCluster(t, 3)
	id := follower(c).ID()
	s, err := New([]string{c.url[id]}, Options{RefreshInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Put(t.Context(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(t.Context(), "k"); err != nil {
		t.Fatal(err)
	}
	for oid := range c.url {
		if oid != id {
			c.stop(oid, false)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	sctx, st := store.AllowStale(ctx)
	kv, found, err := s.Get(sctx, "k")
	if err != nil || !found || string(kv.Value) != "v" {
		t.Fatalf("stale read on a cut-off node: %q, %v, %v", kv.Value, found, err)
	}
	if age, stale := st.Stale(); !stale || age <= 0 {
		t.Fatalf("stale read not marked: stale=%v age=%v", stale, age)
	}
}
