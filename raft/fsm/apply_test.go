package fsm

import (
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
