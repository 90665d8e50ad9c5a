package systemtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/internal/testenv"
)

// TestIntegrationFileConnectorDirs: a kcd process on the real Kafka broker
// with --file-connector-dirs. Validate reports a FileStreamSink file outside
// the allowed directory on the file key, naming the directory; create
// refuses it with 400 in Kafka Connect's shape. A sink and a source written
// into the store directly with files outside (as an import writes them,
// past validation) fail, connector and task, with a trace that says why,
// and touch no file outside; a FileStream pipeline inside the directory on
// the same node keeps running meanwhile.
func TestIntegrationFileConnectorDirs(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	allowed, outside := filepath.Join(dir, "allowed"), filepath.Join(dir, "outside")
	for _, d := range []string{allowed, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("kcd-canary-secret-file-content\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := &Node{
		ID:       1,
		RESTAddr: mustFreeAddr(t),
		PeerAddr: mustFreeAddr(t),
		DataDir:  filepath.Join(dir, "node1"),
		LogPath:  filepath.Join(dir, "node1.log"),
		bin:      bin,
	}
	n.Args = []string{"--node-id", "1", "--data-dir", n.DataDir, "--rest-addr", n.RESTAddr,
		"--peer-addr", n.PeerAddr, "--bootstrap-servers", brokers, "--offset-flush-interval", "500ms"}
	n.Env = []string{"KCD_FILE_CONNECTOR_DIRS=" + allowed}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.Kill()
		if t.Failed() {
			t.Logf("node log:\n%s", n.LogTail(60))
		}
	})
	if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
		var h struct{ Status string }
		return n.GetJSON(ctx, "/health", &h) == nil && h.Status == "healthy", nil
	}); err != nil {
		t.Fatalf("node did not become healthy: %v", err)
	}

	stamp := time.Now().UnixNano()
	topic := fmt.Sprintf("kcd-systemtest-filedirs-%d", stamp)
	outsideOut := filepath.Join(outside, "out.txt")
	sinkConfig := map[string]string{"name": "outside", "connector.class": "FileStreamSink", "topics": topic, "file": outsideOut}

	// Validate: one error, on file, naming the allowed directory.
	var infos struct {
		ErrorCount int `json:"error_count"`
		Configs    []struct {
			Value struct {
				Name   string   `json:"name"`
				Errors []string `json:"errors"`
			} `json:"value"`
		} `json:"configs"`
	}
	body, _ := json.Marshal(sinkConfig)
	if _, err := n.do(ctx, "PUT", "/connector-plugins/FileStreamSink/config/validate", body, &infos); err != nil {
		t.Fatalf("validate: %v", err)
	}
	var fileErrs []string
	for _, c := range infos.Configs {
		if c.Value.Name == "file" {
			fileErrs = c.Value.Errors
		}
	}
	if infos.ErrorCount != 1 || len(fileErrs) != 1 || !strings.Contains(fileErrs[0], allowed) || !strings.Contains(fileErrs[0], "file-connector-dirs") {
		t.Fatalf("validate: %d errors, on file %q: want one on file naming %s", infos.ErrorCount, fileErrs, allowed)
	}

	// Create: 400, in Kafka Connect's shape, with the same error.
	body, _ = json.Marshal(map[string]any{"name": "outside", "config": sinkConfig})
	status, err := n.do(ctx, "POST", "/connectors", body, nil)
	var se *StatusError
	if status != 400 || !errors.As(err, &se) {
		t.Fatalf("create outside: %d %v, want 400", status, err)
	}
	var kerr struct {
		Code    int    `json:"error_code"`
		Message string `json:"message"`
	}
	if json.Unmarshal([]byte(se.Body), &kerr) != nil || kerr.Code != 400 || !strings.Contains(kerr.Message, fileErrs[0]) {
		t.Fatalf("create outside answered %s", se.Body)
	}

	// A pipeline inside the directory.
	in, out := filepath.Join(allowed, "in.txt"), filepath.Join(allowed, "out.txt")
	appendLines := func(from, to int) {
		t.Helper()
		f, err := os.OpenFile(in, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for i := from; i < to; i++ {
			fmt.Fprintf(f, "line-%d\n", i)
		}
	}
	appendLines(0, 100)
	for name, cfg := range map[string]map[string]string{
		"src":  {"connector.class": "FileStreamSource", "file": in, "topic": topic},
		"sink": {"connector.class": "FileStreamSink", "file": out, "topics": topic},
	} {
		body, _ := json.Marshal(map[string]any{"name": name, "config": cfg})
		if _, err := n.do(ctx, "POST", "/connectors", body, nil); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) { return countLines(out) >= 100, nil }); err != nil {
		t.Fatalf("the pipeline inside wrote %d of 100 lines", countLines(out))
	}

	// Connectors written into the store directly, with files outside:
	// their configs, task configs and target state, as an import writes them.
	bad := map[string]map[string]string{
		"bad-sink":   {"connector.class": "FileStreamSink", "topics": topic, "file": outsideOut, "name": "bad-sink"},
		"bad-source": {"connector.class": "FileStreamSource", "topic": topic, "file": secret, "name": "bad-source"},
	}
	for name, cfg := range bad {
		tasks := map[string]string{}
		for k, v := range cfg {
			tasks[k] = v
		}
		for key, value := range map[string]any{
			"connect/config/" + name: map[string]any{"config": cfg},
			"connect/tasks/" + name:  map[string]any{"generation": 1, "tasks": []map[string]string{tasks}},
			"connect/target/" + name: map[string]any{"state": "STARTED"},
		} {
			b, _ := json.Marshal(value)
			if _, err := n.Put(ctx, key, b); err != nil {
				t.Fatalf("put %s: %v", key, err)
			}
		}
	}
	type state struct {
		State string `json:"state"`
		Trace string `json:"trace"`
	}
	for name, cfg := range bad {
		var st struct {
			Connector state   `json:"connector"`
			Tasks     []state `json:"tasks"`
		}
		failed := func(s state) bool {
			return s.State == "FAILED" && strings.Contains(s.Trace, cfg["file"]) && strings.Contains(s.Trace, "file-connector-dirs: "+allowed)
		}
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		defer wcancel()
		if err := WaitFor(wctx, 100*time.Millisecond, func() (bool, error) {
			st.Tasks = nil
			return n.GetJSON(ctx, "/connectors/"+name+"/status", &st) == nil && failed(st.Connector) && len(st.Tasks) == 1 && failed(st.Tasks[0]), nil
		}); err != nil {
			t.Fatalf("%s: status %+v: want connector and task FAILED, saying why", name, st)
		}
		t.Logf("%s: task trace %q", name, st.Tasks[0].Trace)
	}
	if _, err := os.Stat(outsideOut); err == nil {
		t.Error("a file was written outside the allowed directory")
	}

	// The pipeline inside runs on.
	appendLines(100, 200)
	if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) { return countLines(out) >= 200, nil }); err != nil {
		t.Fatalf("after the failures the pipeline inside wrote %d of 200 lines", countLines(out))
	}
	var st struct {
		Connector state   `json:"connector"`
		Tasks     []state `json:"tasks"`
	}
	for _, name := range []string{"src", "sink"} {
		if err := n.GetJSON(ctx, "/connectors/"+name+"/status", &st); err != nil || st.Connector.State != "RUNNING" || len(st.Tasks) != 1 || st.Tasks[0].State != "RUNNING" {
			t.Errorf("%s: %+v %v", name, st, err)
		}
	}
	if b, _ := os.ReadFile(out); strings.Contains(string(b), "kcd-canary-secret") {
		t.Error("the secret outside reached the sink")
	}
}
