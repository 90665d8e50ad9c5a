package remotestore

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A write does not wait for connections that reads hold: after a store
// switch every supervisor of a follower reads again through the leader, and
// the follower's offset commits must not queue behind those reads.
func TestWriteNotQueuedBehindReads(t *testing.T) {
	release := make(chan struct{})
	var reading atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/kcd/v1/store/get":
			reading.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
			w.Write([]byte(`{"revision":7,"found":false}`))
		case "/kcd/v1/store/put":
			w.Write([]byte(`{"revision":8}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()

	s, err := New([]string{srv.URL}, Options{ProbeInterval: -1, HedgeDelay: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// More reads than the node's read connections: all of them busy, the
	// rest waiting for one.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := range 2 * maxConnsPerNode {
		wg.Go(func() { _, _, _ = s.Get(ctx, "k"+string(rune('a'+i))) })
	}
	deadline := time.Now().Add(10 * time.Second)
	for reading.Load() < maxConnsPerNode {
		if time.Now().After(deadline) {
			t.Fatalf("%d reads reached the node within 10 s; want %d", reading.Load(), maxConnsPerNode)
		}
		time.Sleep(5 * time.Millisecond)
	}

	wctx, wcancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer wcancel()
	start := time.Now()
	rev, err := s.Put(wctx, "offset", []byte("v"))
	if err != nil || rev != 8 {
		t.Fatalf("Put while %d reads hold the read connections: rev %d, %v after %v; want 8 at once", maxConnsPerNode, rev, err, time.Since(start))
	}
	if n := reading.Load(); n > maxConnsPerNode {
		t.Errorf("%d reads reached the node at once; want at most %d", n, maxConnsPerNode)
	}
	unblock()
	cancel()
	wg.Wait()
}

// Endpoints puts the preferred node first, ignores a preference it does
// not know, and still ranks a demoted preferred node last.
func TestEndpointsPrefer(t *testing.T) {
	var prefer atomic.Value
	prefer.Store("")
	urls := []string{"http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"}
	s, err := New(urls, Options{
		ProbeInterval: -1, RefreshInterval: time.Hour, Logger: slog.New(slog.DiscardHandler),
		Prefer: func() string { return prefer.Load().(string) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check := func(what string, want ...string) {
		t.Helper()
		got := s.Endpoints()
		if len(got) != len(want) {
			t.Fatalf("%s: Endpoints() = %v; want %v", what, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: Endpoints() = %v; want %v", what, got, want)
			}
		}
	}
	check("no preference", urls...)
	prefer.Store(urls[2] + "/")
	check("node 3 preferred", urls[2], urls[0], urls[1])
	prefer.Store("http://127.0.0.1:9")
	check("an unknown node preferred", urls...)
	prefer.Store(urls[1])
	s.demote(urls[1])
	check("the preferred node demoted", urls[0], urls[2], urls[1])
}
