package restapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/herder"
	"github.com/kcd-project/kcd/daemon/herder/herdertest"
)

// connectAPI is the API over a fresh store with the fake plugins.
func connectAPI(t *testing.T) (http.Handler, *connectstore.Store) {
	t.Helper()
	herdertest.Register()
	s := herdertest.Store(t)
	quiet := slog.New(slog.DiscardHandler)
	h := NewHandler(&fakeNode{ready: true, clusterID: "c"}, Options{Connect: herder.New(s, herder.Options{Logger: quiet}), Logger: quiet})
	return h, s
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func send(t *testing.T, h http.Handler, method, path, body string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return response{res.StatusCode, res.Header, b}
}

// expect checks status and, when want is not empty, that the body is the
// JSON want (compared as values).
func (r response) expect(t *testing.T, status int, want string) {
	t.Helper()
	if r.status != status {
		t.Errorf("status %d, want %d; body %s", r.status, status, r.body)
		return
	}
	if want == "" {
		return
	}
	var got, exp any
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Errorf("body is not JSON: %s", r.body)
		return
	}
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		t.Fatalf("bad want %s: %v", want, err)
	}
	g, _ := json.Marshal(got)
	e, _ := json.Marshal(exp)
	if string(g) != string(e) {
		t.Errorf("body\n got %s\nwant %s", g, e)
	}
}

// empty checks status and that there is no body.
func (r response) empty(t *testing.T, status int) {
	t.Helper()
	if r.status != status || len(r.body) != 0 {
		t.Errorf("got %d %s, want %d and no body", r.status, r.body, status)
	}
}

