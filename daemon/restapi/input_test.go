package restapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/coordinator"
	"github.com/kcd-project/kcd/daemon/herder"
	"github.com/kcd-project/kcd/daemon/herder/herdertest"
	"github.com/kcd-project/kcd/internal/syncbuf"
	"github.com/kcd-project/kcd/internal/testcerts"
	"github.com/kcd-project/kcd/raft/fsm"
)

// Names a connector could be created with but then not be addressed by,
// or whose store keys would not fit, are refused with a 400 before
// anything is written.
func TestUnservableConnectorNamesAreRefused(t *testing.T) {
	h, s := connectAPI(t)
	before, _ := s.Raw().Revision(context.Background())
	long := strings.Repeat("x", connectstore.MaxNameBytes+1)
	cfg := `"config":{"connector.class":"FakeSource","topic":"t"}`
	for _, c := range []struct {
		method, path, body, msg string
	}{
		{"POST", "/connectors", `{"name":"a/b",` + cfg + `}`, "must not contain '/'"},
		{"POST", "/connectors", `{"name":".",` + cfg + `}`, `must not be "."`},
		{"POST", "/connectors", `{"name":"..",` + cfg + `}`, `must not be ".."`},
		{"POST", "/connectors", "{\"name\":\"x\xffy\"," + cfg + `}`, "must be valid UTF-8"},
		{"POST", "/connectors", `{"name":"x\u0001y",` + cfg + `}`, "String may not contain control sequences"},
		{"POST", "/connectors", `{"name":"` + strings.Repeat("x", 1003) + `",` + cfg + `}`, fmt.Sprintf("at most %d bytes once URL-escaped", connectstore.MaxNameBytes)},
		{"POST", "/connectors", `{"name":"` + long + `",` + cfg + `}`, "once URL-escaped"},
		// Each é is two bytes, six once escaped.
		{"POST", "/connectors", `{"name":"` + strings.Repeat("é", connectstore.MaxNameBytes/6+1) + `",` + cfg + `}`, "once URL-escaped"},
		{"PUT", "/connectors/x%FFy/config", `{"connector.class":"FakeSource","topic":"t"}`, "must be valid UTF-8"},
		{"PUT", "/connectors/" + long + "/config", `{"connector.class":"FakeSource","topic":"t"}`, "once URL-escaped"},
	} {
		r := send(t, h, c.method, c.path, c.body)
		var e ErrorMessage
		if err := json.Unmarshal(r.body, &e); err != nil || r.status != 400 || e.ErrorCode != 400 || !strings.Contains(e.Message, c.msg) {
			t.Errorf("%s %s %.60s:\n got %d %.300s\nwant 400 with %q", c.method, c.path, c.body, r.status, r.body, c.msg)
		}
	}
	if after, _ := s.Raw().Revision(context.Background()); after != before {
		t.Errorf("refused requests wrote to the store: revision %d → %d", before, after)
	}
	// The longest name is fine, and reachable.
	longest := strings.Repeat("x", connectstore.MaxNameBytes)
	send(t, h, "POST", "/connectors", `{"name":"`+longest+`",`+cfg+`}`).expect(t, 201, "")
	send(t, h, "GET", "/connectors/"+longest+"/config", "").expect(t, 200, "")
}

// tasks.max is capped by the workers' setting: validate reports it on
// tasks.max in Kafka Connect's format, and create and update refuse it.
func TestTasksMaxAboveTheCapIsRefused(t *testing.T) {
	herdertest.Register()
	s := herdertest.Store(t)
	quiet := slog.New(slog.DiscardHandler)
	h := NewHandler(&fakeNode{ready: true, clusterID: "c"}, Options{Connect: herder.New(s, herder.Options{Logger: quiet, MaxTasksPerConnector: 50}), Logger: quiet})

	r := send(t, h, "PUT", "/connector-plugins/FakeSource/config/validate", `{"name":"v","connector.class":"FakeSource","topic":"t","tasks.max":"51"}`)
	var infos herder.ConfigInfos
	if err := json.Unmarshal(r.body, &infos); err != nil || r.status != 200 {
		t.Fatalf("validate: %d %s", r.status, r.body)
	}
	var errs []string
	for _, c := range infos.Configs {
		if c.Value.Name == "tasks.max" {
			errs = c.Value.Errors
		}
	}
	want := "Invalid value 51 for configuration tasks.max: Value must be no more than 50 (the workers' max-tasks-per-connector)"
	if infos.ErrorCount != 1 || len(errs) != 1 || errs[0] != want {
		t.Errorf("validate: error_count %d, tasks.max errors %q; want 1, %q", infos.ErrorCount, errs, want)
	}

	for _, c := range []struct{ method, path, body string }{
		{"POST", "/connectors", `{"name":"big","config":{"connector.class":"FakeSource","topic":"t","tasks.max":"1000000"}}`},
		{"PUT", "/connectors/big/config", `{"connector.class":"FakeSource","topic":"t","tasks.max":"51"}`},
	} {
		r := send(t, h, c.method, c.path, c.body)
		var e ErrorMessage
		if err := json.Unmarshal(r.body, &e); err != nil || r.status != 400 || !strings.Contains(e.Message, "Value must be no more than 50") {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.status, r.body)
		}
	}
	send(t, h, "POST", "/connectors", `{"name":"ok","config":{"connector.class":"FakeSource","topic":"t","tasks.max":"50"}}`).expect(t, 201, "")
	send(t, h, "PATCH", "/connectors/ok/config", `{"tasks.max":"51"}`).expect(t, 400, "")
}

