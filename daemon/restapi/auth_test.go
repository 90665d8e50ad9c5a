package restapi

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/kcd-project/kcd/daemon/restauth"
	"github.com/kcd-project/kcd/internal/syncbuf"
)

const (
	readToken    = "kcd-canary-secret-read-token"
	operateToken = "kcd-canary-secret-operate-token"
	adminToken   = "kcd-canary-secret-admin-token"
	adminPass    = "kcd-canary-secret-admin-password"
	testNodeKey  = "kcd-canary-secret-node-0123456789abcdefghij"
)

func testAuth(t *testing.T) *restauth.Authenticator {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(adminPass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	file := fmt.Sprintf(`users:
  - {name: reader, role: read, tokens: [%s]}
  - {name: operator, role: operate, tokens: [%s]}
  - {name: admin, role: admin, tokens: [%s], password: %q}
`, restauth.TokenHash(readToken), restauth.TokenHash(operateToken), restauth.TokenHash(adminToken), h)
	p := filepath.Join(t.TempDir(), "auth.yaml")
	if err := os.WriteFile(p, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := restauth.New(restauth.Config{File: p, NodeSecret: []byte(testNodeKey), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestEveryRouteHasARole: a route added without a role in routeRoles
// fails here; so does a role left over for a route that is gone.
func TestEveryRouteHasARole(t *testing.T) {
	seen := map[string]bool{"/": true}
	for _, rt := range (&api{}).routes() {
		key := rt.method + " " + rt.pattern
		seen[key] = true
		if _, ok := routeRoles[key]; !ok {
			t.Errorf("route %s has no role in routeRoles (auth.go)", key)
		}
	}
	for key := range routeRoles {
		if !seen[key] {
			t.Errorf("routeRoles has %s, which is no route", key)
		}
	}
}

// concretePath fills a route pattern's wildcards.
func concretePath(pattern string) string {
	r := strings.NewReplacer("{$}", "", "{name}", "c1", "{task}", "0", "{plugin}", "FileStreamSink", "{id}", "1", "{key...}", "connect/x", "{logger}", "rest")
	return r.Replace(pattern)
}

// TestRolesOnEveryRoute sends every route as nobody, each role and the
// node, and checks the acceptance rules of issue 15 from the method and
// path alone (not from routeRoles): no credentials, 401 everywhere but
// GET / and /health; read, 403 on every write; operate, 403 on every kcd
// write (cluster, workers, store, imports); users, 403 on the peer store
// protocol and worker sessions; the node, everything.
func TestRolesOnEveryRoute(t *testing.T) {
	h := NewHandler(&fakeNode{ready: true}, Options{Auth: testAuth(t), Logger: slog.New(slog.DiscardHandler)})
	peerStore := func(method, path string) bool {
		switch path {
		case "/kcd/v1/store/get", "/kcd/v1/store/put", "/kcd/v1/store/delete", "/kcd/v1/store/cas", "/kcd/v1/store/scan",
			"/kcd/v1/store/batch", "/kcd/v1/store/revision", "/kcd/v1/store/compact", "/kcd/v1/store/watch":
			return true
		}
		return strings.HasPrefix(path, "/kcd/v1/workers/") && (strings.HasSuffix(path, "/heartbeat") || strings.HasSuffix(path, "/session"))
	}
	for _, rt := range (&api{}).routes() {
		path := concretePath(rt.pattern)
		openRoute := rt.method == "GET" && (path == "/" || path == "/health")
		write := rt.method != "GET"
		for _, who := range []string{"nobody", "reader", "operator", "admin", "node"} {
			var want string // "401", "403" or "in": the handler answered
			switch {
			case openRoute || who == "node":
				want = "in"
			case who == "nobody":
				want = "401"
			case peerStore(rt.method, path):
				want = "403"
			case strings.HasPrefix(path, "/kcd/v1/store/keys"):
				want = map[bool]string{true: "in", false: "403"}[who == "admin"]
			case who == "reader" && write:
				want = "403"
			case who == "operator" && write && (strings.HasPrefix(path, "/kcd/v1/") || strings.HasPrefix(path, "/admin/")):
				want = "403" // kcd's writes and log levels are the admin's
			default:
				want = "in"
			}
			req := httptest.NewRequest(rt.method, path, strings.NewReader("{}"))
			req.Header.Set("Content-Type", "application/json")
			switch who {
			case "reader":
				req.Header.Set("Authorization", "Bearer "+readToken)
			case "operator":
				req.Header.Set("Authorization", "Bearer "+operateToken)
			case "admin":
				req.Header.Set("Authorization", "Bearer "+adminToken)
			case "node":
				req.Header.Set("Authorization", "Bearer "+testNodeKey)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			got := "in"
			if rec.Code == http.StatusUnauthorized || rec.Code == http.StatusForbidden {
				got = fmt.Sprint(rec.Code)
			}
			if got != want {
				t.Errorf("%s %s as %s: %d %s, want %s", rt.method, path, who, rec.Code, rec.Body, want)
				continue
			}
			if got == "in" {
				continue
			}
			var em ErrorMessage
			if err := json.Unmarshal(rec.Body.Bytes(), &em); err != nil || em.ErrorCode != rec.Code || em.Message == "" {
				t.Errorf("%s %s as %s: body %s is not Kafka Connect's error shape", rt.method, path, who, rec.Body)
			}
			if got == "401" && rec.Header().Get("WWW-Authenticate") != challenge {
				t.Errorf("%s %s: 401 without the challenge: %q", rt.method, path, rec.Header().Get("WWW-Authenticate"))
			}
			if strings.Contains(rec.Body.String(), "kcd-canary-secret-") {
				t.Errorf("%s %s: a secret in the answer: %s", rt.method, path, rec.Body)
			}
		}
	}
}

func TestAuthBasicAndBadCredentials(t *testing.T) {
	h := NewHandler(&fakeNode{ready: true}, Options{Auth: testAuth(t), Logger: slog.New(slog.DiscardHandler)})
	do := func(set func(*http.Request)) int {
		req := httptest.NewRequest("GET", "/kcd/v1/store/keys", nil)
		set(req)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	if c := do(func(r *http.Request) { r.SetBasicAuth("admin", adminPass) }); c == http.StatusUnauthorized || c == http.StatusForbidden {
		t.Errorf("admin with a password: %d", c)
	}
	if c := do(func(r *http.Request) { r.SetBasicAuth("admin", "kcd-canary-secret-wrong") }); c != http.StatusUnauthorized {
		t.Errorf("a wrong password: %d, want 401", c)
	}
	if c := do(func(r *http.Request) { r.Header.Set("Authorization", "Bearer kcd-canary-secret-wrong") }); c != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d, want 401", c)
	}
	// A path no route takes still needs credentials.
	req := httptest.NewRequest("GET", "/nothing/here", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("an unknown path without credentials: %d, want 401", rec.Code)
	}
	// Authentication comes before the media type check.
	req = httptest.NewRequest("POST", "/connectors", strings.NewReader("x"))
	req.Header.Set("Content-Type", "text/plain")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("a text/plain POST without credentials: %d, want 401", rec.Code)
	}
}

// nodeAuth adds the node secret, as the daemon's asNode does, and counts
// the requests that came to it with an Authorization header already.
type nodeAuth struct {
	rt     http.RoundTripper
	leaked *atomic.Int32
}

func (n nodeAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") != "" {
		n.leaked.Add(1)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+testNodeKey)
	return n.rt.RoundTrip(r)
}

// A follower forwards a user's leader-only request as the node: the
// user's Authorization header stays behind, the user is named for logs,
// and a user cannot name someone else.
func TestForwardAuthenticatesAsTheNode(t *testing.T) {
	auth := testAuth(t)
	var leaked atomic.Int32
	var mu sync.Mutex
	var got []http.Header
	leaderAPI := NewHandler(&fakeNode{ready: true}, Options{Cluster: leaderCluster{}, Auth: auth, Logger: slog.New(slog.DiscardHandler)})
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
		leaderAPI.ServeHTTP(w, r)
	}))
	defer leader.Close()
	follower := NewHandler(&fakeNode{ready: true}, Options{
		Cluster: forwardCluster{leader.URL}, Auth: auth, Logger: slog.New(slog.DiscardHandler),
		NodeClient: &http.Client{Transport: nodeAuth{http.DefaultTransport, &leaked}},
	})
	req := httptest.NewRequest("POST", "/kcd/v1/cluster/leader", strings.NewReader(`{"to": 1}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set(forwardedUserHeader, "someone-else")
	rec := httptest.NewRecorder()
	follower.ServeHTTP(rec, req)
	if rec.Code == http.StatusUnauthorized || rec.Code == http.StatusForbidden {
		t.Fatalf("forwarded request refused by the leader: %d %s", rec.Code, rec.Body)
	}
	if leaked.Load() != 0 {
		t.Error("the follower handed the caller's Authorization header to its node client")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("the leader got %d requests, want 1", len(got))
	}
	if a := got[0].Get("Authorization"); a != "Bearer "+testNodeKey {
		t.Errorf("the leader got Authorization %q, want the node's", a)
	}
	if u := got[0].Get(forwardedUserHeader); u != "admin" {
		t.Errorf("the leader got %s %q, want admin", forwardedUserHeader, u)
	}
}

// Writes by users are logged at info with the user and the outcome, and
// so are refusals; reads and the nodes' own calls are not, and no
// credential is.
func TestAuditLog(t *testing.T) {
	var logs syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h := NewHandler(&fakeNode{ready: true}, Options{Auth: testAuth(t), Logger: log})
	send := func(method, path, token string) {
		var body io.Reader
		if method != "GET" {
			body = strings.NewReader("{}")
		}
		req := httptest.NewRequest(method, path, body)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	send("POST", "/connectors", operateToken)
	send("PUT", "/connectors/audited/pause", readToken)
	send("GET", "/connectors", readToken)
	send("POST", "/kcd/v1/workers/w1/heartbeat", testNodeKey)
	out := logs.String()
	for _, want := range []string{
		`msg="rest write" method=POST path=/connectors status=503 user=operator role=operate`,
		`msg="rest request refused" method=PUT path=/connectors/audited/pause user=reader role=read needs=operate`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 2 {
		t.Errorf("%d log lines, want the 2 above (no read, no node call):\n%s", n, out)
	}
	if strings.Contains(out, "kcd-canary-secret") {
		t.Errorf("a credential is in the log:\n%s", out)
	}
}
