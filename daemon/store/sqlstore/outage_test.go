package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/kcd-project/kcd/internal/testenv"
	"github.com/kcd-project/kcd/store"

	"github.com/kcd-project/kcd/internal/syncbuf"
)

// proxy forwards TCP connections from addr to target until cut, which
// closes every connection and the listener so that new ones are refused.
type proxy struct {
	t      *testing.T
	addr   string
	target string

	mu      sync.Mutex
	stalled bool // accept, then forward nothing: a database that hangs
	ln      net.Listener
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

// newProxy reserves the proxy's address; it listens from up on.
func newProxy(t *testing.T) *proxy {
	addr, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, addr: addr, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() { p.cut(); p.wg.Wait() })
	return p
}

// up listens again; stalled says whether it forwards.
func (p *proxy) up() { p.upMode(false) }

func (p *proxy) upMode(stalled bool) {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("proxy listen %s: %v", p.addr, err)
	}
	p.mu.Lock()
	p.ln, p.stalled = ln, stalled
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.serve(c) })
		}
	})
}

func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) serve(c net.Conn) {
	if !p.track(c) {
		return
	}
	p.mu.Lock()
	stalled := p.stalled
	p.mu.Unlock()
	if stalled {
		io.Copy(io.Discard, c) // until cut
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(up) {
		c.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { io.Copy(up, c); up.Close() })
	wg.Go(func() { io.Copy(c, up); c.Close() })
	wg.Wait()
}

// cut closes the listener and every connection.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// viaAddr returns dsn pointed at addr instead of its database, and the
// database's address.
func viaAddr(t *testing.T, name, dsn, addr string) (newDSN, target string) {
	if name == "mysql" {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		target, cfg.Addr = cfg.Addr, addr
		return cfg.FormatDSN(), target
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	target, u.Host = u.Host, addr
	return u.String(), target
}

// logBuffer captures slog output for the test, restoring the default
// logger after.
func logBuffer(t *testing.T) *syncbuf.Buffer {
	var buf syncbuf.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &buf
}

// wantNoSecret fails when text holds the DSN or its password.
func wantNoSecret(t *testing.T, what, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("%s holds a secret (%d bytes): %s", what, len(s), strings.ReplaceAll(text, s, "<SECRET>"))
		}
	}
}

