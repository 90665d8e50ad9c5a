package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/store"
)

// logBuffer is a node's log output, safe to read while the node writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// loggedNode starts a node that logs at info into its own buffer, as the
// kcd binary does (NewLogger), so that its levels can change.
func loggedNode(t *testing.T, id uint64, join string) (*Node, *logBuffer) {
	t.Helper()
	cfg := devConfig(t, t.TempDir())
	cfg.NodeID = id
	cfg.Join = join
	out := &logBuffer{}
	n := New(cfg, NewLogger(out, "info", "text"))
	if err := n.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n, out
}

func putLevel(t *testing.T, url, level string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader(`{"level":"`+level+`"}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

func loggerLevel(t *testing.T, url string) string {
	t.Helper()
	var l api.LoggerLevel
	if code := call(t, http.MethodGet, url, nil, &l); code != http.StatusOK {
		return fmt.Sprintf("HTTP %d", code)
	}
	return l.Level
}

// restDebugLines counts the rest subsystem's DEBUG lines (one per request).
func restDebugLines(out *logBuffer) int {
	n := 0
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "level=DEBUG") && strings.Contains(line, "subsys=rest") && strings.Contains(line, `msg="rest request"`) {
			n++
		}
	}
	return n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLoggersWorkerScope(t *testing.T) {
	n, out := loggedNode(t, 1, "")
	base := n.RESTURL() + "/admin/loggers"

	var all map[string]api.LoggerLevel
	if code := call(t, http.MethodGet, base, nil, &all); code != http.StatusOK {
		t.Fatalf("GET /admin/loggers: %d", code)
	}
	for _, name := range []string{"root", "rest", "coordinator", "raft", "worker", "herder"} {
		if l, ok := all[name]; !ok || l.Level != "INFO" || l.LastModified != nil {
			t.Errorf("%s: %+v (present %v)", name, l, ok)
		}
	}
	if restDebugLines(out) != 0 {
		t.Fatalf("rest logs DEBUG at INFO:\n%s", out)
	}

	// DEBUG on rest: the next request is logged at DEBUG; other
	// subsystems stay at INFO.
	code, body := putLevel(t, base+"/rest", "debug")
	if code != http.StatusOK || strings.TrimSpace(body) != `["rest"]` {
		t.Fatalf("PUT rest: %d %s", code, body)
	}
	if got := loggerLevel(t, base+"/rest"); got != "DEBUG" {
		t.Errorf("rest is %s", got)
	}
	waitFor(t, "no DEBUG line of rest after its level was set:\n"+out.String(), func() bool { return restDebugLines(out) > 0 })
	if got := loggerLevel(t, base+"/coordinator"); got != "INFO" {
		t.Errorf("coordinator is %s", got)
	}

	// Back to INFO: no more DEBUG lines.
	if code, body := putLevel(t, base+"/rest", "INFO"); code != http.StatusOK {
		t.Fatalf("PUT rest INFO: %d %s", code, body)
	}
	// A request to a path asked for only now (earlier requests may still
	// be writing their lines) is not logged. The server logs a request
	// after answering it, before it reads the next on that connection: a
	// second request on the same connection waits for the line.
	for _, p := range []string{"/root", "/worker"} {
		res, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body) // read to the end: the connection is reused
		res.Body.Close()
	}
	if strings.Contains(out.String(), "path=/admin/loggers/root ") {
		t.Errorf("rest still logs DEBUG at INFO:\n%s", out)
	}

	// Client mistakes: an invalid level, no level, an unknown logger.
	if code, body := putLevel(t, base+"/rest", "LOUD"); code != http.StatusBadRequest || !strings.Contains(body, `"error_code":400`) {
		t.Errorf("invalid level: %d %s", code, body)
	}
	if code := call(t, http.MethodPut, base+"/rest", map[string]string{}, nil); code != http.StatusBadRequest {
		t.Errorf("no level: %d", code)
	}
	if code, body := putLevel(t, base+"/nope", "DEBUG"); code != http.StatusNotFound || !strings.Contains(body, "Logger nope not found.") {
		t.Errorf("PUT unknown logger: %d %s", code, body)
	}
	if code := call(t, http.MethodGet, base+"/nope", nil, nil); code != http.StatusNotFound {
		t.Errorf("GET unknown logger: %d", code)
	}
}

func TestLoggersClusterScope(t *testing.T) {
	first, _ := loggedNode(t, 1, "")
	second, secondOut := loggedNode(t, 2, first.RESTURL())
	waitFor(t, "node 2 did not become a voter", func() bool {
		st := first.Raft().Status()
		return len(st.Members) == 2 && st.Members[1].Raft == "voter"
	})

	// Set on the first node with scope=cluster: the second applies it.
	code, body := putLevel(t, first.RESTURL()+"/admin/loggers/rest?scope=cluster", "DEBUG")
	if code != http.StatusNoContent {
		t.Fatalf("PUT scope=cluster: %d %s", code, body)
	}
	if got := loggerLevel(t, first.RESTURL()+"/admin/loggers/rest"); got != "DEBUG" {
		t.Errorf("first node's rest is %s after its own PUT", got)
	}
	waitFor(t, "the second node did not apply the cluster's level", func() bool {
		return loggerLevel(t, second.RESTURL()+"/admin/loggers/rest") == "DEBUG"
	})
	waitFor(t, "no DEBUG line of rest on the second node:\n"+secondOut.String(), func() bool { return restDebugLines(secondOut) > 0 })
	// A worker-scoped PUT stays on its node.
	if code, body := putLevel(t, first.RESTURL()+"/admin/loggers/raft", "ERROR"); code != http.StatusOK {
		t.Fatalf("PUT raft: %d %s", code, body)
	}
	if got := loggerLevel(t, second.RESTURL()+"/admin/loggers/raft"); got != "INFO" {
		t.Errorf("worker scope reached the second node: raft is %s", got)
	}

	// A node that joins later applies what is stored.
	third, _ := loggedNode(t, 3, first.RESTURL())
	waitFor(t, "the node that joined later did not apply the cluster's level", func() bool {
		return loggerLevel(t, third.RESTURL()+"/admin/loggers/rest") == "DEBUG"
	})
}

// writeAfterScan is a store that makes one write of its own right after
// the follower's first read, as another node's write can land between its
// read and its watch.
type writeAfterScan struct {
	store.Store
	once sync.Once
	key  string
	val  []byte
}

func (s *writeAfterScan) Scan(ctx context.Context, prefix string, limit int) ([]store.KV, int64, error) {
	kvs, rev, err := s.Store.Scan(ctx, prefix, limit)
	s.once.Do(func() {
		if _, perr := s.Store.Put(ctx, s.key, s.val); perr != nil && err == nil {
			err = perr
		}
	})
	return kvs, rev, err
}

// A level stored between the follower's first read and its watch, on a
// store never written to before, is applied: the follower does not take
// revision 0 (Watch: "from now on") as the revision it read at.
func TestClusterLevelWrittenBetweenReadAndWatch(t *testing.T) {
	s, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), fsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v, _ := json.Marshal(clusterLevel{Level: "DEBUG", Modified: time.Now().UnixMilli()})
	ws := &writeAfterScan{Store: s, key: loggerKeyPrefix + "rest", val: v}
	log, levels := levelsOf(slog.New(slog.DiscardHandler), "info")
	l := &nodeLoggers{levels: levels, store: ws, log: log, changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); l.follow(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "rest at DEBUG after its level was stored: the write between read and watch was missed", func() bool {
		lv, ok := l.Level("rest")
		return ok && lv.Level == "DEBUG"
	})
}
