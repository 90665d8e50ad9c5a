package tlsreload

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcd-project/kcd/internal/testcerts"
)

// syncBuffer is a log sink for tests.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serve accepts TLS connections with cfg and completes their handshakes
// until the test ends.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				if c.(*tls.Conn).Handshake() == nil {
					_, _ = c.Write([]byte("ok"))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// handshake dials addr with cfg, and returns the server's certificate
// name once the server has answered (so a refused client certificate,
// which TLS 1.3 reports after the client's handshake, counts as failure).
func handshake(addr string, cfg *tls.Config) (string, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2)
	if _, err := c.Read(buf); err != nil {
		return "", err
	}
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}

func noInterval[T any](w *watched[T]) { w.interval = 0 }

// A replaced certificate is served from the next handshake on; a broken
// replacement keeps the previous one, with one warning that names the
// files and shows nothing of their content.
func TestServerCertificateReload(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "ca")
	first := ca.Issue(t, "first", testcerts.Options{})
	certFile, keyFile := first.Write(t, dir, "rest")
	var logs syncBuffer
	kp, err := LoadKeyPair(certFile, keyFile, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	noInterval(kp.w)
	addr := serve(t, ServerConfig(kp, nil))
	client := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
	if got, err := handshake(addr, client); err != nil || got != "first" {
		t.Fatalf("first handshake: %q %v", got, err)
	}

	second := ca.Issue(t, "second", testcerts.Options{})
	second.Write(t, dir, "rest")
	if got, err := handshake(addr, client); err != nil || got != "second" {
		t.Fatalf("after the replacement: %q %v, want second", got, err)
	}

	// A key that does not match, then a truncated certificate: both keep
	// the second certificate.
	third := ca.Issue(t, "third", testcerts.Options{})
	testcerts.WriteFile(t, keyFile, third.KeyPEM)
	for range 3 {
		if got, err := handshake(addr, client); err != nil || got != "second" {
			t.Fatalf("with a mismatched key: %q %v, want second", got, err)
		}
	}
	testcerts.WriteFile(t, certFile, third.CertPEM[:len(third.CertPEM)/2])
	if got, err := handshake(addr, client); err != nil || got != "second" {
		t.Fatalf("with a truncated certificate: %q %v, want second", got, err)
	}
	out := logs.String()
	if n := strings.Count(out, "does not load"); n != 2 {
		t.Errorf("%d warnings for two broken versions, want 2:\n%s", n, out)
	}
	if !strings.Contains(out, certFile) || !strings.Contains(out, keyFile) {
		t.Errorf("the warning does not name the files:\n%s", out)
	}
	for _, secret := range [][]byte{first.KeyPEM, second.KeyPEM, third.KeyPEM} {
		body := strings.Split(string(secret), "\n")[1] // a line of the key's base64
		if strings.Contains(out, body[:20]) || strings.Contains(out, "PRIVATE KEY") {
			t.Fatalf("key material in the log:\n%s", out)
		}
	}

	// The fixed pair is taken.
	third.Write(t, dir, "rest")
	if got, err := handshake(addr, client); err != nil || got != "third" {
		t.Fatalf("after the fix: %q %v, want third", got, err)
	}
	// A deleted file keeps the last one too.
	if err := os.Remove(certFile); err != nil {
		t.Fatal(err)
	}
	if got, err := handshake(addr, client); err != nil || got != "third" {
		t.Fatalf("with the file gone: %q %v, want third", got, err)
	}
}

// Files are looked at again at most once per CheckInterval.
func TestCheckInterval(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "ca")
	certFile, keyFile := ca.Issue(t, "first", testcerts.Options{}).Write(t, dir, "rest")
	kp, err := LoadKeyPair(certFile, keyFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	kp.w.now = func() time.Time { return now }
	kp.w.checked = now
	ca.Issue(t, "second", testcerts.Options{}).Write(t, dir, "rest")
	now = now.Add(CheckInterval / 2)
	if got := kp.Certificate().Leaf.Subject.CommonName; got != "first" {
		t.Fatalf("half an interval later: %s, want first", got)
	}
	now = now.Add(CheckInterval / 2)
	if got := kp.Certificate().Leaf.Subject.CommonName; got != "second" {
		t.Fatalf("an interval later: %s, want second", got)
	}
}

