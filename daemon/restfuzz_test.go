package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/api"
	_ "github.com/kcd-project/kcd/daemon/connectors/file" // FileStream, the plugins of the golden fixtures
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/coordinator"
	"github.com/kcd-project/kcd/daemon/herder"
	"github.com/kcd-project/kcd/daemon/herder/herdertest"
	"github.com/kcd-project/kcd/daemon/importer"
	"github.com/kcd-project/kcd/daemon/restapi"
	"github.com/kcd-project/kcd/daemon/restauth"
	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/store"
)

// The whole REST API under the fuzzer: the real handler, herder, importer
// (with the node's error mapping) and a real local store; the Raft parts
// (cluster, coordinator, store switch) are fakes that accept what reaches
// them, since what is fuzzed is how the API reads its input.

type fuzzCluster struct{}

func (fuzzCluster) Info(context.Context) (restapi.ClusterInfo, error) {
	return restapi.ClusterInfo{ClusterID: "fuzz", Self: 1, Leader: 1, Term: 1}, nil
}
func (fuzzCluster) AddMember(context.Context, restapi.NewMember) error     { return nil }
func (fuzzCluster) RemoveMember(context.Context, uint64) error             { return nil }
func (fuzzCluster) TransferLeader(context.Context, uint64) (uint64, error) { return 1, nil }
func (fuzzCluster) Leader() (bool, string)                                 { return true, "" }

type fuzzCoordinator struct{}

func (fuzzCoordinator) Heartbeat(_ context.Context, hb coordinator.Heartbeat) (coordinator.HeartbeatReply, error) {
	return coordinator.HeartbeatReply{Leader: 1, SessionTimeoutMS: 10000}, nil
}
func (fuzzCoordinator) Leave(context.Context, string) error { return nil }
func (fuzzCoordinator) Plan(_ context.Context, drain string) (coordinator.PlanResult, error) {
	return coordinator.PlanResult{Drain: drain, Moves: []coordinator.Move{}}, nil
}

type fuzzStoreAdmin struct{}

func (fuzzStoreAdmin) Switch(_ context.Context, req api.StoreSwitchRequest) (api.StoreSwitch, error) {
	return api.StoreSwitch{ID: "s", To: req.Backend, State: api.SwitchDryRun}, nil
}
func (fuzzStoreAdmin) Status(context.Context) (api.StoreStatus, error) {
	return api.StoreStatus{Backend: "raft"}, nil
}

type fuzzWorker struct{}

func (fuzzWorker) LocalWorker() restapi.LocalWorkerView {
	return restapi.LocalWorkerView{ID: "w", SessionHeld: true, Units: []restapi.LocalUnit{}}
}

type fuzzNode struct{}

func (fuzzNode) KafkaClusterID() (string, bool) { return "fuzz", true }
func (fuzzNode) Ready() bool                    { return true }

func fuzzAPI(t testing.TB) http.Handler {
	h, _ := fuzzAPIWith(t, nil)
	return h
}

// fuzzAPIWith is fuzzAPI with auth (nil: open), and its store.
func fuzzAPIWith(t testing.TB, auth *restauth.Authenticator) (http.Handler, store.Store) {
	herdertest.Register()
	// Without fsync: the fuzzer writes thousands of times a second.
	l, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), fsm.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	cs := connectstore.New(l)
	quiet := slog.New(slog.DiscardHandler)
	return restapi.NewHandler(fuzzNode{}, restapi.Options{
		Auth:        auth,
		Cluster:     fuzzCluster{},
		Store:       cs.Raw(),
		Connect:     herder.New(cs, herder.Options{Logger: quiet, MaxTasksPerConnector: 8}),
		Coordinator: fuzzCoordinator{},
		StoreAdmin:  fuzzStoreAdmin{},
		Importer:    importAdmin{importer.New(importer.Config{Store: cs.Raw(), Logger: quiet})},
		Worker:      fuzzWorker{},
		Logger:      quiet,
	}), cs.Raw()
}

