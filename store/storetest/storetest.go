// Package storetest is the conformance suite of package store. Every
// backend runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s, err := mybackend.Open(...) // a new, empty store
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// Run calls open once per subtest and closes the store when the subtest
// ends (open may register its own cleanups for files or tables). Beyond
// what the comments of package store say, the suite expects:
//
//   - a request that breaks a limit (empty or too long key, too large value,
//     too many ops or conditions, unknown op type, negative revision or
//     limit) fails with an error that wraps store.ErrInvalid, for reads too,
//     and changes nothing;
//   - a call whose context has already ended returns an error wrapping
//     ctx.Err() and does nothing;
//   - a Batch whose conditions hold but whose ops change nothing (only
//     deletes of absent keys, or no ops) succeeds without a new revision;
//   - after Close, calls fail with store.ErrClosed and open watchers end
//     with Err wrapping store.ErrClosed; a watcher ended by its own Close
//     has a nil Err, one ended by its context has the context's error;
//   - a watcher whose reader takes nothing while about 40,000 events are
//     written ends with store.ErrWatcherLagging, and the writes complete
//     meanwhile;
//   - ErrCompacted is only tested when the store implements Compacter
//     (the subtest is skipped otherwise): after Compact(ctx, rev), a Watch
//     from a revision below rev fails with store.ErrCompacted and a Watch
//     from rev works.
//
// The suite takes a few seconds per backend.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcd-project/kcd/store"
)

// Compacter is implemented by stores that can drop watch history on
// request; the suite uses it to test store.ErrCompacted.
type Compacter interface {
	// Compact drops the history of revisions up to and including rev, so
	// that a Watch from a revision below rev fails with store.ErrCompacted.
	Compact(ctx context.Context, rev int64) error
}

// wait bounds every wait for an event or a closed channel.
const wait = 5 * time.Second

// Run runs the conformance suite against the stores that open returns.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, *harness)
	}{
		{"PutGetDelete", testPutGetDelete},
		{"ValuesAreCopied", testValuesAreCopied},
		{"EmptyValueAndBinaryKeys", testEmptyValueAndBinaryKeys},
		{"CompareAndSet", testCompareAndSet},
		{"CompareAndSetRace", testCompareAndSetRace},
		{"ConcurrentWrites", testConcurrentWrites},
		{"Scan", testScan},
		{"ScanLimit", testScanLimit},
		{"Batch", testBatch},
		{"BatchAtomic", testBatchAtomic},
		{"Limits", testLimits},
		{"ContextEnded", testContextEnded},
		{"WatchFromNow", testWatchFromNow},
		{"WatchReplay", testWatchReplay},
		{"WatchReplayUnderWrites", testWatchReplayUnderWrites},
		{"WatchBatch", testWatchBatch},
		{"WatchPrefix", testWatchPrefix},
		{"WatchCompacted", testWatchCompacted},
		{"WatchLagging", testWatchLagging},
		{"WatchEnd", testWatchEnd},
		{"Close", testClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			h := &harness{t: t, s: s, ctx: t.Context(), close: sync.OnceValue(s.Close)}
			t.Cleanup(func() {
				if err := h.close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, h)
		})
	}
}

// harness wraps the store under test with assertions that fail the test.
type harness struct {
	t     *testing.T
	s     store.Store
	ctx   context.Context
	close func() error // closes the store once
}

func (h *harness) rev() int64 {
	h.t.Helper()
	rev, err := h.s.Revision(h.ctx)
	if err != nil {
		h.t.Fatalf("Revision: %v", err)
	}
	return rev
}

func (h *harness) put(key, value string) int64 {
	h.t.Helper()
	rev, err := h.s.Put(h.ctx, key, []byte(value))
	if err != nil {
		h.t.Fatalf("Put(%q): %v", key, err)
	}
	return rev
}

func (h *harness) del(key string) (int64, bool) {
	h.t.Helper()
	rev, deleted, err := h.s.Delete(h.ctx, key)
	if err != nil {
		h.t.Fatalf("Delete(%q): %v", key, err)
	}
	return rev, deleted
}

func (h *harness) cas(key string, expect int64, value string) (int64, bool) {
	h.t.Helper()
	rev, ok, err := h.s.CompareAndSet(h.ctx, key, expect, []byte(value))
	if err != nil {
		h.t.Fatalf("CompareAndSet(%q, %d): %v", key, expect, err)
	}
	return rev, ok
}

func (h *harness) batch(conds []store.Cond, ops []store.Op) (int64, bool) {
	h.t.Helper()
	rev, ok, err := h.s.Batch(h.ctx, conds, ops)
	if err != nil {
		h.t.Fatalf("Batch: %v", err)
	}
	return rev, ok
}

func (h *harness) get(key string) (store.KV, bool) {
	h.t.Helper()
	kv, found, err := h.s.Get(h.ctx, key)
	if err != nil {
		h.t.Fatalf("Get(%q): %v", key, err)
	}
	if found && kv.Key != key {
		h.t.Fatalf("Get(%q) returned key %q", key, kv.Key)
	}
	return kv, found
}

