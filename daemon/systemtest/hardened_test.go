package systemtest

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/internal/testcerts"
	"github.com/kcd-project/kcd/internal/testenv"
)

// TestIntegrationProcessHardened runs the settings of docs/security.md
// together: three Raft nodes and a worker-only node with REST over mutual
// TLS, users from a credentials file that maps client certificates to
// roles, the node secret, confined file connectors and configs encrypted
// at rest. Client certificates authenticate as their users (read: 403 on
// writes; operate: connector writes, 403 on cluster writes); the nodes
// reach each other as nodes over mutual TLS (the worker-only node
// registers and runs tasks of a connector created through a follower);
// a FileStreamSink outside the allowed directory is refused.
func TestIntegrationProcessHardened(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	dir := t.TempDir()
	ca := testcerts.NewCA(t, "kcd hardened CA")
	caFile := ca.Write(t, dir, "ca")
	restCert, restKey := ca.Issue(t, "kcd node", testcerts.Options{}).Write(t, dir, "rest")
	peerCert, peerKey := ca.Issue(t, "kcd peer", testcerts.Options{IPs: []string{"127.0.0.1"}}).Write(t, dir, "peer")
	operator := ca.Issue(t, "operator", testcerts.Options{})
	auditor := ca.Issue(t, "auditor", testcerts.Options{})
	stranger := ca.Issue(t, "stranger", testcerts.Options{})

	authFile := filepath.Join(dir, "auth.yaml")
	writeSecret(t, authFile, "users:\n  - name: operator\n    role: operate\n    certificate: operator\n  - name: auditor\n    role: read\n    certificate: auditor\n")
	nodeFile := filepath.Join(dir, "node-token")
	writeSecret(t, nodeFile, "kcd-canary-secret-hardened-node-0123456789abcdef\n")
	keyFile := filepath.Join(dir, "config-key")
	writeSecret(t, keyFile, strings.Repeat("ab", 32)+"\n")
	files := filepath.Join(dir, "files")
	if err := os.Mkdir(files, 0o700); err != nil {
		t.Fatal(err)
	}

	c := StartCluster(t, bin, Options{
		Bootstrap: brokers,
		ExtraArgs: []string{
			"--rest-tls-cert", restCert, "--rest-tls-key", restKey,
			"--rest-tls-client-ca", caFile, "--rest-tls-ca", caFile,
			"--peer-tls-cert", peerCert, "--peer-tls-key", peerKey, "--peer-tls-ca", caFile,
			"--rest-auth-file", authFile, "--node-token-file", nodeFile,
			"--file-connector-dirs", files,
			"--config-encryption-key-file", keyFile,
		},
		// The harness's own requests go as the operator's certificate.
		RESTTLS: &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{operator.TLS}},
	})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	w4 := c.NewWorker(4)
	if err := w4.Start(); err != nil {
		t.Fatal(err)
	}
	follower := c.Except(lead)[0]
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		n, err := AliveWorkers(ctx, follower)
		return err == nil && n == 4, nil
	}); err != nil {
		t.Fatalf("four workers did not register (node calls over mutual TLS with the node secret): %v", err)
	}

	as := func(cert testcerts.Leaf, n *Node, method, path, body string) (int, string) {
		t.Helper()
		cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cert.TLS}}}}
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, n.URL()+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := cl.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		return res.StatusCode, string(b)
	}

	topic := fmt.Sprintf("kcd-systemtest-hardened-%d", time.Now().UnixNano())
	gen := fmt.Sprintf(`{"name":"gen","config":{"connector.class":"Datagen","topic":%q,"tasks.max":"6","rate.per.task":"20","shape":"counter","key":"task","value.converter":"org.apache.kafka.connect.storage.StringConverter"}}`, topic)
	outside := fmt.Sprintf(`{"name":"out","config":{"connector.class":"FileStreamSink","topics":%q,"file":%q}}`, topic, filepath.Join(dir, "out.txt"))
	for _, tc := range []struct {
		who          testcerts.Leaf
		name         string
		method, path string
		body         string
		want         int
	}{
		{auditor, "auditor", "GET", "/connectors", "", 200},
		{auditor, "auditor", "POST", "/connectors", gen, 403},
		{stranger, "a certificate no user has", "GET", "/connectors", "", 401},
		{operator, "operator", "POST", "/kcd/v1/cluster/leader", `{"to":1}`, 403},
		{operator, "operator", "POST", "/connectors", outside, 400},
		{operator, "operator", "POST", "/connectors", gen, 201},
	} {
		if got, body := as(tc.who, follower, tc.method, tc.path, tc.body); got != tc.want {
			t.Errorf("%s %s as %s: %d %s, want %d", tc.method, tc.path, tc.name, got, body, tc.want)
		}
	}
	var where map[int]*Node
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		var ok bool
		where, ok = placementOf(ctx, follower, c.Nodes(), 6)
		return ok && countOn(where, w4) > 0, nil
	}); err != nil {
		t.Fatalf("the tasks of a connector created through a follower did not all run, some on the worker-only node (placement %v): %v", where, err)
	}
}

func writeSecret(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