// fuzzRoutes are the API's routes; {n} takes the fuzzer's name, raw (so
// the fuzzer also writes escapes, slashes and dot segments).
var fuzzRoutes = []struct{ method, path string }{
	{"GET", "/"},
	{"GET", "/health"},
	{"GET", "/kcd/v1/version"},
	{"GET", "/kcd/v1/cluster"},
	{"POST", "/kcd/v1/cluster/members"},
	{"DELETE", "/kcd/v1/cluster/members/{n}"},
	{"POST", "/kcd/v1/cluster/leader"},
	{"GET", "/kcd/v1/store/keys"},
	{"GET", "/kcd/v1/store/keys/{n}"},
	{"PUT", "/kcd/v1/store/keys/{n}"},
	{"DELETE", "/kcd/v1/store/keys/{n}"},
	{"GET", "/connectors"},
	{"POST", "/connectors"},
	{"GET", "/connectors/{n}"},
	{"DELETE", "/connectors/{n}"},
	{"GET", "/connectors/{n}/config"},
	{"PUT", "/connectors/{n}/config"},
	{"PATCH", "/connectors/{n}/config"},
	{"GET", "/connectors/{n}/status"},
	{"GET", "/connectors/{n}/tasks"},
	{"GET", "/connectors/{n}/tasks/0/status"},
	{"GET", "/connectors/x/tasks/{n}/status"},
	{"POST", "/connectors/{n}/tasks/0/restart"},
	{"POST", "/connectors/{n}/restart"},
	{"PUT", "/connectors/{n}/pause"},
	{"PUT", "/connectors/{n}/resume"},
	{"PUT", "/connectors/{n}/stop"},
	{"GET", "/connectors/{n}/offsets"},
	{"PATCH", "/connectors/{n}/offsets"},
	{"DELETE", "/connectors/{n}/offsets"},
	{"GET", "/connector-plugins"},
	{"GET", "/connector-plugins/{n}/config"},
	{"PUT", "/connector-plugins/{n}/config/validate"},
	{"POST", "/kcd/v1/store/get"},
	{"POST", "/kcd/v1/store/put"},
	{"POST", "/kcd/v1/store/delete"},
	{"POST", "/kcd/v1/store/cas"},
	{"POST", "/kcd/v1/store/scan"},
	{"POST", "/kcd/v1/store/batch"},
	{"GET", "/kcd/v1/store/revision"},
	{"POST", "/kcd/v1/store/compact"},
	{"POST", "/kcd/v1/store/watch"},
	{"POST", "/kcd/v1/store/switch"},
	{"GET", "/kcd/v1/store/status"},
	{"POST", "/kcd/v1/workers/{n}/heartbeat"},
	{"DELETE", "/kcd/v1/workers/{n}/session"},
	{"GET", "/kcd/v1/workers"},
	{"GET", "/kcd/v1/worker"},
	{"PUT", "/kcd/v1/workers/{n}/weight"},
	{"PUT", "/kcd/v1/workers/{n}/drain"},
	{"PUT", "/kcd/v1/workers/{n}/undrain"},
	{"GET", "/kcd/v1/assignments"},
	{"GET", "/kcd/v1/rebalances"},
	{"GET", "/kcd/v1/rebalances/plan"},
	{"GET", "/kcd/v1/events"},
	{"POST", "/kcd/v1/imports"},
	{"GET", "/kcd/v1/imports"},
	{"GET", "/kcd/v1/imports/{n}"},
	{"DELETE", "/kcd/v1/imports/{n}"},
	{"POST", "/kcd/v1/imports/{n}/offsets"},
	{"POST", "/kcd/v1/imports/{n}/commit"},
	{"GET", "/kcd/v1/export"},
}

func routeIndex(method, path string) uint8 {
	for i, r := range fuzzRoutes {
		if r.method == method && r.path == path {
			return uint8(i)
		}
	}
	panic("no route " + method + " " + path)
}