// wantKV checks key's value and revisions.
func (h *harness) wantKV(key, value string, create, mod int64) {
	h.t.Helper()
	kv, found := h.get(key)
	if !found {
		h.t.Fatalf("Get(%q): not found, want %q", key, value)
	}
	if string(kv.Value) != value || kv.CreateRevision != create || kv.ModRevision != mod {
		h.t.Fatalf("Get(%q) = %q create %d mod %d, want %q create %d mod %d",
			key, kv.Value, kv.CreateRevision, kv.ModRevision, value, create, mod)
	}
}

func (h *harness) wantAbsent(key string) {
	h.t.Helper()
	if kv, found := h.get(key); found {
		h.t.Fatalf("Get(%q) = %q, want not found", key, kv.Value)
	}
}

func (h *harness) wantRev(want int64) {
	h.t.Helper()
	if got := h.rev(); got != want {
		h.t.Fatalf("Revision = %d, want %d", got, want)
	}
}

func (h *harness) scan(prefix string, limit int) ([]store.KV, int64) {
	h.t.Helper()
	kvs, rev, err := h.s.Scan(h.ctx, prefix, limit)
	if err != nil {
		h.t.Fatalf("Scan(%q, %d): %v", prefix, limit, err)
	}
	return kvs, rev
}

func (h *harness) watch(prefix string, afterRev int64) store.Watcher {
	h.t.Helper()
	w, err := h.s.Watch(h.ctx, prefix, afterRev)
	if err != nil {
		h.t.Fatalf("Watch(%q, %d): %v", prefix, afterRev, err)
	}
	h.t.Cleanup(w.Close)
	return w
}

func keysOf(kvs []store.KV) []string {
	keys := make([]string, len(kvs))
	for i, kv := range kvs {
		keys[i] = kv.Key
	}
	return keys
}

// next returns the watcher's next event, failing if none comes in time.
func next(t *testing.T, w store.Watcher) store.Event {
	t.Helper()
	select {
	case ev, ok := <-w.Events():
		if !ok {
			t.Fatalf("watch ended early: %v", w.Err())
		}
		return ev
	case <-time.After(wait):
		t.Fatalf("no event within %v", wait)
	}
	panic("unreachable")
}

// event is what the suite expects of one Event.
type event struct {
	typ    store.EventType
	key    string
	value  string
	create int64 // 0: not checked (deletes)
	mod    int64
}

func putEv(key, value string, create, mod int64) event {
	return event{store.EventPut, key, value, create, mod}
}

func delEv(key string, mod int64) event { return event{store.EventDelete, key, "", 0, mod} }

func (e event) String() string {
	if e.typ == store.EventDelete {
		return fmt.Sprintf("delete %q @%d", e.key, e.mod)
	}
	return fmt.Sprintf("put %q=%q create %d @%d", e.key, e.value, e.create, e.mod)
}

func fromEvent(ev store.Event) event {
	e := event{typ: ev.Type, key: ev.KV.Key, value: string(ev.KV.Value), create: ev.KV.CreateRevision, mod: ev.KV.ModRevision}
	if ev.Type == store.EventDelete {
		e.create = 0
	}
	return e
}

// wantEvents reads len(want) events and compares them with want.
func wantEvents(t *testing.T, w store.Watcher, want ...event) {
	t.Helper()
	for i, we := range want {
		ev := next(t, w)
		if ev.Type == store.EventDelete && ev.KV.Value != nil {
			t.Errorf("event %d: delete of %q carries a value %q", i, ev.KV.Key, ev.KV.Value)
		}
		if got := fromEvent(ev); got != we {
			t.Fatalf("event %d = %v, want %v", i, got, we)
		}
	}
}

// wantQuiet checks that no event arrives for a short while.
func wantQuiet(t *testing.T, w store.Watcher) {
	t.Helper()
	select {
	case ev, ok := <-w.Events():
		if ok {
			t.Fatalf("unexpected event %v", fromEvent(ev))
		}
		t.Fatalf("watch ended: %v", w.Err())
	case <-time.After(50 * time.Millisecond):
	}
}

// wantEnd drains the watcher until its channel closes and returns Err and
// the events read meanwhile.
func wantEnd(t *testing.T, w store.Watcher) (error, []store.Event) {
	t.Helper()
	var evs []store.Event
	deadline := time.After(wait)
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				return w.Err(), evs
			}
			evs = append(evs, ev)
		case <-deadline:
			t.Fatalf("watch did not end within %v", wait)
		}
	}
}

