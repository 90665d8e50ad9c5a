package transport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// testCA issues short-lived certificates for the peers of one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kcd peer test CA"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue returns a server and client certificate valid for ip.
func (ca *testCA) issue(t testing.TB, ip string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "member at " + ip},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP(ip)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

func (ca *testCA) mtls(cert tls.Certificate) func(*Config) {
	return func(c *Config) {
		c.ServerTLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: ca.pool, ClientAuth: tls.RequireAndVerifyClientCert}
		c.ClientTLS = &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: ca.pool}
	}
}

// A member holding a valid certificate of the cluster cannot send raft
// messages as another member: its certificate must be valid for the host
// of the claimed sender's peer URL, as the receiver knows it.
func TestHTTPPeerCertificateBoundToMember(t *testing.T) {
	checkGoroutines(t)
	ca := newTestCA(t)
	cert2, cert3 := ca.issue(t, "127.0.0.2"), ca.issue(t, "127.0.0.3")
	a := newNodeOn(t, 1, "c1", "127.0.0.1:0", ca.mtls(ca.issue(t, "127.0.0.1")))
	b := newNodeOn(t, 2, "c1", "127.0.0.2:0", ca.mtls(cert2))
	c := newNodeOn(t, 3, "c1", "127.0.0.3:0", ca.mtls(cert3))
	connect(a, b, c)

	// Each member is heard under its own id.
	sendSeq(b, a, 1, 10)
	sendSeq(c, a, 1, 10)
	waitFor(t, "members' own messages", func() bool { return a.rec.count(2) == 10 && a.rec.count(3) == 10 })

	// Member 2's certificate, sending as member 3 (a transport of id 3 on
	// 127.0.0.2): refused, for messages and snapshots alike.
	impostor := newNodeOn(t, 3, "c1", "127.0.0.2:0", ca.mtls(cert2))
	impostor.tr.AddPeer(1, a.url())
	impostor.tr.Send([]*raftpb.Message{appMsg(3, 1, 100, nil)})
	waitFor(t, "refusal of the impostor's stream", func() bool {
		return strings.Contains(impostor.tr.Stats()[1].LastError, "not member 3's")
	})
	impostor.tr.Send([]*raftpb.Message{{Type: raftpb.MsgSnap.Enum(), From: new(uint64(3)), To: new(uint64(1)), Term: new(uint64(1)),
		Snapshot: &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: new(uint64(5)), Term: new(uint64(1))}}}})
	waitFor(t, "snapshot report", func() bool { return len(impostor.rec.snapshots()) == 1 })
	if got := impostor.rec.snapshots()[0]; got != raft.SnapshotFailure {
		t.Errorf("the impostor's snapshot reported %v, want SnapshotFailure", got)
	}

	// An id the receiver does not know has no peer URL to check against.
	stranger := newNodeOn(t, 4, "c1", "127.0.0.2:0", ca.mtls(cert2))
	stranger.tr.AddPeer(1, a.url())
	stranger.tr.Send([]*raftpb.Message{appMsg(4, 1, 100, nil)})
	waitFor(t, "refusal of an unknown member", func() bool {
		return strings.Contains(stranger.tr.Stats()[1].LastError, "does not know member 4")
	})

	// Member 3 is heard again, and nothing else came in as 3 or 4.
	sendSeq(c, a, 11, 5)
	waitFor(t, "member 3 after the impostor", func() bool { return a.rec.count(3) == 15 })
	wantSeq(t, a.rec.seqs(3), 1, 15)
	if a.rec.count(4) != 0 {
		t.Errorf("%d messages of an unknown member delivered", a.rec.count(4))
	}
}