// goldenConnectors are the connector configs Kafka Connect wrote to its
// config topic in the golden fixtures, and the source offsets of its
// offsets topic.
func goldenConnectors(t testing.TB) (configs []map[string]string, offsets []string) {
	dir := filepath.Join("..", "golden", "testdata", "internal-topics")
	var recs []struct {
		Key   string  `json:"key"`
		Value *string `json:"value"`
	}
	read := func(file string) {
		recs = recs[:0]
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &recs); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	read("configs.json")
	for _, r := range recs {
		if !strings.HasPrefix(r.Key, "connector-") || r.Value == nil {
			continue
		}
		var v struct{ Properties map[string]string }
		if json.Unmarshal([]byte(*r.Value), &v) == nil && v.Properties != nil {
			configs = append(configs, v.Properties)
		}
	}
	read("offsets.json")
	for _, r := range recs {
		var key []json.RawMessage
		if r.Value == nil || json.Unmarshal([]byte(r.Key), &key) != nil || len(key) != 2 {
			continue
		}
		offsets = append(offsets, fmt.Sprintf(`{"offsets":[{"partition":%s,"offset":%s}]}`, key[1], *r.Value))
	}
	if len(configs) == 0 || len(offsets) == 0 {
		t.Fatalf("golden fixtures: %d configs, %d offsets", len(configs), len(offsets))
	}
	return configs, offsets
}

func addRESTSeeds(f *testing.F, add func(route uint8, name, query string, body []byte)) {
	configs, offsets := goldenConnectors(f)
	seed := func(method, path, name, query, body string) {
		add(routeIndex(method, path), name, query, []byte(body))
	}
	for _, c := range configs {
		name := c["name"]
		cfg, _ := json.Marshal(c)
		seed("POST", "/connectors", "", "", fmt.Sprintf(`{"name":%q,"config":%s}`, name, cfg))
		seed("POST", "/connectors", "", "", fmt.Sprintf(`{"name":%q,"config":%s,"initial_state":"PAUSED"}`, name, cfg))
		seed("PUT", "/connectors/{n}/config", name, "", string(cfg))
		seed("PATCH", "/connectors/{n}/config", name, "", `{"tasks.max":"2","file":null}`)
		seed("PUT", "/connector-plugins/{n}/config/validate", c["connector.class"], "", string(cfg))
		seed("GET", "/connectors/{n}", name, "expand=status&expand=info", "")
		seed("POST", "/connectors/{n}/restart", name, "includeTasks=true&onlyFailed=true", "")
		seed("POST", "/kcd/v1/imports", "", "", fmt.Sprintf(`{"connectors":[{"name":%q,"config":%s,"target":"STARTED","tasks":[%s]}]}`, name, cfg, cfg))
	}
	for _, o := range offsets {
		seed("PATCH", "/connectors/{n}/offsets", "fixture-src", "", o)
		seed("POST", "/kcd/v1/imports/{n}/offsets", "x", "", o)
	}
	seed("GET", "/connectors", "", "expand=info&expand=status&expand=nope", "")
	seed("GET", "/connector-plugins", "", "connectorsOnly=false", "")
	seed("GET", "/kcd/v1/cluster", "", "view=local", "")
	seed("GET", "/kcd/v1/store/keys", "", "prefix=connect/&limit=2", "")
	seed("GET", "/kcd/v1/rebalances", "", "limit=99999999999999999999", "")
	seed("GET", "/kcd/v1/export", "", "after=a&limit=0", "")
	seed("GET", "/kcd/v1/rebalances/plan", "", "drain=w%00", "")
	seed("GET", "/connectors/{n}/config", "a%2Fb", "", "")
	seed("GET", "/connectors/{n}/config", "../kcd/v1/cluster", "", "")
	seed("PUT", "/kcd/v1/store/keys/{n}", "connect/config/x", "", `"raw"`)
	seed("POST", "/kcd/v1/cluster/members", "", "", `{"id":2,"peer_url":"http://127.0.0.1:1","roles":["raft"],"join_token":"t"}`)
	seed("DELETE", "/kcd/v1/cluster/members/{n}", "18446744073709551616", "", "")
	seed("POST", "/kcd/v1/cluster/leader", "", "", `{"to":3}`)
	seed("POST", "/kcd/v1/store/put", "", "", `{"key":"YQ==","value":"Yg=="}`)
	seed("POST", "/kcd/v1/store/cas", "", "", `{"key":"YQ==","expect_mod_revision":1,"value":"Yw=="}`)
	seed("POST", "/kcd/v1/store/batch", "", "", `{"conds":[{"key":"YQ==","mod_revision":0}],"ops":[{"type":"put","key":"Yg==","value":""},{"type":"delete","key":"YQ=="}]}`)
	seed("POST", "/kcd/v1/store/scan", "", "", `{"prefix":"","limit":-1}`)
	seed("POST", "/kcd/v1/store/watch", "", "", `{"prefix":"Yw==","after_revision":0,"heartbeat_ms":1}`)
	seed("POST", "/kcd/v1/store/compact", "", "", `{"revision":9223372036854775807}`)
	seed("POST", "/kcd/v1/store/switch", "", "", `{"backend":"mysql","settings":{"dsn":"${env:DSN}"},"dry_run":true}`)
	seed("POST", "/kcd/v1/workers/{n}/heartbeat", "w1", "", `{"worker":{"id":"w1","weight":1,"rest_url":"http://h:1"},"seen_revision":3,"running":["c","c-0"]}`)
	seed("PUT", "/kcd/v1/workers/{n}/weight", "w1", "", `{"weight":0.5}`)
	seed("PUT", "/kcd/v1/workers/{n}/weight", "w1", "", `{"weight":1e400}`)
	seed("PUT", "/kcd/v1/workers/{n}/drain", "w1", "", "")
	seed("GET", "/kcd/v1/events", "", "", "")
}

