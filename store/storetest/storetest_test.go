package storetest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/store"
	"github.com/kcd-project/kcd/store/storetest"
)

// The suite is tested the way a test of a checker should be: it must pass a
// correct store (fsm.Local, whose own tests run the whole suite) and fail
// stores with planted bugs. Each mutant runs in a child process, so that
// its failures are observed instead of failing this test.

const mutantEnv = "KCD_STORETEST_MUTANT"

// mutants maps a planted bug to the subtest that must catch it.
var mutants = []struct {
	name, subtest string
	wrap          func(store.Store) store.Store
}{
	{"none", "", func(s store.Store) store.Store { return s }},
	{"delete-bumps-revision", "PutGetDelete", func(s store.Store) store.Store { return deleteLies{s} }},
	{"scan-ignores-prefix-end", "Scan", func(s store.Store) store.Store { return scanNoEnd{s} }},
	{"batch-ignores-conds", "BatchAtomic", func(s store.Store) store.Store { return batchNoConds{s} }},
	{"cas-not-atomic", "CompareAndSetRace", func(s store.Store) store.Store { return casRacy{s} }},
	{"watch-off-by-one", "WatchReplay", func(s store.Store) store.Store { return watchOffByOne{s} }},
	{"watch-drops-first", "WatchFromNow", func(s store.Store) store.Store { return watchSkips{s} }},
	{"watch-hides-lag", "WatchLagging", func(s store.Store) store.Store { return watchHidesLag{s} }},
	{"put-ignores-context", "ContextEnded", func(s store.Store) store.Store { return putNoCtx{s} }},
}

// TestMutant runs the suite against the mutant named in the environment.
func TestMutant(t *testing.T) {
	name := os.Getenv(mutantEnv)
	if name == "" {
		t.Skip("run by TestSuiteCatchesMutants")
	}
	for _, m := range mutants {
		if m.name == name {
			storetest.Run(t, func(t *testing.T) store.Store {
				s, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), fsm.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return m.wrap(s)
			})
			return
		}
	}
	t.Fatalf("unknown mutant %q", name)
}

func TestSuiteCatchesMutants(t *testing.T) {
	if os.Getenv(mutantEnv) != "" {
		t.Skip("in a mutant's process")
	}
	var subtests []string
	for _, m := range mutants[1:] {
		subtests = append(subtests, m.subtest)
	}
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			run := "^TestMutant$/^(" + strings.Join(subtests, "|") + ")$"
			if m.subtest != "" {
				run = "^TestMutant$/^" + m.subtest + "$"
			}
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run="+run, "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), mutantEnv+"="+m.name)
			out, err := cmd.CombinedOutput()
			if m.subtest == "" {
				// The control: the unmodified store passes every subtest the
				// mutants are expected to fail.
				if err != nil {
					t.Fatalf("the correct store failed: %v\n%s", err, out)
				}
				for _, s := range subtests {
					if !strings.Contains(string(out), "--- PASS: TestMutant/"+s+" ") {
						t.Fatalf("subtest %s did not pass on the correct store:\n%s", s, out)
					}
				}
				return
			}
			if err == nil || !strings.Contains(string(out), "--- FAIL: TestMutant/"+m.subtest+" ") {
				t.Fatalf("subtest %s did not catch mutant %s (%v):\n%s", m.subtest, m.name, err, out)
			}
		})
	}
}

// deleteLies reports a new revision for a Delete that removed nothing.
type deleteLies struct{ store.Store }

func (s deleteLies) Delete(ctx context.Context, key string) (int64, bool, error) {
	rev, deleted, err := s.Store.Delete(ctx, key)
	if err == nil && !deleted {
		rev++
	}
	return rev, deleted, err
}

// scanNoEnd returns every key from prefix on, not only those starting with it.
type scanNoEnd struct{ store.Store }

func (s scanNoEnd) Scan(ctx context.Context, prefix string, limit int) ([]store.KV, int64, error) {
	kvs, rev, err := s.Store.Scan(ctx, "", 0)
	var out []store.KV
	for _, kv := range kvs {
		if kv.Key >= prefix && (limit == 0 || len(out) < limit) {
			out = append(out, kv)
		}
	}
	return out, rev, err
}

// batchNoConds applies the ops whatever the conditions.
type batchNoConds struct{ store.Store }

func (s batchNoConds) Batch(ctx context.Context, _ []store.Cond, ops []store.Op) (int64, bool, error) {
	return s.Store.Batch(ctx, nil, ops)
}

// casRacy compares and sets in two steps.
type casRacy struct{ store.Store }

func (s casRacy) CompareAndSet(ctx context.Context, key string, expect int64, value []byte) (int64, bool, error) {
	kv, found, err := s.Get(ctx, key)
	if err != nil {
		return 0, false, err
	}
	if !found {
		kv.ModRevision = 0
	}
	if kv.ModRevision != expect {
		rev, err := s.Revision(ctx)
		return rev, false, err
	}
	rev, err := s.Put(ctx, key, value)
	return rev, err == nil, err
}

// watchOffByOne starts watches one revision late.
type watchOffByOne struct{ store.Store }

func (s watchOffByOne) Watch(ctx context.Context, prefix string, afterRev int64) (store.Watcher, error) {
	if afterRev > 0 {
		afterRev++
	}
	return s.Store.Watch(ctx, prefix, afterRev)
}

// putNoCtx writes even when the caller's context has ended.
type putNoCtx struct{ store.Store }

func (s putNoCtx) Put(_ context.Context, key string, value []byte) (int64, error) {
	return s.Store.Put(context.Background(), key, value)
}

// watchHidesLag ends a lagging watcher as if it had been closed.
type watchHidesLag struct{ store.Store }

func (s watchHidesLag) Watch(ctx context.Context, prefix string, afterRev int64) (store.Watcher, error) {
	w, err := s.Store.Watch(ctx, prefix, afterRev)
	if err != nil {
		return nil, err
	}
	return hidesLag{w}, nil
}

type hidesLag struct{ store.Watcher }

func (w hidesLag) Err() error {
	if err := w.Watcher.Err(); !errors.Is(err, store.ErrWatcherLagging) {
		return err
	}
	return nil
}

// watchSkips relays every watcher through a queue of its own that drops the
// first event.
type watchSkips struct{ store.Store }

func (s watchSkips) Watch(ctx context.Context, prefix string, afterRev int64) (store.Watcher, error) {
	w, err := s.Store.Watch(ctx, prefix, afterRev)
	if err != nil {
		return nil, err
	}
	p := &pump{inner: w, out: make(chan store.Event), done: make(chan struct{})}
	go p.run(1)
	return p, nil
}

type pump struct {
	inner store.Watcher
	out   chan store.Event
	done  chan struct{}
	once  sync.Once
}

func (p *pump) run(skip int) {
	defer close(p.out)
	var queue []store.Event
	in := p.inner.Events()
	for in != nil || len(queue) > 0 {
		var out chan store.Event
		var head store.Event
		if len(queue) > 0 {
			out, head = p.out, queue[0]
		}
		select {
		case ev, ok := <-in:
			if !ok {
				in = nil
			} else if skip > 0 {
				skip--
			} else {
				queue = append(queue, ev)
			}
		case out <- head:
			queue = queue[1:]
		case <-p.done:
			return
		}
	}
}

func (p *pump) Events() <-chan store.Event { return p.out }
func (p *pump) Err() error                 { return p.inner.Err() }
func (p *pump) Close() {
	p.inner.Close()
	p.once.Do(func() { close(p.done) })
}
