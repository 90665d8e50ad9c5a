package restapi

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

type fakeNode struct {
	clusterID string
	ready     bool
}

func (n *fakeNode) KafkaClusterID() (string, bool) { return n.clusterID, n.clusterID != "" }
func (n *fakeNode) Ready() bool                    { return n.ready }

func get(t *testing.T, h http.Handler, method, path string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: content type %q, body %s", method, path, ct, body)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s %s: body is not a JSON object: %s", method, path, body)
	}
	return res.StatusCode, m
}

func TestServerInfo(t *testing.T) {
	node := &fakeNode{}
	h := NewHandler(node, Options{Logger: slog.New(slog.DiscardHandler)})

	status, body := get(t, h, "GET", "/")
	if status != 503 || body["error_code"] != float64(503) {
		t.Errorf("before the cluster id is known: %d %v", status, body)
	}

	node.clusterID = "abc"
	status, body = get(t, h, "GET", "/")
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	if body["kafka_cluster_id"] != "abc" || body["version"] != ConnectAPIVersion || body["commit"] == nil || len(body) != 3 {
		t.Errorf("server info %v", body)
	}
}

func TestHealth(t *testing.T) {
	node := &fakeNode{}
	h := NewHandler(node, Options{})
	status, body := get(t, h, "GET", "/health")
	if status != 503 || body["status"] != "starting" || body["message"] != startingMessage {
		t.Errorf("starting: %d %v", status, body)
	}
	node.ready = true
	status, body = get(t, h, "GET", "/health")
	if status != 200 || body["status"] != "healthy" || body["message"] != healthyMessage {
		t.Errorf("ready: %d %v", status, body)
	}
}

// Every check counts: a part that failed makes the node unhealthy (503),
// one still starting keeps it starting, and the message says why.
func TestHealthCombinesChecks(t *testing.T) {
	var worker, alarm *HealthProblem
	node := &fakeNode{ready: true}
	h := NewHandler(node, Options{HealthChecks: []HealthCheck{
		func() *HealthProblem { return worker },
		func() *HealthProblem { return alarm },
	}})
	check := func(what string, wantStatus int, want WorkerStatus) {
		t.Helper()
		status, body := get(t, h, "GET", "/health")
		if status != wantStatus || body["status"] != want.Status || body["message"] != want.Message || len(body) != 2 {
			t.Errorf("%s: %d %v, want %d %+v", what, status, body, wantStatus, want)
		}
	}
	check("all fine", 200, WorkerStatus{Status: "healthy", Message: healthyMessage})
	worker = &HealthProblem{Starting: true, Message: "not joined yet"}
	check("worker starting", 503, WorkerStatus{Status: "starting", Message: "not joined yet"})
	node.ready = false
	check("node and worker starting", 503, WorkerStatus{Status: "starting", Message: startingMessage + "; not joined yet"})
	node.ready = true
	worker = &HealthProblem{Message: "lost its session"}
	check("worker lost its session", 503, WorkerStatus{Status: "unhealthy", Message: "lost its session"})
	alarm = &HealthProblem{Message: "corrupt"}
	check("two problems", 503, WorkerStatus{Status: "unhealthy", Message: "lost its session; corrupt"})
	worker = nil
	alarm = nil
	check("recovered", 200, WorkerStatus{Status: "healthy", Message: healthyMessage})
}

func TestUnknownPathsAndMethodsUseConnectErrors(t *testing.T) {
	h := NewHandler(&fakeNode{ready: true, clusterID: "x"}, Options{})
	cases := []struct {
		method, path string
		status       int
		message      string
	}{
		{"GET", "/nope", 404, "HTTP 404 Not Found"},
		{"GET", "/health/deeper", 404, "HTTP 404 Not Found"},
		{"POST", "/", 405, "HTTP 405 Method Not Allowed"},
		{"DELETE", "/health", 405, "HTTP 405 Method Not Allowed"},
	}
	for _, c := range cases {
		status, body := get(t, h, c.method, c.path)
		if status != c.status || body["error_code"] != float64(c.status) || body["message"] != c.message {
			t.Errorf("%s %s: %d %v", c.method, c.path, status, body)
		}
	}
}

func TestVersion(t *testing.T) {
	h := NewHandler(&fakeNode{}, Options{})
	status, body := get(t, h, "GET", "/kcd/v1/version")
	if status != 200 || body["version"] == "" || body["connect_api_version"] != ConnectAPIVersion {
		t.Errorf("%d %v", status, body)
	}
}

type alarmedNode struct {
	fakeNode
	alarm error
}

func (n *alarmedNode) Alarm() error { return n.alarm }

// A member whose state was found corrupt is unhealthy, ready or not.
func TestHealthCorruptionAlarm(t *testing.T) {
	node := &alarmedNode{fakeNode: fakeNode{ready: true, clusterID: "x"}}
	h := NewHandler(node, Options{})
	if status, body := get(t, h, "GET", "/health"); status != 200 {
		t.Fatalf("no alarm: %d %v", status, body)
	}
	node.alarm = errors.New("this member's state differs from the majority's")
	status, body := get(t, h, "GET", "/health")
	if status != 503 || body["status"] != "unhealthy" || body["message"] != node.alarm.Error() {
		t.Errorf("with an alarm: %d %v", status, body)
	}
}
