package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/examples/memstore"
	"github.com/kcd-project/kcd/store"
	"github.com/kcd-project/kcd/store/storetest"
)

// A third-party backend runs kcd's conformance suite from its own tests,
// exactly like this.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return memstore.New(memstore.Options{})
	})
}

// And the suite of store.Loader, which a backend needs to be the target of
// kcctl store switch.
func TestLoaderConformance(t *testing.T) {
	storetest.RunLoader(t, func(t *testing.T) store.Loader {
		return memstore.New(memstore.Options{})
	})
}

// Opened by name, through the registry, as kcd opens it.
func TestConformanceThroughRegistry(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := store.Open(t.Context(), memstore.Name, map[string]string{"history": "50000"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestRegistered(t *testing.T) {
	if !slices.Contains(store.Backends(), memstore.Name) {
		t.Fatalf("backends %q lack %q", store.Backends(), memstore.Name)
	}
	for _, settings := range []map[string]string{{"history": "0"}, {"history": "lots"}, {"colour": "blue"}} {
		if _, err := store.Open(t.Context(), memstore.Name, settings); err == nil {
			t.Errorf("Open with %v succeeded", settings)
		}
	}
}

// With a short history, old revisions are compacted away.
func TestHistoryBound(t *testing.T) {
	s := memstore.New(memstore.Options{History: 3})
	defer s.Close()
	ctx := context.Background()
	var revs []int64
	for _, k := range strings.Split("a b c d e", " ") {
		rev, err := s.Put(ctx, k, []byte(k))
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, rev)
	}
	if _, err := s.Watch(ctx, "", revs[0]); !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("Watch from %d: %v, want store.ErrCompacted", revs[0], err)
	}
	w, err := s.Watch(ctx, "", revs[1])
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, want := range revs[2:] {
		if ev := <-w.Events(); ev.KV.ModRevision != want {
			t.Fatalf("event at %d, want %d", ev.KV.ModRevision, want)
		}
	}
}

// A watch that replays more history than a watcher may queue live is not
// dropped for it.
func TestLongReplay(t *testing.T) {
	s := memstore.New(memstore.Options{})
	defer s.Close()
	ctx := context.Background()
	const n = 6 * store.MaxBatchOps
	ops := make([]store.Op, store.MaxBatchOps)
	for b := range n / store.MaxBatchOps {
		for i := range ops {
			ops[i] = store.Put(fmt.Sprintf("k/%d/%d", b, i), nil)
		}
		if _, _, err := s.Batch(ctx, nil, ops); err != nil {
			t.Fatal(err)
		}
	}
	w, err := s.Watch(ctx, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := s.Put(ctx, "last", nil); err != nil {
		t.Fatal(err)
	}
	got := 0
	for ev := range w.Events() {
		if got++; ev.KV.Key == "last" {
			break
		}
	}
	if want := n - store.MaxBatchOps + 1; got != want {
		t.Fatalf("the watch delivered %d events (Err %v), want %d", got, w.Err(), want)
	}
}
