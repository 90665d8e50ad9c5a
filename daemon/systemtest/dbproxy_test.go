package systemtest

import (
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// dbProxy is a TCP proxy between kcd and a real database, so that a test
// can make the database unreachable (Cut: every connection reset, new ones
// closed at once, as when the server is killed) and bring it back
// (Restore), and can slow the traffic towards it down (SetRate) so that a
// copy takes long enough to be interrupted.
type dbProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	rate  int           // bytes per second towards the database; 0: unlimited
	delay time.Duration // added to each write towards the database
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// startProxy listens on a free loopback port and forwards to target; it
// is closed when t ends.
func startProxy(t *testing.T, target string) *dbProxy {
	t.Helper()
	ln, err := net.Listen("tcp", mustFreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	p := &dbProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// Addr is the host:port to use instead of the database's.
func (p *dbProxy) Addr() string { return p.ln.Addr().String() }

// Cut resets every connection and refuses new ones until Restore.
func (p *dbProxy) Cut() {
	p.mu.Lock()
	p.down = true
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset, as from a killed server
		}
		c.Close()
	}
}

// Restore lets connections through again.
func (p *dbProxy) Restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// SetRate limits the bytes per second sent to the database over each
// connection (0: no limit).
func (p *dbProxy) SetRate(bytesPerSec int) {
	p.mu.Lock()
	p.rate = bytesPerSec
	p.mu.Unlock()
}

// SetDelay delays every chunk sent to the database by d (0: none), as a
// distant database would: each query takes d longer.
func (p *dbProxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

func (p *dbProxy) close() {
	p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

func (p *dbProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

// track registers c unless the proxy is down.
func (p *dbProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *dbProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	for _, c := range cs {
		delete(p.conns, c)
	}
	p.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

func (p *dbProxy) serve(client net.Conn) {
	if !p.track() {
		client.Close()
		return
	}
	server, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(client, server) {
		client.Close()
		server.Close()
		return
	}
	defer p.untrack(client, server)
	done := make(chan struct{}, 2)
	go func() { p.pipe(server, client, true); done <- struct{}{} }()
	go func() { p.pipe(client, server, false); done <- struct{}{} }()
	<-done // either side ends: end both
}

// pipe copies src to dst; towards the database (limited) at the rate set.
func (p *dbProxy) pipe(dst, src net.Conn, limited bool) {
	buf := make([]byte, 16<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && limited {
			p.mu.Lock()
			delay := p.delay
			p.mu.Unlock()
			if delay > 0 {
				time.Sleep(delay)
			}
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			if limited {
				p.mu.Lock()
				rate := p.rate
				p.mu.Unlock()
				if rate > 0 {
					// Pacing, not waiting: n bytes at rate take n/rate s.
					time.Sleep(time.Duration(float64(n) / float64(rate) * float64(time.Second)))
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// TestDBProxy: the proxy forwards both ways, Cut resets open connections
// and refuses new ones, Restore lets them through again.
func TestDBProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	p := startProxy(t, ln.Addr().String())
	echo := func(c net.Conn) error {
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		b := make([]byte, 4)
		if _, err := io.ReadFull(c, b); err != nil {
			return err
		}
		if string(b) != "ping" {
			return fmt.Errorf("echoed %q", b)
		}
		return nil
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := echo(c); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	p.Cut()
	if err := echo(c); err == nil {
		t.Fatal("an open connection still works after Cut")
	}
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		if echo(c2) == nil {
			t.Fatal("a new connection works after Cut")
		}
		c2.Close()
	}
	p.Restore()
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if err := echo(c3); err != nil {
		t.Fatalf("after Restore: %v", err)
	}
}
