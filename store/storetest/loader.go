package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcd-project/kcd/store"
)

// RunLoader runs the conformance suite of store.Loader against the stores
// that open returns (each new and empty; RunLoader closes it when the
// subtest ends). Beyond what the comments of store.Loader say, it expects:
//
//   - Load fails with an error wrapping store.ErrInvalid, and changes
//     nothing, when rev is negative or below the store's revision, when
//     len(kvs)+len(deleted) is over store.MaxBatchOps, when the bytes of
//     the keys and values of kvs and the keys of deleted add up to more
//     than store.MaxLoadBytes (a single KV of any allowed size is always
//     accepted), when a key or value breaks the limits of Put, or when a
//     KV's revisions are not 1 <= CreateRevision <= ModRevision <= rev;
//   - Load at the store's current revision works (a switch loads its copy
//     in several chunks at one revision);
//   - after Clear the revision is 0, the next write makes revision 1, and
//     keys under a kept prefix are unchanged (value and revisions);
//   - a watcher open during a Load or a Clear delivers none of it: it
//     either ends with an error wrapping store.ErrCompacted or goes on with
//     the next ordinary write;
//   - Clear and Load with an ended context return an error wrapping
//     ctx.Err() and do nothing; after Close they fail with store.ErrClosed.
func RunLoader(t *testing.T, open func(t *testing.T) store.Loader) {
	tests := []struct {
		name string
		fn   func(*testing.T, *loaderHarness)
	}{
		{"Load", testLoad},
		{"LoadChunks", testLoadChunks},
		{"LoadThenWrite", testLoadThenWrite},
		{"LoadWatch", testLoadWatch},
		{"LoadLimits", testLoadLimits},
		{"Clear", testClear},
		{"ClearWatch", testClearWatch},
		{"LoaderContextEnded", testLoaderContextEnded},
		{"LoaderClose", testLoaderClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := open(t)
			h := &loaderHarness{
				harness: harness{t: t, s: l, ctx: t.Context(), close: sync.OnceValue(l.Close)},
				l:       l,
			}
			t.Cleanup(func() {
				if err := h.close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, h)
		})
	}
}

type loaderHarness struct {
	harness
	l store.Loader
}

func (h *loaderHarness) load(rev int64, kvs []store.KV, deleted ...string) {
	h.t.Helper()
	if err := h.l.Load(h.ctx, rev, kvs, deleted); err != nil {
		h.t.Fatalf("Load(%d, %d kvs, %d deleted): %v", rev, len(kvs), len(deleted), err)
	}
}

func (h *loaderHarness) clear(keep ...string) {
	h.t.Helper()
	if err := h.l.Clear(h.ctx, keep...); err != nil {
		h.t.Fatalf("Clear(%q): %v", keep, err)
	}
}

// wantScan checks the whole content of the store and the revision a Scan
// reads it at.
func (h *loaderHarness) wantScan(rev int64, want ...store.KV) {
	h.t.Helper()
	kvs, got := h.scan("", 0)
	if got != rev {
		h.t.Fatalf("Scan read at revision %d, want %d", got, rev)
	}
	if len(kvs) != len(want) {
		h.t.Fatalf("Scan returned keys %q, want %q", keysOf(kvs), keysOf(want))
	}
	for i, kv := range kvs {
		w := want[i]
		if kv.Key != w.Key || !bytes.Equal(kv.Value, w.Value) || kv.CreateRevision != w.CreateRevision || kv.ModRevision != w.ModRevision {
			h.t.Fatalf("Scan[%d] = %q=%q create %d mod %d, want %q=%q create %d mod %d", i,
				kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision, w.Key, w.Value, w.CreateRevision, w.ModRevision)
		}
	}
}

func kv(key, value string, create, mod int64) store.KV {
	return store.KV{Key: key, Value: []byte(value), CreateRevision: create, ModRevision: mod}
}

