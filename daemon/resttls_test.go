package daemon

import (
	"bytes"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/config"
	"github.com/kcd-project/kcd/internal/testcerts"
)

// tlsNodeConfig is devConfig with REST over mutual TLS and peer mutual
// TLS, every certificate from ca and valid for 127.0.0.1.
func tlsNodeConfig(t *testing.T, ca *testcerts.CA, id uint64) config.Config {
	t.Helper()
	dir := t.TempDir()
	cfg := devConfig(t, t.TempDir())
	cfg.NodeID = id
	caFile := ca.Write(t, dir, "ca")
	cfg.RESTTLSCert, cfg.RESTTLSKey = ca.Issue(t, "rest "+strconv.FormatUint(id, 10), testcerts.Options{}).Write(t, dir, "rest")
	cfg.RESTTLSClientCA, cfg.RESTTLSCA = caFile, caFile
	cfg.PeerTLSCert, cfg.PeerTLSKey = ca.Issue(t, "peer "+strconv.FormatUint(id, 10), testcerts.Options{IPs: []string{"127.0.0.1"}}).Write(t, dir, "peer")
	cfg.PeerTLSCA = caFile
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Two nodes whose REST APIs require client certificates: the second joins
// through the first's https URL with its own REST certificate, and is
// promoted. Clients without a certificate, or speaking plain HTTP, are
// refused. On the peer port, a client without a certificate, with one of
// another CA or an expired one is refused in the handshake, and a member's
// valid certificate cannot send as a member on another host.
func TestMutualTLSNodes(t *testing.T) {
	ca := testcerts.NewCA(t, "cluster CA")
	log := slog.New(slog.DiscardHandler)
	first := New(tlsNodeConfig(t, ca, 1), log)
	if err := first.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if u := first.RESTURL(); !strings.HasPrefix(u, "https://") {
		t.Fatalf("REST URL %q is not https", u)
	}

	// REST: plain HTTP, no certificate, another CA's: refused.
	res, err := http.Get("http://" + strings.TrimPrefix(first.RESTURL(), "https://") + "/")
	if err == nil {
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the HTTPS port: %s", res.Status)
		}
	}
	client := func(certs ...tls.Certificate) *http.Client {
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), Certificates: certs},
		}}
	}
	other := testcerts.NewCA(t, "other CA")
	for name, c := range map[string]*http.Client{
		"no client certificate":    client(),
		"another CA's certificate": client(other.Issue(t, "stranger", testcerts.Options{}).TLS),
	} {
		if res, err := c.Get(first.RESTURL() + "/"); err == nil {
			res.Body.Close()
			t.Errorf("%s: %s", name, res.Status)
		}
	}
	user := client(ca.Issue(t, "operator", testcerts.Options{}).TLS)
	res, err = user.Get(first.RESTURL() + "/")
	if err != nil {
		t.Fatalf("a client certificate of the CA: %v", err)
	}
	res.Body.Close()

	// A renewed certificate is served without a restart.
	renewed := ca.Issue(t, "rest 1 renewed", testcerts.Options{})
	testcerts.WriteFile(t, first.cfg.RESTTLSKey, renewed.KeyPEM)
	testcerts.WriteFile(t, first.cfg.RESTTLSCert, renewed.CertPEM)
	fresh := &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{ca.Issue(t, "operator", testcerts.Options{}).TLS}}}
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := (&http.Client{Timeout: 5 * time.Second, Transport: fresh}).Get(first.RESTURL() + "/")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if cn := res.TLS.PeerCertificates[0].Subject.CommonName; cn == "rest 1 renewed" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("still served %q 5 s after the certificate was replaced", cn)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The second node joins over mutual TLS, REST and peer.
	cfg2 := tlsNodeConfig(t, ca, 2)
	cfg2.Join = first.RESTURL()
	second := New(cfg2, log)
	if err := second.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	waitVoters(t, first, 2)
	if u := second.Raft().Self().RESTURL; !strings.HasPrefix(u, "https://") {
		t.Errorf("the joiner advertises %q", u)
	}

	// The peer port.
	peerURL := first.Raft().Self().PeerURL
	clusterID := first.Raft().Status().ClusterID
	snapshot := func(c *http.Client, from uint64) (int, string, error) {
		req, _ := http.NewRequest(http.MethodPost, peerURL+"/raft/snapshot", bytes.NewReader(nil))
		req.Header.Set("X-Kcd-Cluster-Id", clusterID)
		req.Header.Set("X-Kcd-Raft-From", strconv.FormatUint(from, 10))
		req.Header.Set("X-Kcd-Raft-To", "1")
		res, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body), nil
	}
	expired := ca.Issue(t, "expired", testcerts.Options{IPs: []string{"127.0.0.1"},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	for name, c := range map[string]*http.Client{
		"no client certificate":    client(),
		"another CA's certificate": client(other.Issue(t, "stranger", testcerts.Options{IPs: []string{"127.0.0.1"}}).TLS),
		"an expired certificate":   client(expired.TLS),
	} {
		if code, body, err := snapshot(c, 2); err == nil {
			t.Errorf("peer port, %s: %d %s", name, code, body)
		}
	}
	// A certificate of the cluster's CA for another host (127.0.0.2)
	// cannot speak for member 2, whose peer URL is on 127.0.0.1.
	impostor := client(ca.Issue(t, "impostor", testcerts.Options{IPs: []string{"127.0.0.2"}}).TLS)
	if code, body, err := snapshot(impostor, 2); err != nil || code != http.StatusForbidden || !strings.Contains(body, "not member 2's") {
		t.Errorf("a certificate for another host as member 2: %d %q %v", code, body, err)
	}
	// One valid for 127.0.0.1 can: the binding is to the host (here both
	// members share it). Its empty snapshot is refused after admission.
	sameHost := client(ca.Issue(t, "same host", testcerts.Options{IPs: []string{"127.0.0.1"}}).TLS)
	if code, body, err := snapshot(sameHost, 2); err != nil || code != http.StatusBadRequest || !strings.Contains(body, "empty snapshot") {
		t.Errorf("a certificate for member 2's host: %d %q %v", code, body, err)
	}
}

func TestRESTTLSFilesCheckedAtStart(t *testing.T) {
	ca := testcerts.NewCA(t, "ca")
	cfg := tlsNodeConfig(t, ca, 1)
	cfg.RESTTLSKey = cfg.PeerTLSKey // the key of another certificate
	err := New(cfg, slog.New(slog.DiscardHandler)).Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "rest-tls-cert") || !strings.Contains(err.Error(), cfg.RESTTLSKey) {
		t.Errorf("a key that does not match: %v", err)
	}
	cfg = tlsNodeConfig(t, ca, 1)
	cfg.RESTTLSClientCA = cfg.RESTTLSKey // no certificate in it
	err = New(cfg, slog.New(slog.DiscardHandler)).Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "rest-tls-client-ca") || strings.Contains(err.Error(), "PRIVATE") {
		t.Errorf("a client CA file without certificates: %v", err)
	}
}
