// Package tlsreload loads a TLS certificate with its key, and CA bundles,
// from PEM files, and loads them again when the files change, so that a
// rotated certificate or CA is used without a restart.
//
// A file is checked at most once per CheckInterval, when a handshake asks
// for it: its size, modification time and identity (a rename or a symlink
// swap, as Kubernetes does for secrets, counts as a change). A changed
// file that does not load (half written, a key that does not match its
// certificate) leaves the previous one in use; a warning names the file
// once per broken version, never its content.
package tlsreload

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"
)

// CheckInterval is how often, at most, the files are looked at again.
const CheckInterval = time.Second

// KeyPair is a certificate and its private key, reloaded from their files.
type KeyPair struct {
	w *watched[*tls.Certificate]
}

// LoadKeyPair loads the PEM certificate (with any intermediates after it)
// at certFile and the PEM key at keyFile; log gets reload notices.
func LoadKeyPair(certFile, keyFile string, log *slog.Logger) (*KeyPair, error) {
	w, err := newWatched([]string{certFile, keyFile}, func() (*tls.Certificate, error) {
		return loadKeyPair(certFile, keyFile)
	}, log)
	if err != nil {
		return nil, err
	}
	return &KeyPair{w: w}, nil
}

func loadKeyPair(certFile, keyFile string) (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("read certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	// X509KeyPair's errors quote no key material.
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certificate %s with key %s: %w", certFile, keyFile, err)
	}
	return &cert, nil
}

// Certificate is the current certificate (Leaf set).
func (k *KeyPair) Certificate() *tls.Certificate { return k.w.get() }

// Pool is a bundle of CA certificates, reloaded from its file.
type Pool struct {
	w *watched[*x509.CertPool]
}

// LoadPool loads the PEM CA certificates in file.
func LoadPool(file string, log *slog.Logger) (*Pool, error) {
	w, err := newWatched([]string{file}, func() (*x509.CertPool, error) {
		pem, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read CA bundle: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA bundle %s holds no PEM certificate", file)
		}
		return pool, nil
	}, log)
	if err != nil {
		return nil, err
	}
	return &Pool{w: w}, nil
}

// CertPool is the current pool.
func (p *Pool) CertPool() *x509.CertPool { return p.w.get() }

// ServerConfig is the TLS configuration of a server (TLS 1.2 or later,
// HTTP/1.1) that presents cert and, when clientCAs is not nil, requires
// of every client a certificate that clientCAs signed. Every handshake
// takes the current files.
func ServerConfig(cert *KeyPair, clientCAs *Pool) *tls.Config {
	base := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	// Without tickets every connection's client certificate is verified
	// against the current CAs: a resumed session would skip that.
	base.SessionTicketsDisabled = clientCAs != nil
	cfg := base.Clone()
	cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c := base.Clone()
		c.Certificates = []tls.Certificate{*cert.Certificate()}
		if clientCAs != nil {
			c.ClientCAs = clientCAs.CertPool()
			c.ClientAuth = tls.RequireAndVerifyClientCert
		}
		return c, nil
	}
	return cfg
}

// ClientConfig is the TLS configuration of a client (TLS 1.2 or later)
// that trusts the servers roots signed, as the file is now (nil: the
// system's roots), and presents cert (nil: none), as its files are at
// each handshake, when a server asks for a certificate. DialTLS takes
// the current roots at every connection.
func ClientConfig(roots *Pool, cert *KeyPair) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if cert != nil {
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return cert.Certificate(), nil
		}
	}
	if roots != nil {
		c.RootCAs = roots.CertPool()
	}
	return c
}

// DialTLS returns an http.Transport's DialTLSContext: it connects with
// dial and shakes hands, within handshakeTimeout, with ClientConfig as the
// files are at that moment, checking the server's certificate against the
// host dialled.
func DialTLS(roots *Pool, cert *KeyPair, dial func(ctx context.Context, network, addr string) (net.Conn, error), handshakeTimeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		cfg := ClientConfig(roots, cert)
		cfg.ServerName = host
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
		defer cancel()
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(hctx); err != nil {
			conn.Close()
			return nil, err
		}
		return tc, nil
	}
}

// watched is a value loaded from files, loaded again when they change.
type watched[T any] struct {
	paths    []string
	load     func() (T, error)
	log      *slog.Logger
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	val     T
	stats   []os.FileInfo // of the files val was loaded from
	checked time.Time
	warned  string // the broken version last warned about
}

func newWatched[T any](paths []string, load func() (T, error), log *slog.Logger) (*watched[T], error) {
	if log == nil {
		log = slog.Default()
	}
	w := &watched[T]{paths: paths, load: load, log: log, interval: CheckInterval, now: time.Now}
	stats, err := statAll(paths)
	if err != nil {
		return nil, err
	}
	if w.val, err = load(); err != nil {
		return nil, err
	}
	w.stats, w.checked = stats, w.now()
	return w, nil
}

// get returns the current value, loading the files again first when they
// changed since the last look, at most once per interval.
func (w *watched[T]) get() T {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if now.Sub(w.checked) < w.interval {
		return w.val
	}
	w.checked = now
	stats, err := statAll(w.paths)
	if err == nil && sameFiles(stats, w.stats) {
		return w.val
	}
	var v T
	if err == nil {
		v, err = w.load()
	}
	if err != nil {
		if version := describe(stats, err); version != w.warned {
			w.warned = version
			w.log.Warn("TLS file changed but does not load; keeping the previous one", "files", w.paths, "err", err)
		}
		return w.val
	}
	w.val, w.stats, w.warned = v, stats, ""
	w.log.Info("TLS file changed; loaded again", "files", w.paths)
	return v
}

func statAll(paths []string) ([]os.FileInfo, error) {
	out := make([]os.FileInfo, len(paths))
	for i, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		out[i] = fi
	}
	return out, nil
}

func sameFiles(a, b []os.FileInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !os.SameFile(a[i], b[i]) || !a[i].ModTime().Equal(b[i].ModTime()) || a[i].Size() != b[i].Size() {
			return false
		}
	}
	return true
}

// describe names a broken version of the files, to warn once per version.
func describe(stats []os.FileInfo, err error) string {
	s := err.Error()
	for _, fi := range stats {
		s += fmt.Sprintf("|%s %d %d", fi.Name(), fi.Size(), fi.ModTime().UnixNano())
	}
	return s
}