// wantCompacted checks that a Watch from afterRev fails with ErrCompacted.
func (h *loaderHarness) wantCompacted(afterRev int64) {
	h.t.Helper()
	w, err := h.s.Watch(h.ctx, "", afterRev)
	if err == nil {
		w.Close()
	}
	if !errors.Is(err, store.ErrCompacted) {
		h.t.Fatalf("Watch from %d: error %v, want store.ErrCompacted", afterRev, err)
	}
}

// wantSkipped checks a watcher that was open while the store was loaded or
// cleared: it delivers none of that, and either ends with ErrCompacted or
// delivers next, the first ordinary write after it.
func wantSkipped(t *testing.T, w store.Watcher, next event) {
	t.Helper()
	select {
	case ev, ok := <-w.Events():
		if !ok {
			if err := w.Err(); !errors.Is(err, store.ErrCompacted) {
				t.Fatalf("a watcher open during a Load or Clear ended with %v, want store.ErrCompacted", err)
			}
			return
		}
		if got := fromEvent(ev); got != next {
			t.Fatalf("a watcher open during a Load or Clear delivered %v, want %v or an end with store.ErrCompacted", got, next)
		}
	case <-time.After(wait):
		t.Fatalf("a watcher open during a Load or Clear neither ended nor delivered %v within %v", next, wait)
	}
}

func testLoad(t *testing.T, h *loaderHarness) {
	h.put("a", "1") // 1
	h.put("b", "2") // 2
	h.put("c", "3") // 3
	h.load(10, []store.KV{
		kv("a", "A", 2, 7),
		kv("x", "X", 5, 9),
		kv("z", "", 10, 10),
	}, "b", "absent")
	h.wantRev(10)
	h.wantKV("a", "A", 2, 7)
	h.wantKV("x", "X", 5, 9)
	h.wantKV("z", "", 10, 10)
	h.wantAbsent("b")
	h.wantAbsent("absent")
	// A key Load does not name stays as it was.
	h.wantKV("c", "3", 3, 3)
	h.wantScan(10, kv("a", "A", 2, 7), kv("c", "3", 3, 3), kv("x", "X", 5, 9), kv("z", "", 10, 10))
	kvs, rev := h.scan("x", 0)
	if rev != 10 || len(kvs) != 1 || kvs[0].CreateRevision != 5 || kvs[0].ModRevision != 9 {
		t.Fatalf("Scan(%q) = %v at %d, want x create 5 mod 9 at 10", "x", kvs, rev)
	}

	// Below the current revision: refused, nothing changes.
	if err := h.l.Load(h.ctx, 9, []store.KV{kv("a", "old", 1, 1)}, []string{"c"}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Load at 9 on a store at 10: error %v, want store.ErrInvalid", err)
	}
	h.wantRev(10)
	h.wantKV("a", "A", 2, 7)
	h.wantKV("c", "3", 3, 3)

	// Later loads overwrite by value, whatever revisions a key had.
	h.load(12, []store.KV{kv("a", "A2", 11, 11)}, "z")
	h.wantScan(12, kv("a", "A2", 11, 11), kv("c", "3", 3, 3), kv("x", "X", 5, 9))
}

// A switch copies a Scan at one revision in several chunks, each a Load at
// that revision, then loads what changed up to a later revision.
func testLoadChunks(t *testing.T, h *loaderHarness) {
	h.clear()
	const n = 30
	var want []store.KV
	for i := range n {
		want = append(want, kv(fmt.Sprintf("k/%02d", i), fmt.Sprintf("v%d", i), int64(i+1), int64(2*i+1)))
	}
	for i := 0; i < n; i += 7 {
		chunk := want[i:min(i+7, n)]
		h.load(100, chunk)
		h.wantRev(100)
	}
	h.wantScan(100, want...)
	// What changed meanwhile: a put, an update and a delete.
	h.load(104, []store.KV{kv("k/03", "new", 4, 102), kv("k/99", "late", 103, 103)}, "k/05")
	want[3] = kv("k/03", "new", 4, 102)
	want = append(slices.Delete(want, 5, 6), kv("k/99", "late", 103, 103))
	h.wantScan(104, want...)
	// The same revision once more, with nothing in it, is a no-op.
	h.load(104, nil)
	h.wantScan(104, want...)
	// Nothing to load, the source's revision only (its last changes were
	// to keys a switch does not copy): the revision moves, the keys stay,
	// and the next write follows it.
	h.load(110, nil)
	h.wantScan(110, want...)
	if rev := h.put("k/next", "n"); rev != 111 {
		t.Fatalf("Put after an empty Load at 110 = revision %d, want 111", rev)
	}
}

