package restapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A write whose body is not declared JSON is refused with 415 before any
// handler runs; the raw store API's PUT takes application/octet-stream.
func TestWritesNeedJSON(t *testing.T) {
	reached := 0
	h := jsonOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
		w.WriteHeader(http.StatusNoContent)
	}))
	for _, tc := range []struct {
		method, path, ct, body string
		want                   int
	}{
		{"POST", "/connectors", "application/json", `{}`, 204},
		{"POST", "/connectors", "application/json; charset=utf-8", `{}`, 204},
		{"POST", "/connectors", "text/plain", `{}`, 415},
		{"POST", "/connectors", "application/x-www-form-urlencoded", `a=b`, 415},
		{"POST", "/connectors", "multipart/form-data; boundary=x", `--x--`, 415},
		{"POST", "/connectors", "", `{}`, 415}, // an untyped body (a blob a page posts)
		{"POST", "/connectors", "application/json;;", `{}`, 415},
		{"PUT", "/connectors/a/pause", "", "", 204},
		{"PUT", "/connectors/a/pause", "text/plain", "", 415},
		{"DELETE", "/connectors/a", "", "", 204},
		{"GET", "/connectors", "text/plain", "", 204},
		{"PUT", "/kcd/v1/store/keys/a", "application/octet-stream", "v", 204},
		{"PUT", "/kcd/v1/store/keys/a", "text/plain", "v", 415},
		{"PUT", "/kcd/v1/store/keys/a", "application/json", `"v"`, 415},
		{"DELETE", "/kcd/v1/store/keys/a", "", "", 204},
	} {
		before := reached
		req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
		if tc.ct != "" {
			req.Header.Set("Content-Type", tc.ct)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s %s (Content-Type %q): %d %s, want %d", tc.method, tc.path, tc.ct, rec.Code, rec.Body, tc.want)
		}
		if ran := reached > before; ran != (tc.want != 415) {
			t.Errorf("%s %s (Content-Type %q): handler ran %v", tc.method, tc.path, tc.ct, ran)
		}
		if tc.want == 415 && !strings.Contains(rec.Body.String(), `"error_code":415`) {
			t.Errorf("%s %s: body %s, want Kafka Connect's error shape", tc.method, tc.path, rec.Body)
		}
	}
}

// A path with dot or empty segments gets a 400 in Kafka Connect's shape,
// not net/http's redirect with an HTML body; a trailing slash is not an
// empty segment.
func TestAmbiguousPathsRefused(t *testing.T) {
	h := NewHandler(&fakeNode{ready: true}, Options{Logger: slog.New(slog.DiscardHandler)})
	for _, p := range []string{"/connectors/../kcd/v1/store/keys", "//connectors", "/connectors/./x", "/kcd/v1//cluster"} {
		req := httptest.NewRequest("GET", "/", nil)
		req.URL.Path = p
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var e struct {
			Code    int    `json:"error_code"`
			Message string `json:"message"`
		}
		if rec.Code != http.StatusBadRequest || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code != 400 || !strings.Contains(e.Message, "ambiguous URI path") {
			t.Errorf("GET %s: %d %s, want 400 in Kafka Connect's shape", p, rec.Code, rec.Body)
		}
	}
	for _, p := range []string{"/health", "/"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		if rec.Code == http.StatusBadRequest {
			t.Errorf("GET %s: 400", p)
		}
	}
}

// A request to a Kafka Connect route that admits no JSON answer gets 406,
// as from Kafka Connect; unknown paths keep their 404, wrong methods their
// 405, and kcd's own API is not checked.
func TestAcceptNeedsJSON(t *testing.T) {
	h, _ := connectAPI(t)
	for _, tc := range []struct {
		method, path, accept string
		want                 int
	}{
		{"GET", "/connectors", "text/plain", 406},
		{"GET", "/connectors", "text/*", 406},
		{"GET", "/connectors", "application/xml", 406},
		{"GET", "/connectors", "application/vnd.foo+json", 406},
		{"GET", "/connectors", "foo", 406},
		{"GET", "/connectors/", "text/plain", 406},
		{"GET", "/connectors/nope", "text/plain", 406},
		{"PUT", "/connectors/nope/pause", "text/plain", 406},
		{"GET", "/connectors", "*/*", 200},
		{"GET", "/connectors", "*", 200},
		{"GET", "/connectors", "application/*", 200},
		{"GET", "/connectors", "application/JSON; charset=utf-8", 200},
		{"GET", "/connectors", "text/plain, application/json;q=0", 200},
		{"GET", "/connectors", "text/html;q=0.9,*/*;q=0.1", 200},
		{"GET", "/connectors/nope", "*/*", 404},
		{"GET", "/no-such-path", "text/plain", 404},
		{"DELETE", "/health", "text/plain", 405},
		{"GET", "/kcd/v1/version", "text/plain", 200},
	} {
		req := httptest.NewRequest(tc.method, tc.path, nil)
		req.Header.Set("Accept", tc.accept)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s %s (Accept %q): %d %s, want %d", tc.method, tc.path, tc.accept, rec.Code, rec.Body, tc.want)
		}
		if tc.want == 406 && rec.Body.String() != `{"error_code":406,"message":"HTTP 406 Not Acceptable"}` {
			t.Errorf("%s %s: body %s", tc.method, tc.path, rec.Body)
		}
	}
}

// A trailing slash names the same resource, as in Kafka Connect: clients
// test whether a connector exists with GET /connectors/{name}/.
func TestTrailingSlash(t *testing.T) {
	h, _ := connectAPI(t)
	send(t, h, "GET", "/connectors/", "").expect(t, 200, `[]`)
	send(t, h, "GET", "/connector-plugins/", "").expect(t, 200, "")
	send(t, h, "GET", "/connectors/nope/", "").expect(t, 404, `{"error_code":404,"message":"Connector nope not found"}`)
	send(t, h, "GET", "/connectors/nope/status/", "").expect(t, 404, "")
	send(t, h, "PUT", "/connectors/nope/pause/", "").expect(t, 404, "")
	send(t, h, "GET", "/health/", "").expect(t, 200, "")
	send(t, h, "GET", "/connectors//", "").expect(t, 400, "")
	// The key routes' parent with a slash would otherwise redirect to itself.
	for _, m := range []string{"PUT", "DELETE"} {
		send(t, h, m, "/kcd/v1/store/keys/", "").expect(t, 405, `{"error_code":405,"message":"HTTP 405 Method Not Allowed"}`)
		send(t, h, m, "/kcd/v1/store/keys", "").expect(t, 405, "")
	}
	send(t, h, "GET", "/kcd/v1/store/keys/", "").expect(t, 503, "") // the list route; this handler has no store
}
