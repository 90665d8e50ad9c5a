package transport

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Paths under the /raft/ prefix the node mounts Handler on, and the headers
// every request carries.
const (
	streamPath    = "/raft/stream"
	snapshotPath  = "/raft/snapshot"
	hdrClusterID  = "X-Kcd-Cluster-Id"
	hdrFrom       = "X-Kcd-Raft-From"
	hdrTo         = "X-Kcd-Raft-To"
	contentFrames = "application/x-kcd-raft-frames"
)

// HTTP connection health: a connection that has been silent this long gets a
// ping, and is closed when the ping is not answered as fast. That turns a
// silently dead peer (cable pulled, host frozen) into a send error within
// seconds instead of the TCP timeout's minutes.
const (
	pingAfter   = 2 * time.Second
	pingTimeout = 2 * time.Second
)

// HTTP is the HTTP/2 transport. Each peer has one sender goroutine that
// streams length-prefixed frames over a long-lived POST, and one that sends
// snapshots, each as its own POST so that the outcome can be reported to
// raft and a large snapshot does not hold up heartbeats.
type HTTP struct {
	cfg     Config
	log     *slog.Logger
	recv    Receiver
	client  *http.Client
	handler http.Handler

	ctx    context.Context // cancelled by Close: ends streams and handlers
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the transport started

	mu       sync.Mutex
	closed   bool
	peers    map[uint64]*peer
	unknown  map[uint64]bool // destinations without a peer, warned about once
	handlers sync.WaitGroup  // handlers in progress; Add only under mu while open
}

var _ Transport = (*HTTP)(nil)

// NewHTTP returns a transport for cfg; it opens no connection until there is
// something to send.
func NewHTTP(cfg Config) (*HTTP, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &HTTP{
		cfg:     cfg,
		log:     cfg.Logger.With("subsystem", "raft-transport", "local", cfg.ID),
		recv:    cfg.Receiver,
		client:  newClient(cfg),
		ctx:     ctx,
		cancel:  cancel,
		peers:   make(map[uint64]*peer),
		unknown: make(map[uint64]bool),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+streamPath, t.serveStream)
	mux.HandleFunc("POST "+snapshotPath, t.serveSnapshot)
	t.handler = mux
	return t, nil
}

func newClient(cfg Config) *http.Client {
	// HTTP/2 only: h2 through ALPN for https peers, h2c with prior knowledge
	// for http peers. A stream needs a full-duplex request body, which
	// HTTP/1.1 does not give.
	var protos http.Protocols
	protos.SetHTTP2(true)
	protos.SetUnencryptedHTTP2(true)
	tr := &http.Transport{
		Protocols:           &protos,
		DialContext:         (&net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 15 * time.Second}).DialContext,
		TLSClientConfig:     cfg.ClientTLS.Clone(),
		TLSHandshakeTimeout: cfg.OpenTimeout,
		DisableCompression:  true,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout:  pingAfter,
			PingTimeout:      pingTimeout,
			WriteByteTimeout: cfg.WriteTimeout,
		},
	}
	return &http.Client{
		Transport: tr,
		// No Client.Timeout: it would cut every stream after that long.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// ConfigureServer prepares the node's peer listener for raft traffic:
// HTTP/2 over TLS (ServerTLS) or cleartext h2c, no whole-request deadlines
// (they would cut streams) and pings to find dead clients.
func (t *HTTP) ConfigureServer(srv *http.Server) {
	var protos http.Protocols
	protos.SetHTTP1(true) // other handlers may share the listener
	protos.SetHTTP2(true)
	protos.SetUnencryptedHTTP2(true)
	srv.Protocols = &protos
	if srv.TLSConfig == nil && t.cfg.ServerTLS != nil {
		srv.TLSConfig = t.cfg.ServerTLS.Clone()
	}
	if srv.ReadHeaderTimeout == 0 {
		srv.ReadHeaderTimeout = 5 * time.Second
	}
	srv.ReadTimeout, srv.WriteTimeout = 0, 0
	srv.HTTP2 = &http.HTTP2Config{SendPingTimeout: pingAfter, PingTimeout: pingTimeout}
}

// Handler serves /raft/stream and /raft/snapshot.
func (t *HTTP) Handler() http.Handler { return t.handler }

// Send queues msgs; it never blocks on the network.
func (t *HTTP) Send(msgs []*raftpb.Message) {
	for _, m := range msgs {
		if p := t.peer(m.GetTo()); p != nil {
			p.send(m)
			continue
		}
		t.dropUnknown(m)
	}
}

func (t *HTTP) peer(id uint64) *peer {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.peers[id]
}

func (t *HTTP) dropUnknown(m *raftpb.Message) {
	t.mu.Lock()
	closed, warned := t.closed, t.unknown[m.GetTo()]
	t.unknown[m.GetTo()] = true
	t.mu.Unlock()
	if closed {
		return
	}
	if !warned {
		t.log.Warn("raft message for an unknown peer dropped; was AddPeer called?", "peer", m.GetTo(), "type", m.GetType())
	}
	t.recv.ReportUnreachable(m.GetTo())
	if m.GetType() == raftpb.MsgSnap {
		t.recv.ReportSnapshot(m.GetTo(), raft.SnapshotFailure)
	}
}

// AddPeer starts sending to id at url; for a known id it is UpdatePeer.
func (t *HTTP) AddPeer(id uint64, url string) {
	if id == t.cfg.ID || id == 0 {
		return // raft never sends to itself; members lists often include it
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	if p := t.peers[id]; p != nil {
		p.setURL(url)
		return
	}
	p := newPeer(t, id, url)
	t.peers[id] = p
	delete(t.unknown, id)
	t.wg.Add(2)
	go p.run()
	go p.runSnapshots()
}

// RemovePeer stops sending to id. It does not wait for the peer's
// goroutines (Close does), so it is safe to call from any goroutine.
func (t *HTTP) RemovePeer(id uint64) {
	t.mu.Lock()
	p := t.peers[id]
	delete(t.peers, id)
	t.mu.Unlock()
	if p != nil {
		p.cancel()
	}
}

// UpdatePeer points id at url; an open stream is closed and reopened there.
func (t *HTTP) UpdatePeer(id uint64, url string) {
	if p := t.peer(id); p != nil {
		p.setURL(url)
		return
	}
	t.AddPeer(id, url)
}

// Stats reports every known peer.
func (t *HTTP) Stats() map[uint64]PeerStats {
	t.mu.Lock()
	peers := make([]*peer, 0, len(t.peers))
	for _, p := range t.peers {
		peers = append(peers, p)
	}
	t.mu.Unlock()
	out := make(map[uint64]PeerStats, len(peers))
	for _, p := range peers {
		out[p.id] = p.stats()
	}
	return out
}

// Close stops all sending and serving and waits for every goroutine.
func (t *HTTP) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	clear(t.peers)
	t.mu.Unlock()
	t.cancel() // every peer context and handler derives from it
	t.wg.Wait()
	t.handlers.Wait()
	t.client.CloseIdleConnections()
	return nil
}

// enterHandler registers a handler in progress; false once closed.
func (t *HTTP) enterHandler() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.handlers.Add(1)
	return true
}