// FuzzRESTAPI sends any method's route with any name, query and body:
// the API never answers 5xx, every answer is JSON (an error in Kafka
// Connect's shape, error_code equal to the status), and what it accepts it
// keeps: a connector it creates or configures reads back the same, a key
// put through the store API reads back.
func FuzzRESTAPI(f *testing.F) {
	addRESTSeeds(f, func(route uint8, name, query string, body []byte) { f.Add(route, name, query, body) })
	h := fuzzAPI(f)
	f.Fuzz(func(t *testing.T, route uint8, name, query string, body []byte) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		target := strings.Replace(rt.path, "{n}", name, 1)
		if query != "" {
			target += "?" + query
		}
		u, err := url.ParseRequestURI(target)
		if err != nil || !strings.HasPrefix(target, "/") {
			return // net/http refuses it before any handler sees it
		}
		status, hdr, out := serve(t, h, rt.method, u, body)
		if status == http.StatusTemporaryRedirect || status == http.StatusMovedPermanently {
			t.Fatalf("%s %s: redirected to %q: a path with dot or empty segments must get a 400 in Kafka Connect's shape", rt.method, target, hdr.Get("Location"))
		}
		if rt.method == "POST" && rt.path == "/kcd/v1/store/watch" || rt.path == "/kcd/v1/events" {
			if status == http.StatusOK {
				checkStream(t, target, out)
				return
			}
		}
		checkAnswer(t, rt.method, target, body, status, out)
		if status/100 != 2 {
			return
		}
		switch {
		case rt.method == "POST" && rt.path == "/connectors":
			var c struct {
				Name   string            `json:"name"`
				Config map[string]string `json:"config"`
			}
			if err := json.Unmarshal(out, &c); err != nil {
				t.Fatalf("POST %s %q: answer %s: %v", target, body, out, err)
			}
			readsBack(t, h, c.Name, c.Config)
		case rt.method == "PUT" && rt.path == "/connectors/{n}/config":
			var c struct {
				Name   string            `json:"name"`
				Config map[string]string `json:"config"`
			}
			if err := json.Unmarshal(out, &c); err != nil {
				t.Fatalf("PUT %s %q: answer %s: %v", target, body, out, err)
			}
			readsBack(t, h, c.Name, c.Config)
		case rt.path == "/kcd/v1/store/put":
			var req restapi.StoreRequest
			if err := json.Unmarshal(body, &req); err != nil {
				t.Fatalf("store put of %q answered %d %s", body, status, out)
			}
			get, _ := json.Marshal(restapi.StoreRequest{Key: req.Key})
			st, _, got := serve(t, h, "POST", &url.URL{Path: "/kcd/v1/store/get"}, get)
			var res restapi.StoreResponse
			if st != 200 || json.Unmarshal(got, &res) != nil || res.Found == nil || !*res.Found || res.KV == nil || !bytes.Equal(res.KV.Value, req.Value) {
				t.Fatalf("store put of %q, then get: %d %s", body, st, got)
			}
		}
	})
}

