package fsm_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/store"
)

var exempt = []string{"kcd/cluster/", "kcd/members/"}

// While frozen, every write that touches a key outside the exempt prefixes
// fails with ErrFrozen and changes nothing; exempt writes, Load, Clear and
// Compact apply. The state survives a reopen; Thaw ends it.
func TestFreeze(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	l, err := fsm.OpenLocal(path, fsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, k := range []string{"connectors/a", "kcd/cluster/store"} {
		if _, err := l.Put(ctx, k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Freeze(ctx, exempt...); err != nil {
		t.Fatalf("Freeze: %v", err)
	}
	wantRefused := func(l *fsm.Local) {
		t.Helper()
		rev, _ := l.Revision(ctx)
		for name, call := range map[string]func() error{
			"Put":           func() error { _, err := l.Put(ctx, "connectors/b", []byte("x")); return err },
			"Put prefix":    func() error { _, err := l.Put(ctx, "kcd/cluster", []byte("x")); return err },
			"Delete":        func() error { _, _, err := l.Delete(ctx, "connectors/a"); return err },
			"Delete absent": func() error { _, _, err := l.Delete(ctx, "connectors/none"); return err },
			"CompareAndSet": func() error { _, _, err := l.CompareAndSet(ctx, "connectors/a", 1, []byte("x")); return err },
			"Batch mixed": func() error {
				_, _, err := l.Batch(ctx, nil, []store.Op{store.Put("kcd/cluster/x", nil), store.Delete("connectors/a")})
				return err
			},
		} {
			if err := call(); !errors.Is(err, fsm.ErrFrozen) {
				t.Errorf("%s while frozen: error %v, want fsm.ErrFrozen", name, err)
			}
		}
		if got, _ := l.Revision(ctx); got != rev {
			t.Fatalf("refused writes moved the revision from %d to %d", rev, got)
		}
		if kv, found, _ := l.Get(ctx, "connectors/a"); !found || string(kv.Value) != "v" {
			t.Fatalf("connectors/a = %q, %v after refused writes", kv.Value, found)
		}
		if frozen, ex, err := l.Frozen(); err != nil || !frozen || !slices.Equal(ex, exempt) {
			t.Fatalf("Frozen = %v, %q, %v; want true, %q", frozen, ex, err, exempt)
		}
	}
	wantRefused(l)

	// Exempt keys, and a batch whose conditions (not ops) name other keys.
	if _, err := l.Put(ctx, "kcd/cluster/store", []byte("mysql")); err != nil {
		t.Fatalf("exempt Put while frozen: %v", err)
	}
	if _, ok, err := l.Batch(ctx, []store.Cond{{Key: "connectors/a", ModRevision: 1}},
		[]store.Op{store.Put("kcd/members/1", nil), store.Delete("kcd/cluster/none")}); err != nil || !ok {
		t.Fatalf("exempt Batch while frozen: %v, %v", ok, err)
	}
	rev, _ := l.Revision(ctx)
	if err := l.Compact(ctx, rev); err != nil {
		t.Fatalf("Compact while frozen: %v", err)
	}
	if err := l.Load(ctx, rev+5, []store.KV{{Key: "connectors/l", Value: []byte("L"), CreateRevision: 2, ModRevision: rev + 5}}, []string{"connectors/a"}); err != nil {
		t.Fatalf("Load while frozen: %v", err)
	}
	if kv, found, _ := l.Get(ctx, "connectors/l"); !found || kv.ModRevision != rev+5 {
		t.Fatalf("loaded key while frozen: %+v, %v", kv, found)
	}

	// A reopened file is still frozen.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err = fsm.OpenLocal(path, fsm.Options{}); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Put(ctx, "connectors/a", []byte("v")); !errors.Is(err, fsm.ErrFrozen) {
		t.Fatalf("Put after reopen: %v, want fsm.ErrFrozen", err)
	}
	if err := l.Clear(ctx, exempt...); err != nil {
		t.Fatalf("Clear while frozen: %v", err)
	}
	if frozen, _, _ := l.Frozen(); !frozen {
		t.Fatal("Clear thawed the store")
	}
	if kv, found, _ := l.Get(ctx, "kcd/cluster/store"); !found || string(kv.Value) != "mysql" {
		t.Fatalf("kept key after Clear: %q, %v", kv.Value, found)
	}

	if err := l.Thaw(ctx); err != nil {
		t.Fatalf("Thaw: %v", err)
	}
	if frozen, ex, _ := l.Frozen(); frozen || ex != nil {
		t.Fatalf("Frozen after Thaw = %v, %q", frozen, ex)
	}
	if _, err := l.Put(ctx, "connectors/b", []byte("x")); err != nil {
		t.Fatalf("Put after Thaw: %v", err)
	}
	// Frozen with no exempt prefix refuses every write.
	if err := l.Freeze(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Put(ctx, "kcd/cluster/store", nil); !errors.Is(err, fsm.ErrFrozen) {
		t.Fatalf("Put frozen without exemptions: %v, want fsm.ErrFrozen", err)
	}
}

// The freeze state is part of the snapshot: a state restored from a frozen
// one is frozen, from a thawed one thawed.
func TestFreezeTravelsInSnapshot(t *testing.T) {
	b := &logBuilder{t: t}
	b.add(put("connectors/a", "v"))
	b.add(fsm.Command{Kind: fsm.KindFreeze, Frozen: true, Prefixes: exempt})
	src := openFSM(t, "", fsm.Options{})
	mustApply(t, src, b.entries)
	frozenSnap, _, _, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	b.add(fsm.Command{Kind: fsm.KindFreeze})
	mustApply(t, src, b.entries[2:])
	thawedSnap, _, _, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}

	dst := openFSM(t, "", fsm.Options{})
	if err := dst.Restore(bytes.NewReader(frozenSnap)); err != nil {
		t.Fatal(err)
	}
	if frozen, ex, err := dst.Frozen(); err != nil || !frozen || !slices.Equal(ex, exempt) {
		t.Fatalf("restored from a frozen snapshot: Frozen = %v, %q, %v", frozen, ex, err)
	}
	next := &logBuilder{t: t, entries: slices.Clone(b.entries[:2]), id: 100}
	next.add(put("connectors/b", "v"))
	res := mustApply(t, dst, next.entries[2:])
	if len(res) != 1 || !errors.Is(res[0].Err, fsm.ErrFrozen) {
		t.Fatalf("Put on a state restored frozen: %+v, want fsm.ErrFrozen", res)
	}
	if err := dst.Restore(bytes.NewReader(thawedSnap)); err != nil {
		t.Fatal(err)
	}
	if frozen, _, _ := dst.Frozen(); frozen {
		t.Fatal("restored from a thawed snapshot: still frozen")
	}
}

// A write refused as frozen is remembered like one applied: a copy of it
// later in the log (a retried proposal), after a Thaw, gets the same
// refusal and does not write, also after a reopen.
func TestFrozenRefusalIsRemembered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	f := openFSM(t, path, fsm.Options{})
	b := &logBuilder{t: t}
	b.add(fsm.Command{Kind: fsm.KindFreeze, Frozen: true})
	b.add(put("k", "refused"))
	dup := b.entries[1].Data
	b.add(fsm.Command{Kind: fsm.KindFreeze})
	b.raw(dup)
	res := mustApply(t, f, b.entries)
	if len(res) != 4 || !errors.Is(res[1].Err, fsm.ErrFrozen) || !errors.Is(res[3].Err, fsm.ErrFrozen) || res[3].Index != 2 {
		t.Fatalf("results %+v: want the copy at 4 answered with the refusal at 2", res)
	}
	if _, found, _ := f.Get("k"); found {
		t.Fatal("the copy of a refused write was applied after the thaw")
	}
	f.Close()
	f = openFSM(t, path, fsm.Options{})
	b.raw(dup)
	res = mustApply(t, f, b.entries[4:])
	if len(res) != 1 || !errors.Is(res[0].Err, fsm.ErrFrozen) {
		t.Fatalf("copy after reopen: %+v, want fsm.ErrFrozen", res)
	}
	if _, found, _ := f.Get("k"); found {
		t.Fatal("the copy of a refused write was applied after a reopen")
	}
}

// A Load or Clear ends every watcher with ErrCompacted, and history goes on
// from the new revision, also when commands before and after it share its
// entry or its Apply call.
func TestLoadResetsHistory(t *testing.T) {
	load := fsm.Command{Kind: fsm.KindLoad, Rev: 10, KVs: []store.KV{{Key: "l", Value: []byte("L"), CreateRevision: 4, ModRevision: 9}}}
	for _, grouped := range []bool{false, true} {
		t.Run(fmt.Sprint("grouped=", grouped), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			f := openFSM(t, path, fsm.Options{})
			b := &logBuilder{t: t}
			b.add(put("a", "1"))
			b.add(put("a", "2"))
			mustApply(t, f, b.entries)
			w, err := f.Watch(t.Context(), "", 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			cmds := []fsm.Command{put("b", "before"), load, put("c", "after"), put("c", "again")}
			if grouped {
				var data [][]byte
				for _, c := range cmds {
					data = append(data, mustEncode(t, c))
				}
				b.raw(fsm.AppendGroup(nil, data))
			} else {
				for _, c := range cmds {
					b.add(c)
				}
			}
			mustApply(t, f, b.entries[2:])
			select {
			case ev, ok := <-w.Events():
				if ok {
					// Only "b" at 3 may come before the watcher ends.
					if ev.KV.Key != "b" {
						t.Fatalf("watcher open during a Load got %v", ev)
					}
					_, ok = <-w.Events()
				}
				if ok {
					t.Fatal("watcher open during a Load goes on")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("watcher not ended by a Load")
			}
			if !errors.Is(w.Err(), store.ErrCompacted) {
				t.Fatalf("watcher ended by a Load with %v, want store.ErrCompacted", w.Err())
			}
			if rev, _ := f.Revision(); rev != 12 {
				t.Fatalf("revision %d after the load at 10 and two puts, want 12", rev)
			}
			check := func(next uint64) {
				if _, err := history(t, f, 9, next); !errors.Is(err, store.ErrCompacted) {
					t.Fatalf("watch from 9: %v, want store.ErrCompacted", err)
				}
				got, err := history(t, f, 10, next)
				want := "11 1 c=\"after\" (11)\n12 1 c=\"again\" (11)\n"
				if err != nil || got != want {
					t.Fatalf("history from 10 = %q, %v; want %q", got, err, want)
				}
			}
			check(uint64(len(b.entries) + 1))
			// The records on file agree after a reopen.
			f.Close()
			f = openFSM(t, path, fsm.Options{})
			check(uint64(len(b.entries) + 2))

			// Clear: the same, at revision 0.
			w, err = f.Watch(t.Context(), "", 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			c := &logBuilder{t: t, entries: b.entries, id: 100}
			c.entries = append(c.entries, fsm.Entry{Index: uint64(len(c.entries) + 1)}, fsm.Entry{Index: uint64(len(c.entries) + 2)})
			c.add(fsm.Command{Kind: fsm.KindClear, Prefixes: []string{"c"}})
			mustApply(t, f, c.entries[len(c.entries)-1:])
			if err, _ := drain(t, w); !errors.Is(err, store.ErrCompacted) {
				t.Fatalf("watcher ended by a Clear with %v, want store.ErrCompacted", err)
			}
			kvs, rev, _ := f.Scan("", 0)
			if rev != 14 || len(kvs) != 1 || kvs[0].Key != "c" || kvs[0].ModRevision != 12 {
				t.Fatalf("after Clear keeping c: %+v at %d", kvs, rev)
			}
			got, err := history(t, f, 0, uint64(len(c.entries)+1))
			if err != nil || got != "" {
				t.Fatalf("history after Clear: %q, %v", got, err)
			}
		})
	}
}

func drain(t *testing.T, w store.Watcher) (error, int) {
	t.Helper()
	n := 0
	timeout := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-w.Events():
			if !ok {
				return w.Err(), n
			}
			n++
		case <-timeout:
			t.Fatal("watcher did not end")
		}
	}
}

// loadLog is randomLog with loads, clears and freezes mixed in.
func loadLog(t *testing.T, seed uint64, n int) []fsm.Entry {
	r := rand.New(rand.NewPCG(seed, seed))
	b := &logBuilder{t: t, id: 1 << 32} // ids apart from randomLog's
	rev := int64(0)
	for i, e := range randomLog(t, seed, n) {
		b.raw(e.Data)
		switch x := r.IntN(100); {
		case x < 3:
			rev += int64(1 + r.IntN(50)) // may be below: refused
			var kvs []store.KV
			for range r.IntN(5) {
				kvs = append(kvs, store.KV{Key: fmt.Sprintf("k%d", r.IntN(30)), Value: []byte(fmt.Sprint(i)), CreateRevision: 1, ModRevision: rev})
			}
			b.add(fsm.Command{Kind: fsm.KindLoad, Rev: rev, KVs: kvs, Keys: []string{fmt.Sprintf("k%d", r.IntN(30))}})
		case x < 4:
			b.add(fsm.Command{Kind: fsm.KindClear, Prefixes: []string{"k1"}})
		case x < 7:
			b.add(fsm.Command{Kind: fsm.KindFreeze, Frozen: r.IntN(2) == 0, Prefixes: []string{fmt.Sprintf("k%d", r.IntN(10))}})
		}
	}
	return b.entries
}

// Load, Clear and Freeze keep the state a function of the log: split into
// Apply calls differently, or grouped, the same log gives byte-identical
// files, the same results and the same state hashes.
func TestLoadClearFreezeDeterministic(t *testing.T) {
	entries := loadLog(t, 5, 1500)
	opts := fsm.Options{HistoryRetain: 40}
	var dumps, results []string
	var hashes []fsm.StateHash
	for i, split := range [][]int{{1, 3}, {50}, {len(entries)}} {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("state%d.db", i))
		f := openFSM(t, path, opts)
		var rs strings.Builder
		for at, k := 0, 0; at < len(entries); k++ {
			n := min(split[k%len(split)], len(entries)-at)
			for _, r := range mustApply(t, f, entries[at:at+n]) {
				fmt.Fprintf(&rs, "%d %d %d %v %v %v\n", r.ID, r.Index, r.Rev, r.OK, r.Deleted, r.Err)
			}
			at += n
		}
		hashes = append(hashes, sumNow(t, f))
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		dumps = append(dumps, dump(t, path))
		results = append(results, rs.String())
	}
	for i := 1; i < len(dumps); i++ {
		if dumps[i] != dumps[0] || results[i] != results[0] || hashes[i] != hashes[0] {
			t.Fatalf("split %d differs from split 0 (state %v, results %v, hash %v)", i,
				dumps[i] != dumps[0], results[i] != results[0], hashes[i] != hashes[0])
		}
	}
	for _, want := range []string{"frozen", "below the current revision"} {
		if !strings.Contains(results[0], want) {
			t.Fatalf("the log did not exercise %q", want)
		}
	}
}

