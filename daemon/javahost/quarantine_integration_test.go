package javahost

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
)

// TestIntegrationJavaHostQuarantine: a source task that exhausts the heap
// each time it starts (in a poll, or in a thread of its own) halts the
// shared host twice; then it runs in a host of its own, where it keeps
// failing, while a healthy task in the shared host polls on without a
// failure and the shared host's process stays the same. A restart of the
// connector returns it to the shared host.
func TestIntegrationJavaHostQuarantine(t *testing.T) {
	for _, mode := range []string{"heap", "heap-thread"} {
		t.Run(mode, func(t *testing.T) { testQuarantine(t, mode) })
	}
}

func testQuarantine(t *testing.T, mode string) {
	hostDir := requireHost(t)
	plugins := requireTestPlugins(t, hostDir)
	h := New(Options{Dir: hostDir, PluginPath: []string{plugins}, Heap: "128m",
		HangLimit: 30 * time.Second, StartTimeout: time.Minute, Logger: testLogger(t)})
	t.Cleanup(func() { _ = h.Close() })
	p := NewProvider(h)
	cp, ok := p.Lookup(misbehaveSource)
	if !ok {
		t.Fatalf("the host has no %s", misbehaveSource)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	healthyCfg := map[string]string{"name": "healthy", "connector.class": misbehaveSource, "topic": "unused",
		"mode": "ok", "interval.ms": "20", "tasks.max": "1"}
	badCfg := map[string]string{"name": "bad-" + mode, "connector.class": misbehaveSource, "topic": "unused",
		"mode": mode, "after": "0", "tasks.max": "1"}
	// taskConfig is what the connector gives its task 0.
	taskConfig := func(cfg map[string]string) map[string]string {
		conn := cp.New().(connect.SourceConnector)
		if err := conn.Start(&fakeConnectorContext{log: testLogger(t)}, cfg); err != nil {
			t.Fatal(err)
		}
		defer conn.Stop()
		tcs, err := conn.TaskConfigs(1)
		if err != nil || len(tcs) != 1 {
			t.Fatalf("task configs: %v %v", tcs, err)
		}
		return tcs[0]
	}
	taskCfgs := map[string]map[string]string{healthyCfg["name"]: taskConfig(healthyCfg), badCfg["name"]: taskConfig(badCfg)}
	// startTask starts a task of cfg's connector, trying again while its
	// host is down; errors go to the caller (it may run off
	// the test's goroutine).
	startTask := func(cfg map[string]string) (connect.SourceTask, error) {
		for {
			task := cp.New().(connect.SourceConnector).NewTask()
			err := task.Start(fakeTaskContext{name: cfg["name"], cfg: cfg, log: testLogger(t)}, taskCfgs[cfg["name"]])
			if err == nil {
				return task, nil
			}
			// A host waiting out its backoff, or one that has just died and
			// is being cleared, is tried again, as the worker does.
			down := strings.Contains(err.Error(), "java host is down, next start in") || strings.Contains(err.Error(), "java host exited")
			if !down || ctx.Err() != nil {
				return nil, err
			}
			select {
			case <-ctx.Done():
				return nil, err
			case <-time.After(100 * time.Millisecond): // the backoff passes
			}
		}
	}
	// runBad starts a bad task and polls it until it fails: its error.
	runBad := func() (string, error) {
		task, err := startTask(badCfg)
		if err != nil {
			return "", err
		}
		defer task.Stop()
		for {
			if _, err := task.Poll(ctx); err != nil {
				return err.Error(), nil
			}
		}
	}

	// Twice the bad task halts the shared host.
	struck := func() (recent int, quarantined bool) {
		q := h.quarantine
		q.mu.Lock()
		defer q.mu.Unlock()
		is, n := q.strikes.isQuarantined(badCfg["name"])
		if is {
			return n, true
		}
		return len(q.strikes.recent(badCfg["name"], time.Now())), false
	}
	for strike := 1; strike <= 2; strike++ {
		trace, err := runBad()
		if err != nil {
			t.Fatalf("strike %d: start the bad task: %v", strike, err)
		}
		if !strings.Contains(trace, "OutOfMemoryError") || strings.Contains(trace, "a Java host of its own") {
			t.Fatalf("strike %d: the bad task failed with\n%s", strike, trace)
		}
		waitUntil(t, 30*time.Second, "the shared host's death is charged to the bad connector", func() bool {
			n, _ := struck()
			return n == strike
		})
	}
	if n, is := struck(); !is || n != 2 {
		t.Fatalf("after two heap deaths the bad connector is not quarantined (%v, %d strikes)", is, n)
	}

	// The healthy task runs in a new shared host; the bad one, started
	// again twice, fails in a host of its own each time.
	healthy, err := startTask(healthyCfg)
	if err != nil {
		t.Fatalf("start the healthy task: %v", err)
	}
	defer healthy.Stop()
	shared := h.Pid()
	if shared == 0 {
		t.Fatal("no shared host runs the healthy task")
	}
	type badRun struct {
		trace string
		err   error
	}
	runs := make(chan badRun, 2)
	ownPids := map[int]bool{}
	go func() {
		for range 2 {
			trace, err := runBad()
			runs <- badRun{trace, err}
			if err != nil {
				return
			}
		}
	}()
	var traces []string
	polls, records := 0, 0
	for len(traces) < 2 {
		select {
		case r := <-runs:
			if r.err != nil {
				t.Fatalf("start the bad task in its own host: %v", r.err)
			}
			traces = append(traces, r.trace)
		default:
		}
		if ctx.Err() != nil {
			t.Fatalf("the bad task failed %d times in its own host within the deadline", len(traces))
		}
		recs, err := healthy.Poll(ctx)
		if err != nil {
			t.Fatalf("the healthy task failed while the bad one ran in its own host (after %d polls): %v", polls, err)
		}
		polls++
		records += len(recs)
		if pid := h.Pid(); pid != shared {
			t.Fatalf("the shared host changed from pid %d to %d", shared, pid)
		}
		for name, pid := range h.ownHostPids() {
			if name != badCfg["name"] || pid == shared {
				t.Fatalf("own hosts %v (the shared one is %d)", h.ownHostPids(), shared)
			}
			if !ownPids[pid] {
				ownPids[pid] = true
				cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
				if !strings.Contains(string(cmd), "-Dkcd.javahost.connector="+badCfg["name"]) {
					t.Errorf("the own host's command line: %q", cmd)
				}
			}
		}
	}
	if records == 0 {
		t.Fatalf("the healthy task polled %d times and got no record", polls)
	}
	if len(ownPids) == 0 {
		t.Fatal("no own host of the bad connector was seen")
	}
	for _, tr := range traces {
		for _, w := range []string{"kcd runs the java connector " + badCfg["name"] + " in a Java host of its own: it exhausted the shared Java host's heap 2 times in 10m",
			"POST /connectors/" + badCfg["name"] + "/restart?includeTasks=true", "OutOfMemoryError"} {
			if !strings.Contains(tr, w) {
				t.Errorf("the bad task's trace in its own host lacks %q:\n%s", w, firstLines(tr, 6))
			}
		}
	}
	// Its own host's deaths are not the shared host's strikes.
	if h.Pid() != shared {
		t.Fatalf("the shared host changed from pid %d to %d", shared, h.Pid())
	}
	t.Logf("the healthy task polled %d times (%d records) in shared host %d while the bad one failed twice in own hosts %v",
		polls, records, shared, ownPids)

	// An operator's restart returns it to the shared host.
	p.Restarted(badCfg["name"])
	if got, rel, err := h.hostFor(badCfg["name"]); err != nil || got != h {
		t.Fatalf("after a restart the bad connector runs in the shared host: %v", err)
	} else {
		rel()
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
