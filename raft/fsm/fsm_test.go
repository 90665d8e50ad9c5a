package fsm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/store"
)

func openFSM(t *testing.T, path string, opts fsm.Options) *fsm.FSM {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "state.db")
	}
	f, err := fsm.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// logBuilder numbers entries the way a Raft log would.
type logBuilder struct {
	t       testing.TB
	entries []fsm.Entry
	id      uint64
}

func (b *logBuilder) add(c fsm.Command) uint64 {
	b.id++
	c.ID = b.id
	b.raw(mustEncode(b.t, c))
	return b.id
}

func (b *logBuilder) raw(data []byte) {
	b.entries = append(b.entries, fsm.Entry{Index: uint64(len(b.entries) + 1), Term: 1 + uint64(len(b.entries)/10), Data: data})
}

func put(key, value string) fsm.Command {
	return fsm.Command{Kind: fsm.KindPut, Key: key, Value: []byte(value)}
}

func mustApply(t *testing.T, f *fsm.FSM, entries []fsm.Entry) []fsm.Result {
	t.Helper()
	res, err := f.Apply(entries)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return res
}

// dump renders every bucket of a closed state file, to compare states byte
// for byte.
func dump(t *testing.T, path string) string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var sb strings.Builder
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			fmt.Fprintf(&sb, "[%s]\n", name)
			return b.ForEach(func(k, v []byte) error {
				fmt.Fprintf(&sb, "%x=%x\n", k, v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

func TestApplyResultsAndRevisions(t *testing.T) {
	f := openFSM(t, "", fsm.Options{})
	b := &logBuilder{t: t}
	b.add(put("a", "1"))                                                                   // rev 1
	b.add(put("a", "2"))                                                                   // rev 2
	b.add(fsm.Command{Kind: fsm.KindDelete, Key: "absent"})                                // no change
	b.raw(nil)                                                                             // no-op entry
	b.add(fsm.Command{Kind: fsm.KindCompareAndSet, Key: "a", ExpectModRev: 1})             // stale
	b.add(fsm.Command{Kind: fsm.KindCompareAndSet, Key: "a", ExpectModRev: 2, Value: nil}) // rev 3
	b.add(fsm.Command{Kind: fsm.KindPut, Key: ""})                                         // invalid
	b.raw([]byte("garbage"))                                                               // undecodable
	b.add(fsm.Command{Kind: fsm.KindBatch, Conds: []store.Cond{{Key: "a", ModRevision: 3}},
		Ops: []store.Op{store.Put("b", []byte("x")), store.Delete("a")}}) // rev 4
	b.add(fsm.Command{Kind: fsm.KindBatch, Ops: []store.Op{store.Delete("a")}})              // ok, no change
	b.add(fsm.Command{Kind: fsm.KindBatch, Conds: []store.Cond{{Key: "b", ModRevision: 0}}}) // fails
	b.add(fsm.Command{Kind: fsm.KindDelete, Key: "b"})                                       // rev 5
	b.add(fsm.Command{Kind: fsm.KindCompact, Rev: 6})                                        // beyond current
	b.add(fsm.Command{Kind: fsm.KindCompact, Rev: 2})                                        // ok, no new revision

	res := mustApply(t, f, b.entries)
	type want struct {
		id, index   uint64
		rev         int64
		ok, deleted bool
		invalid     bool
	}
	wants := []want{
		{1, 1, 1, true, false, false},
		{2, 2, 2, true, false, false},
		{3, 3, 2, true, false, false},
		{4, 5, 2, false, false, false},
		{5, 6, 3, true, false, false},
		{6, 7, 3, false, false, true},
		{0, 8, 3, false, false, true},
		{7, 9, 4, true, false, false},
		{8, 10, 4, true, false, false},
		{9, 11, 4, false, false, false},
		{10, 12, 5, true, true, false},
		{11, 13, 5, false, false, true},
		{12, 14, 5, true, false, false},
	}
	if len(res) != len(wants) {
		t.Fatalf("%d results, want %d: %+v", len(res), len(wants), res)
	}
	for i, w := range wants {
		r := res[i]
		got := want{r.ID, r.Index, r.Rev, r.OK, r.Deleted, r.Err != nil}
		if got != w {
			t.Errorf("result %d = %+v (err %v), want %+v", i, got, r.Err, w)
		}
		if r.Err != nil && !errors.Is(r.Err, store.ErrInvalid) {
			t.Errorf("result %d: error %v does not wrap store.ErrInvalid", i, r.Err)
		}
	}
	if got := f.AppliedIndex(); got != 14 {
		t.Fatalf("AppliedIndex = %d, want 14", got)
	}
	if rev, err := f.Revision(); err != nil || rev != 5 {
		t.Fatalf("Revision = %d, %v; want 5", rev, err)
	}
	if _, found, _ := f.Get("a"); found {
		t.Fatal("a still exists")
	}
	// Compaction to 2 leaves watches from 2 on possible, not before.
	if _, err := f.Watch(t.Context(), "", 1); !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("Watch from 1 after compacting to 2: %v, want ErrCompacted", err)
	}
	w, err := f.Watch(t.Context(), "", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, rev := range []int64{3, 4, 4, 5} {
		select {
		case ev := <-w.Events():
			if ev.KV.ModRevision != rev {
				t.Fatalf("replayed event at %d, want %d", ev.KV.ModRevision, rev)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no replayed event")
		}
	}
}

func TestApplySkipsAppliedAndRefusesGaps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	f := openFSM(t, path, fsm.Options{})
	b := &logBuilder{t: t}
	for i := range 10 {
		b.add(put(fmt.Sprintf("k%d", i), "v"))
	}
	mustApply(t, f, b.entries[:5])
	// Entries 3..7: 3..5 are skipped, 6 and 7 applied.
	res := mustApply(t, f, b.entries[2:7])
	if len(res) != 2 || res[0].Index != 6 || res[1].Index != 7 || res[1].Rev != 7 {
		t.Fatalf("re-applying 3..7 after 5 gave %+v, want results for 6 and 7 only", res)
	}
	if res := mustApply(t, f, b.entries[:7]); len(res) != 0 {
		t.Fatalf("re-applying applied entries gave results %+v", res)
	}
	if _, err := f.Apply(b.entries[8:]); err == nil {
		t.Fatal("Apply accepted entry 9 after 7")
	}
	gap := []fsm.Entry{b.entries[7], b.entries[9]}
	if _, err := f.Apply(gap); err == nil {
		t.Fatal("Apply accepted entries 8 and 10")
	}
	if got := f.AppliedIndex(); got != 7 {
		t.Fatalf("AppliedIndex after refused calls = %d, want 7", got)
	}
	if _, found, _ := f.Get("k7"); found {
		t.Fatal("a refused call applied entry 8")
	}

	// After a restart, the applied index and the data agree, and replaying
	// the whole log only applies what is new.
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f = openFSM(t, path, fsm.Options{})
	if got := f.AppliedIndex(); got != 7 {
		t.Fatalf("AppliedIndex after reopen = %d, want 7", got)
	}
	res = mustApply(t, f, b.entries)
	if len(res) != 3 || res[0].Index != 8 || res[2].Rev != 10 {
		t.Fatalf("replaying the log after reopen gave %+v", res)
	}
	_, index, term, err := f.Snapshot()
	if err != nil || index != 10 || term != b.entries[9].Term {
		t.Fatalf("Snapshot index %d term %d (%v), want 10 and %d", index, term, err, b.entries[9].Term)
	}
}

// randomLog makes a log of every kind of command, including invalid and
// undecodable ones, on a small key space so that they interact.
func randomLog(t *testing.T, seed uint64, n int) []fsm.Entry {
	r := rand.New(rand.NewPCG(seed, seed))
	b := &logBuilder{t: t}
	key := func() string { return fmt.Sprintf("k%d", r.IntN(20)) }
	rev := func() int64 { return int64(r.IntN(n)) }
	for range n {
		switch x := r.IntN(100); {
		case x < 40:
			b.add(put(key(), fmt.Sprint(r.Int())))
		case x < 55:
			b.add(fsm.Command{Kind: fsm.KindDelete, Key: key()})
		case x < 70:
			b.add(fsm.Command{Kind: fsm.KindCompareAndSet, Key: key(), ExpectModRev: rev() % 3, Value: []byte("c")})
		case x < 85:
			c := fsm.Command{Kind: fsm.KindBatch}
			for range r.IntN(3) {
				c.Conds = append(c.Conds, store.Cond{Key: key(), ModRevision: rev() % 2})
			}
			for range r.IntN(5) {
				if r.IntN(2) == 0 {
					c.Ops = append(c.Ops, store.Put(key(), []byte("b")))
				} else {
					c.Ops = append(c.Ops, store.Delete(key()))
				}
			}
			b.add(c)
		case x < 88:
			b.add(fsm.Command{Kind: fsm.KindCompact, Rev: rev() / 2})
		case x < 92:
			b.add(put("", "invalid"))
		case x < 95:
			b.raw([]byte{1, byte(r.IntN(256)), 0xff})
		default:
			b.raw(nil)
		}
	}
	return b.entries
}

// TestDeterministic applies one log to three FSMs, split differently into
// Apply calls, and expects byte-identical state and identical results.
func TestDeterministic(t *testing.T) {
	entries := randomLog(t, 7, 1000)
	opts := fsm.Options{HistoryRetain: 50}
	// Each split is a cycle of Apply call sizes.
	splits := [][]int{{1, 2, 5}, {7, 1, 30, 2}, {len(entries)}}
	var dumps []string
	var results [][]string
	for i, split := range splits {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("state%d.db", i))
		f := openFSM(t, path, opts)
		var rs []string
		for at, k := 0, 0; at < len(entries); k++ {
			n := min(split[k%len(split)], len(entries)-at)
			for _, r := range mustApply(t, f, entries[at:at+n]) {
				rs = append(rs, fmt.Sprintf("%d %d %d %v %v %v", r.ID, r.Index, r.Rev, r.OK, r.Deleted, r.Err))
			}
			at += n
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		dumps = append(dumps, dump(t, path))
		results = append(results, rs)
	}
	for i := 1; i < len(splits); i++ {
		if dumps[i] != dumps[0] {
			t.Fatalf("state after Apply calls of %v differs from calls of %v", splits[i], splits[0])
		}
		if strings.Join(results[i], "\n") != strings.Join(results[0], "\n") {
			t.Fatalf("results after Apply calls of %v differ from calls of %v", splits[i], splits[0])
		}
	}
	if !strings.Contains(strings.Join(results[0], "\n"), "invalid") || len(results[0]) < 800 {
		t.Fatalf("the log did not exercise invalid commands: %d results", len(results[0]))
	}
}

func TestHistoryRetention(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	f := openFSM(t, path, fsm.Options{HistoryRetain: 10})
	b := &logBuilder{t: t}
	for i := range 100 {
		b.add(put(fmt.Sprintf("k%d", i%7), "v"))
	}
	mustApply(t, f, b.entries)
	if _, err := f.Watch(t.Context(), "", 89); !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("Watch from 89 with 10 revisions kept: %v, want ErrCompacted", err)
	}
	w, err := f.Watch(t.Context(), "", 90)
	if err != nil {
		t.Fatalf("Watch from 90: %v", err)
	}
	w.Close()
	f.Close()
	if n := historyRecords(t, path); n != 10 {
		t.Fatalf("%d history records, want 10", n)
	}

	// Lowered retention shrinks the history gradually, a bounded number of
	// records per new revision, down to the new size.
	f = openFSM(t, path, fsm.Options{HistoryRetain: 3})
	mustApply(t, f, b.entries) // all applied already: nothing happens
	b.add(put("x", "1"))
	mustApply(t, f, b.entries)
	f.Close()
	if n := historyRecords(t, path); n != 3 {
		t.Fatalf("%d history records after one more revision with 3 kept, want 3", n)
	}
}

func historyRecords(t *testing.T, path string) int {
	t.Helper()
	d := dump(t, path)
	start := strings.Index(d, "[history]\n")
	rest := d[start+len("[history]\n"):]
	if end := strings.Index(rest, "["); end >= 0 {
		rest = rest[:end]
	}
	return strings.Count(rest, "\n")
}

func TestSnapshotRestore(t *testing.T) {
	entries := randomLog(t, 3, 600)
	srcPath := filepath.Join(t.TempDir(), "src.db")
	src := openFSM(t, srcPath, fsm.Options{HistoryRetain: 100})
	mustApply(t, src, entries[:400])
	data, index, term, err := src.Snapshot()
	if err != nil || index != 400 || term != entries[399].Term {
		t.Fatalf("Snapshot: index %d term %d err %v", index, term, err)
	}
	var streamed bytes.Buffer
	if i, _, err := src.WriteSnapshot(&streamed); err != nil || i != 400 {
		t.Fatalf("WriteSnapshot: index %d, %v", i, err)
	}
	appended, i, _, err := src.AppendSnapshot([]byte("header"))
	if err != nil || i != 400 || !bytes.Equal(appended, append([]byte("header"), data...)) {
		t.Fatalf("AppendSnapshot: index %d, %v, same as header+Snapshot: %v", i, err, bytes.Equal(appended, append([]byte("header"), data...)))
	}

	dstPath := filepath.Join(t.TempDir(), "dst.db")
	dst := openFSM(t, dstPath, fsm.Options{HistoryRetain: 100})
	mustApply(t, dst, entries[:10])
	w, err := dst.Watch(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Garbage is refused and leaves the state as it was.
	if err := dst.Restore(strings.NewReader("not a database")); err == nil {
		t.Fatal("Restore accepted garbage")
	}
	if dst.AppliedIndex() != 10 {
		t.Fatalf("AppliedIndex after a refused restore = %d", dst.AppliedIndex())
	}
	if err := dst.Restore(&streamed); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	select {
	case _, ok := <-w.Events():
		if ok {
			t.Fatal("watcher got an event from a restore")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watcher not ended by Restore")
	}
	if !errors.Is(w.Err(), store.ErrCompacted) {
		t.Fatalf("watcher ended by Restore with %v, want ErrCompacted", w.Err())
	}
	if dst.AppliedIndex() != 400 {
		t.Fatalf("AppliedIndex after Restore = %d, want 400", dst.AppliedIndex())
	}
	// The restored node goes on with the log and ends where the source does.
	mustApply(t, src, entries[400:])
	mustApply(t, dst, entries)
	// An older snapshot is refused.
	if err := dst.Restore(bytes.NewReader(data)); err == nil {
		t.Fatal("Restore accepted a snapshot older than the applied index")
	}
	w2, err := dst.Watch(t.Context(), "", 0)
	if err != nil {
		t.Fatalf("Watch after Restore: %v", err)
	}
	w2.Close()
	src.Close()
	dst.Close()
	if dump(t, srcPath) != dump(t, dstPath) {
		t.Fatal("restored state differs from the source after the same entries")
	}
}

func TestWatchLagDoesNotBlockApply(t *testing.T) {
	f := openFSM(t, "", fsm.Options{WatchBuffer: 4})
	slow, err := f.Watch(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	b := &logBuilder{t: t}
	// One revision larger than the buffer is taken while the queue is
	// empty: a batch of 10 reaches a reader whole.
	ops := make([]store.Op, 10)
	for i := range ops {
		ops[i] = store.Put(fmt.Sprintf("b%d", i), nil)
	}
	b.add(fsm.Command{Kind: fsm.KindBatch, Ops: ops})
	mustApply(t, f, b.entries)
	for i := range ops {
		select {
		case ev := <-slow.Events():
			if ev.KV.Key != ops[i].Key || ev.KV.ModRevision != 1 {
				t.Fatalf("event %d: %q at %d", i, ev.KV.Key, ev.KV.ModRevision)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("batch event %d not delivered: %v", i, slow.Err())
		}
	}
	// Now nobody reads: Apply goes on and the watcher is dropped.
	for i := range 100 {
		b.add(put(fmt.Sprintf("k%d", i), "v"))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		mustApply(t, f, b.entries)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Apply blocked on a watcher that does not read")
	}
	var got []int64
	for ev := range slow.Events() {
		got = append(got, ev.KV.ModRevision)
	}
	if !errors.Is(slow.Err(), store.ErrWatcherLagging) {
		t.Fatalf("Err = %v, want ErrWatcherLagging", slow.Err())
	}
	if len(got) > 5 {
		t.Fatalf("a watcher with a buffer of 4 delivered %d events after falling behind", len(got))
	}
	for i, rev := range got {
		if rev != int64(2+i) {
			t.Fatalf("delivered revisions %v: not the start of 2, 3, ...", got)
		}
	}
}

func TestWatchCompactedDuringReplay(t *testing.T) {
	f := openFSM(t, "", fsm.Options{HistoryRetain: 300})
	b := &logBuilder{t: t}
	for i := range 300 {
		b.add(put(fmt.Sprintf("k%d", i), "v"))
	}
	mustApply(t, f, b.entries)
	// The replay reads history in chunks; while the reader sits on the
	// first, history moves past the second.
	w, err := f.Watch(t.Context(), "", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	first := <-w.Events()
	if first.KV.ModRevision != 2 {
		t.Fatalf("first replayed revision %d, want 2", first.KV.ModRevision)
	}
	for i := range 600 {
		b.add(put(fmt.Sprintf("more%d", i), "v"))
	}
	mustApply(t, f, b.entries)
	want := int64(3)
	for ev := range w.Events() {
		if ev.KV.ModRevision != want {
			t.Fatalf("replayed revision %d, want %d", ev.KV.ModRevision, want)
		}
		want++
	}
	if !errors.Is(w.Err(), store.ErrCompacted) {
		t.Fatalf("Err = %v after history moved past the replay, want ErrCompacted", w.Err())
	}
	if want > 300 {
		t.Fatalf("replay went on to %d past the compacted history", want)
	}
}

func TestWatchContext(t *testing.T) {
	f := openFSM(t, "", fsm.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	w, err := f.Watch(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	for range w.Events() {
	}
	if !errors.Is(w.Err(), context.Canceled) {
		t.Fatalf("Err = %v, want context.Canceled", w.Err())
	}
}

func TestOpenRefusesForeignFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket([]byte("something"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if f, err := fsm.Open(path, fsm.Options{}); err == nil {
		f.Close()
		t.Fatal("Open accepted a bbolt file of someone else")
	}
	if _, err := fsm.Open(filepath.Join(t.TempDir(), "x.db"), fsm.Options{HistoryRetain: -1}); err == nil {
		t.Fatal("Open accepted a negative HistoryRetain")
	}
}

func TestClosed(t *testing.T) {
	f := openFSM(t, "", fsm.Options{})
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := f.Apply([]fsm.Entry{{Index: 1}}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Apply after Close: %v", err)
	}
	if _, _, _, err := f.Snapshot(); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Snapshot after Close: %v", err)
	}
	if err := f.Restore(strings.NewReader("")); err == nil {
		t.Fatal("Restore after Close succeeded")
	}
}

// DataSize follows what the state holds, not the file (which grows in
// steps of 16 MiB), and keeps counting pages that deletes freed.
func TestDataSize(t *testing.T) {
	for name, opts := range map[string]fsm.Options{"Default": {}, "OpenTransaction": held} {
		t.Run(name, func(t *testing.T) { testDataSize(t, opts) })
	}
}

// commit commits f's open transaction, if any, as a snapshot does.
func commit(t *testing.T, f *fsm.FSM) {
	t.Helper()
	if _, _, err := f.WriteSnapshot(io.Discard); err != nil {
		t.Fatal(err)
	}
}

func testDataSize(t *testing.T, opts fsm.Options) {
	f := openFSM(t, "", opts)
	b := &logBuilder{t: t}
	b.add(put("small", "v"))
	mustApply(t, f, b.entries)
	commit(t, f)
	small := f.DataSize()
	if small <= 0 || small >= 1<<20 {
		t.Fatalf("one small key: DataSize %d, want between 0 and 1 MiB", small)
	}
	value := strings.Repeat("x", 16<<10)
	n := len(b.entries)
	for i := range 128 { // 2 MiB
		b.add(put(fmt.Sprintf("big-%03d", i), value))
	}
	mustApply(t, f, b.entries[n:])
	commit(t, f)
	big := f.DataSize()
	if big < 2<<20 {
		t.Fatalf("2 MiB of values: DataSize %d", big)
	}
	n = len(b.entries)
	for i := range 128 {
		b.add(fsm.Command{Kind: fsm.KindDelete, Key: fmt.Sprintf("big-%03d", i)})
	}
	mustApply(t, f, b.entries[n:])
	commit(t, f)
	if after := f.DataSize(); after < big {
		t.Fatalf("after the deletes: DataSize %d, was %d", after, big)
	}
}