// expectError checks Kafka Connect's error body.
func (r response) expectError(t *testing.T, status int, msgPrefix string) {
	t.Helper()
	var e ErrorMessage
	if err := json.Unmarshal(r.body, &e); err != nil || r.status != status || e.ErrorCode != status || !strings.HasPrefix(e.Message, msgPrefix) {
		t.Errorf("got %d %s, want %d with a message starting %q", r.status, r.body, status, msgPrefix)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
}

const srcClass = herdertest.SourceClass

func TestConnectorCRUD(t *testing.T) {
	h, s := connectAPI(t)
	send(t, h, "GET", "/connectors", "").expect(t, 200, `[]`)

	r := send(t, h, "POST", "/connectors", `{"name":" c1 ","config":{"connector.class":"FakeSource","topic":"t","tasks.max":2,"flag":true}}`)
	r.expect(t, 201, `{"name":"c1","config":{"connector.class":"FakeSource","topic":"t","tasks.max":"2","flag":"true","name":"c1"},"tasks":[],"type":"source"}`)
	if loc := r.header.Get("Location"); loc != "http://example.com/connectors/c1" {
		t.Errorf("Location %q", loc)
	}
	send(t, h, "POST", "/connectors", `{"name":"c1","config":{"connector.class":"FakeSource","topic":"t"}}`).
		expectError(t, 409, "Connector c1 already exists")
	send(t, h, "POST", "/connectors", `{"name":"p1","config":{"connector.class":"FakeSource","topic":"t"},"initial_state":"paused"}`).expect(t, 201, "")
	if target, _ := s.Target(context.Background(), "p1"); target != connectstore.TargetPaused {
		t.Errorf("initial_state paused: target %s", target)
	}

	send(t, h, "GET", "/connectors", "").expect(t, 200, `["c1","p1"]`)
	send(t, h, "GET", "/connectors/c1", "").expect(t, 200,
		`{"name":"c1","config":{"connector.class":"FakeSource","topic":"t","tasks.max":"2","flag":"true","name":"c1"},"tasks":[],"type":"source"}`)
	send(t, h, "GET", "/connectors/nope", "").expectError(t, 404, "Connector nope not found")
	send(t, h, "GET", "/connectors/c1/config", "").expect(t, 200, `{"connector.class":"FakeSource","topic":"t","tasks.max":"2","flag":"true","name":"c1"}`)
	send(t, h, "GET", "/connectors/nope/config", "").expectError(t, 404, "Connector nope not found")

	// PUT: 200 when it updates, 201 with Location when it creates.
	send(t, h, "PUT", "/connectors/c1/config", `{"connector.class":"FakeSource","topic":"u"}`).
		expect(t, 200, `{"name":"c1","config":{"connector.class":"FakeSource","topic":"u","name":"c1"},"tasks":[],"type":"source"}`)
	r = send(t, h, "PUT", "/connectors/a%20b/config", `{"connector.class":"FakeSource","topic":"u","name":"a b"}`)
	r.expect(t, 201, `{"name":"a b","config":{"connector.class":"FakeSource","topic":"u","name":"a b"},"tasks":[],"type":"source"}`)
	if loc := r.header.Get("Location"); loc != "http://example.com/connectors/a%20b" {
		t.Errorf("Location %q", loc)
	}
	send(t, h, "GET", "/connectors/a%20b/config", "").expect(t, 200, `{"connector.class":"FakeSource","topic":"u","name":"a b"}`)

	// PATCH: null removes a setting.
	send(t, h, "PATCH", "/connectors/c1/config", `{"file":"/x","batch.size":"5"}`).expect(t, 200, "")
	send(t, h, "PATCH", "/connectors/c1/config", `{"file":null}`).
		expect(t, 200, `{"name":"c1","config":{"connector.class":"FakeSource","topic":"u","name":"c1","batch.size":"5"},"tasks":[],"type":"source"}`)
	send(t, h, "PATCH", "/connectors/nope/config", `{"file":"/x"}`).expectError(t, 404, "Connector nope not found")

	// Tasks, as a worker wrote them.
	if _, err := s.SetTasks(context.Background(), "c1", []map[string]string{{"task.class": "x", "n": "0"}}, nil); err != nil {
		t.Fatal(err)
	}
	send(t, h, "GET", "/connectors/c1/tasks", "").expect(t, 200, `[{"id":{"connector":"c1","task":0},"config":{"task.class":"x","n":"0"}}]`)
	send(t, h, "GET", "/connectors/c1", "").expect(t, 200,
		`{"name":"c1","config":{"connector.class":"FakeSource","topic":"u","name":"c1","batch.size":"5"},"tasks":[{"connector":"c1","task":0}],"type":"source"}`)
	send(t, h, "GET", "/connectors/nope/tasks", "").expectError(t, 404, "Connector nope not found")

	send(t, h, "DELETE", "/connectors/c1", "").empty(t, 204)
	send(t, h, "DELETE", "/connectors/c1", "").expectError(t, 404, "Connector c1 not found")
	send(t, h, "GET", "/connectors", "").expect(t, 200, `["a b","p1"]`)
}

func TestExpandAndStatus(t *testing.T) {
	h, s := connectAPI(t)
	ctx := context.Background()
	send(t, h, "POST", "/connectors", `{"name":"c","config":{"connector.class":"FakeSource","topic":"t"}}`).expect(t, 201, "")
	send(t, h, "POST", "/connectors", `{"name":"d","config":{"connector.class":"FakeSource","topic":"t"}}`).expect(t, 201, "")
	send(t, h, "GET", "/connectors/c/status", "").expectError(t, 404, "No status found for connector c")

	if err := s.PutConnectorStatus(ctx, "c", connectstore.Status{State: "RUNNING", WorkerID: "w:8083"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTaskStatus(ctx, "c", 1, connectstore.Status{State: "FAILED", WorkerID: "w:8083", Trace: "stack"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTaskStatus(ctx, "c", 0, connectstore.Status{State: "RUNNING", WorkerID: "w:8083"}, nil); err != nil {
		t.Fatal(err)
	}
	status := `{"name":"c","connector":{"state":"RUNNING","worker_id":"w:8083","version":"1.2.3"},"tasks":[` +
		`{"id":0,"state":"RUNNING","worker_id":"w:8083","version":"1.2.3"},{"id":1,"state":"FAILED","worker_id":"w:8083","trace":"stack","version":"1.2.3"}],"type":"source"}`
	send(t, h, "GET", "/connectors/c/status", "").expect(t, 200, status)
	send(t, h, "GET", "/connectors/c/tasks/1/status", "").expect(t, 200, `{"id":1,"state":"FAILED","worker_id":"w:8083","trace":"stack","version":"1.2.3"}`)
	send(t, h, "GET", "/connectors/c/tasks/2/status", "").expectError(t, 404, "No status found for task c-2")
	send(t, h, "GET", "/connectors/c/tasks/x/status", "").expectError(t, 404, "HTTP 404 Not Found")

	// d has no status: expand=status leaves it out, as Kafka Connect does.
	info := `{"name":"c","config":{"connector.class":"FakeSource","topic":"t","name":"c"},"tasks":[],"type":"source"}`
	send(t, h, "GET", "/connectors?expand=status&expand=info", "").expect(t, 200, `{"c":{"status":`+status+`,"info":`+info+`}}`)
	send(t, h, "GET", "/connectors?expand=info", "").expect(t, 200,
		`{"c":{"info":`+info+`},"d":{"info":{"name":"d","config":{"connector.class":"FakeSource","topic":"t","name":"d"},"tasks":[],"type":"source"}}}`)
	send(t, h, "GET", "/connectors?expand=bogus", "").expect(t, 200, `{"c":{},"d":{}}`)
}

func TestStateChangesAndRestarts(t *testing.T) {
	h, s := connectAPI(t)
	ctx := context.Background()
	send(t, h, "POST", "/connectors", `{"name":"c","config":{"connector.class":"FakeSource","topic":"t"}}`).expect(t, 201, "")
	for _, c := range []struct {
		path   string
		status int
		target string
	}{{"pause", 202, "PAUSED"}, {"resume", 202, "STARTED"}, {"stop", 204, "STOPPED"}, {"resume", 202, "STARTED"}} {
		send(t, h, "PUT", "/connectors/c/"+c.path, "").empty(t, c.status)
		if got, _ := s.Target(ctx, "c"); got != c.target {
			t.Errorf("%s: target %s", c.path, got)
		}
		send(t, h, "PUT", "/connectors/nope/"+c.path, "").expectError(t, 404, "Unknown connector nope")
	}
	send(t, h, "GET", "/connectors/c/pause", "").expectError(t, 405, "HTTP 405 Method Not Allowed")

	send(t, h, "POST", "/connectors/c/restart", "").empty(t, 204)
	send(t, h, "POST", "/connectors/c/restart?includeTasks=yes", "").empty(t, 204)
	send(t, h, "POST", "/connectors/nope/restart", "").expectError(t, 404, "Unknown connector: nope")
	send(t, h, "POST", "/connectors/c/restart?includeTasks=true", "").expectError(t, 404, "Status for connector c not found")
	if _, err := s.SetTasks(ctx, "c", []map[string]string{{}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutConnectorStatus(ctx, "c", connectstore.Status{State: "RUNNING", WorkerID: "w"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTaskStatus(ctx, "c", 0, connectstore.Status{State: "FAILED", WorkerID: "w"}, nil); err != nil {
		t.Fatal(err)
	}
	send(t, h, "POST", "/connectors/c/restart?includeTasks=TRUE&onlyFailed=true", "").expect(t, 202,
		`{"name":"c","connector":{"state":"RUNNING","worker_id":"w","version":"1.2.3"},"tasks":[{"id":0,"state":"RESTARTING","worker_id":"w","version":"1.2.3"}],"type":"source"}`)
	if req, _ := s.Restart(ctx, "c"); !req.IncludeTasks || !req.OnlyFailed {
		t.Errorf("restart request %+v", req)
	}
	send(t, h, "POST", "/connectors/c/tasks/0/restart", "").empty(t, 204)
	send(t, h, "POST", "/connectors/c/tasks/1/restart", "").expectError(t, 404, "Unknown task: c-1")
	send(t, h, "POST", "/connectors/nope/tasks/0/restart", "").expectError(t, 404, "Unknown connector: nope")
}

func TestOffsetsEndpoints(t *testing.T) {
	h, s := connectAPI(t)
	ctx := context.Background()
	send(t, h, "POST", "/connectors", `{"name":"c","config":{"connector.class":"CheckedSource","topic":"t"}}`).expect(t, 201, "")
	send(t, h, "GET", "/connectors/c/offsets", "").expect(t, 200, `{"offsets":[]}`)
	send(t, h, "GET", "/connectors/nope/offsets", "").expectError(t, 404, "Connector nope not found")
	body := `{"offsets":[{"partition":{"filename":"/a"},"offset":{"position":12345678901234567}}]}`
	send(t, h, "PATCH", "/connectors/c/offsets", body).expectError(t, 400,
		"Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/c/stop' endpoint")
	send(t, h, "DELETE", "/connectors/c/offsets", "").expectError(t, 400, "Connectors must be in the STOPPED state")
	if offs, _ := s.SourceOffsets(ctx, "c"); len(offs) != 0 {
		t.Errorf("a refused PATCH stored offsets: %+v", offs)
	}

	send(t, h, "PUT", "/connectors/c/stop", "").empty(t, 204)
	send(t, h, "PATCH", "/connectors/nope/offsets", body).expectError(t, 404, "Connector nope not found")
	send(t, h, "PATCH", "/connectors/c/offsets", `{"offsets":[]}`).expectError(t, 400, "Partitions / offsets need to be provided for an alter offsets request")
	send(t, h, "PATCH", "/connectors/c/offsets", `{}`).expectError(t, 400, "Partitions / offsets need to be provided for an alter offsets request")
	send(t, h, "PATCH", "/connectors/c/offsets", `junk`).expectError(t, 400, "request body is not valid JSON")
	send(t, h, "PATCH", "/connectors/c/offsets", `{"offsets":[],"extra":1}`).expectError(t, 400, "request body is not valid JSON")
	send(t, h, "PATCH", "/connectors/c/offsets", `{"offsets":[{"partition":{"filename":"/a"},"offset":{"position":-1}}]}`).
		expectError(t, 400, "The value for the 'position' key in the offset should be a non-negative value")
	send(t, h, "PATCH", "/connectors/c/offsets", body).expect(t, 200, `{"message":"The offsets for this connector have been altered successfully"}`)
	r := send(t, h, "GET", "/connectors/c/offsets", "")
	if r.status != 200 || string(r.body) != `{"offsets":[{"partition":{"filename":"/a"},"offset":{"position":12345678901234567}}]}` {
		t.Errorf("offsets keep big numbers exact: %d %s", r.status, r.body)
	}
	send(t, h, "DELETE", "/connectors/c/offsets", "").expect(t, 200, `{"message":"The offsets for this connector have been reset successfully"}`)
	send(t, h, "GET", "/connectors/c/offsets", "").expect(t, 200, `{"offsets":[]}`)

	// A sink's offsets are Kafka positions.
	send(t, h, "POST", "/connectors", `{"name":"s","config":{"connector.class":"FakeSink","topics":"a"},"initial_state":"STOPPED"}`).expect(t, 201, "")
	send(t, h, "PATCH", "/connectors/s/offsets", `{"offsets":[{"partition":{"kafka_topic":"a","kafka_partition":"0"},"offset":{"kafka_offset":"10"}}]}`).expect(t, 200, "")
	send(t, h, "GET", "/connectors/s/offsets", "").expect(t, 200, `{"offsets":[{"partition":{"kafka_topic":"a","kafka_partition":0},"offset":{"kafka_offset":10}}]}`)
	send(t, h, "PATCH", "/connectors/s/offsets", `{"offsets":[{"partition":{"kafka_topic":"a"},"offset":{"kafka_offset":1}}]}`).
		expectError(t, 400, "The partition for a sink connector offset must contain the keys 'kafka_topic' and 'kafka_partition'")
}

// GET /connectors/{name}/topics and PUT .../topics/reset answer as Kafka
// Connect's: a map of the name to its sorted topics, 202 for a reset, and
// no 404 for a connector that does not exist; 403 when turned off.
func TestTopicsEndpoints(t *testing.T) {
	h, s := connectAPI(t)
	ctx := context.Background()
	send(t, h, "GET", "/connectors/nope/topics", "").expect(t, 200, `{"nope":{"topics":[]}}`)
	send(t, h, "PUT", "/connectors/nope/topics/reset", "").expect(t, 202, "")
	for _, topic := range []string{"b", "a"} {
		if _, err := s.PutTopic(ctx, connectstore.TopicStatus{Topic: topic, Connector: "c"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	send(t, h, "GET", "/connectors/c/topics", "").expect(t, 200, `{"c":{"topics":["a","b"]}}`)
	send(t, h, "GET", "/connectors/c/topics/", "").expect(t, 200, `{"c":{"topics":["a","b"]}}`)
	send(t, h, "PUT", "/connectors/c/topics/reset", "").expect(t, 202, "")
	send(t, h, "GET", "/connectors/c/topics", "").expect(t, 200, `{"c":{"topics":[]}}`)
	send(t, h, "POST", "/connectors/c/topics/reset", "").expect(t, 405, "")

	quiet := slog.New(slog.DiscardHandler)
	off := NewHandler(&fakeNode{ready: true, clusterID: "c"}, Options{Connect: herder.New(s, herder.Options{NoTopicTracking: true, Logger: quiet}), Logger: quiet})
	send(t, off, "GET", "/connectors/c/topics", "").expect(t, 403, `{"error_code":403,"message":"Topic tracking is disabled."}`)
	send(t, off, "PUT", "/connectors/c/topics/reset", "").expect(t, 403, `{"error_code":403,"message":"Topic tracking is disabled."}`)
	noReset := NewHandler(&fakeNode{ready: true, clusterID: "c"}, Options{Connect: herder.New(s, herder.Options{NoTopicTrackingReset: true, Logger: quiet}), Logger: quiet})
	send(t, noReset, "GET", "/connectors/c/topics", "").expect(t, 200, `{"c":{"topics":[]}}`)
	send(t, noReset, "PUT", "/connectors/c/topics/reset", "").expect(t, 403, `{"error_code":403,"message":"Topic tracking reset is disabled."}`)
}
