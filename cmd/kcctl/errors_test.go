package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/internal/testenv"
)

// Usage errors, cobra's own included, exit 2 with a hint, and say what
// was typed and what is wanted, not what Go's parsers said. Nothing is
// sent: the server is not even reachable.
func TestUsageErrorsEverywhereExitTwo(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "bogus"}, `unknown command "bogus" for "kcctl get"`},
		{[]string{"cluster", "add", "4"}, `required flag(s) "peer-url" not set`},
		{[]string{"cluster", "transfer-leader", "--to", "abc"}, `--to must be a whole number from 0 up, got "abc"`},
		{[]string{"rebalance", "history", "--limit", "abc"}, `--limit must be a number, got "abc"`},
		{[]string{"--request-timeout", "soon", "worker", "list"}, `--request-timeout must be a duration such as 30s, 2m or 1h, got "soon"`},
		{[]string{"--request-timeout", "0s", "worker", "list"}, `--request-timeout must be above 0`},
		{[]string{"--server", "http://[::1", "worker", "list"}, `server "http://[::1" is not host:port or an http:// or https:// URL`},
		{[]string{"worker", "weight", "w1", "abc"}, `worker weight must be a number from 0 up, got "abc"`},
		{[]string{"cluster", "bogus"}, `unknown command "bogus" for "kcctl cluster"`},
		{[]string{"--bogus"}, `unknown flag: --bogus`},
	} {
		args := tc.args
		if args[0] != "--server" {
			args = append([]string{"--server", "http://127.0.0.1:1"}, args...)
		}
		code, out, errOut := kcctl(t, args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "Error: "+tc.want) || !strings.Contains(errOut, "kcctl --help") ||
			strings.Contains(errOut, "strconv") || strings.Contains(errOut, "time: ") {
			t.Errorf("%v: exit %d, out %q, stderr %q", tc.args, code, out, errOut)
		}
	}
}

// A named thing the server does not have exits 3, with the server's
// message; a client mistake on a cluster change is a 4xx, never a 500.
func TestNotFoundExitsThree(t *testing.T) {
	url := startNode(t)
	hostPort := strings.TrimPrefix(url, "http://")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cluster", "transfer-leader", "--to", "7"}, "the cluster has no member 7 (its members: 1) (HTTP 404)"},
		{[]string{"cluster", "remove", "9"}, "the cluster has no member 9"},
		{[]string{"worker", "drain", "nope:1"}, `no worker "nope:1" is known to the cluster`},
		{[]string{"worker", "weight", "nope:1", "2"}, `no worker "nope:1" is known to the cluster`},
		{[]string{"rebalance", "plan", "--drain", "nope:1"}, `coordinator: unknown worker: no worker "nope:1" has a session (HTTP 404)`},
		{[]string{"assignments", "--connector", "nope"}, `no connector "nope"`},
	} {
		// host:port alone is the server's http:// URL.
		code, out, errOut := kcctl(t, append([]string{"--server", hostPort}, tc.args...)...)
		if code != exitNotFound || out != "" || !strings.Contains(errOut, "Error: "+tc.want) {
			t.Errorf("%v: exit %d, out %q, stderr %q", tc.args, code, out, errOut)
		}
	}
	if out := ok(t, hostPort, "version", "-o", "name"); !strings.Contains(out, "kcd/") {
		t.Errorf("--server host:port: %q", out)
	}
	// The refused ids were stored nowhere: --force stores them.
	out := ok(t, url, "worker", "weight", "nope:1", "2", "--force")
	if out != "worker/nope:1 weight set to 2\n" {
		t.Errorf("--force: %q", out)
	}
}

// kafkaConnectLike answers as Kafka Connect does: its root, and 404 in
// Kafka Connect's error shape on any path it lacks, /kcd/v1/... included.
func kafkaConnectLike() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/" {
			fmt.Fprint(w, `{"version":"4.3.1","commit":"abc","kafka_cluster_id":"k1"}`)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error_code":404,"message":"HTTP 404 Not Found"}`)
	})
}

// Pointed at a server that is not kcd, kcctl says so instead of "HTTP 404",
// and exits 1: nothing named was missing.
func TestNotKcdServerIsSaidSo(t *testing.T) {
	connect := httptest.NewServer(kafkaConnectLike())
	defer connect.Close()
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	for _, tc := range []struct {
		url, want string
	}{
		{connect.URL, "the server at " + connect.URL + " is not kcd: it is Kafka Connect 4.3.1, which answers Kafka Connect's API only"},
		{other.URL, "the server at " + other.URL + " is not kcd: it has no kcd API"},
	} {
		for _, args := range [][]string{{"worker", "list"}, {"worker", "drain", "w1"}, {"cluster", "status"}, {"version"}} {
			code, _, errOut := kcctl(t, append([]string{"--server", tc.url}, args...)...)
			if code != exitError || !strings.Contains(errOut, "Error: "+tc.want) || strings.Contains(errOut, "HTTP 404") {
				t.Errorf("%s %v: exit %d, stderr %q", tc.url, args, code, errOut)
			}
		}
	}
}

// The test environment's real Kafka Connect is recognised as such.
func TestIntegrationNotKcdKafkaConnect(t *testing.T) {
	url := testenv.Require(t, testenv.ConnectURL)
	code, _, errOut := kcctl(t, "--server", strings.TrimPrefix(url, "http://"), "cluster", "status")
	if code != exitError || !strings.Contains(errOut, "is not kcd: it is Kafka Connect ") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// --request-timeout bounds every request, and the message names it; a
// user's interrupt exits 130.
func TestRequestTimeoutAndInterrupt(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // answer nothing until the client gives up
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)

	start := time.Now()
	code, _, errOut := kcctl(t, "--server", srv.URL, "--request-timeout", "300ms", "worker", "list")
	if code != exitError || !strings.Contains(errOut, "Error: the server at "+srv.URL+" did not answer within 300ms (--request-timeout)") {
		t.Errorf("timeout: exit %d, stderr %q", code, errOut)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the request took %s", d)
	}

	ctx, cancel := context.WithCancel(t.Context())
	var out, stderr strings.Builder
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"--server", srv.URL, "cluster", "status"}, &out, &stderr) }()
	time.AfterFunc(100*time.Millisecond, cancel)
	select {
	case code := <-done:
		if code != exitInterrupted || stderr.String() != "Error: interrupted\n" {
			t.Errorf("interrupt: exit %d, stderr %q", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("kcctl did not stop when interrupted")
	}
}