// The state hash covers loaded values and the freeze state.
func TestStateHashCoversLoadAndFreeze(t *testing.T) {
	hashOf := func(cmds ...fsm.Command) fsm.StateHash {
		f := openFSM(t, "", fsm.Options{})
		b := &logBuilder{t: t}
		for _, c := range cmds {
			b.add(c)
		}
		res := mustApply(t, f, b.entries)
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		return sumNow(t, f)
	}
	loadKV := func(v string, create, mod int64) fsm.Command {
		return fsm.Command{Kind: fsm.KindLoad, Rev: 9, KVs: []store.KV{{Key: "k", Value: []byte(v), CreateRevision: create, ModRevision: mod}}}
	}
	base := hashOf(loadKV("v", 1, 5))
	if again := hashOf(loadKV("v", 1, 5)); again.Hash != base.Hash {
		t.Fatal("the same Load hashes differently")
	}
	for name, h := range map[string]fsm.StateHash{
		"value":           hashOf(loadKV("w", 1, 5)),
		"create revision": hashOf(loadKV("v", 2, 5)),
		"mod revision":    hashOf(loadKV("v", 1, 6)),
		"frozen":          hashOf(loadKV("v", 1, 5), fsm.Command{Kind: fsm.KindFreeze, Frozen: true}),
		"exempt":          hashOf(loadKV("v", 1, 5), fsm.Command{Kind: fsm.KindFreeze, Frozen: true, Prefixes: []string{"x"}}),
	} {
		if h.Hash == base.Hash {
			t.Errorf("a different loaded %s hashes the same", name)
		}
	}
	if thawed := hashOf(loadKV("v", 1, 5), fsm.Command{Kind: fsm.KindFreeze, Frozen: true}, fsm.Command{Kind: fsm.KindFreeze}); thawed.Hash != base.Hash {
		t.Fatal("frozen and thawed again hashes differently from never frozen")
	}
}