// With client CAs, a client without a certificate, or with one another
// CA signed, is refused; a replaced client CA file decides from the next
// handshake on.
func TestClientCAEnforcedAndReloaded(t *testing.T) {
	dir := t.TempDir()
	ca, other := testcerts.NewCA(t, "ca"), testcerts.NewCA(t, "other")
	certFile, keyFile := ca.Issue(t, "server", testcerts.Options{}).Write(t, dir, "rest")
	kp, err := LoadKeyPair(certFile, keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	clientCAFile := ca.Write(t, dir, "clients")
	clientCAs, err := LoadPool(clientCAFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	noInterval(clientCAs.w)
	addr := serve(t, ServerConfig(kp, clientCAs))
	base := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
	with := func(l testcerts.Leaf) *tls.Config {
		c := base.Clone()
		c.Certificates = []tls.Certificate{l.TLS}
		return c
	}
	good, foreign := ca.Issue(t, "good client", testcerts.Options{}), other.Issue(t, "foreign client", testcerts.Options{})
	if _, err := handshake(addr, base); err == nil {
		t.Error("a client without a certificate was accepted")
	}
	if _, err := handshake(addr, with(foreign)); err == nil {
		t.Error("a client certificate of another CA was accepted")
	}
	if _, err := handshake(addr, with(good)); err != nil {
		t.Fatalf("a client certificate of the CA: %v", err)
	}
	for _, mv := range []uint16{tls.VersionTLS10, tls.VersionTLS11} {
		c := with(good)
		c.MinVersion, c.MaxVersion = mv, mv
		if _, err := handshake(addr, c); err == nil {
			t.Errorf("TLS version %x accepted", mv)
		}
	}

	testcerts.WriteFile(t, clientCAFile, other.PEM)
	if _, err := handshake(addr, with(good)); err == nil {
		t.Error("a client of the old CA was accepted after the client CA was replaced")
	}
	if _, err := handshake(addr, with(foreign)); err != nil {
		t.Errorf("a client of the new CA: %v", err)
	}
}

// DialTLS trusts the servers that the roots signed, as the file is at
// each dial, under the host dialled, and presents the client certificate
// as its files are.
func TestDialTLS(t *testing.T) {
	dir := t.TempDir()
	ca, other := testcerts.NewCA(t, "ca"), testcerts.NewCA(t, "other")
	// The server is signed by other; the client trusts ca at first.
	serverCert := other.Issue(t, "server", testcerts.Options{IPs: []string{"127.0.0.1"}})
	addr := serve(t, &tls.Config{Certificates: []tls.Certificate{serverCert.TLS}, ClientCAs: other.Pool(), ClientAuth: tls.RequireAndVerifyClientCert})

	rootsFile := ca.Write(t, dir, "roots")
	roots, err := LoadPool(rootsFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	noInterval(roots.w)
	certFile, keyFile := ca.Issue(t, "client", testcerts.Options{}).Write(t, dir, "node")
	kp, err := LoadKeyPair(certFile, keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	noInterval(kp.w)
	dial := DialTLS(roots, kp, (&net.Dialer{Timeout: 5 * time.Second}).DialContext, 5*time.Second)
	try := func(addr string) error {
		c, err := dial(t.Context(), "tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 2)) // the server's verdict on our certificate
		return err
	}
	if err := try(addr); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("a server another CA signed: %v", err)
	}
	testcerts.WriteFile(t, rootsFile, other.PEM)
	// The roots are right now; the client certificate is not (ca signed it).
	if err := try(addr); err == nil {
		t.Fatal("a client certificate the server's CA did not sign was accepted")
	}
	other.Issue(t, "client", testcerts.Options{}).Write(t, dir, "node")
	if err := try(addr); err != nil {
		t.Fatalf("after both files were replaced: %v", err)
	}
	// The certificate is for 127.0.0.1, not for localhost.
	_, port, _ := net.SplitHostPort(addr)
	if err := try(net.JoinHostPort("localhost", port)); err == nil || !strings.Contains(err.Error(), "localhost") {
		t.Errorf("a server certificate for another name: %v", err)
	}
}

func TestLoadErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	if _, err := LoadKeyPair(missing, missing, nil); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing certificate: %v", err)
	}
	empty := filepath.Join(dir, "empty.pem")
	testcerts.WriteFile(t, empty, []byte("not a certificate\n"))
	if _, err := LoadPool(empty, nil); err == nil || !strings.Contains(err.Error(), empty) {
		t.Errorf("a CA file without certificates: %v", err)
	}
}
