package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// closedURL is the URL of a port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	return url
}

// A client with several servers goes on to the next when one cannot be
// reached, keeps to the one that answered, and never sends a write twice
// when it may have reached a server.
func TestFallbacksTriedInTurn(t *testing.T) {
	var hits atomic.Int64
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"version":"4.0.0","commit":"x","kafka_cluster_id":"c"}`))
	}))
	defer good.Close()
	// dropping reads the request, then closes the connection unanswered:
	// the request reached a server and got no answer.
	var dropped atomic.Int64
	dropping := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dropped.Add(1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer dropping.Close()
	ctx := context.Background()

	c := NewWithOptions(closedURL(t), Options{Fallbacks: []string{good.URL}})
	if _, err := c.ServerInfo(ctx); err != nil {
		t.Fatalf("first server down, second up: %v", err)
	}
	if c.BaseURL() != good.URL {
		t.Errorf("BaseURL %s after the fallback answered; want %s", c.BaseURL(), good.URL)
	}

	// A read that reached a server and got no answer goes on.
	c = NewWithOptions(dropping.URL, Options{Fallbacks: []string{good.URL}})
	before := hits.Load()
	if _, err := c.ServerInfo(ctx); err != nil || hits.Load() != before+1 {
		t.Fatalf("read after a dropped connection: %v, %d answered", err, hits.Load()-before)
	}

	// A write that reached a server is not sent again elsewhere.
	c = NewWithOptions(dropping.URL, Options{Fallbacks: []string{good.URL}})
	before, droppedBefore := hits.Load(), dropped.Load()
	err := c.PauseConnector(ctx, "x")
	var ue *UnreachableError
	if !errors.As(err, &ue) || hits.Load() != before || dropped.Load() != droppedBefore+1 {
		t.Fatalf("write after a dropped connection: err %v, sent to the fallback %d times, to the first %d times; want an UnreachableError and no second send",
			err, hits.Load()-before, dropped.Load()-droppedBefore)
	}

	// None answers: the error names each.
	a, b := closedURL(t), closedURL(t)
	_, err = NewWithOptions(a, Options{Fallbacks: []string{b}}).ServerInfo(ctx)
	if err == nil || !errors.As(err, &ue) {
		t.Fatalf("no server up: %v", err)
	}
	for _, u := range []string{a, b} {
		if !strings.Contains(err.Error(), u) {
			t.Errorf("error %q does not name %s", err, u)
		}
	}
}
