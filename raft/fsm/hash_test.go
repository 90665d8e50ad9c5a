package fsm_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/raft/fsm"
)

func sumNow(t *testing.T, f *fsm.FSM) fsm.StateHash {
	t.Helper()
	v, err := f.ViewForHash()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	h, err := v.Sum(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Two states that applied the same log hash alike, whatever the Apply calls
// and the open transaction; a view keeps the hash of its index while Apply
// goes on; one changed value changes the hash.
func TestStateHash(t *testing.T) {
	entries := randomLog(t, 11, 600)
	a := openFSM(t, "", fsm.Options{})
	b := openFSM(t, "", fsm.Options{CommitInterval: time.Hour})
	mustApply(t, a, entries[:400])
	for i := 0; i < 400; i += 7 {
		mustApply(t, b, entries[i:min(i+7, 400)])
	}
	ha, hb := sumNow(t, a), sumNow(t, b)
	if ha != hb || ha.Index != 400 {
		t.Fatalf("same log, different hashes: %+v and %+v", ha, hb)
	}

	v, err := b.ViewForHash()
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, b, entries[400:])
	hv, err := v.Sum(context.Background())
	v.Close()
	if err != nil || hv != ha {
		t.Fatalf("view taken at 400, summed after more applies: %+v, %v; want %+v", hv, err, ha)
	}
	if h := sumNow(t, b); h == ha || h.Index != 600 {
		t.Fatalf("hash after 200 more entries: %+v", h)
	}

	c := openFSM(t, "", fsm.Options{})
	d := openFSM(t, "", fsm.Options{})
	lb := &logBuilder{t: t}
	lb.add(put("a", "value"))
	mustApply(t, c, lb.entries)
	lb2 := &logBuilder{t: t}
	lb2.add(put("a", "valuf"))
	mustApply(t, d, lb2.entries)
	if sumNow(t, c).Hash == sumNow(t, d).Hash {
		t.Fatal("one changed byte, same hash")
	}
}

// A Restore aborts a hash in progress instead of waiting for it.
func TestStateHashAbortedByRestore(t *testing.T) {
	f := openFSM(t, "", fsm.Options{})
	b := &logBuilder{t: t}
	for i := range 5000 {
		b.add(put(fmt.Sprintf("k%05d", i), "v"))
	}
	mustApply(t, f, b.entries)
	snap, _, _, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	v, err := f.ViewForHash()
	if err != nil {
		t.Fatal(err)
	}
	restored := make(chan error, 1)
	go func() { restored <- f.Restore(strings.NewReader(string(snap))) }()
	// Restore waits for the view; the view's Sum sees the restore coming.
	deadline := time.After(10 * time.Second)
	for {
		_, err := v.Sum(context.Background())
		if errors.Is(err, fsm.ErrHashAborted) {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("Sum during a Restore: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	v.Close()
	if err := <-restored; err != nil {
		t.Fatal(err)
	}
}

// Fence makes reads and watches fail and ends the watchers; Apply goes on.
func TestFence(t *testing.T) {
	f := openFSM(t, "", fsm.Options{})
	b := &logBuilder{t: t}
	b.add(put("a", "1"))
	mustApply(t, f, b.entries)
	w, err := f.Watch(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	fenceErr := errors.New("fenced for the test")
	f.Fence(fenceErr)
	if _, _, err := f.Get("a"); !errors.Is(err, fenceErr) {
		t.Errorf("Get: %v", err)
	}
	if _, _, err := f.Scan("", 0); !errors.Is(err, fenceErr) {
		t.Errorf("Scan: %v", err)
	}
	if _, err := f.Watch(context.Background(), "", 0); !errors.Is(err, fenceErr) {
		t.Errorf("Watch: %v", err)
	}
	select {
	case _, ok := <-w.Events():
		if ok {
			t.Fatal("event after Fence")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watcher not ended by Fence")
	}
	if !errors.Is(w.Err(), fenceErr) {
		t.Errorf("watcher error: %v", w.Err())
	}
	b.add(put("b", "2"))
	mustApply(t, f, b.entries)
	if f.AppliedIndex() != 2 {
		t.Fatalf("applied %d after Fence", f.AppliedIndex())
	}
}

// BenchmarkStateHash hashes a state of 100,000 keys (what the corruption
// check does on every member every interval), and measures the page check
// of Open on the same file.
func BenchmarkStateHash(b *testing.B) {
	path := filepath.Join(b.TempDir(), "state.db")
	f, err := fsm.Open(path, fsm.Options{CommitInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	lb := &logBuilder{t: b}
	for i := range 100000 {
		lb.add(put(fmt.Sprintf("connectors/c%03d/tasks/%06d/status", i%500, i), strings.Repeat("x", 100)))
	}
	for i := 0; i < len(lb.entries); i += 1000 {
		if _, err := f.Apply(lb.entries[i : i+1000]); err != nil {
			b.Fatal(err)
		}
	}
	// What the applier waits for: the view alone (the open transaction
	// is committed first; here one Apply's worth).
	b.Run("view", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			e := lb.entries[i%len(lb.entries)]
			e.Index = f.AppliedIndex() + 1
			if _, err := f.Apply([]fsm.Entry{e}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			v, err := f.ViewForHash()
			if err != nil {
				b.Fatal(err)
			}
			v.Close()
		}
	})
	b.Run("hash", func(b *testing.B) {
		for b.Loop() {
			v, err := f.ViewForHash()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := v.Sum(context.Background()); err != nil {
				b.Fatal(err)
			}
			v.Close()
		}
	})
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			f, err := fsm.Open(path, fsm.Options{})
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}