func serve(t *testing.T, h http.Handler, method string, u *url.URL, body []byte) (int, http.Header, []byte) {
	t.Helper()
	return serveAs(t, h, method, u, body, "")
}

// serveAs is serve with an Authorization header ("" none).
func serveAs(t *testing.T, h http.Handler, method string, u *url.URL, body []byte, authorization string) (int, http.Header, []byte) {
	t.Helper()
	timeout := 10 * time.Second
	if strings.HasSuffix(u.Path, "/watch") || strings.HasSuffix(u.Path, "/events") {
		timeout = 20 * time.Millisecond // streams end when their request does
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, method, "/", bytes.NewReader(body))
	req.URL = u
	req.RequestURI = u.RequestURI()
	req.Header.Set("Content-Type", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, out
}

// checkAnswer checks what every answer holds.
func checkAnswer(t *testing.T, method, target string, body []byte, status int, out []byte) {
	t.Helper()
	if status >= 500 {
		t.Fatalf("%s %s %q: answered %d %s", method, target, body, status, out)
	}
	if len(out) == 0 {
		if status >= 400 {
			t.Fatalf("%s %s %q: error %d without a body", method, target, body, status)
		}
		return
	}
	if !json.Valid(out) {
		t.Fatalf("%s %s %q: answered %d, not JSON: %q", method, target, body, status, out)
	}
	if status < 400 {
		return
	}
	var e map[string]json.RawMessage
	var code int
	var msg string
	if json.Unmarshal(out, &e) != nil || len(e) != 2 || json.Unmarshal(e["error_code"], &code) != nil ||
		json.Unmarshal(e["message"], &msg) != nil || code != status || msg == "" {
		t.Fatalf("%s %s %q: error %d not in Kafka Connect's shape: %s", method, target, body, status, out)
	}
}

// checkStream checks a watch stream (JSON lines) or an event stream
// (server-sent events whose data is JSON).
func checkStream(t *testing.T, target string, out []byte) {
	t.Helper()
	sse := strings.Contains(target, "/events")
	for _, l := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
		if sse {
			if len(l) == 0 || l[0] == ':' || bytes.HasPrefix(l, []byte("event: ")) {
				continue
			}
			var ok bool
			if l, ok = bytes.CutPrefix(l, []byte("data: ")); !ok {
				t.Fatalf("%s: event stream line %q", target, l)
			}
		}
		if !json.Valid(l) {
			t.Fatalf("%s: stream line %q is not JSON", target, l)
		}
	}
}

