package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/kcd-project/kcd/store"
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
	if got := f.dedup.len(); got != int(dedupRetain) {
		t.Errorf("%d ids remembered, want %d", got, dedupRetain)
	}
	// The file holds as many, in chunks of which those with only
	// forgotten ids are gone.
	var chunks int
	var d *dedupIndex
	err = f.viewCommitted(func(tx *bolt.Tx) error {
		chunks = tx.Bucket(bucketDedup).Stats().KeyN
		var err error
		d, err = loadDedup(tx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if d.len() != int(dedupRetain) || len(d.results) != int(dedupRetain) {
		t.Errorf("the file holds %d ids (%d results), want %d", d.len(), len(d.results), dedupRetain)
	}
	if max := int(dedupRetain)/dedupChunk + 2; chunks > max {
		t.Errorf("%d chunks for %d ids, want at most %d", chunks, dedupRetain, max)
	}
	for id := uint64(n - dedupRetain + 1); id <= n; id++ {
		if _, ok := d.results[id]; !ok {
			t.Fatalf("id %d of the last %d not in the file", id, dedupRetain)
		}
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
		if err := b["ids"].Put(u(7), appendDedup(nil, Result{ID: 7, Index: 1, Rev: 1, OK: true})); err != nil {
			return err
		}
		return b["id-order"].Put(u(1), u(7))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	f := openConverted(t, path, 2, "id-order")
	defer f.Close()
	b, _ := EncodeCommand(Command{ID: 7, Kind: KindPut, Key: "k", Value: []byte("again")})
	res, err := f.Apply([]Entry{{Index: 2, Term: 1, Data: b}})
	if err != nil || len(res) != 1 || res[0].Index != 1 {
		t.Fatalf("duplicate of an id from the format 2 file: %+v, %v", res, err)
	}
	if kv, _, _ := f.Get("k"); string(kv.Value) != "v" {
		t.Fatalf("k = %q: the duplicate was applied", kv.Value)
	}
}

// A file of format 3, a history record per revision and an ids record per
// command, is converted on Open: its history reads back from any revision,
// its ids still catch duplicates, and what is applied next goes on from
// there.
func TestOpenConvertsFormat3(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	u := func(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
	const revs = 150 // more ids than a dedup chunk holds
	err = db.Update(func(tx *bolt.Tx) error {
		b := map[string]*bolt.Bucket{}
		for _, name := range []string{"meta", "kv", "history", "ids"} {
			if b[name], err = tx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		// Revision r put k<r%5> = v<r>, by command id 1000+r at index r;
		// revisions up to 100 are compacted.
		for k, v := range map[string]uint64{"version": 3, "applied_index": revs, "applied_term": 1, "revision": revs, "compacted": 100} {
			if err := b["meta"].Put([]byte(k), u(v)); err != nil {
				return err
			}
		}
		for r := int64(1); r <= revs; r++ {
			key := fmt.Sprintf("k%d", r%5)
			val := []byte(fmt.Sprintf("v%d", r))
			create := (r-1)%5 + 1 // the first revision of the key
			if err := b["kv"].Put([]byte(key), append(append(u(uint64(create)), u(uint64(r))...), val...)); err != nil {
				return err
			}
			if r > 100 {
				ev := store.Event{Type: store.EventPut, KV: store.KV{Key: key, Value: val, CreateRevision: create, ModRevision: r}}
				if err := b["history"].Put(u(uint64(r)), appendEvents(nil, []store.Event{ev})); err != nil {
					return err
				}
			}
			id := 1000 + uint64(r)
			if err := b["ids"].Put(u(id), appendDedup(nil, Result{ID: id, Index: uint64(r), Rev: r, OK: true})); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	v3, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	f := openConverted(t, path, 3, "ids")
	defer f.Close()
	if f.dedup.len() != revs {
		t.Fatalf("%d ids after the conversion, want %d", f.dedup.len(), revs)
	}
	evs, next, err := f.history("", 101, revs)
	if err != nil || next != revs+1 || len(evs) != revs-100 {
		t.Fatalf("history 101-%d after the conversion: %d events, next %d, %v", revs, len(evs), next, err)
	}
	for i, ev := range evs {
		if r := int64(101 + i); ev.KV.ModRevision != r || string(ev.KV.Value) != fmt.Sprintf("v%d", r) {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
	if _, _, err := f.history("", 100, revs); err == nil {
		t.Error("history from the compacted revision 100 read")
	}

	// A duplicate of the oldest and of the newest id, and a new command.
	var entries []Entry
	for i, id := range []uint64{1001, 1000 + revs, 5000} {
		b, _ := EncodeCommand(Command{ID: id, Kind: KindPut, Key: "new", Value: []byte("x")})
		entries = append(entries, Entry{Index: revs + 1 + uint64(i), Term: 1, Data: b})
	}
	res, err := f.Apply(entries)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Index != 1 || res[1].Index != revs || res[2].Index != revs+3 || res[2].Rev != revs+1 {
		t.Fatalf("results %+v", res)
	}
	if evs, _, err := f.history("", revs, revs+1); err != nil || len(evs) != 2 || evs[1].KV.Key != "new" {
		t.Fatalf("history %d-%d after an apply: %+v, %v", revs, revs+1, evs, err)
	}

	// A snapshot of format 3, as a member not yet upgraded sends it.
	g, err := Open(filepath.Join(t.TempDir(), "other.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.Restore(bytes.NewReader(v3)); err != nil {
		t.Fatalf("Restore from a format 3 snapshot: %v", err)
	}
	if g.dedup.len() != revs {
		t.Errorf("%d ids after restoring a format 3 snapshot, want %d", g.dedup.len(), revs)
	}
	if evs, _, err := g.history("", 101, revs); err != nil || len(evs) != revs-100 {
		t.Errorf("history after restoring a format 3 snapshot: %d events, %v", len(evs), err)
	}
}

// openConverted opens the file at path, of an older format, and checks
// that it is now of the current one, the old bucket gone.
func openConverted(t *testing.T, path string, format int, gone string) *FSM {
	t.Helper()
	f, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open of a format %d file: %v", format, err)
	}
	_ = f.view(func(tx *bolt.Tx) error {
		if v := getUint(tx.Bucket(bucketMeta), metaVersion); v != formatVersion {
			t.Errorf("format version %d after Open, want %d", v, formatVersion)
		}
		if tx.Bucket([]byte(gone)) != nil {
			t.Errorf("%s bucket kept", gone)
		}
		return nil
	})
	return f
}
