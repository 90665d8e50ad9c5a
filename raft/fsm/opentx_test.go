package fsm_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/store"
	"github.com/kcd-project/kcd/store/storetest"
)

// held keeps Apply's transaction open for the whole test unless a bound
// commits it.
var held = fsm.Options{CommitInterval: time.Hour}

// The store conformance suite through an FSM whose writes sit in the open
// transaction: every read, scan and watch must see them.
func TestLocalConformanceOpenTransaction(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), held)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// What Apply returned is visible to Get, Scan, Revision and a watch that
// starts in the past, before anything reached the file.
func TestOpenTransactionIsRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	f := openFSM(t, path, held)
	b := &logBuilder{t: t}
	for i := range 20 {
		b.add(put(fmt.Sprintf("k/%02d", i), fmt.Sprint(i)))
	}
	mustApply(t, f, b.entries[:10])
	mustApply(t, f, b.entries[10:])

	kv, found, err := f.Get("k/19")
	if err != nil || !found || string(kv.Value) != "19" || kv.ModRevision != 20 {
		t.Fatalf("Get k/19 = %+v, %v, %v", kv, found, err)
	}
	kvs, rev, err := f.Scan("k/", 0)
	if err != nil || len(kvs) != 20 || rev != 20 {
		t.Fatalf("Scan = %d keys at revision %d, %v", len(kvs), rev, err)
	}
	if r, err := f.Revision(); err != nil || r != 20 {
		t.Fatalf("Revision = %d, %v", r, err)
	}
	w, err := f.Watch(t.Context(), "k/", 5)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for want := int64(6); want <= 20; want++ {
		select {
		case ev := <-w.Events():
			if ev.KV.ModRevision != want {
				t.Fatalf("watch replay: revision %d, want %d", ev.KV.ModRevision, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("watch replay stopped before revision %d", want)
		}
	}
	// Nothing of it is in the file yet: another reader of the file sees the
	// state before the first Apply.
	if got := appliedInFile(t, path); got != 0 {
		t.Fatalf("file holds applied index %d while the transaction is open", got)
	}
}

// A crash of the process (Abandon) loses what the open transaction held;
// the file says so with its applied index, and applying the log again from
// there gives the same state as a run that never crashed.
func TestCrashLosesOnlyTheOpenTransaction(t *testing.T) {
	entries := randomLog(t, 7, 300)
	dir := t.TempDir()

	ref := openFSM(t, filepath.Join(dir, "ref.db"), fsm.Options{})
	mustApply(t, ref, entries)
	ref.Close()

	path := filepath.Join(dir, "crash.db")
	f, err := fsm.Open(path, fsm.Options{CommitInterval: time.Hour, CommitEntries: 100})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 250; i += 25 {
		mustApply(t, f, entries[i:i+25])
	}
	if f.AppliedIndex() != 250 {
		t.Fatalf("AppliedIndex = %d", f.AppliedIndex())
	}
	f.Abandon()

	f = openFSM(t, path, fsm.Options{CommitInterval: time.Hour, CommitEntries: 100})
	// CommitEntries 100: committed after entries 100 and 200 (the Apply
	// that reached the bound), the 50 after them lost.
	if got := f.AppliedIndex(); got != 200 {
		t.Fatalf("AppliedIndex after the crash = %d, want 200", got)
	}
	mustApply(t, f, entries[150:]) // a replay overlapping what the file holds
	f.Close()
	if dump(t, path) != dump(t, filepath.Join(dir, "ref.db")) {
		t.Fatal("state after crash and replay differs from the state without a crash")
	}
}

// The timer commits an open transaction by itself.
func TestOpenTransactionCommitsWhenDue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	f := openFSM(t, path, fsm.Options{CommitInterval: 20 * time.Millisecond})
	b := &logBuilder{t: t}
	b.add(put("a", "1"))
	mustApply(t, f, b.entries)
	deadline := time.Now().Add(10 * time.Second)
	for appliedInFile(t, path) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("open transaction not committed after its interval")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A snapshot commits the open transaction first, so its index is the
// applied index and its data all of the state; Close commits too.
func TestSnapshotAndCloseCommitTheOpenTransaction(t *testing.T) {
	entries := randomLog(t, 11, 200)
	path := filepath.Join(t.TempDir(), "state.db")
	f := openFSM(t, path, held)
	mustApply(t, f, entries[:120])
	data, index, _, err := f.Snapshot()
	if err != nil || index != 120 {
		t.Fatalf("Snapshot at index %d, %v; want 120", index, err)
	}
	dst := openFSM(t, "", fsm.Options{})
	if err := dst.Restore(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	kvsSrc, revSrc, _ := f.Scan("", 0)
	kvsDst, revDst, _ := dst.Scan("", 0)
	if revSrc != revDst || fmt.Sprint(kvsSrc) != fmt.Sprint(kvsDst) {
		t.Fatalf("restored snapshot: revision %d, %d keys; source: revision %d, %d keys", revDst, len(kvsDst), revSrc, len(kvsSrc))
	}
	mustApply(t, f, entries[120:])
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := appliedInFile(t, path); got != 200 {
		t.Fatalf("file holds applied index %d after Close, want 200", got)
	}
}

// Reads run while Apply writes into the open transaction (run with -race).
func TestOpenTransactionConcurrentReads(t *testing.T) {
	f := openFSM(t, "", fsm.Options{CommitInterval: 5 * time.Millisecond, CommitEntries: 64})
	b := &logBuilder{t: t}
	for i := range 2000 {
		b.add(put(fmt.Sprintf("k/%03d", i%300), fmt.Sprint(i)))
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				kvs, rev, err := f.Scan("k/", 0)
				if err != nil {
					t.Error(err)
					return
				}
				for _, kv := range kvs {
					if kv.ModRevision > rev {
						t.Errorf("scan at revision %d returned %s at %d", rev, kv.Key, kv.ModRevision)
						return
					}
				}
				if _, _, err := f.Get("k/007"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := 0; i < len(b.entries); i += 10 {
		mustApply(t, f, b.entries[i:i+10])
	}
	close(stop)
	wg.Wait()
	kv, found, err := f.Get("k/199") // written last, by entry 2000
	if err != nil || !found || string(kv.Value) != "1999" {
		t.Fatalf("Get k/199 = %+v, %v, %v", kv, found, err)
	}
}

// appliedInFile is the applied index the state file itself holds, read
// from a copy of it (the open FSM keeps the file locked).
func appliedInFile(t *testing.T, path string) uint64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(cp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(cp, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var index uint64
	err = db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket([]byte("meta")).Get([]byte("applied_index")); len(v) == 8 {
			index = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return index
}
