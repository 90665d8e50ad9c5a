package main

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/kcd-project/kcd/internal/testcerts"
)

// kcctl migrate reaches a Kafka Connect whose REST API needs basic
// credentials (its BasicAuth extension) over HTTPS with the --connect-*
// flags; without them it is refused.
func TestConnectPeerCredentialsAndTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "connect CA")
	caFile := ca.Write(t, dir, "ca")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "migrator" || p != "kcd-canary-secret-connect-pw" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"version":"4.3.1","commit":"x","kafka_cluster_id":"c"}`))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "connect", testcerts.Options{}).TLS}}
	srv.StartTLS()
	defer srv.Close()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("kcd-canary-secret-connect-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	good := connectPeer{url: srv.URL, user: "migrator", passwordFile: pw, caFile: caFile}
	c, err := good.client()
	if err != nil {
		t.Fatal(err)
	}
	if info, err := c.ServerInfo(t.Context()); err != nil || info.Version != "4.3.1" {
		t.Fatalf("with the flags: %+v, %v", info, err)
	}
	noCreds := connectPeer{url: srv.URL, caFile: caFile}
	c, _ = noCreds.client()
	if _, err := c.ServerInfo(t.Context()); err == nil {
		t.Error("without --connect-user the server let kcctl in: the test server checks nothing")
	}
	noCA := connectPeer{url: srv.URL, user: "migrator", passwordFile: pw}
	c, _ = noCA.client()
	if _, err := c.ServerInfo(t.Context()); err == nil {
		t.Error("an unknown CA was trusted")
	}
	t.Setenv("KCCTL_CONNECT_PASSWORD", "")
	if _, err := (&connectPeer{url: srv.URL, user: "migrator"}).client(); err == nil {
		t.Error("--connect-user without a password was accepted")
	}
}