// forwardCluster is a Cluster whose leader is elsewhere.
type forwardCluster struct{ leader string }

func (c forwardCluster) Info(context.Context) (ClusterInfo, error) { return ClusterInfo{}, nil }
func (c forwardCluster) AddMember(context.Context, NewMember) error {
	return errors.New("not the leader")
}
func (c forwardCluster) RemoveMember(context.Context, uint64) error {
	return errors.New("not the leader")
}
func (c forwardCluster) TransferLeader(context.Context, uint64) (uint64, error) {
	return 0, errors.New("not the leader")
}
func (c forwardCluster) Leader() (bool, string) { return false, c.leader }

type noCoordinator struct{}

func (noCoordinator) Heartbeat(context.Context, coordinator.Heartbeat) (coordinator.HeartbeatReply, error) {
	return coordinator.HeartbeatReply{}, errors.New("not the leader")
}
func (noCoordinator) Leave(context.Context, string) error { return errors.New("not the leader") }
func (noCoordinator) Plan(context.Context, string) (coordinator.PlanResult, error) {
	return coordinator.PlanResult{}, errors.New("not the leader")
}

// A request forwarded to the leader gets the leader's whole answer,
// however large, and a body over MaxBody is refused with a 413 rather than
// cut to size.
func TestForwardingNeverTruncates(t *testing.T) {
	answer := bytes.Repeat([]byte("a"), 6<<20) // over the old 4 MiB cut
	answer = append(append([]byte(`{"moves":[],"pad":"`), answer...), `"}`...)
	var got atomic.Int64
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(forwardedHeader) != "1" {
			t.Errorf("request reached the leader without the hop header")
		}
		switch r.URL.Path {
		case "/kcd/v1/rebalances/plan":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(answer)
		case "/kcd/v1/cluster/members":
			b, _ := io.ReadAll(r.Body)
			got.Store(int64(len(b)))
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{}`))
		}
	}))
	defer leader.Close()
	quiet := slog.New(slog.DiscardHandler)
	h := NewHandler(&fakeNode{ready: true}, Options{Cluster: forwardCluster{leader.URL}, Coordinator: noCoordinator{}, Logger: quiet})
	follower := httptest.NewServer(h)
	defer follower.Close()

	res, err := http.Get(follower.URL + "/kcd/v1/rebalances/plan")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 || !bytes.Equal(b, answer) {
		t.Errorf("forwarded answer: %d, %d of %d bytes, intact %v, err %v", res.StatusCode, len(b), len(answer), bytes.Equal(b, answer), err)
	}

	// A body of exactly MaxBody goes through whole; one byte more is a 413.
	body := `{"id":7,"peer_url":"http://x","pad":"` + strings.Repeat("p", MaxBody) + `"}`
	body = body[:MaxBody-2] + `"}`
	res, err = http.Post(follower.URL+"/kcd/v1/cluster/members", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 201 || got.Load() != MaxBody {
		t.Errorf("body of MaxBody: %d, leader got %d bytes of %d", res.StatusCode, got.Load(), MaxBody)
	}
	got.Store(0)
	res, err = http.Post(follower.URL+"/kcd/v1/cluster/members", "application/json", strings.NewReader(body+" "))
	if err != nil {
		t.Fatal(err)
	}
	var e ErrorMessage
	_ = json.NewDecoder(res.Body).Decode(&e)
	res.Body.Close()
	if res.StatusCode != 413 || e.ErrorCode != 413 || !strings.Contains(e.Message, "4194304") || got.Load() != 0 {
		t.Errorf("body over MaxBody: %d %+v, leader got %d bytes", res.StatusCode, e, got.Load())
	}
}

// The server's read timeout bounds how long a request may take to arrive,
// not how long a watch stream may last: a stream open for several read
// timeouts still delivers its events.
func TestWatchStreamOutlivesTheReadTimeout(t *testing.T) {
	st, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), fsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const readTimeout = 200 * time.Millisecond
	srv, lim := NewServer(NewHandler(&fakeNode{}, Options{Store: st, Logger: slog.New(slog.DiscardHandler)}), ln, ServerOptions{ReadTimeout: readTimeout})
	go func() { _ = srv.Serve(lim) }()
	defer srv.Close()
	base := "http://" + ln.Addr().String()

	req, _ := json.Marshal(StoreRequest{Prefix: []byte("w/")})
	wres, err := http.Post(base+"/kcd/v1/store/watch", "application/json", bytes.NewReader(req))
	if err != nil || wres.StatusCode != 200 {
		t.Fatalf("watch: %v %v", wres, err)
	}
	defer wres.Body.Close()
	lines := bufio.NewScanner(wres.Body)
	lines.Scan() // the start line
	opened := time.Now()
	for i := 0; time.Since(opened) < 5*readTimeout; i++ {
		key := fmt.Sprintf("w/%d", i)
		storePost(t, base, "put", StoreRequest{Key: []byte(key), Value: []byte("x")})
		if !lines.Scan() {
			t.Fatalf("the watch stream ended %v after it opened (read timeout %v): %v", time.Since(opened), readTimeout, lines.Err())
		}
		var m WatchMessage
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil || len(m.Events) != 1 || string(m.Events[0].KV.Key) != key {
			t.Fatalf("line %s: %v", lines.Bytes(), err)
		}
	}
}

type leaderCluster struct{ forwardCluster }

func (leaderCluster) Leader() (bool, string) { return true, "" }

type beatCoordinator struct{ noCoordinator }

func (beatCoordinator) Heartbeat(context.Context, coordinator.Heartbeat) (coordinator.HeartbeatReply, error) {
	return coordinator.HeartbeatReply{Leader: 1}, nil
}

// With every connection of the general share held by slow clients, new
// connections still serve /health and heartbeats from the reserved share,
// and answer anything else with a 503 at once.
func TestReservedConnectionsServeHealthAndHeartbeats(t *testing.T) {
	testReservedConnections(t, nil, nil)
}

// Over TLS, connections count from their accept and the reserved share is
// told apart the same way.
func TestReservedConnectionsOverTLS(t *testing.T) {
	ca := testcerts.NewCA(t, "ca")
	cert := ca.Issue(t, "rest", testcerts.Options{})
	srvTLS := &tls.Config{Certificates: []tls.Certificate{cert.TLS}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	testReservedConnections(t, srvTLS, &tls.Config{RootCAs: ca.Pool()})
}

func testReservedConnections(t *testing.T, srvTLS, cliTLS *tls.Config) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	h := NewHandler(&fakeNode{ready: true}, Options{Cluster: leaderCluster{}, Coordinator: beatCoordinator{}, Logger: quiet})
	srv, lim := NewServer(h, ln, ServerOptions{MaxConnections: 16, TLS: srvTLS}) // 12 general, 4 reserved
	srv.ErrorLog = log.New(io.Discard, "", 0)
	go func() { _ = srv.Serve(lim) }()
	defer srv.Close()
	addr := ln.Addr().String()
	scheme, dial := "http://", func() (net.Conn, error) { return net.Dial("tcp", addr) }
	if cliTLS != nil {
		scheme = "https://"
		dial = func() (net.Conn, error) { return tls.Dial("tcp", addr, cliTLS) }
	}
	open := lim.(interface{ Open() int }).Open

	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	slow := func() net.Conn {
		c, err := dial()
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		fmt.Fprintf(c, "POST /connectors HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
		return c
	}
	for range 12 {
		slow()
	}
	deadline := time.Now().Add(5 * time.Second)
	for open() < 12 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 12 slow connections accepted", open())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Slow clients beyond the general share get a 503 and are cut off.
	for range 8 {
		c := slow()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || res.StatusCode != 503 {
			t.Fatalf("slow client in the reserved share: %v %v", res, err)
		}
	}

	fresh := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: cliTLS}}
	for i := range 5 {
		res, err := fresh.Get(scheme + addr + "/health")
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("health %d: %v %v", i, res, err)
		}
		res.Body.Close()
		res, err = fresh.Post(scheme+addr+"/kcd/v1/workers/w/heartbeat", "application/json",
			strings.NewReader(`{"worker":{"id":"w","weight":1},"seen_revision":0,"running":[]}`))
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("heartbeat %d: %v %v", i, res, err)
		}
		res.Body.Close()
	}
	res, err := fresh.Get(scheme + addr + "/connectors")
	if err != nil {
		t.Fatal(err)
	}
	var e ErrorMessage
	_ = json.NewDecoder(res.Body).Decode(&e)
	res.Body.Close()
	if res.StatusCode != 503 || e.ErrorCode != 503 || !strings.Contains(e.Message, "too many open connections") {
		t.Errorf("other request in the reserved share: %d %+v", res.StatusCode, e)
	}
}

// The server's own errors reach the node's logger, not the process's
// stderr: a client that fails the TLS handshake (a scanner, plain HTTP to
// an HTTPS port) at debug only.
func TestServerErrorsGoToTheLogger(t *testing.T) {
	ca := testcerts.NewCA(t, "ca")
	cert := ca.Issue(t, "rest", testcerts.Options{})
	var logs syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, lim := NewServer(http.NotFoundHandler(), ln, ServerOptions{
		TLS:    &tls.Config{Certificates: []tls.Certificate{cert.TLS}, MinVersion: tls.VersionTLS12},
		Logger: logger,
	})
	go func() { _ = srv.Serve(lim) }()
	defer srv.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	_, _ = io.Copy(io.Discard, c) // the server answers and closes
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "TLS handshake error") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	out := logs.String()
	if !strings.Contains(out, `level=DEBUG msg="rest server" err="http: TLS handshake error`) {
		t.Fatalf("the failed handshake is not logged at debug through the logger:\n%s", out)
	}
}