// TestIntegrationOutage cuts every connection between the store and its
// database and refuses new ones: writes fail within op_timeout with an
// error that names the backend and holds no secret; once the database is
// back, writes succeed and an open watcher resumes with no gap and no
// repeat, including the revisions another client wrote meanwhile.
func TestIntegrationOutage(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			dsn := testenv.Require(t, b.env)
			logs := logBuffer(t)
			password := dialectOf(b.name).secrets(dsn)
			prefix := freshPrefix(t, b.name, dsn)
			p := newProxy(t)
			proxied, target := viaAddr(t, b.name, dsn, p.addr)
			p.target = target
			p.up()
			const opTimeout = time.Second
			open := func(dsn string) store.Store {
				s, err := store.Open(t.Context(), b.name, map[string]string{
					"dsn": dsn, "table_prefix": prefix, "op_timeout": opTimeout.String(), "poll_interval": "50ms",
				})
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
			s := open(proxied)
			direct := open(dsn) // another client of the same tables, not behind the proxy
			ctx := t.Context()

			w, err := s.Watch(ctx, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			var written []int64 // every acknowledged revision, in order
			put := func(st store.Store, key string) error {
				rev, err := st.Put(ctx, key, []byte(key))
				if err == nil {
					written = append(written, rev)
				}
				return err
			}
			for i := range 3 {
				if err := put(s, fmt.Sprintf("before/%d", i)); err != nil {
					t.Fatal(err)
				}
			}

			// First the database hangs (connections accepted, never
			// answered), then it is gone (connections refused).
			for _, mode := range []string{"hangs", "refuses"} {
				p.cut()
				if mode == "hangs" {
					p.upMode(true)
				}
				for _, op := range []string{"put", "get"} {
					start := time.Now()
					var err error
					if op == "put" {
						err = put(s, "during")
					} else {
						_, _, err = s.Get(ctx, "before/0")
					}
					took := time.Since(start)
					if err == nil {
						t.Fatalf("%s succeeded while the database %s", op, mode)
					}
					if took > opTimeout+time.Second {
						t.Errorf("%s failed after %v while the database %s, want within op_timeout %v", op, took, mode, opTimeout)
					}
					if !strings.HasPrefix(err.Error(), b.name+" store: "+op) {
						t.Errorf("%s error %q does not name the backend", op, err)
					}
					wantNoSecret(t, op+" error", err.Error(), append([]string{dsn, proxied}, password...)...)
					t.Logf("%s while the database %s failed after %v: %v", op, mode, took.Round(time.Millisecond), err)
				}
			}
			// Meanwhile another client writes: the watcher must get these too.
			for i := range 3 {
				if err := put(direct, fmt.Sprintf("meanwhile/%d", i)); err != nil {
					t.Fatal(err)
				}
			}

			// The pool still holds connections the outage broke: the
			// first write after the database is back succeeds all the same.
			p.up()
			if err := put(s, "after/0"); err != nil {
				t.Fatalf("first write after the database came back: %v", err)
			}
			for i := 1; i < 3; i++ {
				if err := put(s, fmt.Sprintf("after/%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			// A restart between two writes: every pooled connection is
			// broken, and the next write goes through all the same.
			p.cut()
			p.up()
			if err := put(s, "after/restart"); err != nil {
				t.Fatalf("first write after a restart of the database: %v", err)
			}
			for i, want := range written {
				ev := nextEvent(t, w)
				if ev.KV.ModRevision != want {
					t.Fatalf("event %d at revision %d (%q), want %d: a gap or a repeat across the outage", i, ev.KV.ModRevision, ev.KV.Key, want)
				}
			}
			for i := 1; i < len(written); i++ {
				if written[i] != written[i-1]+1 {
					t.Fatalf("acknowledged revisions %v are not consecutive", written)
				}
			}
			select {
			case ev, ok := <-w.Events():
				if ok {
					t.Fatalf("extra event %q at %d", ev.KV.Key, ev.KV.ModRevision)
				}
				t.Fatalf("watch ended: %v", w.Err())
			case <-time.After(200 * time.Millisecond):
			}
			if !strings.Contains(logs.String(), "watch feed") {
				t.Errorf("the feed logged nothing about the outage; logs:\n%s", logs)
			}
			wantNoSecret(t, "logs", logs.String(), append([]string{dsn, proxied}, password...)...)
		})
	}
}

// TestIntegrationOpenErrorsHoldNoSecret opens with a wrong password: the
// error says why and holds neither the DSN nor the password, before and
// after store.Open's own redaction.
func TestIntegrationOpenErrorsHoldNoSecret(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			dsn := testenv.Require(t, b.env)
			logs := logBuffer(t)
			const wrong = "Wr0ng-Pa55word-xyz"
			var bad string
			if b.name == "mysql" {
				cfg, err := mysql.ParseDSN(dsn)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Passwd = wrong
				bad = cfg.FormatDSN()
			} else {
				u, err := url.Parse(dsn)
				if err != nil {
					t.Fatal(err)
				}
				u.User = url.UserPassword(u.User.Username(), wrong)
				bad = u.String()
			}
			settings := map[string]string{"dsn": bad, "table_prefix": freshPrefix(t, b.name, dsn), "op_timeout": "3s"}
			_, err := open(t.Context(), dialectOf(b.name), settings)
			if err == nil {
				t.Fatal("open with a wrong password succeeded")
			}
			wantNoSecret(t, "error", err.Error(), bad, wrong)
			for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(u) {
				if _, ok := u.(*scrubbed); ok {
					break // below this the driver's own text
				}
				wantNoSecret(t, "wrapped error", u.Error(), bad, wrong)
			}
			if !strings.Contains(err.Error(), b.name+" store: connect") {
				t.Errorf("error %q does not say what failed", err)
			}
			_, err = store.Open(t.Context(), b.name, settings)
			if err == nil {
				t.Fatal("store.Open with a wrong password succeeded")
			}
			wantNoSecret(t, "store.Open error", err.Error(), bad, wrong)
			wantNoSecret(t, "logs", logs.String(), bad, wrong)
			t.Logf("wrong password: %v", err)
		})
	}
}

