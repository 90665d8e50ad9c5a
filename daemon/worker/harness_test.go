package worker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/internal/testenv"
	"github.com/kcd-project/kcd/raft/fsm"

	_ "github.com/kcd-project/kcd/daemon/connectors/all"
)

// env is where a scenario runs: a store and a Kafka.
type env struct {
	t     testing.TB
	cs    *connectstore.Store
	seeds []string
	fake  *kfake.Cluster // nil against real Kafka
	// mod changes the config of every worker the scenario starts, before
	// the scenario's own changes.
	mod func(*Config)

	mu    sync.Mutex
	names []string // topics (and connectors) named by name
}

var uniq atomic.Int64

// name returns a topic or connector name no other test run uses.
func (e *env) name(prefix string) string {
	n := fmt.Sprintf("kcd-worker-%s-%d-%d", prefix, time.Now().UnixNano(), uniq.Add(1))
	e.mu.Lock()
	e.names = append(e.names, n)
	e.mu.Unlock()
	return n
}

// fakeEnv runs against franz-go's in-process broker.
func fakeEnv(t testing.TB, opts ...kfake.Opt) *env {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.DefaultNumPartitions(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &env{t: t, cs: openStore(t), seeds: c.ListenAddrs(), fake: c}
}

// kafkaEnv runs against the test environment's real broker.
func kafkaEnv(t testing.TB) *env {
	t.Helper()
	seeds := testenv.Require(t, testenv.Kafka)
	e := &env{t: t, seeds: strings.Split(seeds, ",")}
	t.Cleanup(e.deleteTopics) // registered first: runs after the worker stopped
	e.cs = openStore(t)
	return e
}

// deleteTopics removes the topics the test made from the shared broker.
func (e *env) deleteTopics() {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...))
	if err != nil {
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = kadm.NewClient(cl).DeleteTopics(ctx, e.names...) // names of connectors are no topics: ignored
}

func openStore(t testing.TB) *connectstore.Store {
	t.Helper()
	l, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), fsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return connectstore.New(l)
}

// testLogger logs to the test at Warn and above (KCD_TEST_LOG=debug: all).
func testLogger(t testing.TB) *slog.Logger {
	lvl := slog.LevelWarn
	if os.Getenv("KCD_TEST_LOG") == "debug" {
		lvl = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: lvl}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	if strings.Contains(string(p), "kcd-canary-secret-") {
		// Not the line itself: the secret stays out of the test's output.
		w.t.Errorf("the worker logged a secret of a connector config (a value starting %q)", "kcd-canary-secret-")
		return len(p), nil
	}
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// running is a worker running in the background.
type running struct {
	*Worker
	cancel context.CancelFunc
	done   chan struct{}
}

// fastConfig has the short intervals the tests use.
func (e *env) fastConfig() Config {
	return Config{
		WorkerID:            "127.0.0.1:8083",
		Store:               e.cs,
		Seeds:               e.seeds,
		Converters:          testConverters,
		Logger:              testLogger(e.t),
		OffsetFlushInterval: 200 * time.Millisecond,
		ShutdownTimeout:     5 * time.Second,
		RestartBackoff:      Backoff{Initial: 100 * time.Millisecond, Max: time.Second},
		RetryBackoff:        Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond},
		SinkRelistInterval:  500 * time.Millisecond,
	}
}

func (e *env) start(mod func(*Config)) *running {
	e.t.Helper()
	cfg := e.fastConfig()
	if e.mod != nil {
		e.mod(&cfg)
	}
	if mod != nil {
		mod(&cfg)
	}
	w, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Worker: w, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		if err := w.Run(ctx); err != nil {
			e.t.Errorf("worker: %v", err)
		}
	}()
	e.t.Cleanup(r.stop)
	return r
}

// stop stops the worker cleanly and waits for it.
func (r *running) stop() {
	r.cancel()
	<-r.done
}

// halt stops the worker as a crash would and waits for it.
func (r *running) halt() {
	r.Halt()
	<-r.done
}

func (e *env) create(name string, cfg map[string]string) {
	e.t.Helper()
	cfg["name"] = name
	if created, err := e.cs.CreateConnector(context.Background(), name, cfg, connectstore.TargetStarted); err != nil || !created {
		e.t.Fatalf("create %s: %v %v", name, created, err)
	}
}

// progress describes how far a connector got, for a wait's failure
// message: what the worker runs, the task configs stored and the statuses.
func (e *env) progress(w *running, name, what string) string {
	ctx := context.Background()
	tasks, terr := e.cs.Tasks(ctx, name)
	all, serr := e.cs.Statuses(ctx, name)
	return fmt.Sprintf("%s; worker runs %v; task configs: generation %d, %d tasks (err %v); statuses %+v (err %v)",
		what, w.Running(), tasks.Generation, len(tasks.Tasks), terr, all, serr)
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, state := cond()
		if ok {
			return
		}
		if state != "" {
			last = state
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last: %s", timeout, what, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitState waits until the connector (task -1) or a task reports state.
func (e *env) waitState(name string, task int, state string) connectstore.Status {
	e.t.Helper()
	var st connectstore.Status
	waitFor(e.t, 30*time.Second, fmt.Sprintf("%s task %d %s", name, task, state), func() (bool, string) {
		all, err := e.cs.Statuses(context.Background(), name)
		if err != nil {
			return false, err.Error()
		}
		var ok bool
		if task < 0 {
			if all.Connector != nil {
				st, ok = *all.Connector, true
			}
		} else {
			st, ok = all.Tasks[task]
		}
		return ok && st.State == state, fmt.Sprintf("%+v", all)
	})
	return st
}

// consume reads topic's committed records from the start until stop says
// so or timeout.
func (e *env) consume(topic string, timeout time.Duration, stop func([]*kgo.Record) bool) []*kgo.Record {
	e.t.Helper()
	return e.consumeIsolated(topic, kgo.ReadCommitted(), timeout, stop)
}

// consumeIsolated is consume at an isolation level.
func (e *env) consumeIsolated(topic string, level kgo.IsolationLevel, timeout time.Duration, stop func([]*kgo.Record) bool) []*kgo.Record {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []*kgo.Record
	for !stop(out) && ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := cl.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// consumeN reads until n records arrived, then quiet more to catch
// duplicates.
func (e *env) consumeN(topic string, n int, quiet time.Duration) []*kgo.Record {
	e.t.Helper()
	var reachedAt time.Time
	recs := e.consume(topic, 60*time.Second, func(rs []*kgo.Record) bool {
		if len(rs) < n {
			return false
		}
		if reachedAt.IsZero() {
			reachedAt = time.Now()
		}
		return time.Since(reachedAt) >= quiet
	})
	if len(recs) < n {
		e.t.Fatalf("%s: %d records, want %d", topic, len(recs), n)
	}
	return recs
}