func testPutGetDelete(t *testing.T, h *harness) {
	h.wantAbsent("k")
	r0 := h.rev()

	r1 := h.put("k", "v1")
	if r1 != r0+1 {
		t.Fatalf("first Put returned revision %d, want %d", r1, r0+1)
	}
	h.wantKV("k", "v1", r1, r1)
	h.wantRev(r1)

	r2 := h.put("k", "v2")
	if r2 != r1+1 {
		t.Fatalf("second Put returned revision %d, want %d", r2, r1+1)
	}
	h.wantKV("k", "v2", r1, r2)

	r3 := h.put("other", "x")
	h.wantKV("k", "v2", r1, r2) // untouched by a write to another key

	rev, deleted := h.del("k")
	if !deleted || rev != r3+1 {
		t.Fatalf("Delete = %d, %v; want %d, true", rev, deleted, r3+1)
	}
	r4 := rev
	h.wantAbsent("k")
	h.wantRev(r4)

	rev, deleted = h.del("k")
	if deleted || rev != r4 {
		t.Fatalf("Delete of a deleted key = %d, %v; want %d, false", rev, deleted, r4)
	}
	rev, deleted = h.del("never-was")
	if deleted || rev != r4 {
		t.Fatalf("Delete of an absent key = %d, %v; want %d, false", rev, deleted, r4)
	}
	h.wantRev(r4)

	// A key created again starts a new life: a new CreateRevision.
	r5 := h.put("k", "v3")
	if r5 != r4+1 {
		t.Fatalf("Put after Delete returned revision %d, want %d", r5, r4+1)
	}
	h.wantKV("k", "v3", r5, r5)
	h.wantKV("other", "x", r3, r3)
}

func testValuesAreCopied(t *testing.T, h *harness) {
	v := []byte("abc")
	if _, err := h.s.Put(h.ctx, "k", v); err != nil {
		t.Fatal(err)
	}
	v[0] = 'X'
	kv, _ := h.get("k")
	if string(kv.Value) != "abc" {
		t.Fatalf("value changed with the caller's slice: %q", kv.Value)
	}
	kv.Value[0] = 'Y'
	kvs, _ := h.scan("k", 0)
	kvs[0].Value[1] = 'Z'
	kv, _ = h.get("k")
	if string(kv.Value) != "abc" {
		t.Fatalf("value changed with a returned slice: %q", kv.Value)
	}
	if _, _, err := h.s.CompareAndSet(h.ctx, "k", kv.ModRevision, v); err != nil {
		t.Fatal(err)
	}
	v[0] = 'W'
	h.wantKV("k", "Xbc", kv.CreateRevision, kv.ModRevision+1)
}

func testEmptyValueAndBinaryKeys(t *testing.T, h *harness) {
	for _, v := range [][]byte{nil, {}} {
		rev, err := h.s.Put(h.ctx, "empty", v)
		if err != nil {
			t.Fatalf("Put of an empty value: %v", err)
		}
		kv, found := h.get("empty")
		if !found || len(kv.Value) != 0 || kv.ModRevision != rev {
			t.Fatalf("Get after Put of %#v = %q, found %v, mod %d", v, kv.Value, found, kv.ModRevision)
		}
	}
	keys := []string{"\x00", "a\x00b", "\xff\xfe", "\xc3\x28", "é/ü", " ", strings.Repeat("\xff", store.MaxKeySize)}
	for i, k := range keys {
		h.put(k, fmt.Sprint(i))
	}
	for i, k := range keys {
		kv, found := h.get(k)
		if !found || string(kv.Value) != fmt.Sprint(i) {
			t.Fatalf("Get(%q) = %q, %v; want %q", k, kv.Value, found, fmt.Sprint(i))
		}
	}
}

func testCompareAndSet(t *testing.T, h *harness) {
	r0 := h.rev()
	rev, ok := h.cas("k", 0, "v1")
	if !ok || rev != r0+1 {
		t.Fatalf("CompareAndSet(absent, 0) = %d, %v; want %d, true", rev, ok, r0+1)
	}
	h.wantKV("k", "v1", r0+1, r0+1)

	rev, ok = h.cas("k", 0, "v2")
	if ok || rev != r0+1 {
		t.Fatalf("CompareAndSet(present, 0) = %d, %v; want %d, false", rev, ok, r0+1)
	}
	h.wantKV("k", "v1", r0+1, r0+1)

	rev, ok = h.cas("k", r0+1, "v2")
	if !ok || rev != r0+2 {
		t.Fatalf("CompareAndSet(k, its ModRevision) = %d, %v; want %d, true", rev, ok, r0+2)
	}
	h.wantKV("k", "v2", r0+1, r0+2)

	for _, stale := range []int64{r0 + 1, r0 + 3, r0 + 1000} {
		rev, ok = h.cas("k", stale, "v3")
		if ok || rev != r0+2 {
			t.Fatalf("CompareAndSet(k, %d) with ModRevision %d = %d, %v; want %d, false", stale, r0+2, rev, ok, r0+2)
		}
	}
	h.wantKV("k", "v2", r0+1, r0+2)

	// A non-zero expectation never matches an absent key.
	rev, ok = h.cas("absent", r0+2, "x")
	if ok || rev != r0+2 {
		t.Fatalf("CompareAndSet(absent, %d) = %d, %v; want %d, false", r0+2, rev, ok, r0+2)
	}
	h.wantAbsent("absent")

	h.del("k")
	rev, ok = h.cas("k", 0, "v4")
	if !ok || rev != r0+4 {
		t.Fatalf("CompareAndSet(deleted, 0) = %d, %v; want %d, true", rev, ok, r0+4)
	}
	h.wantKV("k", "v4", r0+4, r0+4)
	h.wantRev(r0 + 4)
}

