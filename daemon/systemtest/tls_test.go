package systemtest

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/kcd-project/kcd/internal/testcerts"
	"github.com/kcd-project/kcd/internal/testenv"
)

// TestIntegrationProcessRESTMutualTLS: three Raft nodes and a worker-only
// node whose REST APIs require client certificates (and whose Raft peers
// use mutual TLS). Every call between them — heartbeats, the worker-only
// node's store, forwarding to the leader — goes over mutual TLS: the
// worker-only node registers, a connector created through a follower runs
// its tasks on every worker, the worker-only node's included, and the
// follower forwards leader-only requests. Plain HTTP and clients without a
// certificate are refused.
func TestIntegrationProcessRESTMutualTLS(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	dir := t.TempDir()
	ca := testcerts.NewCA(t, "kcd systemtest CA")
	caFile := ca.Write(t, dir, "ca")
	restCert, restKey := ca.Issue(t, "kcd node", testcerts.Options{}).Write(t, dir, "rest")
	peerCert, peerKey := ca.Issue(t, "kcd peer", testcerts.Options{IPs: []string{"127.0.0.1"}}).Write(t, dir, "peer")
	operator := ca.Issue(t, "operator", testcerts.Options{})
	c := StartCluster(t, bin, Options{
		Bootstrap: brokers,
		ExtraArgs: []string{
			"--rest-tls-cert", restCert, "--rest-tls-key", restKey,
			"--rest-tls-client-ca", caFile, "--rest-tls-ca", caFile,
			"--peer-tls-cert", peerCert, "--peer-tls-key", peerKey, "--peer-tls-ca", caFile,
			"--offset-flush-interval", "300ms",
		},
		RESTTLS: &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{operator.TLS}},
	})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	w4 := c.NewWorker(4)
	if err := w4.Start(); err != nil {
		t.Fatal(err)
	}
	all := c.Nodes()
	follower := c.Except(lead)[0]
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		n, err := AliveWorkers(ctx, follower)
		return err == nil && n == 4, err
	}); err != nil {
		t.Fatalf("four workers did not register over mutual TLS: %v", err)
	}

	// Created through a follower: forwarded to the leader.
	const tasks = 6
	topic := fmt.Sprintf("kcd-systemtest-tls-%d", time.Now().UnixNano())
	body := fmt.Sprintf(`{"name":"gen","config":{"connector.class":"Datagen","topic":%q,"tasks.max":"%d","rate.per.task":"50","shape":"counter","key":"task","value.converter":"org.apache.kafka.connect.storage.StringConverter"}}`, topic, tasks)
	if _, err := follower.Post(ctx, "/connectors", []byte(body)); err != nil {
		t.Fatalf("POST /connectors on follower %d: %v", follower.ID, err)
	}
	var where map[int]*Node
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		var ok bool
		where, ok = placementOf(ctx, follower, all, tasks)
		return ok && countOn(where, w4) > 0, nil
	}); err != nil {
		t.Fatalf("the %d tasks did not all run, some on the worker-only node (placement %v): %v", tasks, where, err)
	}

	// Leader-only requests sent to the follower are forwarded to the leader
	// over mutual TLS, and so is its question for the leader's view.
	var plan struct {
		Moves []any `json:"moves"`
	}
	if err := follower.GetJSON(ctx, "/kcd/v1/rebalances/plan", &plan); err != nil {
		t.Errorf("GET /kcd/v1/rebalances/plan on follower %d: %v", follower.ID, err)
	}
	var info ClusterInfo
	if err := follower.GetJSON(ctx, "/kcd/v1/cluster", &info); err != nil || info.ReachabilityFrom != lead {
		t.Errorf("GET /kcd/v1/cluster on follower %d: the view of %d (%v), want the leader's (%d)", follower.ID, info.ReachabilityFrom, err, lead)
	}

	// Plain HTTP, and HTTPS without a client certificate, are refused.
	for _, n := range []*Node{follower, w4} {
		res, err := httpClient.Get("http://" + n.RESTAddr + "/connectors")
		if err == nil {
			res.Body.Close()
			if res.StatusCode != http.StatusBadRequest {
				t.Errorf("plain HTTP to node %d: %s", n.ID, res.Status)
			}
		}
		anon := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
		if res, err := anon.Get(n.URL() + "/connectors"); err == nil {
			res.Body.Close()
			t.Errorf("node %d answered a client without a certificate: %s", n.ID, res.Status)
		}
	}
}
