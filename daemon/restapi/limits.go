package restapi

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The REST server's bounds on what one client can hold: how long it may
// take to send a request's header and its whole request, how long an idle
// keep-alive connection stays open, and how many connections are open at
// once (ServerOptions.MaxConnections).
const (
	HeaderTimeout = 10 * time.Second
	ReadTimeout   = 60 * time.Second
	IdleTimeout   = 60 * time.Second
	// ReservedTimeout bounds every read of a connection taken from the
	// reserved share: its header, its body and its idle time between
	// requests, so that a share slot held by a slow client frees soon.
	ReservedTimeout = 2 * time.Second
)

// ServerOptions tune NewServer.
type ServerOptions struct {
	// MaxConnections bounds the open connections (default 512). Once
	// MaxConnections minus the reserved share (an eighth, at least 4) are
	// open, a new connection only serves worker heartbeats and /health
	// (others get 503); once all are open, new ones wait in the listen
	// backlog until one closes.
	MaxConnections int
	// BaseContext is the context of every request (default Background).
	BaseContext context.Context
	// ReadTimeout replaces the package's ReadTimeout (tests).
	ReadTimeout time.Duration
	// TLS, when set, makes the server HTTPS; connections count against
	// MaxConnections from their accept, before the handshake.
	TLS *tls.Config
	// Logger takes the server's own errors (default slog.Default()): a
	// failed TLS handshake (a scanner, a client without a certificate) at
	// debug, anything else at warn.
	Logger *slog.Logger
}

// NewServer returns the HTTP server of the API, with its timeouts, and
// the listener to serve it on: ln, bounded to opts.MaxConnections (and
// speaking TLS with opts.TLS). The caller serves with srv.Serve(lim).
func NewServer(h http.Handler, ln net.Listener, opts ServerOptions) (srv *http.Server, lim net.Listener) {
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = 512
	}
	if opts.BaseContext == nil {
		opts.BaseContext = context.Background()
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = ReadTimeout
	}
	l := newLimitListener(ln, opts.MaxConnections)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	srv = &http.Server{
		ErrorLog:          log.New(serverErrors{opts.Logger}, "", 0),
		Handler:           reservedOnly(h),
		ReadHeaderTimeout: HeaderTimeout,
		ReadTimeout:       opts.ReadTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return opts.BaseContext },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if tc, ok := c.(*tls.Conn); ok {
				c = tc.NetConn()
			}
			if lc, ok := c.(*limitedConn); ok && lc.reserved {
				ctx = context.WithValue(ctx, reservedConn{}, true)
			}
			return ctx
		},
	}
	if opts.TLS != nil {
		return srv, tlsListener{l, opts.TLS}
	}
	return srv, l
}

// serverErrors writes the lines of http.Server's ErrorLog to a slog logger.
type serverErrors struct{ log *slog.Logger }

func (e serverErrors) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	level := slog.LevelWarn
	if strings.Contains(msg, "TLS handshake error") {
		level = slog.LevelDebug
	}
	e.log.Log(context.Background(), level, "rest server", "err", msg)
	return len(p), nil
}

// tlsListener is a limitListener whose connections speak TLS. The
// handshake reads through the limitedConn, so a reserved connection's
// handshake is bounded by ReservedTimeout too.
type tlsListener struct {
	*limitListener
	cfg *tls.Config
}

func (l tlsListener) Accept() (net.Conn, error) {
	c, err := l.limitListener.Accept()
	if err != nil {
		return nil, err
	}
	return tls.Server(c, l.cfg), nil
}

type reservedConn struct{}

// priority tells whether r is served on a connection of the reserved
// share: a worker heartbeat (which keeps its tasks running) or /health
// (which keeps the node in its load balancer or orchestrator).
func priority(r *http.Request) bool {
	p := r.URL.Path
	return p == "/health" ||
		(r.Method == http.MethodPost && strings.HasPrefix(p, "/kcd/v1/workers/") && strings.HasSuffix(p, "/heartbeat"))
}

// reservedOnly answers 503 to anything but a priority request on a
// connection of the reserved share, and closes that connection.
func reservedOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(reservedConn{}) != nil && !priority(r) {
			refuse(w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuse answers 503 and closes the connection at once: a slot of the
// reserved share is free again without waiting for the rest of the body
// or for the client to close (as a plain "Connection: close" would).
func refuse(w http.ResponseWriter) {
	body, _ := json.Marshal(ErrorMessage{ErrorCode: http.StatusServiceUnavailable,
		Message: "too many open connections to this node's REST API; retry later"})
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		w.Header().Set("Connection", "close")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write(body)
		return
	}
	defer conn.Close()
	_ = conn.SetWriteDeadline(time.Now().Add(ReservedTimeout))
	fmt.Fprintf(buf, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s", len(body), body)
	_ = buf.Flush()
}

// limitListener bounds the connections it has open at once to max; the
// last reserve of them are marked reserved.
type limitListener struct {
	net.Listener
	max, reserve int

	mu     sync.Mutex
	open   int
	freed  chan struct{} // signalled when a connection closes
	closed chan struct{}
	close  sync.Once
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, max: n, reserve: max(4, n/8), freed: make(chan struct{}, 1), closed: make(chan struct{})}
}

// Close closes the listener, and ends an Accept waiting for a slot.
func (l *limitListener) Close() error {
	l.close.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// Accept waits while all connections are open, then accepts one.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		full := l.open >= l.max
		l.mu.Unlock()
		if !full {
			break
		}
		select {
		case <-l.freed:
		case <-l.closed:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.open++
	reserved := l.open > l.max-l.reserve
	l.mu.Unlock()
	lc := &limitedConn{Conn: c, l: l, reserved: reserved}
	if reserved {
		_ = lc.SetReadDeadline(time.Time{}) // bounded by ReservedTimeout
	}
	return lc, nil
}

func (l *limitListener) release() {
	l.mu.Lock()
	l.open--
	l.mu.Unlock()
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

// Open is how many connections are open now.
func (l *limitListener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// limitedConn is a connection of a limitListener; a reserved one has every
// read deadline pulled to at most ReservedTimeout from when it is set.
type limitedConn struct {
	net.Conn
	l        *limitListener
	reserved bool
	once     sync.Once
}

func (c *limitedConn) SetReadDeadline(t time.Time) error {
	if c.reserved {
		if limit := time.Now().Add(ReservedTimeout); t.IsZero() || t.After(limit) {
			t = limit
		}
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *limitedConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.l.release)
	return err
}
