package fsm

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A command the log holds twice (a proposal delivered twice) is applied
// once, and its second copy answers with the first result.
func TestDuplicateCommandAppliedOnce(t *testing.T) {
	f, err := Open(filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	put := func(id uint64, v string) []byte {
		b, err := EncodeCommand(Command{ID: id, Kind: KindPut, Key: "k", Value: []byte(v)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	res, err := f.Apply([]Entry{
		{Index: 1, Term: 1, Data: put(7, "old")},
		{Index: 2, Term: 1, Data: put(8, "new")},
		{Index: 3, Term: 1, Data: put(7, "old")}, // the duplicate arrives late
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[2].Rev != res[0].Rev || res[2].Index != 1 {
		t.Fatalf("duplicate's result %+v, first %+v", res[2], res[0])
	}
	kv, _, _ := f.Get("k")
	if string(kv.Value) != "new" || kv.ModRevision != 2 {
		t.Fatalf("k = %q at %d: the duplicate was applied again", kv.Value, kv.ModRevision)
	}
	if rev, _ := f.Revision(); rev != 2 {
		t.Errorf("revision %d", rev)
	}
}

// The table of remembered ids stays bounded.
func TestDedupTableIsBounded(t *testing.T) {
	f, err := Open(filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defer func(old uint64) { dedupRetain = old }(dedupRetain)
	dedupRetain = 2000
	const n = 2500
	batch := make([]Entry, 0, 1000)
	for i := uint64(1); i <= n; i++ {
		b, _ := EncodeCommand(Command{ID: i, Kind: KindPut, Key: "k", Value: []byte("v")})
		batch = append(batch, Entry{Index: i, Term: 1, Data: b})
		if len(batch) == cap(batch) || i == n {
			if _, err := f.Apply(batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	var count int
	_ = f.view(func(tx *bolt.Tx) error { count = tx.Bucket(bucketIDs).Stats().KeyN; return nil })
	if count != int(dedupRetain) {
		t.Errorf("%d ids remembered, want %d", count, dedupRetain)
	}
}

// The ids are rebuilt from the file: a duplicate is still recognized after
// a reopen, and after a restore from a snapshot on another FSM.
func TestDedupSurvivesReopenAndRestore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	f, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cmd := func(id uint64, v string) []byte {
		b, err := EncodeCommand(Command{ID: id, Kind: KindPut, Key: "k", Value: []byte(v)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if _, err := f.Apply([]Entry{{Index: 1, Term: 1, Data: cmd(7, "a")}, {Index: 2, Term: 1, Data: cmd(8, "b")}}); err != nil {
		t.Fatal(err)
	}
	snap, _, _, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	f.Close()

	check := func(f *FSM, index uint64) {
		t.Helper()
		res, err := f.Apply([]Entry{{Index: index, Term: 1, Data: cmd(7, "a")}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || res[0].Index != 1 || res[0].Rev != 1 {
			t.Fatalf("duplicate of id 7 answered %+v, want the first result (index 1, revision 1)", res)
		}
		if kv, _, _ := f.Get("k"); string(kv.Value) != "b" {
			t.Fatalf("k = %q: the duplicate was applied again", kv.Value)
		}
	}
	f, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	check(f, 3)
	f.Close()

	g, err := Open(filepath.Join(t.TempDir(), "other.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	check(g, 3)
}

// A file of format 2, which kept the ids in log order in a bucket of its
// own, is converted on Open and keeps its ids.
func TestOpenConvertsFormat2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := map[string]*bolt.Bucket{}
		for _, name := range []string{"meta", "kv", "history", "ids", "id-order"} {
			if b[name], err = tx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		u := func(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
		for k, v := range map[string]uint64{"version": 2, "applied_index": 1, "applied_term": 1, "revision": 1, "compacted": 0, "idcount": 1} {
			if err := b["meta"].Put([]byte(k), u(v)); err != nil {
				return err
			}
		}
		rec := append(append(u(1), u(1)...), []byte("v")...) // create 1, mod 1, value
		if err := b["kv"].Put([]byte("k"), rec); err != nil {
			return err
		}
		if err := b["ids"].Put(u(7), encodeDedup(Result{ID: 7, Index: 1, Rev: 1, OK: true})); err != nil {
			return err
		}
		return b["id-order"].Put(u(1), u(7))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	f, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open of a format 2 file: %v", err)
	}
	defer f.Close()
	_ = f.view(func(tx *bolt.Tx) error {
		if v := getUint(tx.Bucket(bucketMeta), metaVersion); v != formatVersion {
			t.Errorf("format version %d after Open, want %d", v, formatVersion)
		}
		if tx.Bucket([]byte("id-order")) != nil {
			t.Error("id-order bucket kept")
		}
		return nil
	})
	b, _ := EncodeCommand(Command{ID: 7, Kind: KindPut, Key: "k", Value: []byte("again")})
	res, err := f.Apply([]Entry{{Index: 2, Term: 1, Data: b}})
	if err != nil || len(res) != 1 || res[0].Index != 1 {
		t.Fatalf("duplicate of an id from the format 2 file: %+v, %v", res, err)
	}
	if kv, _, _ := f.Get("k"); string(kv.Value) != "v" {
		t.Fatalf("k = %q: the duplicate was applied", kv.Value)
	}
}
