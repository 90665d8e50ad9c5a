package daemon

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeCert writes a PEM certificate (signed by ca, or self-signed when ca
// is nil) and its key, and returns their paths.
func writeCert(t *testing.T, dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (string, string, *x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	signer, signerKey := tmpl, key
	if ca == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	} else {
		signer, signerKey = ca, caKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	certPath, keyPath := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	keyDER, _ := x509.MarshalECPrivateKey(key)
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath, cert, key
}

func TestPeerMutualTLS(t *testing.T) {
	dir := t.TempDir()
	caPath, _, ca, caKey := writeCert(t, dir, "ca", nil, nil)
	log := slog.New(slog.DiscardHandler)
	cfg1 := devConfig(t, t.TempDir())
	cfg1.PeerTLSCert, cfg1.PeerTLSKey, _, _ = writeCert(t, dir, "node1", ca, caKey)
	cfg1.PeerTLSCA = caPath
	first := New(cfg1, log)
	if err := first.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if u := first.Raft().Self().PeerURL; !strings.HasPrefix(u, "https://") {
		t.Fatalf("peer URL %q is not https", u)
	}

	cfg2 := devConfig(t, t.TempDir())
	cfg2.NodeID = 2
	cfg2.Join = first.RESTURL()
	cfg2.PeerTLSCert, cfg2.PeerTLSKey, _, _ = writeCert(t, dir, "node2", ca, caKey)
	cfg2.PeerTLSCA = caPath
	second := New(cfg2, log)
	if err := second.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	waitVoters(t, first, 2)

	// A node whose certificate another CA signed is added as a learner (the
	// REST API is not what mutual TLS guards) but never receives the log,
	// so it is never promoted.
	otherCA, _, oca, ocaKey := writeCert(t, dir, "other-ca", nil, nil)
	cfg3 := devConfig(t, t.TempDir())
	cfg3.NodeID = 3
	cfg3.Join = first.RESTURL()
	cfg3.PeerTLSCert, cfg3.PeerTLSKey, _, _ = writeCert(t, dir, "node3", oca, ocaKey)
	cfg3.PeerTLSCA = otherCA
	third := New(cfg3, log)
	if err := third.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	time.Sleep(2 * time.Second)
	for _, m := range first.Raft().Status().Members {
		if m.ID == 3 && (m.Raft != "learner" || m.Reachable) {
			t.Errorf("the node with a foreign certificate: %+v", m)
		}
	}
	if got := third.Raft().AppliedIndex(); got != 0 {
		t.Errorf("the node with a foreign certificate applied %d entries", got)
	}
}

func waitVoters(t *testing.T, n *Node, want int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		voters := 0
		for _, m := range n.Raft().Status().Members {
			if m.Raft == "voter" {
				voters++
			}
		}
		if voters == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d voters, want %d: %+v", voters, want, n.Raft().Status().Members)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
