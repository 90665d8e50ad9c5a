package remotestore

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/store"
)

// frozenNode listens but never accepts, as a SIGSTOPped process does: a
// connection completes in the kernel and nothing ever answers.
func frozenNode(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return "http://" + ln.Addr().String()
}

// A read whose first node is frozen is answered by another within the
// hedge delay and a round trip; the frozen node then ranks last, so reads,
// writes and the seed for leader-only requests avoid it.
func TestReadsMoveOffAFrozenNode(t *testing.T) {
	c := newCluster(t, 3)
	good := c.url[follower(c).ID()]
	frozen := frozenNode(t)
	w, err := New([]string{good}, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Put(t.Context(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	// RefreshInterval keeps the store from learning the other members:
	// the frozen node and one good one are all it knows.
	s, err := New([]string{frozen, good}, Options{RefreshInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 5 {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		start := time.Now()
		kv, found, err := s.Get(ctx, "k")
		cancel()
		if err != nil || !found || string(kv.Value) != "v" {
			t.Fatalf("read %d with a frozen node first: %q, %v, %v (after %v)", i, kv.Value, found, err, time.Since(start))
		}
		if took := time.Since(start); took > 500*time.Millisecond {
			t.Errorf("read %d took %v with a frozen node", i, took)
		}
	}
	if eps := s.Endpoints(); len(eps) < 2 || eps[0] == frozen || eps[len(eps)-1] != frozen {
		t.Fatalf("endpoints %v: the frozen node should rank last", eps)
	}
	// A write goes to the best-ranked node, not the frozen one.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.Put(ctx, "k2", []byte("v")); err != nil {
		t.Fatalf("write after the frozen node was demoted: %v", err)
	}
}

// A read that may be stale, sent to a node whose peers are down, is
// answered from its replica and reports how stale it may be.
func TestStaleReadThroughTheStoreAPI(t *testing.T) {
	c := newCluster(t, 3)
	id := follower(c).ID()
	s, err := New([]string{c.url[id]}, Options{RefreshInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Put(t.Context(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(t.Context(), "k"); err != nil {
		t.Fatal(err)
	}
	for oid := range c.url {
		if oid != id {
			c.stop(oid, false)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	sctx, st := store.AllowStale(ctx)
	kv, found, err := s.Get(sctx, "k")
	if err != nil || !found || string(kv.Value) != "v" {
		t.Fatalf("stale read on a cut-off node: %q, %v, %v", kv.Value, found, err)
	}
	if age, stale := st.Stale(); !stale || age <= 0 {
		t.Fatalf("stale read not marked: stale=%v age=%v", stale, age)
	}
}

// freezer is a TCP proxy to a node that can be frozen: it then forwards
// nothing more either way and accepts no more connections, as a
// SIGSTOPped node would.
type freezer struct {
	ln     net.Listener
	frozen chan struct{}
	done   chan struct{} // closed when the test ends
	once   sync.Once

	mu    sync.Mutex
	conns []net.Conn
}

func newFreezer(t *testing.T, to string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, frozen: make(chan struct{}), done: make(chan struct{})}
	t.Cleanup(func() {
		f.freeze()
		close(f.done)
		ln.Close()
		f.mu.Lock()
		for _, c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
	})
	addr := strings.TrimPrefix(to, "http://")
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.conns = append(f.conns, in)
			f.mu.Unlock()
			select {
			case <-f.frozen:
				continue // never served
			default:
			}
			out, err := net.Dial("tcp", addr)
			if err != nil {
				in.Close()
				continue
			}
			go f.pipe(in, out)
			go f.pipe(out, in)
		}
	}()
	return f
}

func (f *freezer) url() string { return "http://" + f.ln.Addr().String() }

func (f *freezer) freeze() { f.once.Do(func() { close(f.frozen) }) }

// pipe copies src to dst until frozen, then holds both open and silent.
func (f *freezer) pipe(src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-f.frozen:
			<-f.done // silent, as a stopped process, until the test ends
			src.Close()
			dst.Close()
			return
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			src.Close()
			dst.Close()
			return
		}
	}
}

// A watch whose node freezes (its stream goes silent, its connections
// stay open) resumes on another node within about a second: it asks for
// frequent heartbeats and counts a silent stream as broken.
func TestWatchLeavesAFrozenNode(t *testing.T) {
	c := newCluster(t, 3)
	id := follower(c).ID()
	fz := newFreezer(t, c.url[id])
	var others []string
	for oid, u := range c.url {
		if oid != id {
			others = append(others, u)
		}
	}
	s, err := New(append([]string{fz.url()}, others...), Options{RefreshInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ws, err := New(others, Options{RefreshInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ctx := t.Context()
	rev, err := ws.Put(ctx, "w/0", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, "w/", rev)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if ep := s.Endpoints()[0]; ep != fz.url() {
		t.Fatalf("the watch went to %s, not to the node that will freeze", ep)
	}
	fz.freeze()
	frozeAt := time.Now()
	if _, err := ws.Put(ctx, "w/1", []byte("v")); err != nil {
		t.Fatal(err)
	}
	select {
	case ev, ok := <-w.Events():
		if !ok {
			t.Fatalf("watch ended: %v", w.Err())
		}
		if ev.KV.Key != "w/1" {
			t.Fatalf("event %q, want w/1", ev.KV.Key)
		}
		t.Logf("the event written after the freeze arrived %v after it", time.Since(frozeAt).Round(time.Millisecond))
	case <-time.After(3 * time.Second):
		t.Fatalf("no event 3 s after the watch's node froze")
	}
}

// A node that freezes while nothing is read is demoted by the probe within
// a few hundred milliseconds, so the next write goes to another node.
func TestWritesLeaveAFrozenNode(t *testing.T) {
	c := newCluster(t, 3)
	id := follower(c).ID()
	fz := newFreezer(t, c.url[id])
	var others []string
	for oid, u := range c.url {
		if oid != id {
			others = append(others, u)
		}
	}
	s, err := New(append([]string{fz.url()}, others...), Options{RefreshInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Put(t.Context(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if ep := s.Endpoints()[0]; ep != fz.url() {
		t.Fatalf("the first write went to %s, not to the node that will freeze", ep)
	}
	fz.freeze()
	frozeAt := time.Now()
	for s.Endpoints()[0] == fz.url() {
		if time.Since(frozeAt) > 2*time.Second {
			t.Fatalf("the frozen node still ranks first %v after it froze", time.Since(frozeAt))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the frozen node was demoted %v after it froze", time.Since(frozeAt).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.Put(ctx, "k2", []byte("v")); err != nil {
		t.Fatalf("write after the node froze: %v", err)
	}
}

// slowNode answers every store read after delay and counts them; anything
// else (the cluster, probes) at once.
func slowNode(t *testing.T, delay time.Duration, reads *atomic.Int64) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/kcd/v1/store/get" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{}`))
			return
		}
		reads.Add(1)
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		found := true
		_ = json.NewEncoder(w).Encode(api.StoreResponse{Revision: 1, Found: &found, KV: &api.StoreKV{Key: []byte("k"), Value: []byte("v"), ModRevision: 1}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// When every node answers slower than HedgeDelay as a rule (a loaded
// cluster), reads are not sent twice: the hedge delay follows the usual
// latency. A node slower than usual is still left.
func TestHedgeDelayFollowsTheUsualLatency(t *testing.T) {
	var reads atomic.Int64
	a, b := slowNode(t, 150*time.Millisecond, &reads), slowNode(t, 150*time.Millisecond, &reads)
	s, err := New([]string{a, b}, Options{RefreshInterval: time.Hour, ProbeInterval: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 20
	for i := range n {
		if _, found, err := s.Get(t.Context(), "k"); err != nil || !found {
			t.Fatalf("read %d: %v, %v", i, found, err)
		}
	}
	// The first read knows no latency yet and hedges at HedgeDelay.
	if got := reads.Load(); got > n+2 {
		t.Errorf("%d reads sent for %d answered at a steady 150 ms: hedged at HedgeDelay though every node is that slow", got, n)
	}
	if d := s.hedgeDelay(); d <= 150*time.Millisecond || d > maxHedgeFactor*100*time.Millisecond {
		t.Errorf("hedge delay %v after reads of 150 ms", d)
	}

	// A frozen node first: left within the (longer) hedge delay.
	frozen := frozenNode(t)
	f, err := New([]string{frozen, a}, Options{RefreshInterval: time.Hour, ProbeInterval: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.sampleRead(150 * time.Millisecond)
	start := time.Now()
	if _, found, err := f.Get(t.Context(), "k"); err != nil || !found {
		t.Fatalf("read with a frozen node first: %v, %v", found, err)
	}
	if took := time.Since(start); took > maxHedgeFactor*100*time.Millisecond+500*time.Millisecond {
		t.Errorf("read with a frozen node first took %v", took)
	}
}

// Watch streams do not take the connections requests need: with more
// watches open on a node than requests may hold connections to it, reads
// and writes still go through at once.
func TestWatchesLeaveConnectionsForRequests(t *testing.T) {
	c := newCluster(t, 3)
	s, err := New([]string{c.url[follower(c).ID()]}, Options{RefreshInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	for range maxConnsPerNode + 2 {
		w, err := s.Watch(t.Context(), "w/", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	if _, err := s.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatalf("write with %d watches open: %v", maxConnsPerNode+2, err)
	}
	if _, found, err := s.Get(ctx, "k"); err != nil || !found {
		t.Fatalf("read with %d watches open: %v, %v", maxConnsPerNode+2, found, err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("%d watches, a write and a read took %v: they waited for connections", maxConnsPerNode+2, took)
	}
}
