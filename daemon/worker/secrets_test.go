package worker

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/secrets"
)

// lockedBuffer collects a worker's log lines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// References in a connector's config are resolved for the connector and
// its tasks only: the sink writes to the file a reference names, the stored
// task configs keep the references, a reference that cannot be resolved
// fails the connector naming it, and no resolved secret reaches a status
// or the log, even in the error of a task that failed on one.
func TestWorkerConfigProviders(t *testing.T) {
	e := fakeEnv(t)
	ctx := context.Background()
	dir := t.TempDir()
	out := filepath.Join(dir, "sink-kcd-canary-secret-out.txt")
	bad := filepath.Join(dir, "no-such-dir-kcd-canary-secret-bad", "out.txt")
	props := filepath.Join(dir, "connector.properties")
	const password = "kcd-canary-secret-worker-pw"
	if err := os.WriteFile(props, []byte("file="+out+"\nbad.file="+bad+"\npassword="+password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WORKER_TEST_DB_PASSWORD", password+"-env")
	providers, err := secrets.NewProviders([]string{"file", "env"}, []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	w := e.start(func(c *Config) {
		c.ConfigProviders = providers
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})

	topic, src, sink, failing, missing := e.name("sec"), e.name("sec"), e.name("sec"), e.name("sec"), e.name("sec")
	e.create(src, map[string]string{"connector.class": "Datagen", "topic": topic, "tasks.max": "1", "rate.per.task": "200",
		"value.converter": StringConverter})
	sinkCfg := map[string]string{
		"connector.class":     "FileStreamSink",
		"topics":              topic,
		"file":                "${file:" + props + ":file}",
		"connection.password": "${env:WORKER_TEST_DB_PASSWORD}",
		"db.password":         "${file:" + props + ":password}",
		"value.converter":     StringConverter,
	}
	e.create(sink, sinkCfg)
	waitFor(t, 30*time.Second, "the sink writes to the file its reference names", func() (bool, string) {
		b, _ := os.ReadFile(out)
		return len(b) > 0, e.progress(w, sink, "no output")
	})
	stored, _, err := e.cs.Config(ctx, sink)
	if err != nil || stored["file"] != sinkCfg["file"] || stored["db.password"] != sinkCfg["db.password"] {
		t.Fatalf("stored config: %v %v", stored, err)
	}
	tc, err := e.cs.Tasks(ctx, sink)
	if err != nil || len(tc.Tasks) != 1 {
		t.Fatalf("task configs: %+v %v", tc, err)
	}
	if got := tc.Tasks[0]["file"]; got != sinkCfg["file"] {
		t.Errorf("stored task config file = %q, want the reference %q", got, sinkCfg["file"])
	}

	// A task that fails on a resolved value: its trace and the log hide it.
	e.create(failing, map[string]string{"connector.class": "FileStreamSink", "topics": topic,
		"file": "${file:" + props + ":bad.file}", "value.converter": StringConverter})
	st := e.waitState(failing, 0, connectstore.StateFailed)
	if strings.Contains(st.Trace, "kcd-canary-secret-") || !strings.Contains(st.Trace, secrets.Hidden) {
		t.Errorf("trace of a task that failed on a resolved path: %q", st.Trace)
	}

	// A reference that cannot be resolved fails the connector, naming it.
	ref := "${file:" + props + ":no.such.key}"
	e.create(missing, map[string]string{"connector.class": "FileStreamSink", "topics": topic, "file": ref, "value.converter": StringConverter})
	st = e.waitState(missing, -1, connectstore.StateFailed)
	if !strings.Contains(st.Trace, ref) {
		t.Errorf("trace of an unresolvable reference does not name it: %q", st.Trace)
	}
	// References are resolved at every start: once the key exists, the
	// connector's automatic restart picks it up.
	f, err := os.OpenFile(props, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("no.such.key=" + filepath.Join(dir, "late-out.txt") + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	e.waitState(missing, -1, connectstore.StateRunning)
	e.waitState(missing, 0, connectstore.StateRunning)

	// Outside the allowed paths: refused the same way.
	outside := e.name("sec")
	ref = "${file:/etc/hostname:x}"
	e.create(outside, map[string]string{"connector.class": "FileStreamSink", "topics": topic, "file": ref, "value.converter": StringConverter})
	st = e.waitState(outside, -1, connectstore.StateFailed)
	if !strings.Contains(st.Trace, ref) || !strings.Contains(st.Trace, "allowed") {
		t.Errorf("trace of a reference outside the allowed paths: %q", st.Trace)
	}

	if l := logs.String(); strings.Contains(l, "kcd-canary-secret-") {
		// Not the log itself: the secret stays out of the test's output.
		t.Errorf("the worker logged a resolved secret, %d times", strings.Count(l, "kcd-canary-secret-"))
	} else if !strings.Contains(l, secrets.Hidden) {
		t.Errorf("the failed task's error was not logged masked:\n%s", l)
	}
}
