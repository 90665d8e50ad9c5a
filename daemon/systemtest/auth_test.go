package systemtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kcd-project/kcd/internal/testenv"
)

func sha256Line(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return "sha256:" + hex.EncodeToString(h[:])
}

// cred is how a request of TestIntegrationRESTAuth authenticates.
type cred struct {
	name         string
	token        string
	user, passwd string
}

func (c cred) set(r *http.Request) {
	switch {
	case c.token != "":
		r.Header.Set("Authorization", "Bearer "+c.token)
	case c.user != "":
		r.SetBasicAuth(c.user, c.passwd)
	}
}

// call sends method path with body as c and returns the status.
func call(ctx context.Context, n *Node, c cred, method, path, body string) (int, string, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, n.URL()+path, rd)
	if err != nil {
		return 0, "", err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	c.set(req)
	res, err := httpClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, string(b), nil
}

// TestIntegrationRESTAuth: three Raft nodes and a worker-only node, all
// with --rest-auth-file and --node-token-file. Over real HTTP: no
// credentials get 401 on writes, a read user 403 on writes, an operate
// user 403 on cluster, worker and store writes, users (admin included)
// 403 on the peer store protocol, and the node secret gets in. Connectors
// that an operate user creates through a follower and through the
// worker-only node (whose store is remote: the peer store protocol as the
// node) run their tasks there (its heartbeats reach the leader through a
// Raft node's forwarding, as the node). A Raft node joins through a follower, as the node. A token added
// to the file works without a restart, and no secret reaches a log.
func TestIntegrationRESTAuth(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	dir := t.TempDir()
	const (
		readTok  = "kcd-canary-secret-it-read-token"
		opTok    = "kcd-canary-secret-it-operate-token"
		adminTok = "kcd-canary-secret-it-admin-token"
		adminPW  = "kcd-canary-secret-it-admin-password"
		nodeKey  = "kcd-canary-secret-it-node-0123456789abcdef"
		laterTok = "kcd-canary-secret-it-later-token"
	)
	hash, err := bcrypt.GenerateFromPassword([]byte(adminPW), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	users := fmt.Sprintf(`users:
  - name: viewer
    role: read
    tokens: [%s]
  - name: deployer
    role: operate
    tokens: [%s]
  - name: root
    role: admin
    password: %q
    tokens: [%s]
`, sha256Line(readTok), sha256Line(opTok), hash, sha256Line(adminTok))
	authFile := filepath.Join(dir, "auth.yaml")
	nodeFile := filepath.Join(dir, "node-token")
	if err := os.WriteFile(authFile, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nodeFile, []byte(nodeKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := StartCluster(t, bin, Options{Bootstrap: brokers, Token: adminTok,
		ExtraArgs: []string{"--rest-auth-file", authFile, "--node-token-file", nodeFile}})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	w4 := c.NewWorker(4)
	if err := w4.Start(); err != nil {
		t.Fatal(err)
	}
	var follower *Node
	for _, n := range c.Nodes()[:3] {
		if n.ID != lead {
			follower = n
		}
	}
	// Node 4 heartbeats through the Raft nodes' REST APIs as the node: it
	// registers only if they let it in.
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	if err := WaitFor(rctx, 50*time.Millisecond, func() (bool, error) {
		n, err := AliveWorkers(rctx, follower)
		return n == 4, err
	}); err != nil {
		t.Fatalf("four workers did not register: %v", err)
	}
	// Node 5 joins through a follower, as the node (the join is admin's
	// or a node's; forwarded to the leader as the node).
	joiner := c.NewJoiner(5, follower.URL())
	joiner.Args = append(joiner.Args, "--roles", "raft") // runs no tasks
	if err := joiner.Start(); err != nil {
		t.Fatal(err)
	}

	var (
		nobody   = cred{name: "nobody"}
		viewer   = cred{name: "viewer", token: readTok}
		deployer = cred{name: "deployer", token: opTok}
		root     = cred{name: "root (basic)", user: "root", passwd: adminPW}
		wrongPW  = cred{name: "root with a wrong password", user: "root", passwd: "kcd-canary-secret-it-wrong"}
		node     = cred{name: "node secret", token: nodeKey}
	)
	wid := url.PathEscape(w4.RESTAddr)
	for _, tc := range []struct {
		who          cred
		method, path string
		body         string
		want         int // 0: anything but 401 and 403
	}{
		{nobody, "GET", "/health", "", 200},
		{nobody, "GET", "/", "", 0},
		{nobody, "GET", "/connectors", "", 401},
		{nobody, "POST", "/connectors", `{"name":"x","config":{}}`, 401},
		{nobody, "DELETE", "/kcd/v1/cluster/members/3", "", 401},
		{nobody, "PUT", "/kcd/v1/workers/" + wid + "/weight", `{"weight":2}`, 401},
		{nobody, "POST", "/kcd/v1/store/get", `{"key":"eA=="}`, 401},
		{wrongPW, "GET", "/connectors", "", 401},
		{viewer, "GET", "/connectors", "", 200},
		{viewer, "GET", "/kcd/v1/workers", "", 0}, // 503 on node 4, which holds no store
		{viewer, "POST", "/connectors", `{"name":"x","config":{}}`, 403},
		{viewer, "PUT", "/connectors/x/pause", "", 403},
		{viewer, "GET", "/kcd/v1/store/keys", "", 403},
		{deployer, "DELETE", "/kcd/v1/cluster/members/3", "", 403},
		{deployer, "POST", "/kcd/v1/cluster/leader", `{"to":1}`, 403},
		{deployer, "PUT", "/kcd/v1/workers/" + wid + "/drain", "", 403},
		{deployer, "PUT", "/kcd/v1/store/keys/x", `"y"`, 403},
		{deployer, "POST", "/kcd/v1/store/switch", `{"to":"raft"}`, 403},
		{deployer, "POST", "/kcd/v1/imports", `{}`, 403},
		{root, "GET", "/kcd/v1/store/keys", "", 0},
		{root, "POST", "/kcd/v1/store/get", `{"key":"eA=="}`, 403},
		{root, "POST", "/kcd/v1/store/put", `{"key":"eA==","value":"eQ=="}`, 403},
		{root, "POST", "/kcd/v1/workers/" + wid + "/heartbeat", `{}`, 403},
		{node, "POST", "/kcd/v1/store/get", `{"key":"eA=="}`, 0},
		// A leader-only read on a follower is forwarded as the node.
		{viewer, "GET", "/kcd/v1/store/status", "", 200},
	} {
		for _, n := range []*Node{follower, w4} {
			status, body, err := call(ctx, n, tc.who, tc.method, tc.path, tc.body)
			if err != nil {
				t.Fatalf("%s %s on node %d: %v", tc.method, tc.path, n.ID, err)
			}
			if tc.want == 0 && (status == 401 || status == 403) || tc.want != 0 && status != tc.want {
				t.Errorf("%s %s as %s on node %d: %d %s, want %d", tc.method, tc.path, tc.who.name, n.ID, status, body, tc.want)
			}
		}
	}

	// Only node 4 may run tasks. The operate user creates one connector
	// through a follower and one through node 4 (whose store is remote).
	for _, n := range c.Nodes()[:3] {
		if status, body, err := call(ctx, follower, root, "PUT", "/kcd/v1/workers/"+url.PathEscape(n.RESTAddr)+"/weight", `{"weight":0}`); err != nil || status != 200 {
			t.Fatalf("weight 0 for node %d: %d %s %v", n.ID, status, body, err)
		}
	}
	const tasks = 2
	for _, via := range []*Node{follower, w4} {
		name := fmt.Sprintf("auth-gen-%d-%d", via.ID, time.Now().UnixNano())
		topic := "kcd-systemtest-" + name
		body := fmt.Sprintf(`{"name":%q,"config":{"connector.class":"Datagen","topic":%q,"tasks.max":"%d","rate.per.task":"5"}}`, name, topic, tasks)
		if status, b, err := call(ctx, via, deployer, "POST", "/connectors", body); err != nil || status != 201 {
			t.Fatalf("create as the operate user through node %d: %d %s %v", via.ID, status, b, err)
		}
		var st connectorStatus
		if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
			st = connectorStatus{}
			err := follower.GetJSON(ctx, "/connectors/"+name+"/status", &st)
			return err == nil && st.all("RUNNING", w4.RESTAddr, tasks), nil
		}); err != nil {
			t.Fatalf("connector created through node %d: status %+v, want all RUNNING on node 4: %v", via.ID, st, err)
		}
		if status, b, err := call(ctx, via, deployer, "DELETE", "/connectors/"+name, ""); err != nil || status != 204 {
			t.Errorf("delete as the operate user: %d %s %v", status, b, err)
		}
	}

	// A token added to the file is taken without a restart.
	if status, _, _ := call(ctx, follower, cred{token: laterTok}, "GET", "/connectors", ""); status != 401 {
		t.Fatalf("a token not in the file: %d", status)
	}
	more := users + fmt.Sprintf("  - name: later\n    role: read\n    tokens: [%s]\n", sha256Line(laterTok))
	if err := os.WriteFile(authFile+".new", []byte(more), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(authFile+".new", authFile); err != nil {
		t.Fatal(err)
	}
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		status, _, err := call(ctx, follower, cred{token: laterTok}, "GET", "/connectors", "")
		return status == 200, err
	}); err != nil {
		t.Fatalf("the token added to the file is not taken: %v", err)
	}

	for _, n := range c.Nodes() {
		if log := n.Log(); strings.Contains(log, "kcd-canary-secret-it-") || strings.Contains(log, string(hash)) {
			i := max(strings.Index(log, "kcd-canary-secret-it-"), 0)
			t.Errorf("node %d's log shows a secret: ...%s...", n.ID, log[max(i-200, 0):min(i+100, len(log))])
		}
	}
}
