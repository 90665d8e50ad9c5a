package javahost

import (
	"context"
	"errors"
	"github.com/kcd-project/kcd/internal/testenv"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/javahost/hostpb"
)

// Kafka Connect's FileStream connectors, the Java plugin of these tests.
const (
	fileSource = "org.apache.kafka.connect.file.FileStreamSourceConnector"
	fileSink   = "org.apache.kafka.connect.file.FileStreamSinkConnector"
)

// requireHost returns the directory of a built host
// (KCD_TEST_JAVA_HOST_DIR, else javahost/target/javahost of this
// checkout). Without one the test is skipped, or failed under CI=true.
func requireHost(t *testing.T) string {
	t.Helper()
	if !strings.HasPrefix(t.Name(), "TestIntegration") {
		t.Fatalf("%s needs the Java host: name it TestIntegration…", t.Name())
	}
	if testing.Short() {
		t.Skip("integration test (needs the Java host): skipped with -short")
	}
	return testenv.JavaHostDir(t)
}

// filePluginDir is a plugin path holding Kafka Connect's connect-file jar
// from the local Maven repository.
func filePluginDir(t *testing.T) string {
	t.Helper()
	home, _ := os.UserHomeDir()
	jar := filepath.Join(home, ".m2/repository/org/apache/kafka/connect-file/4.3.1/connect-file-4.3.1.jar")
	b, err := os.ReadFile(jar)
	if err != nil {
		t.Skipf("Kafka Connect's connect-file jar is not in the local Maven repository: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "plugins", "connect-file")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "connect-file-4.3.1.jar"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(dir)
}

func newTestHost(t *testing.T, hang time.Duration) *Host {
	t.Helper()
	h := New(Options{Dir: requireHost(t), PluginPath: []string{filePluginDir(t)}, Heap: "256m",
		HangLimit: hang, StartTimeout: time.Minute, Logger: testLogger(t)})
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// testLogger logs to the test.
func testLogger(t testing.TB) *slog.Logger {
	lvl := slog.LevelInfo
	if os.Getenv("KCD_TEST_LOG") == "debug" {
		lvl = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: lvl}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestIntegrationJavaHostCatalogueAndValidate(t *testing.T) {
	h := newTestHost(t, time.Minute)
	p := NewProvider(h)
	if pid := h.Pid(); pid != 0 {
		t.Fatalf("the host runs (pid %d) before anything needed it", pid)
	}
	var classes []string
	for _, cp := range p.Plugins() {
		classes = append(classes, cp.Class)
		if cp.Class == fileSource && (cp.Type != connect.PluginSource || cp.Version != "4.3.1") {
			t.Errorf("%s: type %s version %q, want source 4.3.1", cp.Class, cp.Type, cp.Version)
		}
		if cp.Class == fileSink && cp.Type != connect.PluginSink {
			t.Errorf("%s: type %s, want sink", cp.Class, cp.Type)
		}
	}
	if !slices.Contains(classes, fileSource) || !slices.Contains(classes, fileSink) {
		t.Fatalf("the host's connectors %v lack the FileStream connectors", classes)
	}
	if h.Pid() == 0 {
		t.Fatal("listing the plugins did not start the host")
	}
	if cp, ok := p.Lookup("FileStreamSource"); !ok || cp.Class != fileSource {
		t.Fatalf("alias FileStreamSource: %v %v", cp, ok)
	}
	var converter bool
	for _, d := range p.OtherPlugins() {
		if d.Type == "converter" && strings.HasSuffix(d.Class, ".StringConverter") {
			converter = true
		}
	}
	if !converter {
		t.Errorf("the host's other plugins %v lack StringConverter", p.OtherPlugins())
	}

	cp, _ := p.Lookup(fileSource)
	c := cp.New()
	def := c.ConfigDef()
	if k, ok := def.Key("topic"); !ok || k.Type != connect.TypeList && k.Type != connect.TypeString {
		t.Fatalf("FileStreamSource's ConfigDef %v has no topic setting", def)
	}
	errs := c.(connect.ConfigValidator).ValidateConfig(map[string]string{"connector.class": fileSource, "name": "x", "file": "/tmp/x"})
	if len(errs["topic"]) == 0 {
		t.Fatalf("validate without topic: %v, want an error on topic", errs)
	}
}

func TestIntegrationJavaHostDiesAndComesBack(t *testing.T) {
	h := newTestHost(t, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := h.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := h.Pid()
	dir := h.cur.dir
	// A call in flight when the host dies fails with why.
	errc := make(chan error, 1)
	go func() {
		_, err := conn.Call(ctx, &hostpb.Request{Call: &hostpb.Request_Poll{Poll: &hostpb.PollRequest{Task: "no-such-task"}}})
		errc <- err
	}()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-conn.Done():
	case <-ctx.Done():
		t.Fatal("the connection did not end with the host")
	}
	if err := conn.Err(); err == nil || !strings.Contains(err.Error(), "java host exited (signal: killed)") {
		t.Fatalf("the connection's error %v does not say the host was killed", err)
	}
	// The call either got its answer (an unknown task) before the kill or
	// fails with the host's end.
	if err := <-errc; err != nil {
		var je *JavaError
		if !errors.As(err, &je) && !strings.Contains(err.Error(), "java host exited") {
			t.Fatalf("the call in flight failed with %v", err)
		}
	}
	waitUntil(t, 10*time.Second, "the host's directory is removed", func() bool {
		_, err := os.Stat(dir)
		return os.IsNotExist(err)
	})
	// After its backoff the host starts again on demand.
	var conn2 *Conn
	waitUntil(t, 30*time.Second, "the host starts again", func() bool {
		conn2, err = h.Conn(ctx)
		return err == nil
	})
	if conn2 == conn || h.Pid() == pid || h.Pid() == 0 {
		t.Fatalf("no new host: pid %d (was %d)", h.Pid(), pid)
	}
	pid2 := h.Pid()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid2, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the host %d still runs after Close: %v", pid2, err)
	}
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
