package restapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHostPolicy(t *testing.T) {
	for _, tc := range []struct {
		setting, listen  string
		allowed, refused []string
	}{
		// The default on loopback: loopback names only (DNS rebinding).
		{"", "127.0.0.1:8083", []string{"127.0.0.1:8083", "localhost:8083", "LOCALHOST", "[::1]:8083", "127.0.0.2:1", "localhost."}, []string{"evil.example:8083", "evil.example", "10.0.0.1:8083", ""}},
		{"", "localhost:8083", []string{"localhost:8083"}, []string{"kcd.example:8083"}},
		// The default elsewhere: any.
		{"", "0.0.0.0:8083", []string{"kcd.example:8083", "10.0.0.1"}, nil},
		{"", ":8083", []string{"kcd.example:8083"}, nil},
		// A list: those names only, loopback included only when listed.
		{"kcd.example, Node1.example", "0.0.0.0:8083", []string{"kcd.example:8083", "node1.EXAMPLE"}, []string{"127.0.0.1:8083", "other.example"}},
		{"*", "127.0.0.1:8083", []string{"anything.example:1"}, nil},
	} {
		p := HostPolicyFor(tc.setting, tc.listen)
		for _, h := range tc.allowed {
			if !p.Allows(h) {
				t.Errorf("setting %q on %s: Host %q refused", tc.setting, tc.listen, h)
			}
		}
		for _, h := range tc.refused {
			if p.Allows(h) {
				t.Errorf("setting %q on %s: Host %q allowed", tc.setting, tc.listen, h)
			}
		}
	}
}

func TestForeignHostRefused(t *testing.T) {
	h := NewHandler(nil, Options{Hosts: HostPolicyFor("", "127.0.0.1:8083")})
	req := httptest.NewRequest(http.MethodGet, "/health", nil)
	req.Host = "rebound.example:8083"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `"error_code":403`) {
		t.Errorf("foreign Host: %d %s", rec.Code, rec.Body)
	}
	req = httptest.NewRequest(http.MethodGet, "/kcd/v1/version", nil)
	req.Host = "127.0.0.1:8083"
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("loopback Host: %d %s", rec.Code, rec.Body)
	}
}
