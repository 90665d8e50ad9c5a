package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kcd-project/kcd/internal/testenv"
)

// connectorStatus is GET /connectors/{name}/status, as the tests read it.
type connectorStatus struct {
	Connector struct {
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
		Trace    string `json:"trace"`
	} `json:"connector"`
	Tasks []struct {
		ID       int    `json:"id"`
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
		Trace    string `json:"trace"`
	} `json:"tasks"`
}

// all tells whether the connector and its tasks (tasks of them) are all
// in state, reported by worker.
func (s connectorStatus) all(state, worker string, tasks int) bool {
	if s.Connector.State != state || s.Connector.WorkerID != worker || len(s.Tasks) != tasks {
		return false
	}
	for _, t := range s.Tasks {
		if t.State != state || t.WorkerID != worker {
			return false
		}
	}
	return true
}

// waitLimit bounds each wait for a state: the slowest expected is a
// session expiry (3.5 s) and a rebalance after it.
const waitLimit = 20 * time.Second

// health is GET /health: status code and body.
func health(ctx context.Context, n *Node) (int, map[string]string, error) {
	var body map[string]string
	code, err := n.do(ctx, http.MethodGet, "/health", nil, &body)
	if se, ok := err.(*StatusError); ok {
		_ = json.Unmarshal([]byte(se.Body), &body)
		err = nil
	}
	return code, body, err
}

// TestIntegrationProcessStatusTellsTheTruth: a connector whose units can
// only run on the worker-only node (the other workers have weight 0) runs
// there; when that node is frozen (SIGSTOP), its session expires and every
// node's status says UNASSIGNED (last worker: node 4) instead of the last
// report, RUNNING, and the worker list keeps node 4 as expired with the
// units it still owns. Resumed, it runs them again and status says so.
func TestIntegrationProcessStatusTellsTheTruth(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c := StartCluster(t, bin, Options{Bootstrap: brokers})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	w4 := c.NewWorker(4)
	if err := w4.Start(); err != nil {
		t.Fatal(err)
	}
	via := c.Node(1)
	if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
		n, err := AliveWorkers(ctx, via)
		return n == 4, err
	}); err != nil {
		t.Fatalf("four workers did not register: %v", err)
	}
	for _, n := range c.Nodes()[:3] {
		if _, err := via.do(ctx, http.MethodPut, "/kcd/v1/workers/"+url.PathEscape(n.RESTAddr)+"/weight", []byte(`{"weight":0}`), nil); err != nil {
			t.Fatal(err)
		}
	}
	const tasks = 2
	topic := fmt.Sprintf("kcd-systemtest-status-%d", time.Now().UnixNano())
	body := fmt.Sprintf(`{"name":"gen","config":{"connector.class":"Datagen","topic":%q,"tasks.max":"%d","rate.per.task":"5"}}`, topic, tasks)
	if _, err := via.do(ctx, http.MethodPost, "/connectors", []byte(body), nil); err != nil {
		t.Fatal(err)
	}
	var follower *Node
	for _, n := range c.Nodes()[:3] {
		if n.ID != lead {
			follower = n
		}
	}
	readers := []*Node{c.Node(lead), follower}
	waitStatus := func(what, state, worker string) {
		t.Helper()
		for _, n := range readers {
			var st connectorStatus
			ctx, cancel := context.WithTimeout(ctx, waitLimit)
			defer cancel()
			if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
				st = connectorStatus{}
				err := n.GetJSON(ctx, "/connectors/gen/status", &st)
				return err == nil && st.all(state, worker, tasks), err
			}); err != nil {
				t.Fatalf("%s: status read from node %d is %+v, want all %s on %s: %v", what, n.ID, st, state, worker, err)
			}
		}
	}
	waitStatus("start", "RUNNING", w4.RESTAddr)

	if err := w4.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	waitStatus("node 4 frozen", "UNASSIGNED", w4.RESTAddr)
	t.Logf("status says UNASSIGNED %v after SIGSTOP of the only worker that can run the connector", time.Since(frozen).Round(time.Millisecond))
	var ts struct {
		ID       int    `json:"id"`
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
	}
	if err := follower.GetJSON(ctx, "/connectors/gen/tasks/1/status", &ts); err != nil || ts.ID != 1 || ts.State != "UNASSIGNED" || ts.WorkerID != w4.RESTAddr {
		t.Errorf("task 1's status from node %d: %+v, %v", follower.ID, ts, err)
	}
	// The worker list keeps node 4, expired, still owning what nobody else
	// can take.
	ws, err := Workers(ctx, follower)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, w := range ws {
		if w.ID == w4.RESTAddr {
			found = true
			if w.State != "expired" || w.Connectors != 1 || w.Tasks != tasks {
				t.Errorf("node 4 in the worker list: %+v, want expired with 1 connector and %d tasks", w, tasks)
			}
		} else if w.State != "alive" {
			t.Errorf("worker %s: %+v, want alive", w.ID, w)
		}
	}
	if !found || len(ws) != 4 {
		t.Errorf("worker list after node 4's session expired: %+v", ws)
	}

	if err := w4.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitStatus("node 4 resumed", "RUNNING", w4.RESTAddr)
	if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
		ws, err := Workers(ctx, follower)
		for _, w := range ws {
			if w.ID == w4.RESTAddr {
				return w.State == "alive", err
			}
		}
		return false, err
	}); err != nil {
		t.Errorf("node 4 is not alive again in the worker list: %v", err)
	}
}