func testCompareAndSetRace(t *testing.T, h *harness) {
	const n = 16
	r0 := h.rev()
	race := func(expect int64) (winner string) {
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			wins  []string
			start = make(chan struct{})
		)
		for i := range n {
			wg.Go(func() {
				v := fmt.Sprintf("%d/%d", expect, i)
				<-start
				_, ok, err := h.s.CompareAndSet(h.ctx, "k", expect, []byte(v))
				if err != nil {
					t.Errorf("CompareAndSet: %v", err)
					return
				}
				if ok {
					mu.Lock()
					wins = append(wins, v)
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		if len(wins) != 1 {
			t.Fatalf("%d of %d concurrent CompareAndSet(k, %d) succeeded (%q), want exactly 1", len(wins), n, expect, wins)
		}
		return wins[0]
	}
	first := race(0)
	h.wantKV("k", first, r0+1, r0+1)
	second := race(r0 + 1)
	h.wantKV("k", second, r0+1, r0+2)
	h.wantRev(r0 + 2)
}

func testConcurrentWrites(t *testing.T, h *harness) {
	const writers, each = 8, 10
	r0 := h.rev()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		revs []int64
	)
	for i := range writers {
		wg.Go(func() {
			for j := range each {
				rev, err := h.s.Put(h.ctx, fmt.Sprintf("w%d/%d", i, j), []byte("v"))
				if err != nil {
					t.Errorf("Put: %v", err)
					return
				}
				mu.Lock()
				revs = append(revs, rev)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	slices.Sort(revs)
	for i, rev := range revs {
		if rev != r0+1+int64(i) {
			t.Fatalf("concurrent Puts returned revisions %v, want each of %d..%d once", revs, r0+1, r0+writers*each)
		}
	}
	h.wantRev(r0 + writers*each)
	// Every key holds the revision its Put returned.
	kvs, _ := h.scan("w", 0)
	if len(kvs) != writers*each {
		t.Fatalf("Scan found %d keys, want %d", len(kvs), writers*each)
	}
	seen := map[int64]bool{}
	for _, kv := range kvs {
		if seen[kv.ModRevision] {
			t.Fatalf("two keys with ModRevision %d", kv.ModRevision)
		}
		seen[kv.ModRevision] = true
	}
}

func testScan(t *testing.T, h *harness) {
	keys := []string{
		"a", "a/1", "a/10", "a/2", "a\x00", "a\xff", "a\xff\xff", "ab", "`", "b", "b/1",
		"\xff", "\xff\xff", "\xffa", "\x00",
	}
	shuffled := slices.Clone(keys)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) {
		shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
	})
	revOf := map[string]int64{}
	for _, k := range shuffled {
		revOf[k] = h.put(k, "v:"+k)
	}
	h.del("b/1")
	keys = slices.DeleteFunc(keys, func(k string) bool { return k == "b/1" })
	slices.Sort(keys) // byte order, which is the store's order
	cur := h.rev()

	for _, prefix := range []string{"", "a", "a/", "a/1", "a\xff", "\xff", "\x00", "b", "b/", "c", "a/10/"} {
		var want []string
		for _, k := range keys {
			if strings.HasPrefix(k, prefix) {
				want = append(want, k)
			}
		}
		kvs, rev := h.scan(prefix, 0)
		if got := keysOf(kvs); !slices.Equal(got, want) {
			t.Fatalf("Scan(%q) = %q, want %q", prefix, got, want)
		}
		if rev != cur {
			t.Fatalf("Scan(%q) read at revision %d, want %d", prefix, rev, cur)
		}
		for _, kv := range kvs {
			if string(kv.Value) != "v:"+kv.Key || kv.ModRevision != revOf[kv.Key] || kv.CreateRevision != revOf[kv.Key] {
				t.Fatalf("Scan(%q) gave %q = %q create %d mod %d, want %q at %d",
					prefix, kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision, "v:"+kv.Key, revOf[kv.Key])
			}
		}
	}
}

func testScanLimit(t *testing.T, h *harness) {
	var keys []string
	for i := range 10 {
		k := fmt.Sprintf("p/%02d", i)
		keys = append(keys, k)
		h.put(k, "v")
	}
	h.put("q", "v")
	for _, tc := range []struct{ limit, want int }{{1, 1}, {3, 3}, {10, 10}, {11, 10}, {1000, 10}, {0, 10}} {
		kvs, _ := h.scan("p/", tc.limit)
		if got := keysOf(kvs); !slices.Equal(got, keys[:tc.want]) {
			t.Fatalf("Scan(p/, %d) = %q, want %q", tc.limit, got, keys[:tc.want])
		}
	}
}

func testBatch(t *testing.T, h *harness) {
	r0 := h.rev()
	rev, ok := h.batch(
		[]store.Cond{{Key: "a", ModRevision: 0}, {Key: "b", ModRevision: 0}},
		[]store.Op{store.Put("a", []byte("1")), store.Put("b", []byte("2")), store.Put("c", []byte("3"))},
	)
	r1 := r0 + 1
	if !ok || rev != r1 {
		t.Fatalf("Batch creating a, b, c = %d, %v; want %d, true", rev, ok, r1)
	}
	for _, k := range []string{"a", "b", "c"} {
		kv, _ := h.get(k)
		if kv.CreateRevision != r1 || kv.ModRevision != r1 {
			t.Fatalf("%s: create %d mod %d, want both %d (one revision per batch)", k, kv.CreateRevision, kv.ModRevision, r1)
		}
	}
	h.wantRev(r1)

	// Conditions that hold but no ops, or nothing at all: success, nothing new.
	for _, conds := range [][]store.Cond{{{Key: "a", ModRevision: r1}, {Key: "absent", ModRevision: 0}}, nil} {
		rev, ok = h.batch(conds, nil)
		if !ok || rev != r1 {
			t.Fatalf("Batch(%v, no ops) = %d, %v; want %d, true", conds, rev, ok, r1)
		}
	}
	// Deleting only absent keys changes nothing either.
	rev, ok = h.batch(nil, []store.Op{store.Delete("absent1"), store.Delete("absent2")})
	if !ok || rev != r1 {
		t.Fatalf("Batch deleting absent keys = %d, %v; want %d, true", rev, ok, r1)
	}
	h.wantRev(r1)

	// Ops apply in order; a delete and a put mix into one revision.
	rev, ok = h.batch(
		[]store.Cond{{Key: "c", ModRevision: r1}, {Key: "d", ModRevision: 0}},
		[]store.Op{
			store.Put("d", []byte("x")), store.Put("d", []byte("y")),
			store.Delete("a"), store.Put("e", []byte("1")), store.Delete("e"),
			store.Delete("b"), store.Put("b", []byte("again")),
			store.Put("c", []byte("4")),
		},
	)
	r2 := r1 + 1
	if !ok || rev != r2 {
		t.Fatalf("mixed Batch = %d, %v; want %d, true", rev, ok, r2)
	}
	h.wantKV("d", "y", r2, r2)
	h.wantAbsent("a")
	h.wantAbsent("e")
	h.wantKV("b", "again", r2, r2)
	h.wantKV("c", "4", r1, r2)
	h.wantRev(r2)
}

func testBatchAtomic(t *testing.T, h *harness) {
	r1 := h.put("a", "1")
	r2 := h.put("b", "2")
	ops := []store.Op{store.Put("a", []byte("changed")), store.Delete("b"), store.Put("new", []byte("n"))}
	for _, conds := range [][]store.Cond{
		{{Key: "a", ModRevision: r1}, {Key: "b", ModRevision: r1}}, // second is stale
		{{Key: "a", ModRevision: 0}},                               // a exists
		{{Key: "absent", ModRevision: r2}},                         // absent key, non-zero expectation
		{{Key: "a", ModRevision: r1}, {Key: "b", ModRevision: r2}, {Key: "new", ModRevision: r2}},
	} {
		rev, ok := h.batch(conds, ops)
		if ok || rev != r2 {
			t.Fatalf("Batch(%v) = %d, %v; want %d, false", conds, rev, ok, r2)
		}
		h.wantKV("a", "1", r1, r1)
		h.wantKV("b", "2", r2, r2)
		h.wantAbsent("new")
		h.wantRev(r2)
	}
	rev, ok := h.batch([]store.Cond{{Key: "a", ModRevision: r1}, {Key: "b", ModRevision: r2}, {Key: "new", ModRevision: 0}}, ops)
	if !ok || rev != r2+1 {
		t.Fatalf("Batch with conditions that hold = %d, %v; want %d, true", rev, ok, r2+1)
	}
	h.wantKV("a", "changed", r1, r2+1)
	h.wantAbsent("b")
	h.wantKV("new", "n", r2+1, r2+1)
}

func testLimits(t *testing.T, h *harness) {
	long := strings.Repeat("k", store.MaxKeySize+1)
	big := make([]byte, store.MaxValueSize+1)
	v := []byte("v")
	h.put("present", "v")
	r0 := h.rev()

	manyOps := make([]store.Op, store.MaxBatchOps+1)
	for i := range manyOps {
		manyOps[i] = store.Put(fmt.Sprintf("op/%d", i), v)
	}
	manyConds := make([]store.Cond, store.MaxBatchOps+1)
	for i := range manyConds {
		manyConds[i] = store.Cond{Key: fmt.Sprintf("cond/%d", i)}
	}
	ctx := h.ctx
	s := h.s
	batch := func(conds []store.Cond, ops ...store.Op) error {
		_, _, err := s.Batch(ctx, conds, ops)
		return err
	}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Put empty key", func() error { _, err := s.Put(ctx, "", v); return err }},
		{"Put long key", func() error { _, err := s.Put(ctx, long, v); return err }},
		{"Put big value", func() error { _, err := s.Put(ctx, "k", big); return err }},
		{"Get empty key", func() error { _, _, err := s.Get(ctx, ""); return err }},
		{"Get long key", func() error { _, _, err := s.Get(ctx, long); return err }},
		{"Delete empty key", func() error { _, _, err := s.Delete(ctx, ""); return err }},
		{"Delete long key", func() error { _, _, err := s.Delete(ctx, long); return err }},
		{"CompareAndSet empty key", func() error { _, _, err := s.CompareAndSet(ctx, "", 0, v); return err }},
		{"CompareAndSet long key", func() error { _, _, err := s.CompareAndSet(ctx, long, 0, v); return err }},
		{"CompareAndSet big value", func() error { _, _, err := s.CompareAndSet(ctx, "k", 0, big); return err }},
		{"CompareAndSet negative revision", func() error { _, _, err := s.CompareAndSet(ctx, "k", -1, v); return err }},
		{"Scan negative limit", func() error { _, _, err := s.Scan(ctx, "", -1); return err }},
		{"Watch negative revision", func() error {
			w, err := s.Watch(ctx, "", -1)
			if err == nil {
				w.Close()
			}
			return err
		}},
		{"Batch too many ops", func() error { return batch(nil, manyOps...) }},
		{"Batch too many conds", func() error { return batch(manyConds) }},
		{"Batch op without type", func() error { return batch(nil, store.Put("ok", v), store.Op{Key: "k"}) }},
		{"Batch op of unknown type", func() error { return batch(nil, store.Op{Type: 99, Key: "k", Value: v}) }},
		{"Batch put empty key", func() error { return batch(nil, store.Put("ok", v), store.Put("", v)) }},
		{"Batch put long key", func() error { return batch(nil, store.Put(long, v)) }},
		{"Batch put big value", func() error { return batch(nil, store.Put("ok", v), store.Put("k", big)) }},
		{"Batch delete empty key", func() error { return batch(nil, store.Delete("present"), store.Delete("")) }},
		{"Batch cond empty key", func() error { return batch([]store.Cond{{Key: ""}}, store.Put("ok", v)) }},
		{"Batch cond long key", func() error { return batch([]store.Cond{{Key: long}}, store.Put("ok", v)) }},
		{"Batch cond negative revision", func() error {
			return batch([]store.Cond{{Key: "present", ModRevision: -1}}, store.Put("ok", v))
		}},
	} {
		if err := tc.call(); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: error %v, want store.ErrInvalid", tc.name, err)
		}
	}
	h.wantRev(r0)
	if kvs, _ := h.scan("", 0); len(kvs) != 1 {
		t.Fatalf("invalid requests left %d keys, want only %q: %q", len(kvs), "present", keysOf(kvs))
	}

	// At the limits exactly, everything works.
	maxKey := strings.Repeat("m", store.MaxKeySize)
	maxValue := bytes.Repeat([]byte{0xab}, store.MaxValueSize)
	if _, err := s.Put(ctx, maxKey, maxValue); err != nil {
		t.Fatalf("Put at the key and value limits: %v", err)
	}
	kv, found := h.get(maxKey)
	if !found || !bytes.Equal(kv.Value, maxValue) {
		t.Fatalf("Get at the limits: found %v, %d bytes", found, len(kv.Value))
	}
	rev, ok, err := s.Batch(ctx, manyConds[:store.MaxBatchOps], manyOps[:store.MaxBatchOps])
	if err != nil || !ok || rev != r0+2 {
		t.Fatalf("Batch of %d conds and ops = %d, %v, %v; want %d, true", store.MaxBatchOps, rev, ok, err, r0+2)
	}
	if kvs, _ := h.scan("op/", 0); len(kvs) != store.MaxBatchOps {
		t.Fatalf("Batch of %d puts left %d keys", store.MaxBatchOps, len(kvs))
	}
}

func testContextEnded(t *testing.T, h *harness) {
	r1 := h.put("k", "v")
	canceled, cancel := context.WithCancel(h.ctx)
	cancel()
	expired, cancel2 := context.WithDeadline(h.ctx, time.Now().Add(-time.Second))
	defer cancel2()
	for _, c := range []struct {
		ctx  context.Context
		want error
	}{{canceled, context.Canceled}, {expired, context.DeadlineExceeded}} {
		ctx, s := c.ctx, h.s
		for name, call := range map[string]func() error{
			"Get":           func() error { _, _, err := s.Get(ctx, "k"); return err },
			"Put":           func() error { _, err := s.Put(ctx, "k", []byte("new")); return err },
			"Delete":        func() error { _, _, err := s.Delete(ctx, "k"); return err },
			"CompareAndSet": func() error { _, _, err := s.CompareAndSet(ctx, "k", r1, []byte("new")); return err },
			"Scan":          func() error { _, _, err := s.Scan(ctx, "", 0); return err },
			"Batch":         func() error { _, _, err := s.Batch(ctx, nil, []store.Op{store.Put("b", nil)}); return err },
			"Revision":      func() error { _, err := s.Revision(ctx); return err },
			"Watch": func() error {
				w, err := s.Watch(ctx, "", 0)
				if err == nil {
					w.Close()
				}
				return err
			},
		} {
			if err := call(); !errors.Is(err, c.want) {
				t.Errorf("%s with an ended context: error %v, want %v", name, err, c.want)
			}
		}
	}
	h.wantKV("k", "v", r1, r1)
	h.wantAbsent("b")
	h.wantRev(r1)
}

func testWatchFromNow(t *testing.T, h *harness) {
	h.put("a", "before")
	w := h.watch("", 0)
	r1 := h.put("a", "after")
	r2 := h.put("b", "1")
	r3, _ := h.del("a")
	wantEvents(t, w, putEv("a", "after", r1-1, r1), putEv("b", "1", r2, r2), delEv("a", r3))
	wantQuiet(t, w)

	// Watching from the current revision is the same as from now.
	w2 := h.watch("", h.rev())
	r4 := h.put("c", "1")
	wantEvents(t, w2, putEv("c", "1", r4, r4))
	wantQuiet(t, w2)
}

func testWatchReplay(t *testing.T, h *harness) {
	var revs []int64
	for i := range 5 {
		revs = append(revs, h.put(fmt.Sprintf("k%d", i), "v"))
	}
	w := h.watch("", revs[1])
	// Written before anything is read, while the watcher may still be
	// replaying history: the seam must have no gap and no duplicate.
	r5 := h.put("k5", "v")
	r6, _ := h.del("k0")
	r7 := h.put("k1", "v2")
	wantEvents(t, w,
		putEv("k2", "v", revs[2], revs[2]),
		putEv("k3", "v", revs[3], revs[3]),
		putEv("k4", "v", revs[4], revs[4]),
		putEv("k5", "v", r5, r5),
		delEv("k0", r6),
		putEv("k1", "v2", revs[1], r7),
	)
	wantQuiet(t, w)

	// From the very first revision a store kept.
	w2 := h.watch("k1", revs[0])
	wantEvents(t, w2, putEv("k1", "v", revs[1], revs[1]), putEv("k1", "v2", revs[1], r7))
	wantQuiet(t, w2)
}

func testWatchReplayUnderWrites(t *testing.T, h *harness) {
	const before, during = 50, 100
	var start int64
	for i := range before {
		rev := h.put(fmt.Sprintf("k/%03d", i), "v")
		if i == 0 {
			start = rev - 1
		}
	}
	// Several watchers start from different points while writes go on;
	// each must see every revision after its start exactly once, in order.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range during {
			if _, err := h.s.Put(h.ctx, fmt.Sprintf("k/%03d", before+i), []byte("v")); err != nil {
				t.Errorf("Put: %v", err)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	// (start+1, not start: on a new store start is 0, which means "from now".)
	for _, after := range []int64{start + 1, start + 10, start + before - 1} {
		w := h.watch("k/", after)
		wg.Go(func() {
			for want := after + 1; want <= start+before+during; want++ {
				select {
				case ev, ok := <-w.Events():
					if !ok {
						t.Errorf("watch from %d ended at %d: %v", after, want, w.Err())
						return
					}
					if ev.KV.ModRevision != want || ev.Type != store.EventPut {
						t.Errorf("watch from %d: got %v, want a put at revision %d", after, fromEvent(ev), want)
						return
					}
				case <-time.After(wait):
					t.Errorf("watch from %d: no event for revision %d", after, want)
					return
				}
			}
		})
	}
	wg.Wait()
	<-done
}

func testWatchBatch(t *testing.T, h *harness) {
	rOld := h.put("x/old", "o")
	w := h.watch("", 0)
	rev, ok := h.batch(nil, []store.Op{
		store.Put("x/a", []byte("1")),
		store.Delete("x/absent"), // nothing to delete: no event
		store.Put("x/old", []byte("o2")),
		store.Delete("x/old"),
		store.Put("x/b", []byte("2")),
	})
	if !ok {
		t.Fatal("Batch without conditions failed")
	}
	r := h.put("x/c", "3")
	wantEvents(t, w,
		putEv("x/a", "1", rev, rev),
		putEv("x/old", "o2", rOld, rev),
		delEv("x/old", rev),
		putEv("x/b", "2", rev, rev),
		putEv("x/c", "3", r, r),
	)
	// A batch that changes nothing, and one whose conditions fail, send nothing.
	h.batch(nil, []store.Op{store.Delete("x/absent")})
	h.batch([]store.Cond{{Key: "x/a", ModRevision: 0}}, []store.Op{store.Put("x/z", nil)})
	wantQuiet(t, w)
}

func testWatchPrefix(t *testing.T, h *harness) {
	w := h.watch("a/", 0)
	h.put("a", "no")
	h.put("b/1", "no")
	r1 := h.put("a/1", "yes")
	h.put("a0", "no")
	h.put("`/1", "no")
	rev, _ := h.batch(nil, []store.Op{store.Put("b/2", nil), store.Put("a/2", []byte("yes")), store.Put("ab", nil)})
	r3, _ := h.del("a/1")
	h.del("a")
	wantEvents(t, w, putEv("a/1", "yes", r1, r1), putEv("a/2", "yes", rev, rev), delEv("a/1", r3))
	wantQuiet(t, w)
}

func testWatchCompacted(t *testing.T, h *harness) {
	c, ok := h.s.(Compacter)
	if !ok {
		t.Skip("the store does not implement storetest.Compacter")
	}
	var revs []int64
	for i := range 5 {
		revs = append(revs, h.put(fmt.Sprintf("k%d", i), "v"))
	}
	if err := c.Compact(h.ctx, revs[2]); err != nil {
		t.Fatalf("Compact(%d): %v", revs[2], err)
	}
	for _, after := range []int64{revs[0], revs[1]} {
		w, err := h.s.Watch(h.ctx, "", after)
		if err == nil {
			w.Close()
		}
		if !errors.Is(err, store.ErrCompacted) {
			t.Fatalf("Watch from %d after Compact(%d): error %v, want store.ErrCompacted", after, revs[2], err)
		}
	}
	w := h.watch("", revs[2])
	r := h.put("k5", "v")
	wantEvents(t, w, putEv("k3", "v", revs[3], revs[3]), putEv("k4", "v", revs[4], revs[4]), putEv("k5", "v", r, r))
	// Compacting changes no data.
	h.wantKV("k0", "v", revs[0], revs[0])
	h.wantRev(r)
}

func testWatchLagging(t *testing.T, h *harness) {
	const batches, perBatch = 10, store.MaxBatchOps
	slow := h.watch("", 0)
	other := h.watch("other/", 0)
	start := h.rev()

	ops := make([]store.Op, perBatch)
	written := make(chan error, 1)
	go func() {
		for b := range batches {
			for i := range ops {
				ops[i] = store.Put(fmt.Sprintf("lag/%05d", i), []byte{byte(b)})
			}
			if _, _, err := h.s.Batch(h.ctx, nil, ops); err != nil {
				written <- err
				return
			}
		}
		written <- nil
	}()
	select {
	case err := <-written:
		if err != nil {
			t.Fatalf("Batch: %v", err)
		}
	case <-time.After(4 * wait):
		t.Fatalf("writes did not finish within %v while a watcher did not read: a slow watcher blocks writers", 4*wait)
	}

	err, evs := wantEnd(t, slow)
	if !errors.Is(err, store.ErrWatcherLagging) {
		t.Fatalf("slow watcher ended with %v, want store.ErrWatcherLagging", err)
	}
	if len(evs) >= batches*perBatch {
		t.Fatalf("slow watcher was dropped but delivered all %d events", len(evs))
	}
	// What it delivered before it was dropped is a gap-free prefix.
	for i, ev := range evs {
		if want := start + 1 + int64(i/perBatch); ev.KV.ModRevision != want {
			t.Fatalf("slow watcher's event %d is at revision %d, want %d", i, ev.KV.ModRevision, want)
		}
	}
	// A watcher that had nothing to deliver is unaffected.
	r := h.put("other/x", "1")
	wantEvents(t, other, putEv("other/x", "1", r, r))
}

func testWatchEnd(t *testing.T, h *harness) {
	w := h.watch("", 0)
	w.Close()
	if err, _ := wantEnd(t, w); err != nil {
		t.Fatalf("Err after Close = %v, want nil", err)
	}

	ctx, cancel := context.WithCancel(h.ctx)
	w2, err := h.s.Watch(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	r := h.put("k", "v")
	wantEvents(t, w2, putEv("k", "v", r, r))
	cancel()
	if err, _ := wantEnd(t, w2); !errors.Is(err, context.Canceled) {
		t.Fatalf("Err after the context was canceled = %v, want context.Canceled", err)
	}

	// The store goes on; a new watcher works.
	w3 := h.watch("", 0)
	r = h.put("k", "v2")
	wantEvents(t, w3, putEv("k", "v2", r-1, r))
}

func testClose(t *testing.T, h *harness) {
	h.put("k", "v")
	w := h.watch("", 0)
	replaying := h.watch("", h.rev()-1)
	if err := h.close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, w := range []store.Watcher{w, replaying} {
		if err, _ := wantEnd(t, w); !errors.Is(err, store.ErrClosed) {
			t.Fatalf("watcher's Err after the store closed = %v, want store.ErrClosed", err)
		}
	}
	ctx, s := h.ctx, h.s
	for name, call := range map[string]func() error{
		"Get":           func() error { _, _, err := s.Get(ctx, "k"); return err },
		"Put":           func() error { _, err := s.Put(ctx, "k", nil); return err },
		"Delete":        func() error { _, _, err := s.Delete(ctx, "k"); return err },
		"CompareAndSet": func() error { _, _, err := s.CompareAndSet(ctx, "k", 0, nil); return err },
		"Scan":          func() error { _, _, err := s.Scan(ctx, "", 0); return err },
		"Batch":         func() error { _, _, err := s.Batch(ctx, nil, nil); return err },
		"Revision":      func() error { _, err := s.Revision(ctx); return err },
		"Watch": func() error {
			w, err := s.Watch(ctx, "", 0)
			if err == nil {
				w.Close()
			}
			return err
		},
	} {
		if err := call(); !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close: error %v, want store.ErrClosed", name, err)
		}
	}
}