// readsBack checks that connector name, as answered, is reachable under its
// escaped name and reads back config.
func readsBack(t *testing.T, h http.Handler, name string, config map[string]string) {
	t.Helper()
	path := "/connectors/" + url.PathEscape(name) + "/config"
	u, err := url.ParseRequestURI(path)
	if err != nil {
		t.Fatalf("connector %q: its path %q does not parse: %v", name, path, err)
	}
	st, _, out := serve(t, h, "GET", u, nil)
	var got map[string]string
	if st != 200 || json.Unmarshal(out, &got) != nil {
		t.Fatalf("connector %q was written but GET %s answers %d %s", name, path, st, out)
	}
	if !mapsEqual(got, config) {
		t.Fatalf("connector %q: written %v, reads back %v", name, config, got)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// endless is a JSON object that does not end: {"a":"aaaa... up to stop
// bytes (then EOF, so that a handler that does not bound its body ends
// too); it counts what was read of it.
type endless struct{ n, stop int64 }

var endlessHead, endlessFill = []byte(`{"a":"`), bytes.Repeat([]byte("a"), 64<<10)

func (e *endless) Read(p []byte) (int, error) {
	if e.n >= e.stop {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), e.stop-e.n)]
	n := 0
	if e.n < int64(len(endlessHead)) {
		n = copy(p, endlessHead[e.n:])
	}
	for n < len(p) {
		n += copy(p[n:], endlessFill)
	}
	e.n += int64(n)
	return n, nil
}

// No route reads a body past its limit, nor holds more than about the
// limit in memory: a body without a length that never ends is refused
// (413 for those that read it) and never answered with a 5xx.
func TestRESTBodiesAreBounded(t *testing.T) {
	h := fuzzAPI(t)
	for _, rt := range fuzzRoutes {
		if rt.method == "GET" || rt.method == "DELETE" {
			continue
		}
		limit := int64(restapi.MaxBody)
		if strings.HasPrefix(rt.path, "/kcd/v1/store/") && !strings.HasPrefix(rt.path, "/kcd/v1/store/keys") && rt.path != "/kcd/v1/store/switch" {
			// The store protocol's operations read their body in one
			// place (storeOp); one of them stands for all, its limit
			// being 64 MiB.
			if rt.path != "/kcd/v1/store/put" {
				continue
			}
			limit = restapi.MaxStoreRequest
		}
		path := strings.Replace(rt.path, "{n}", "x", 1)
		body := &endless{stop: 2 * limit}
		req := httptest.NewRequest(rt.method, path, body)
		req.ContentLength = -1
		req.Header.Set("Content-Type", "application/json")
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		runtime.ReadMemStats(&after)
		if rec.Code >= 500 || body.n > limit+64<<10 || rec.Code/100 == 2 && body.n > 0 {
			t.Errorf("%s %s: %d after reading %d bytes of an endless body (limit %d): %s", rt.method, path, rec.Code, body.n, limit, rec.Body)
		}
		if body.n > 0 && rec.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("%s %s: %d after reading %d bytes of an endless body, want 413", rt.method, path, rec.Code, body.n)
		}
		// io.ReadAll's growth to the limit allocates a few times it.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*uint64(limit)+8<<20 {
			t.Errorf("%s %s: %d bytes allocated for a body limited to %d", rt.method, path, alloc, limit)
		}
	}
}

// Credentials of FuzzRESTAPIAuth: a token per role, and the node secret.
const (
	fuzzReadToken    = "kcd-canary-secret-fuzz-read-token"
	fuzzOperateToken = "kcd-canary-secret-fuzz-operate-token"
	fuzzAdminToken   = "kcd-canary-secret-fuzz-admin-token"
	fuzzNodeSecret   = "kcd-canary-secret-fuzz-node-secret-0123456789"
)

