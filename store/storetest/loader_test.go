package storetest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/store"
	"github.com/kcd-project/kcd/store/storetest"
)

// RunLoader is tested like Run: it passes fsm.Local and fails loaders with
// planted bugs, each in a child process.

const loaderMutantEnv = "KCD_STORETEST_LOADER_MUTANT"

var loaderMutants = []struct {
	name, subtest string
	wrap          func(store.Loader) store.Loader
}{
	{"none", "", func(l store.Loader) store.Loader { return l }},
	{"load-flattens-revisions", "Load", func(l store.Loader) store.Loader { return loadFlattens{l} }},
	{"load-ignores-deleted", "Load", func(l store.Loader) store.Loader { return loadNoDeletes{l} }},
	{"load-below-accepted", "Load", func(l store.Loader) store.Loader { return loadBelow{l} }},
	{"load-splits-over-limits", "LoadLimits", func(l store.Loader) store.Loader { return loadSplits{l} }},
	{"clear-ignores-keep", "Clear", func(l store.Loader) store.Loader { return clearAll{l} }},
	{"watch-hides-compaction", "LoadWatch", func(l store.Loader) store.Loader { return watchNoCompaction{l} }},
	{"load-ignores-context", "LoaderContextEnded", func(l store.Loader) store.Loader { return loadNoCtx{l} }},
}

// TestLoaderMutant runs RunLoader against the mutant named in the
// environment.
func TestLoaderMutant(t *testing.T) {
	name := os.Getenv(loaderMutantEnv)
	if name == "" {
		t.Skip("run by TestLoaderSuiteCatchesMutants")
	}
	for _, m := range loaderMutants {
		if m.name == name {
			storetest.RunLoader(t, func(t *testing.T) store.Loader {
				l, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), fsm.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return m.wrap(l)
			})
			return
		}
	}
	t.Fatalf("unknown mutant %q", name)
}

func TestLoaderSuiteCatchesMutants(t *testing.T) {
	if os.Getenv(loaderMutantEnv) != "" {
		t.Skip("in a mutant's process")
	}
	var subtests []string
	for _, m := range loaderMutants[1:] {
		subtests = append(subtests, m.subtest)
	}
	for _, m := range loaderMutants {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			run := "^TestLoaderMutant$/^(" + strings.Join(subtests, "|") + ")$"
			if m.subtest != "" {
				run = "^TestLoaderMutant$/^" + m.subtest + "$"
			}
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run="+run, "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), loaderMutantEnv+"="+m.name)
			out, err := cmd.CombinedOutput()
			if m.subtest == "" {
				if err != nil {
					t.Fatalf("the correct loader failed: %v\n%s", err, out)
				}
				for _, s := range subtests {
					if !strings.Contains(string(out), "--- PASS: TestLoaderMutant/"+s+" ") {
						t.Fatalf("subtest %s did not pass on the correct loader:\n%s", s, out)
					}
				}
				return
			}
			if err == nil || !strings.Contains(string(out), "--- FAIL: TestLoaderMutant/"+m.subtest+" ") {
				t.Fatalf("subtest %s did not catch mutant %s (%v):\n%s", m.subtest, m.name, err, out)
			}
		})
	}
}

// loadFlattens stores every loaded key as created and changed at rev.
type loadFlattens struct{ store.Loader }

func (l loadFlattens) Load(ctx context.Context, rev int64, kvs []store.KV, deleted []string) error {
	out := make([]store.KV, len(kvs))
	for i, kv := range kvs {
		kv.CreateRevision, kv.ModRevision = rev, rev
		out[i] = kv
	}
	return l.Loader.Load(ctx, rev, out, deleted)
}

// loadNoDeletes forgets the deleted keys.
type loadNoDeletes struct{ store.Loader }

func (l loadNoDeletes) Load(ctx context.Context, rev int64, kvs []store.KV, _ []string) error {
	return l.Loader.Load(ctx, rev, kvs, nil)
}

// loadBelow loads a chunk below the current revision at the current one.
type loadBelow struct{ store.Loader }

func (l loadBelow) Load(ctx context.Context, rev int64, kvs []store.KV, deleted []string) error {
	if cur, err := l.Revision(ctx); err == nil && rev >= 0 && rev < cur {
		rev = cur
	}
	return l.Loader.Load(ctx, rev, kvs, deleted)
}

// loadSplits loads a chunk of a few keys over the byte limit one key at a
// time.
type loadSplits struct{ store.Loader }

func (l loadSplits) Load(ctx context.Context, rev int64, kvs []store.KV, deleted []string) error {
	err := l.Loader.Load(ctx, rev, kvs, deleted)
	if !errors.Is(err, store.ErrInvalid) || len(kvs) < 2 || len(kvs) > 4 {
		return err
	}
	for _, kv := range kvs {
		if err := l.Loader.Load(ctx, rev, []store.KV{kv}, nil); err != nil {
			return err
		}
	}
	return nil
}

// clearAll clears the kept prefixes too.
type clearAll struct{ store.Loader }

func (l clearAll) Clear(ctx context.Context, _ ...string) error { return l.Loader.Clear(ctx) }

// watchNoCompaction watches from now when the history asked for is gone.
type watchNoCompaction struct{ store.Loader }

func (l watchNoCompaction) Watch(ctx context.Context, prefix string, afterRev int64) (store.Watcher, error) {
	w, err := l.Loader.Watch(ctx, prefix, afterRev)
	if errors.Is(err, store.ErrCompacted) {
		return l.Loader.Watch(ctx, prefix, 0)
	}
	return w, err
}

// loadNoCtx loads even when the caller's context has ended.
type loadNoCtx struct{ store.Loader }

func (l loadNoCtx) Load(_ context.Context, rev int64, kvs []store.KV, deleted []string) error {
	return l.Loader.Load(context.Background(), rev, kvs, deleted)
}
