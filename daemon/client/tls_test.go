package client

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/internal/testcerts"
)

func TestTLSTransport(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "ca")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"version":"test"}`))
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{ca.Issue(t, "server", testcerts.Options{}).TLS},
		ClientCAs:    ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert,
	}
	srv.StartTLS()
	defer srv.Close()

	caFile := ca.Write(t, dir, "ca")
	certFile, keyFile := ca.Issue(t, "kcctl", testcerts.Options{}).Write(t, dir, "client")
	tr, err := TLSTransport(caFile, certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewWithOptions(srv.URL, Options{Transport: tr}).ServerInfo(t.Context()); err != nil {
		t.Fatalf("with the CA and a client certificate: %v", err)
	}
	tr, err = TLSTransport(caFile, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewWithOptions(srv.URL, Options{Transport: tr}).ServerInfo(t.Context()); err == nil {
		t.Error("a server requiring a client certificate answered without one")
	}
	if _, err := New(srv.URL).ServerInfo(t.Context()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v", err)
	}

	if _, err := TLSTransport("", certFile, ""); err == nil {
		t.Error("a certificate without its key")
	}
	if _, err := TLSTransport(filepath.Join(dir, "missing.pem"), "", ""); err == nil || !strings.Contains(err.Error(), "missing.pem") {
		t.Errorf("a missing CA file: %v", err)
	}
	if _, err := TLSTransport("", certFile, caFile); err == nil || strings.Contains(err.Error(), "PRIVATE") {
		t.Errorf("a key file that is not the key: %v", err)
	}
}
