package javahost

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
)

const misbehaveSource = "io.kcd.testplugins.MisbehaveSourceConnector"

// requireTestPlugins returns the plugin path of the Java build's
// misbehaving test plugins (KCD_TEST_JAVA_TEST_PLUGINS, else
// javahost/testplugins/target/plugin next to the host's directory).
func requireTestPlugins(t testing.TB, hostDir string) string {
	t.Helper()
	dir := os.Getenv("KCD_TEST_JAVA_TEST_PLUGINS")
	if dir == "" {
		dir = filepath.Join(hostDir, "..", "..", "testplugins", "target", "plugin")
	}
	if _, err := os.Stat(filepath.Join(dir, "kcd-testplugins")); err != nil {
		msg := "the misbehaving test plugins are not built (" + dir + "): `mvn -B -ntp -q -f javahost/testplugins/pom.xml package -DskipTests`"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// fakeTaskContext is what a runtime offers a source task: its identity,
// a logger and stored offsets (none).
type fakeTaskContext struct {
	name string
	cfg  map[string]string
	log  *slog.Logger
}

func (c fakeTaskContext) Logger() *slog.Logger { return c.log }
func (c fakeTaskContext) TaskInfo() (string, int, map[string]string) {
	return c.name, 0, c.cfg
}
func (c fakeTaskContext) OffsetReader() connect.OffsetReader { return noOffsets{} }

type noOffsets struct{}

func (noOffsets) Offset(context.Context, map[string]any) (map[string]any, error) { return nil, nil }

type fakeConnectorContext struct {
	log  *slog.Logger
	mu   sync.Mutex
	errs []error
}

func (c *fakeConnectorContext) RequestTaskReconfiguration() {}
func (c *fakeConnectorContext) RaiseError(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, err)
}
func (c *fakeConnectorContext) Logger() *slog.Logger { return c.log }

// TestIntegrationJavaHostMisbehavingSource: a Java poll that throws fails
// with the Java stack; one that hangs fails after the hang limit with the
// stack of the plugin's thread; System.exit in a plugin does not end the
// host.
func TestIntegrationJavaHostMisbehavingSource(t *testing.T) {
	hostDir := requireHost(t)
	plugins := requireTestPlugins(t, hostDir)
	h := New(Options{Dir: hostDir, PluginPath: []string{plugins}, Heap: "256m",
		HangLimit: 3 * time.Second, StartTimeout: time.Minute, Logger: testLogger(t)})
	t.Cleanup(func() { _ = h.Close() })
	p := NewProvider(h)
	cp, ok := p.Lookup(misbehaveSource)
	if !ok {
		t.Fatalf("the host has no %s", misbehaveSource)
	}
	for _, tc := range []struct {
		mode string
		want []string
	}{
		{"throw", []string{"org.apache.kafka.connect.errors.ConnectException: misbehave: poll throws after 2 records", "\tat io.kcd.testplugins.MisbehaveSourceTask.poll"}},
		{"hang", []string{"did not return from poll within 3s", "MisbehaveSourceTask"}},
		{"exit", []string{"exit"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			name := "misbehave-" + tc.mode
			cfg := map[string]string{"name": name, "connector.class": misbehaveSource, "topic": "unused",
				"mode": tc.mode, "after": "2", "tasks.max": "1"}
			conn := cp.New().(connect.SourceConnector)
			cctx := &fakeConnectorContext{log: testLogger(t)}
			if err := conn.Start(cctx, cfg); err != nil {
				t.Fatal(err)
			}
			defer conn.Stop()
			tcs, err := conn.TaskConfigs(1)
			if err != nil || len(tcs) != 1 {
				t.Fatalf("task configs: %v %v", tcs, err)
			}
			task := conn.NewTask()
			if err := task.Start(fakeTaskContext{name: name, cfg: cfg, log: testLogger(t)}, tcs[0]); err != nil {
				t.Fatal(err)
			}
			defer task.Stop()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			recs, err := task.Poll(ctx)
			if err != nil || len(recs) != 2 {
				t.Fatalf("first poll: %d records, %v; want 2", len(recs), err)
			}
			if string(recs[0].Value.([]byte)) == "" || recs[0].SourcePartition["task"] == nil {
				t.Fatalf("first record %+v", recs[0])
			}
			start := time.Now()
			_, err = task.Poll(ctx)
			if err == nil {
				t.Fatalf("poll that %ss: no error", tc.mode)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("poll that %ss failed with\n%v\nwhich lacks %q", tc.mode, err, w)
				}
			}
			if tc.mode == "hang" && time.Since(start) < 3*time.Second {
				t.Errorf("the hung poll failed after %v, before the hang limit", time.Since(start))
			}
			// The host still serves.
			if _, err := p.validate(ctx, misbehaveSource, cfg); err != nil {
				t.Fatalf("the host no longer serves after a poll that %ss: %v", tc.mode, err)
			}
		})
	}
}

// TestIntegrationJavaHostHeapExhausted: a Java poll that fills the host's
// heap fails with the OutOfMemoryError and the stack of the plugin that
// allocated; the host then exits by itself, and the next use starts a new
// one after the backoff.
func TestIntegrationJavaHostHeapExhausted(t *testing.T) {
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
	pid := h.Pid()
	cfg := map[string]string{"name": "misbehave-heap", "connector.class": misbehaveSource, "topic": "unused",
		"mode": "heap", "after": "0", "tasks.max": "1"}
	conn := cp.New().(connect.SourceConnector)
	if err := conn.Start(&fakeConnectorContext{log: testLogger(t)}, cfg); err != nil {
		t.Fatal(err)
	}
	defer conn.Stop()
	tcs, err := conn.TaskConfigs(1)
	if err != nil || len(tcs) != 1 {
		t.Fatalf("task configs: %v %v", tcs, err)
	}
	task := conn.NewTask()
	if err := task.Start(fakeTaskContext{name: cfg["name"], cfg: cfg, log: testLogger(t)}, tcs[0]); err != nil {
		t.Fatal(err)
	}
	defer task.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for polls := 0; err == nil; polls++ { // each poll keeps 4 MiB
		if polls > 100 {
			t.Fatal("100 polls of 4 MiB each did not fill a heap of 128m")
		}
		_, err = task.Poll(ctx)
	}
	for _, w := range []string{"java.lang.OutOfMemoryError: Java heap space", "\tat io.kcd.testplugins.Leak.more(",
		"\tat io.kcd.testplugins.MisbehaveSourceTask.poll("} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the poll that filled the heap failed with\n%v\nwhich lacks %q", err, w)
		}
	}
	waitUntil(t, 30*time.Second, "the host exits", func() bool { return h.Pid() == 0 })
	waitUntil(t, 30*time.Second, "a new host serves", func() bool {
		_, err := p.validate(ctx, misbehaveSource, cfg)
		return err == nil && h.Pid() != 0 && h.Pid() != pid
	})
}