// TestIntegrationProcessHealthOnLostSession: /health of a node answers 200
// while its worker holds a session; once the node has lost quorum (the two
// others killed) its worker's session lapses and /health answers 503
// unhealthy, saying why; with the others back it is healthy again.
func TestIntegrationProcessHealthOnLostSession(t *testing.T) {
	bin := binary(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c := StartCluster(t, bin, Options{Kafka: DevKafkaFirst})
	if _, err := WaitLeader(ctx, c.Nodes()...); err != nil {
		t.Fatal(err)
	}
	n1 := c.Node(1)
	waitHealth := func(what string, n *Node, want int, status, message string) {
		t.Helper()
		var code int
		var body map[string]string
		ctx, cancel := context.WithTimeout(ctx, waitLimit)
		defer cancel()
		if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
			var err error
			code, body, err = health(ctx, n)
			return err == nil && code == want && body["status"] == status && strings.Contains(body["message"], message), err
		}); err != nil {
			t.Fatalf("%s: /health of node %d: %d %v, want %d %s %q: %v", what, n.ID, code, body, want, status, message, err)
		}
	}
	for _, n := range c.Nodes() {
		waitHealth("start", n, 200, "healthy", "ready to handle requests")
	}
	c.Node(2).Kill()
	c.Node(3).Kill()
	lost := time.Now()
	waitHealth("quorum lost", n1, 503, "unhealthy", "lost its session")
	t.Logf("/health answered 503 %v after quorum was lost", time.Since(lost).Round(time.Millisecond))
	for _, id := range []uint64{2, 3} {
		if err := c.Node(id).Start(); err != nil {
			t.Fatal(err)
		}
	}
	waitHealth("quorum back", n1, 200, "healthy", "ready to handle requests")
}

// TestIntegrationProcessClusterStatusOnFollower: asked on a follower,
// GET /kcd/v1/cluster shows the other follower reachable (the leader's
// view: followers do not talk to each other) and a quorum summary; a
// killed follower shows as unreachable, with the quorum still ok; a
// follower's own view marks what it cannot know as unknown.
func TestIntegrationProcessClusterStatusOnFollower(t *testing.T) {
	bin := binary(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c := StartCluster(t, bin, Options{Kafka: DevKafkaFirst})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	followers := c.Except(lead)
	check := func(what string, via *Node, path string, cond func(ClusterInfo) bool) {
		t.Helper()
		var info ClusterInfo
		ctx, cancel := context.WithTimeout(ctx, waitLimit)
		defer cancel()
		if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
			var err error
			info = ClusterInfo{}
			_, err = via.do(ctx, http.MethodGet, path, nil, &info)
			return err == nil && cond(info), err
		}); err != nil {
			t.Fatalf("%s: GET %s on node %d: %+v: %v", what, path, via.ID, info, err)
		}
	}
	reach := func(info ClusterInfo, want map[uint64]string) bool {
		for id, r := range want {
			m, ok := info.Member(id)
			if !ok || m.Reachability != r || m.Reachable != (r == "reachable") {
				return false
			}
		}
		return true
	}
	all := map[uint64]string{1: "reachable", 2: "reachable", 3: "reachable"}
	for _, f := range followers {
		check("all up", f, "/kcd/v1/cluster", func(info ClusterInfo) bool {
			h := info.Health
			return info.Self == f.ID && info.Leader == lead && info.ReachabilityFrom == lead && reach(info, all) &&
				h.Voters == 3 && h.VotersUp == 3 && h.Quorum == 2 && h.QuorumOK && h.Alarms != nil && len(h.Alarms) == 0
		})
	}
	// A follower's own view: the leader reachable, the other follower
	// unknown to it, never unreachable.
	f1, f2 := followers[0], followers[1]
	check("own view", f1, "/kcd/v1/cluster?view=local", func(info ClusterInfo) bool {
		return info.ReachabilityFrom == f1.ID && reach(info, map[uint64]string{f1.ID: "reachable", lead: "reachable", f2.ID: "unknown"})
	})

	f2.Kill()
	check("a follower killed", f1, "/kcd/v1/cluster", func(info ClusterInfo) bool {
		h := info.Health
		return info.ReachabilityFrom == lead && reach(info, map[uint64]string{f1.ID: "reachable", lead: "reachable", f2.ID: "unreachable"}) &&
			h.VotersUp == 2 && h.QuorumOK
	})
}