// Ordinary writes after a Load go on from its revision and compare against
// the loaded revisions.
func testLoadThenWrite(t *testing.T, h *loaderHarness) {
	h.load(20, []store.KV{kv("a", "A", 3, 17), kv("b", "B", 18, 18), kv("c", "C", 19, 20)})
	if rev, ok := h.cas("a", 16, "wrong"); ok || rev != 20 {
		t.Fatalf("CompareAndSet(a, 16) = %d, %v; want 20, false", rev, ok)
	}
	if rev, ok := h.cas("a", 17, "A2"); !ok || rev != 21 {
		t.Fatalf("CompareAndSet(a, 17) = %d, %v; want 21, true", rev, ok)
	}
	h.wantKV("a", "A2", 3, 21)
	if rev, ok := h.cas("b", 0, "exists"); ok || rev != 21 {
		t.Fatalf("CompareAndSet(b, 0) on a loaded key = %d, %v; want 21, false", rev, ok)
	}
	if rev, ok := h.batch([]store.Cond{{Key: "b", ModRevision: 18}, {Key: "c", ModRevision: 20}},
		[]store.Op{store.Put("b", []byte("B2")), store.Delete("c")}); !ok || rev != 22 {
		t.Fatalf("Batch on the loaded revisions = %d, %v; want 22, true", rev, ok)
	}
	h.wantKV("b", "B2", 18, 22)
	h.wantAbsent("c")
	if rev := h.put("d", "D"); rev != 23 {
		t.Fatalf("Put after the Load = revision %d, want 23", rev)
	}
	if rev, deleted := h.del("b"); !deleted || rev != 24 {
		t.Fatalf("Delete(b) = %d, %v; want 24, true", rev, deleted)
	}
	h.wantScan(24, kv("a", "A2", 3, 21), kv("d", "D", 23, 23))
}

func testLoadWatch(t *testing.T, h *loaderHarness) {
	h.put("pre", "p")
	r1 := h.put("k", "1")
	h.put("k", "2")
	open := h.watch("", 0)         // from now, open during the Load
	replaying := h.watch("", r1-1) // replaying history the Load drops
	wantEvents(t, replaying, putEv("k", "1", r1, r1), putEv("k", "2", r1, r1+1))

	h.load(50, []store.KV{kv("k", "L", 40, 45), kv("m", "M", 50, 50)}, "gone")
	// The history before the Load is gone.
	for _, after := range []int64{r1 - 1, r1, 49} {
		h.wantCompacted(after)
	}
	from50 := h.watch("", 50)
	fromNow := h.watch("", 0)
	rk := h.put("k", "after")
	if rk != 51 {
		t.Fatalf("Put after Load at 50 = revision %d, want 51", rk)
	}
	next := putEv("k", "after", 40, 51)
	wantEvents(t, from50, next)
	wantEvents(t, fromNow, next)
	wantQuiet(t, from50)
	wantSkipped(t, open, next)
	wantSkipped(t, replaying, next)
}