// needs is the role a request needs, as docs/security.md gives them (not
// read from the API's own table): the open endpoints, the node-only
// ones, the admin's (cluster and worker changes, raw store keys, store
// switch, imports), the operator's (connector writes, validate), and
// read for the other GETs.
func needs(method, p string) restauth.Role {
	storeOps := map[string]bool{"get": true, "put": true, "delete": true, "cas": true, "scan": true, "batch": true, "compact": true, "watch": true}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	switch {
	case method == "GET" && (p == "/" || p == "/health"):
		return restauth.RoleNone
	case strings.HasPrefix(p, "/kcd/v1/store/") && len(parts) == 4 && (method == "POST" && storeOps[parts[3]] || method == "GET" && parts[3] == "revision"):
		return restauth.RoleNode
	case strings.HasPrefix(p, "/kcd/v1/workers/") && len(parts) == 5 && (parts[4] == "heartbeat" || parts[4] == "session") && method != "GET":
		return restauth.RoleNode
	case strings.HasPrefix(p, "/kcd/v1/store/keys"):
		return restauth.RoleAdmin
	case method == "GET":
		return restauth.RoleRead
	case strings.HasPrefix(p, "/connectors/") || p == "/connectors" || strings.HasPrefix(p, "/connector-plugins/"):
		return restauth.RoleOperate
	}
	return restauth.RoleAdmin
}

// FuzzRESTAPIAuth sends any request as nobody, a user of each role, a
// node, or with a made-up token: no answer is a 2xx unless the caller's
// role allows the request, a refused request (401, 403) changes nothing
// in the store, and every answer keeps FuzzRESTAPI's shape.
func FuzzRESTAPIAuth(f *testing.F) {
	addRESTSeeds(f, func(route uint8, name, query string, body []byte) {
		for who := range uint8(6) {
			f.Add(route, name, query, body, who)
		}
	})
	users := fmt.Sprintf("users:\n  - {name: reader, role: read, tokens: [%s]}\n  - {name: operator, role: operate, tokens: [%s]}\n  - {name: admin, role: admin, tokens: [%s]}\n",
		restauth.TokenHash(fuzzReadToken), restauth.TokenHash(fuzzOperateToken), restauth.TokenHash(fuzzAdminToken))
	file := filepath.Join(f.TempDir(), "auth.yaml")
	if err := os.WriteFile(file, []byte(users), 0o600); err != nil {
		f.Fatal(err)
	}
	auth, err := restauth.New(restauth.Config{File: file, NodeSecret: []byte(fuzzNodeSecret), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	h, st := fuzzAPIWith(f, auth)
	callers := []struct {
		header string
		role   restauth.Role
	}{
		{"", restauth.RoleNone},
		{"Bearer " + fuzzReadToken, restauth.RoleRead},
		{"Bearer " + fuzzOperateToken, restauth.RoleOperate},
		{"Bearer " + fuzzAdminToken, restauth.RoleAdmin},
		{"Bearer " + fuzzNodeSecret, restauth.RoleNode},
		{"Bearer " + fuzzNodeSecret[:len(fuzzNodeSecret)-1], restauth.RoleNone},
	}
	f.Fuzz(func(t *testing.T, route uint8, name, query string, body []byte, who uint8) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		c := callers[int(who)%len(callers)]
		target := strings.Replace(rt.path, "{n}", name, 1)
		if query != "" {
			target += "?" + query
		}
		u, err := url.ParseRequestURI(target)
		if err != nil || !strings.HasPrefix(target, "/") {
			return
		}
		before, err := st.Revision(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		status, _, out := serveAs(t, h, rt.method, u, body, c.header)
		if status >= 500 {
			t.Fatalf("%s %s as %v: %d %s", rt.method, target, c.role, status, out)
		}
		need := needs(rt.method, u.Path)
		if status/100 == 2 && !c.role.Allows(need) {
			t.Fatalf("%s %s (needs %v) answered %d to a caller of role %v: %s", rt.method, target, need, status, c.role, out)
		}
		if status == http.StatusUnauthorized || status == http.StatusForbidden {
			if after, _ := st.Revision(context.Background()); after != before {
				t.Fatalf("%s %s refused with %d to %v, but the store changed: revision %d → %d", rt.method, target, status, c.role, before, after)
			}
			var e restapi.ErrorMessage
			if json.Unmarshal(out, &e) != nil || e.ErrorCode != status || strings.Contains(string(out), "kcd-canary-secret") {
				t.Fatalf("%s %s: refusal %d %s", rt.method, target, status, out)
			}
		}
	})
}
