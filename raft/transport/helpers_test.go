package transport

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// recorder is a Receiver that remembers everything.
type recorder struct {
	mu          sync.Mutex
	byFrom      map[uint64][]uint64 // Index of each message, per sender
	msgs        []*raftpb.Message
	at          []time.Time // arrival of each of msgs
	unreachable map[uint64]int
	snaps       []raft.SnapshotStatus
	removed     map[uint64]bool
}

func newRecorder() *recorder {
	return &recorder{byFrom: map[uint64][]uint64{}, unreachable: map[uint64]int{}, removed: map[uint64]bool{}}
}

func (r *recorder) Process(_ context.Context, m *raftpb.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byFrom[m.GetFrom()] = append(r.byFrom[m.GetFrom()], m.GetIndex())
	r.msgs = append(r.msgs, m)
	r.at = append(r.at, time.Now())
	return nil
}

func (r *recorder) ReportUnreachable(id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unreachable[id]++
}

func (r *recorder) ReportSnapshot(_ uint64, s raft.SnapshotStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snaps = append(r.snaps, s)
}

func (r *recorder) IsIDRemoved(id uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removed[id]
}

func (r *recorder) remove(id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removed[id] = true
}

func (r *recorder) count(from uint64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byFrom[from])
}

func (r *recorder) seqs(from uint64) []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.byFrom[from])
}

func (r *recorder) unreachableCount(id uint64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unreachable[id]
}

func (r *recorder) snapshots() []raft.SnapshotStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.snaps)
}

// testNode is a transport with its own peer listener.
type testNode struct {
	id   uint64
	tr   *HTTP
	rec  *recorder
	addr string
	tls  bool

	mu  sync.Mutex
	srv *http.Server
}

func (n *testNode) url() string {
	if n.tls {
		return "https://" + n.addr
	}
	return "http://" + n.addr
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// newNode makes a transport for id and serves it on a loopback port.
func newNode(t testing.TB, id uint64, cluster string, opts ...func(*Config)) *testNode {
	t.Helper()
	return newNodeOn(t, id, cluster, "127.0.0.1:0", opts...)
}

// newNodeOn makes a transport for id and serves it on addr.
func newNodeOn(t testing.TB, id uint64, cluster, addr string, opts ...func(*Config)) *testNode {
	t.Helper()
	rec := newRecorder()
	cfg := Config{ID: id, ClusterID: cluster, Receiver: rec, Logger: testLogger(t)}
	for _, o := range opts {
		o(&cfg)
	}
	tr, err := NewHTTP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := &testNode{id: id, tr: tr, rec: rec, tls: cfg.ServerTLS != nil}
	n.start(t, addr)
	t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			t.Error(err)
		}
		n.stop()
	})
	return n
}

// start serves the node on addr (its old address to come back).
func (n *testNode) start(t testing.TB, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/raft/", n.tr.Handler())
	srv := &http.Server{Handler: mux, ErrorLog: log.New(io.Discard, "", 0)}
	n.tr.ConfigureServer(srv)
	n.mu.Lock()
	n.srv, n.addr = srv, ln.Addr().String()
	n.mu.Unlock()
	go func() {
		var err error
		if n.tls {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	}()
}

// stop takes the listener down, as if the process died.
func (n *testNode) stop() {
	n.mu.Lock()
	srv := n.srv
	n.srv = nil
	n.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// connect makes every node a peer of every other.
func connect(nodes ...*testNode) {
	for _, a := range nodes {
		for _, b := range nodes {
			if a != b {
				a.tr.AddPeer(b.id, b.url())
			}
		}
	}
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// checkGoroutines fails the test if goroutines started during it are still
// running after its cleanups. Register it first: cleanups run last-in
// first-out.
func checkGoroutines(t testing.TB) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// selfSigned returns a certificate for 127.0.0.1 that is its own CA and
// serves as server and client certificate.
func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kcd raft test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}, pool
}