// After a Clear the revision starts again from 0: a watch from a revision
// of the replaced history above the present one fails with ErrCompacted
// through WatchKnown (and Local) instead of waiting to deliver a later
// history from there, missing what came before. Watch still waits.
func TestWatchKnownRefusesReplacedRevisions(t *testing.T) {
	l, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), fsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := t.Context()
	for i := range 5 {
		if _, err := l.Put(ctx, fmt.Sprintf("k%d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Put(ctx, "new", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if w, err := l.Watch(ctx, "", 3); !errors.Is(err, store.ErrCompacted) {
		if err == nil {
			w.Close()
		}
		t.Fatalf("Watch from 3 of the replaced history, at revision 1: %v, want store.ErrCompacted", err)
	}
	w, err := l.Watch(ctx, "", 1)
	if err != nil {
		t.Fatalf("Watch from the present revision: %v", err)
	}
	w.Close()
	f := openFSM(t, "", fsm.Options{})
	if w, err := f.Watch(ctx, "", 3); err != nil {
		t.Fatalf("FSM.Watch from a revision not reached yet: %v", err)
	} else {
		w.Close()
	}
	if w, err := f.WatchKnown(ctx, "", 3); !errors.Is(err, store.ErrCompacted) {
		if err == nil {
			w.Close()
		}
		t.Fatalf("FSM.WatchKnown from a revision not reached: %v, want store.ErrCompacted", err)
	}
}