func testLoadLimits(t *testing.T, h *loaderHarness) {
	for range 3 {
		h.put("present", "v")
	}
	r0 := h.rev()
	rev := r0 + 10
	long := strings.Repeat("k", store.MaxKeySize+1)
	big := make([]byte, store.MaxValueSize+1)
	ok := kv("ok", "v", rev, rev)

	many := func(n int) []store.KV {
		kvs := make([]store.KV, n)
		for i := range kvs {
			kvs[i] = kv(fmt.Sprintf("many/%05d", i), "v", rev, rev)
		}
		return kvs
	}
	names := func(n int) []string {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("del/%05d", i)
		}
		return keys
	}
	// Two values that together are one byte over MaxLoadBytes.
	half := (store.MaxLoadBytes - 2) / 2
	over := []store.KV{
		{Key: "a", Value: make([]byte, half), CreateRevision: rev, ModRevision: rev},
		{Key: "b", Value: make([]byte, store.MaxLoadBytes-2-half+1), CreateRevision: rev, ModRevision: rev},
	}
	// The same in kvs and deleted together.
	overWithDeleted := []store.KV{{Key: "a", Value: make([]byte, store.MaxLoadBytes-1), CreateRevision: rev, ModRevision: rev}}

	for _, tc := range []struct {
		name    string
		rev     int64
		kvs     []store.KV
		deleted []string
	}{
		{"negative revision", -1, nil, nil},
		{"below the current revision", r0 - 1, []store.KV{kv("ok", "v", 1, 1)}, nil},
		{"too many kvs", rev, many(store.MaxBatchOps + 1), nil},
		{"too many deleted", rev, nil, names(store.MaxBatchOps + 1)},
		{"too many kvs and deleted", rev, many(store.MaxBatchOps/2 + 1), names(store.MaxBatchOps / 2)},
		{"too many bytes", rev, over, nil},
		{"too many bytes with deleted", rev, overWithDeleted, []string{"xy"}},
		{"empty key", rev, []store.KV{ok, kv("", "v", rev, rev)}, nil},
		{"long key", rev, []store.KV{ok, kv(long, "v", rev, rev)}, nil},
		{"big value", rev, []store.KV{{Key: "k", Value: big, CreateRevision: rev, ModRevision: rev}}, nil},
		{"empty deleted key", rev, []store.KV{ok}, []string{""}},
		{"long deleted key", rev, []store.KV{ok}, []string{long}},
		{"mod revision above rev", rev, []store.KV{ok, kv("k", "v", rev, rev+1)}, nil},
		{"create revision above mod", rev, []store.KV{ok, kv("k", "v", rev, rev-1)}, nil},
		{"create revision 0", rev, []store.KV{ok, kv("k", "v", 0, rev)}, nil},
		{"negative create revision", rev, []store.KV{ok, kv("k", "v", -1, rev)}, nil},
	} {
		if err := h.l.Load(h.ctx, tc.rev, tc.kvs, tc.deleted); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Load with %s: error %v, want store.ErrInvalid", tc.name, err)
		}
	}
	h.wantRev(r0)
	if kvs, _ := h.scan("", 0); len(kvs) != 1 {
		t.Fatalf("invalid loads left %d keys, want only %q: %q", len(kvs), "present", keysOf(kvs))
	}

	// At the limits exactly, everything works.
	h.load(rev, many(store.MaxBatchOps))
	if kvs, _ := h.scan("many/", 0); len(kvs) != store.MaxBatchOps {
		t.Fatalf("Load of %d kvs left %d keys", store.MaxBatchOps, len(kvs))
	}
	h.load(rev, many(store.MaxBatchOps/2), names(store.MaxBatchOps/2)...)
	exact := []store.KV{
		{Key: "a", Value: make([]byte, half), CreateRevision: rev, ModRevision: rev},
		{Key: "b", Value: make([]byte, store.MaxLoadBytes-2-half), CreateRevision: rev, ModRevision: rev},
	}
	h.load(rev, exact)
	if kv, _ := h.get("b"); len(kv.Value) != store.MaxLoadBytes-2-half {
		t.Fatalf("Load of exactly MaxLoadBytes: b has %d bytes", len(kv.Value))
	}
	// A single KV of the largest value is accepted, though over MaxLoadBytes.
	maxKey := strings.Repeat("m", store.MaxKeySize)
	maxValue := bytes.Repeat([]byte{0xcd}, store.MaxValueSize)
	h.load(rev+1, []store.KV{{Key: maxKey, Value: maxValue, CreateRevision: 1, ModRevision: rev + 1}})
	if kv, found := h.get(maxKey); !found || !bytes.Equal(kv.Value, maxValue) || kv.ModRevision != rev+1 {
		t.Fatalf("Get of the largest loaded KV: found %v, %d bytes, mod %d", found, len(kv.Value), kv.ModRevision)
	}
	h.wantRev(rev + 1)
}

