package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/daemon/config"
)

type recordRT struct{ got []string }

func (r *recordRT) RoundTrip(req *http.Request) (*http.Response, error) {
	r.got = append(r.got, req.Header.Get("Authorization"))
	return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: req}, nil
}

// A node's calls carry the node secret in place of any Authorization
// header, and leave the caller's request as it was.
func TestAsNodeReplacesAuthorization(t *testing.T) {
	const secret = "kcd-canary-secret-node-0123456789abcdef"
	rec := &recordRT{}
	n := &Node{nodeSecret: []byte(secret)}
	req, _ := http.NewRequest(http.MethodGet, "http://node.invalid/kcd/v1/cluster", nil)
	req.SetBasicAuth("user", "kcd-canary-secret-user-pw")
	before := req.Header.Get("Authorization")
	if _, err := n.asNode(rec).RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if len(rec.got) != 1 || rec.got[0] != "Bearer "+secret {
		t.Fatalf("sent Authorization %q, want the node secret", rec.got)
	}
	if req.Header.Get("Authorization") != before {
		t.Fatal("asNode changed the caller's request")
	}
	// Without a node secret, requests go as they are.
	rec.got = nil
	if _, err := (&Node{}).asNode(rec).RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if rec.got[0] != before {
		t.Fatalf("without a node secret: %q", rec.got[0])
	}
}

// A node whose REST API is open beyond loopback says so at start, in one
// line that names the settings; one on loopback, or with users, does not.
func TestStartRESTAuthWarnsWhenOpen(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "node-token")
	users := filepath.Join(dir, "users.yaml")
	if err := os.WriteFile(tokFile, []byte("kcd-canary-secret-node-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(users, []byte("users:\n  - {name: a, role: read, tokens: [sha256:"+strings.Repeat("ab", 32)+"]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr, authFile string
		warn           bool
	}{
		{"0.0.0.0:8083", "", true},
		{"10.0.0.1:8083", "", true},
		{"127.0.0.1:8083", "", false},
		{"localhost:8083", "", false},
		{"0.0.0.0:8083", users, false},
	} {
		var buf bytes.Buffer
		cfg := config.Default()
		cfg.RESTAddr, cfg.RESTAuthFile, cfg.NodeTokenFile = tc.addr, tc.authFile, tokFile
		n := New(cfg, slog.New(slog.NewTextHandler(&buf, nil)))
		ctx, cancel := context.WithCancel(t.Context())
		auth, err := n.startRESTAuth(ctx)
		cancel()
		n.wg.Wait()
		if err != nil {
			t.Fatalf("%s: %v", tc.addr, err)
		}
		if (auth != nil) != (tc.authFile != "") {
			t.Errorf("%s %q: authenticator %v", tc.addr, tc.authFile, auth)
		}
		warned := strings.Count(buf.String(), "level=WARN")
		if tc.warn && (warned != 1 || !strings.Contains(buf.String(), "--rest-auth-file") || !strings.Contains(buf.String(), "--node-token-file")) {
			t.Errorf("%s without users: %d warnings:\n%s", tc.addr, warned, buf.String())
		}
		if !tc.warn && warned != 0 {
			t.Errorf("%s %q: warned:\n%s", tc.addr, tc.authFile, buf.String())
		}
		if strings.Contains(buf.String(), "kcd-canary-secret-") {
			t.Errorf("the node secret is in the log:\n%s", buf.String())
		}
	}
}
