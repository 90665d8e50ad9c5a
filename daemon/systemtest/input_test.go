package systemtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/internal/testenv"
)

// TestIntegrationSlowClientsLeaveHealthAndHeartbeats: a kcd process with a
// limit of 600 open files gets 800 connections that send a request header
// and then a body that never comes (slow loris). New connections to
// /health and to a worker heartbeat are still answered, every time: the
// REST API's connection limit stays under the file limit and keeps a share
// of connections for them.
func TestIntegrationSlowClientsLeaveHealthAndHeartbeats(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	dir := t.TempDir()
	n := &Node{
		ID:       1,
		RESTAddr: mustFreeAddr(t),
		PeerAddr: mustFreeAddr(t),
		DataDir:  filepath.Join(dir, "node1"),
		LogPath:  filepath.Join(dir, "node1.log"),
		bin:      "prlimit",
	}
	n.Args = []string{"--nofile=600:600", "--", bin, "--node-id", "1", "--data-dir", n.DataDir, "--rest-addr", n.RESTAddr,
		"--peer-addr", n.PeerAddr, "--bootstrap-servers", brokers}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.Kill()
		CheckLogForSecrets(t, n)
		if t.Failed() {
			t.Logf("node log:\n%s", n.LogTail(40))
		}
	})
	fresh := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	health := func() error {
		res, err := fresh.Get(n.URL() + "/health")
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			return fmt.Errorf("status %d", res.StatusCode)
		}
		return nil
	}
	heartbeat := func() error {
		body := `{"worker":{"id":"probe","node_id":99,"weight":0},"seen_revision":0,"running":[]}`
		res, err := fresh.Post(n.URL()+"/kcd/v1/workers/probe/heartbeat", "application/json", strings.NewReader(body))
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			return fmt.Errorf("status %d", res.StatusCode)
		}
		return nil
	}
	if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) { return health() == nil && heartbeat() == nil, nil }); err != nil {
		t.Fatalf("node did not become healthy: %v", err)
	}

	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 800 {
		c, err := net.DialTimeout("tcp", n.RESTAddr, 2*time.Second)
		if err != nil {
			break // the backlog is full: the attack is as big as it gets
		}
		held = append(held, c)
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = fmt.Fprintf(c, "POST /connectors HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{\"na")
	}
	t.Logf("%d slow connections open", len(held))

	for i := range 5 {
		start := time.Now()
		if err := health(); err != nil {
			t.Errorf("GET /health %d under slow clients: %v", i, err)
		}
		if err := heartbeat(); err != nil {
			t.Errorf("heartbeat %d under slow clients: %v", i, err)
		}
		t.Logf("round %d answered in %v", i, time.Since(start).Round(time.Millisecond))
	}
}