func testClear(t *testing.T, h *loaderHarness) {
	h.put("a", "1")
	rk := h.put("keep/x", "kx")
	rk2 := h.put("also/y", "ay")
	h.put("keepnot", "no")
	rz := h.put("z", "26")
	h.clear("keep/", "also/")
	// With keys kept, the revision stays: it never goes back.
	h.wantRev(rz)
	h.wantAbsent("a")
	h.wantAbsent("keepnot")
	h.wantAbsent("z")
	// Kept keys are left alone, revisions and all.
	h.wantKV("keep/x", "kx", rk, rk)
	h.wantKV("also/y", "ay", rk2, rk2)
	if kvs, rev := h.scan("", 0); rev != rz || len(kvs) != 2 {
		t.Fatalf("Scan after Clear = %q at %d, want the 2 kept keys at %d", keysOf(kvs), rev, rz)
	}
	if rev := h.put("new", "n"); rev != rz+1 {
		t.Fatalf("Put after Clear = revision %d, want %d", rev, rz+1)
	}
	h.wantKV("new", "n", rz+1, rz+1)

	// Without keep, everything goes.
	h.clear()
	h.wantRev(0)
	if kvs, rev := h.scan("", 0); rev != 0 || len(kvs) != 0 {
		t.Fatalf("Scan after Clear() = %q at %d, want nothing at 0", keysOf(kvs), rev)
	}
	// Cleared, a store takes a Load from any revision.
	h.load(7, []store.KV{kv("a", "A", 7, 7)})
	h.wantScan(7, kv("a", "A", 7, 7))
}

func testClearWatch(t *testing.T, h *loaderHarness) {
	for i := range 5 {
		h.put(fmt.Sprintf("k%d", i), "v")
	}
	open := h.watch("", 0)
	h.clear()
	r := h.put("k", "after")
	if r != 1 {
		t.Fatalf("Put after Clear = revision %d, want 1", r)
	}
	wantSkipped(t, open, putEv("k", "after", 1, 1))
	// The history before the Clear is gone: after a Load at 3, a watch
	// from 2 (a revision the store had before) fails; one from 3 works.
	h.clear()
	h.load(3, []store.KV{kv("k0", "L", 1, 3)})
	h.wantCompacted(2)
	w := h.watch("", 3)
	r = h.put("k0", "w")
	wantEvents(t, w, putEv("k0", "w", 1, r))
}

func testLoaderContextEnded(t *testing.T, h *loaderHarness) {
	r1 := h.put("k", "v")
	canceled, cancel := context.WithCancel(h.ctx)
	cancel()
	expired, cancel2 := context.WithDeadline(h.ctx, time.Now().Add(-time.Second))
	defer cancel2()
	for _, c := range []struct {
		ctx  context.Context
		want error
	}{{canceled, context.Canceled}, {expired, context.DeadlineExceeded}} {
		if err := h.l.Clear(c.ctx); !errors.Is(err, c.want) {
			t.Errorf("Clear with an ended context: error %v, want %v", err, c.want)
		}
		if err := h.l.Load(c.ctx, r1+5, []store.KV{kv("l", "v", r1+5, r1+5)}, []string{"k"}); !errors.Is(err, c.want) {
			t.Errorf("Load with an ended context: error %v, want %v", err, c.want)
		}
	}
	h.wantKV("k", "v", r1, r1)
	h.wantAbsent("l")
	h.wantRev(r1)
}

func testLoaderClose(t *testing.T, h *loaderHarness) {
	r1 := h.put("k", "v")
	if err := h.close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := h.l.Clear(h.ctx); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Clear after Close: error %v, want store.ErrClosed", err)
	}
	if err := h.l.Load(h.ctx, r1+1, []store.KV{kv("l", "v", r1+1, r1+1)}, nil); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Load after Close: error %v, want store.ErrClosed", err)
	}
}