// TestOpenUnreachableHoldsNoSecret opens a DSN whose database is not there:
// the error comes within op_timeout and holds neither DSN nor password.
func TestOpenUnreachableHoldsNoSecret(t *testing.T) {
	addr, err := testenv.FreeAddr() // reserved, nothing listens
	if err != nil {
		t.Fatal(err)
	}
	const pw = "S3cret-Unreachable-pw"
	for name, dsn := range map[string]string{
		"mysql":    "kcd:" + pw + "@tcp(" + addr + ")/kcd",
		"postgres": "postgres://kcd:" + pw + "@" + addr + "/kcd?sslmode=disable&connect_timeout=1",
	} {
		t.Run(name, func(t *testing.T) {
			logs := logBuffer(t)
			start := time.Now()
			_, err := open(context.Background(), dialectOf(name), map[string]string{"dsn": dsn, "op_timeout": "2s"})
			if err == nil {
				t.Fatal("open of an unreachable database succeeded")
			}
			if took := time.Since(start); took > 4*time.Second {
				t.Errorf("open failed after %v, want within op_timeout", took)
			}
			wantNoSecret(t, "error", err.Error(), dsn, pw)
			wantNoSecret(t, "logs", logs.String(), dsn, pw)
			if !strings.HasPrefix(err.Error(), name+" store: connect") {
				t.Errorf("error %q does not say what failed", err)
			}
			t.Logf("unreachable: %v", err)
		})
	}
}

// TestOpenHangingDatabase opens a DSN whose server accepts connections and
// never answers: Open fails within op_timeout, saying so, with no secret.
func TestOpenHangingDatabase(t *testing.T) {
	p := newProxy(t)
	p.upMode(true)
	const pw = "S3cret-Hanging-pw"
	for name, dsn := range map[string]string{
		"mysql":    "kcd:" + pw + "@tcp(" + p.addr + ")/kcd",
		"postgres": "postgres://kcd:" + pw + "@" + p.addr + "/kcd?sslmode=disable",
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			_, err := open(context.Background(), dialectOf(name), map[string]string{"dsn": dsn, "op_timeout": "1s"})
			took := time.Since(start)
			if err == nil {
				t.Fatal("open of a database that never answers succeeded")
			}
			if took > 3*time.Second {
				t.Errorf("open failed after %v, want about op_timeout (1s)", took)
			}
			if !strings.Contains(err.Error(), name+" store: connect: the database did not answer within op_timeout 1s") {
				t.Errorf("error %q does not say the database did not answer", err)
			}
			wantNoSecret(t, "error", err.Error(), dsn, pw)
		})
	}
}

// TestOpenMalformedDSNHoldsNoSecret: a DSN the driver cannot parse is
// refused without echoing it or its password.
func TestOpenMalformedDSNHoldsNoSecret(t *testing.T) {
	const pw = "S3cret-Malformed-pw"
	for _, tc := range []struct{ name, dsn string }{
		{"mysql", "kcd:" + pw + "@tcp(127.0.0.1:3306)kcd"},
		{"mysql", "kcd:" + pw + "@tcp(127.0.0.1:3306)/kcd?interpolateParams=maybe"},
		{"postgres", "postgres://kcd:" + pw + "@127.0.0.1:notaport/kcd"},
		{"postgres", "host=127.0.0.1 password=" + pw + " sslmode=sometimes"},
	} {
		_, err := store.Open(context.Background(), tc.name, map[string]string{"dsn": tc.dsn})
		if err == nil {
			t.Errorf("%s: Open of a malformed DSN succeeded", tc.name)
			continue
		}
		wantNoSecret(t, tc.name+" error", err.Error(), tc.dsn, pw)
		_, err = open(context.Background(), dialectOf(tc.name), map[string]string{"dsn": tc.dsn})
		wantNoSecret(t, tc.name+" error before store.Open's redaction", err.Error(), tc.dsn, pw)
		t.Logf("%s: %v", tc.name, err)
	}
}

// TestScrub checks the masking of driver messages: the DSN, the password
// the driver parses out of it, and its percent-decoded form.
func TestScrub(t *testing.T) {
	for _, tc := range []struct {
		d        dialect
		dsn, msg string
		secret   string
	}{
		{mysqlDialect{}, "kcd:pa:ss@tcp(db:3306)/kcd", "auth failed for pa:ss", "pa:ss"},
		{postgresDialect{}, "postgres://kcd:p%40ssword@db/kcd", "auth failed for p@ssword", "p@ssword"},
		{postgresDialect{}, "host=db user=kcd password=s3cr3t-pw dbname=kcd", "using s3cr3t-pw", "s3cr3t-pw"},
		{postgresDialect{}, "host=db user=kcd password=s3cr3t-pw dbname=kcd", "dsn host=db user=kcd password=s3cr3t-pw dbname=kcd", "s3cr3t-pw"},
	} {
		s := &Store{d: tc.d, cfg: config{dsn: tc.dsn}, secrets: append([]string{tc.dsn}, tc.d.secrets(tc.dsn)...)}
		got := s.scrub(tc.msg)
		if strings.Contains(got, tc.secret) || !strings.Contains(got, "[redacted]") {
			t.Errorf("%s: scrub(%q) = %q", tc.d.name(), tc.msg, got)
		}
	}
}
