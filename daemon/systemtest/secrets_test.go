package systemtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/internal/testenv"
)

// TestIntegrationProcessSecrets: a kcd process on the real Kafka broker
// with the file and env config providers and configs encrypted at rest.
// A FileStreamSink whose output file and passwords are ${file:...} and
// ${env:...} references writes where the reference points; GET of the
// connector, its config and its tasks shows the references; the store
// holds neither a secret nor a reference in plain text; a reference that
// cannot be resolved fails the connector naming it; and the node's log
// holds no secret (the harness checks every node log at cleanup).
func TestIntegrationProcessSecrets(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	dir := t.TempDir()
	suffix := fmt.Sprintf("%x", time.Now().UnixNano())
	filePassword := SecretCanary + "file-" + suffix
	envPassword := SecretCanary + "env-" + suffix
	literalPassword := SecretCanary + "literal-" + suffix
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out-"+suffix+".txt")
	secretsDir := filepath.Join(dir, "secrets")
	props := filepath.Join(secretsDir, "sink.properties")
	if err := os.MkdirAll(secretsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(props, []byte("out = "+out+"\ndb.password="+filePassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "config.key")
	if err := os.WriteFile(keyFile, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	for i := range 100 {
		fmt.Fprintf(&lines, "line-%03d\n", i)
	}
	if err := os.WriteFile(in, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SYSTEMTEST_DB_PASSWORD", envPassword) // the node inherits it

	c := StartCluster(t, bin, Options{Size: 1, Bootstrap: brokers, ExtraArgs: []string{
		"--config-providers", "file,env",
		"--config-provider-allowed-paths", secretsDir,
		"--config-encryption-key-file", keyFile,
		"--offset-flush-interval", "500ms",
	}})
	n := c.Node(1)
	if _, err := WaitLeader(ctx, n); err != nil {
		t.Fatal(err)
	}

	topic := "kcd-systemtest-secrets-" + suffix
	src, sink, broken := "secrets-src-"+suffix, "secrets-sink-"+suffix, "secrets-broken-"+suffix
	sinkCfg := map[string]string{
		"connector.class":     "FileStreamSink",
		"topics":              topic,
		"file":                "${file:" + props + ":out}",
		"db.password":         "${file:" + props + ":db.password}",
		"connection.password": "${env:SYSTEMTEST_DB_PASSWORD}",
		"literal.password":    literalPassword,
	}
	create := func(name string, cfg map[string]string) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"name": name, "config": cfg})
		for {
			status, err := n.do(ctx, "POST", "/connectors", body, nil)
			if err == nil && status == 201 {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("create %s: %d %v", name, status, err)
			}
			time.Sleep(100 * time.Millisecond) // the node may still be starting
		}
	}
	create(src, map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": topic})
	create(sink, sinkCfg)
	t.Cleanup(func() {
		for _, name := range []string{src, sink, broken} {
			_, _ = n.do(context.Background(), "DELETE", "/connectors/"+name, nil, nil)
		}
	})

	// The task sees the resolved file name: it writes there.
	if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) { return countLines(out) >= 100, nil }); err != nil {
		t.Fatalf("the sink wrote %d of 100 lines to the file its reference names", countLines(out))
	}

	// Answers show the references.
	var info struct {
		Config map[string]string `json:"config"`
		Tasks  []struct {
			Task int `json:"task"`
		} `json:"tasks"`
	}
	if err := n.GetJSON(ctx, "/connectors/"+sink, &info); err != nil {
		t.Fatal(err)
	}
	var config map[string]string
	if err := n.GetJSON(ctx, "/connectors/"+sink+"/config", &config); err != nil {
		t.Fatal(err)
	}
	var tasks []struct {
		Config map[string]string `json:"config"`
	}
	if err := n.GetJSON(ctx, "/connectors/"+sink+"/tasks", &tasks); err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 {
		t.Fatalf("%d task configs", len(tasks))
	}
	for what, cfg := range map[string]map[string]string{"GET /connectors/x": info.Config, "GET /connectors/x/config": config, "GET /connectors/x/tasks": tasks[0].Config} {
		for _, k := range []string{"file", "db.password", "connection.password"} {
			if cfg[k] != sinkCfg[k] {
				t.Errorf("%s shows %s = %q, want the reference %q", what, k, cfg[k], sinkCfg[k])
			}
		}
	}

	// The store holds envelopes: no secret and no reference in plain text.
	kvs, _, err := n.Scan(ctx, "connect/")
	if err != nil {
		t.Fatal(err)
	}
	sealed := 0
	for k, v := range kvs {
		for _, s := range []string{SecretCanary, "${file:", out} {
			if strings.Contains(v, s) {
				t.Errorf("store key %s holds %q in plain text", k, s)
			}
		}
		if strings.HasPrefix(k, "connect/config/") || strings.HasPrefix(k, "connect/tasks/") {
			sealed++
			if !strings.HasPrefix(v, "kcdenc1:") {
				t.Errorf("store key %s is not encrypted", k)
			}
		}
	}
	if sealed < 4 {
		t.Errorf("%d connector and task configs in the store, want at least 4", sealed)
	}

	// Nor does any file of the node's data dir: the Raft log, its
	// snapshots, the replicated bbolt state.
	files := 0
	if err := filepath.WalkDir(n.DataDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if strings.Contains(string(b), literalPassword) {
			t.Errorf("%s holds the literal password in plain text", path)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no file in the data dir: the check proves nothing")
	}

	// A reference that cannot be resolved fails the connector, naming it.
	ref := "${file:" + props + ":no.such.key}"
	create(broken, map[string]string{"connector.class": "FileStreamSink", "topics": topic, "file": ref})
	var st connectorStatus
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		err := n.GetJSON(ctx, "/connectors/"+broken+"/status", &st)
		return err == nil && st.Connector.State == "FAILED", nil
	}); err != nil {
		t.Fatalf("connector with an unresolvable reference: %+v", st)
	}
	if !strings.Contains(st.Connector.Trace, ref) {
		t.Errorf("trace does not name the reference: %q", st.Connector.Trace)
	}

	// kcd's own variables are no connector's to read: the harness gives
	// every node its join token in KCD_JOIN_TOKEN.
	stealer := "secrets-stealer-" + suffix
	create(stealer, map[string]string{"connector.class": "FileStreamSink", "topics": topic, "file": "${env:KCD_JOIN_TOKEN}"})
	t.Cleanup(func() { _, _ = n.do(context.Background(), "DELETE", "/connectors/"+stealer, nil, nil) })
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		err := n.GetJSON(ctx, "/connectors/"+stealer+"/status", &st)
		return err == nil && st.Connector.State == "FAILED", nil
	}); err != nil {
		t.Fatalf("connector reading KCD_JOIN_TOKEN: %+v", st)
	}
	if !strings.Contains(st.Connector.Trace, "KCD_") || strings.Contains(st.Connector.Trace, c.JoinToken()) {
		t.Errorf("trace of a reference to KCD_JOIN_TOKEN: %q", st.Connector.Trace)
	}

	// A worker-only node without the key starts, reads the envelopes
	// through the cluster's store API and fails clearly on them.
	w := c.NewWorker(2)
	for i := 0; i < len(w.Args); i++ {
		if w.Args[i] == "--config-encryption-key-file" {
			w.Args = append(w.Args[:i], w.Args[i+2:]...)
			break
		}
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		var cfg map[string]string
		lastErr = w.GetJSON(ctx, "/connectors/"+sink+"/config", &cfg)
		se, ok := lastErr.(*StatusError)
		return ok && se.Status == 500 && strings.Contains(se.Body, "--config-encryption-key-file"), nil
	}); err != nil {
		t.Fatalf("a node without the key reads an encrypted config: %v", lastErr)
	}
	if !w.Running() {
		t.Fatal("the node without the key exited")
	}

	// The log is checked for secrets at cleanup; check the resolved values
	// are nowhere now, so that this test's own failure says which.
	log := n.Log()
	for name, s := range map[string]string{"file": filePassword, "env": envPassword, "literal": literalPassword} {
		if strings.Contains(log, s) {
			t.Errorf("the node logged the %s password", name)
		}
	}
}
