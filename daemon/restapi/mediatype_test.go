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
