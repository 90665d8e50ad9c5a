package coordinator

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/raftstore"
	"github.com/kcd-project/kcd/raft/rafttest"
)

// A heartbeat that hangs (a node forwarding it to a leader that froze)
// must not hold back the next ones: when the way to the coordinator is
// back within the session timeout, the session never lapses.
func TestHungHeartbeatsDoNotLapseTheSession(t *testing.T) {
	const (
		sessionTimeout = 3 * time.Second
		interval       = 100 * time.Millisecond
		// Longer than a heartbeat's own timeout (SessionTimeout/2) and an
		// interval: heartbeats sent one after another would have two hang.
		hangFor = 2 * time.Second
	)
	r := newOneNode(t)
	st, ctx, wg := r.st, r.ctx, &r.wg
	coord := r.coordinator(t, sessionTimeout)
	backend := heartbeatServer(t, coord)
	target, _ := url.Parse(backend.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var hangUntil atomic.Int64 // unix nanos; requests received before it hang
	var hung atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if time.Now().UnixNano() < hangUntil.Load() {
			hung.Add(1)
			// Read the body: only then does the server notice that the
			// member gave up on the request and closed the connection.
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	m, err := NewMember(MemberConfig{
		Worker:         WorkerInfo{ID: "w1", Weight: 1},
		Store:          st,
		Endpoints:      func() []string { return []string{front.URL} },
		SessionTimeout: sessionTimeout, HeartbeatInterval: interval,
		Logger: rafttest.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); m.Run(ctx) }()
	waitFor(t, 10*time.Second, "w1's session to be held", m.Alive)

	start := time.Now()
	hangUntil.Store(start.Add(hangFor).UnixNano())
	lapses := 0
	for time.Since(start) < hangFor+sessionTimeout {
		if !m.Alive() {
			lapses++
		}
		time.Sleep(5 * time.Millisecond) // a poll over a fixed window, not a wait
	}
	if hung.Load() == 0 {
		t.Fatal("no heartbeat hung: the test did not test anything")
	}
	if lapses > 0 {
		_, last := m.Session()
		t.Fatalf("the session lapsed (%d of the polls saw it lapsed; %d heartbeats hung for %v, last answered one sent %v after the hang began)",
			lapses, hung.Load(), hangFor, last.Sub(start))
	}
}

// A heartbeat refused (as when the coordinator of a leader just elected is
// not running yet, at a node's start) is sent again within milliseconds,
// not after the heartbeat interval: with an interval of an hour here, only
// that retry can get the session held.
func TestFailedHeartbeatIsRetriedSoon(t *testing.T) {
	r := newOneNode(t)
	st, ctx, wg := r.st, r.ctx, &r.wg
	coord := r.coordinator(t, 30*time.Second)
	backend := heartbeatServer(t, coord)
	target, _ := url.Parse(backend.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var beats atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if beats.Add(1) == 1 {
			http.Error(w, `{"error_code":503,"message":"coordinator: this node is not the leader; retry"}`, http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	m, err := NewMember(MemberConfig{
		Worker:         WorkerInfo{ID: "w1", Weight: 1},
		Store:          st,
		Endpoints:      func() []string { return []string{front.URL} },
		SessionTimeout: 30 * time.Second, HeartbeatInterval: time.Hour,
		Logger: rafttest.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); m.Run(ctx) }()
	waitFor(t, 10*time.Second, "w1's session to be held", m.Alive)
}

// oneNode is a store on a one-member Raft group, and a context that ends
// with the test, which then waits for the goroutines counted in wg.
type oneNode struct {
	node *raft.Node
	st   *raftstore.Store
	ctx  context.Context
	wg   sync.WaitGroup
}

func newOneNode(t *testing.T) *oneNode {
	rc := rafttest.NewCluster(t, 1, nil)
	r := &oneNode{node: rc.Leader(10 * time.Second)}
	r.st = raftstore.New(r.node)
	t.Cleanup(func() { r.st.Close() })
	ctx, cancel := context.WithCancel(t.Context())
	r.ctx = ctx
	t.Cleanup(func() { cancel(); r.wg.Wait() })
	return r
}

// coordinator runs a coordinator on the node until the test ends.
func (r *oneNode) coordinator(t *testing.T, sessionTimeout time.Duration) *Coordinator {
	t.Helper()
	coord, err := New(Config{Store: r.st, Raft: r.node, SessionTimeout: sessionTimeout, Logger: rafttest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	r.wg.Add(1)
	go func() { defer r.wg.Done(); coord.Run(r.ctx) }()
	return coord
}
