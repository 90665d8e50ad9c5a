package daemon

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/config"
	"github.com/kcd-project/kcd/daemon/restapi"
)

// A worker-only node, which holds no replica of the store, serves the
// connector API through the cluster's store and runs tasks the coordinator
// gives it, like a Raft node's worker.
func TestWorkerOnlyNode(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	rcfg := devConfig(t, t.TempDir())
	rcfg.SessionTimeout = time.Second
	rcfg.HeartbeatInterval = 200 * time.Millisecond
	rcfg.FenceMargin = 500 * time.Millisecond
	raftNode := New(rcfg, log)
	if err := raftNode.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raftNode.Close() })

	wcfg := config.Default()
	wcfg.DataDir = t.TempDir()
	wcfg.RESTAddr = "127.0.0.1:0"
	wcfg.Roles = []string{config.RoleWorker}
	wcfg.Seeds = []string{raftNode.RESTURL()}
	wcfg.BootstrapServers = raftNode.broker.Addrs() // the raft node's dev broker
	wcfg.SessionTimeout, wcfg.HeartbeatInterval, wcfg.FenceMargin = rcfg.SessionTimeout, rcfg.HeartbeatInterval, rcfg.FenceMargin
	if err := wcfg.Validate(); err != nil {
		t.Fatal(err)
	}
	worker := New(wcfg, log)
	if err := worker.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { worker.Close() })
	if worker.Raft() != nil {
		t.Fatal("a worker-only node runs a Raft member")
	}
	wapi, rapi := worker.RESTURL(), raftNode.RESTURL()

	// Created through the worker-only node, seen by the raft node.
	gen := map[string]string{"connector.class": "Datagen", "topic": "remote", "tasks.max": "2", "rate": "20"}
	if code := call(t, "POST", wapi+"/connectors", map[string]any{"name": "from-worker", "config": gen}, nil); code != 201 {
		t.Fatalf("create through the worker-only node: HTTP %d", code)
	}
	var cfg map[string]string
	if code := call(t, "GET", rapi+"/connectors/from-worker/config", nil, &cfg); code != 200 || cfg["topic"] != "remote" {
		t.Fatalf("the raft node's view of from-worker: HTTP %d %v", code, cfg)
	}

	// Created through the raft node, seen by the worker-only node at once
	// (its reads are linearizable).
	sink := map[string]string{"connector.class": "FileStreamSink", "topics": "remote", "file": t.TempDir() + "/out.txt"}
	if code := call(t, "POST", rapi+"/connectors", map[string]any{"name": "from-raft", "config": sink}, nil); code != 201 {
		t.Fatalf("create through the raft node: HTTP %d", code)
	}
	var names []string
	if code := call(t, "GET", wapi+"/connectors", nil, &names); code != 200 || !slices.Contains(names, "from-raft") || !slices.Contains(names, "from-worker") {
		t.Fatalf("the worker-only node's connector list: HTTP %d %v", code, names)
	}

	// The coordinator gives the worker-only node's worker a share of the
	// units, and it runs them (status RUNNING, reported through the store).
	deadline := time.Now().Add(30 * time.Second)
	for {
		var v restapi.LocalWorkerView
		var st connStatus
		running := 0
		if call(t, "GET", wapi+"/kcd/v1/worker", nil, &v) == 200 {
			for _, u := range v.Units {
				if u.Running {
					running++
				}
			}
		}
		ok := running > 0 && call(t, "GET", rapi+"/connectors/from-worker/status", nil, &st) == 200 && len(st.Tasks) == 2
		for _, task := range st.Tasks {
			ok = ok && task.State == "RUNNING"
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker-only node runs %d units; from-worker's status %+v", running, st)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Deleted through the worker-only node: gone on the raft node.
	if code := call(t, "DELETE", wapi+"/connectors/from-raft", nil, nil); code != 204 {
		t.Fatalf("delete through the worker-only node: HTTP %d", code)
	}
	if code := call(t, "GET", rapi+"/connectors/from-raft", nil, nil); code != 404 {
		t.Fatalf("from-raft after its delete, on the raft node: HTTP %d", code)
	}
	// Both stop cleanly, without hanging: the worker-only node (its watches
	// on the raft node end with it), then the raft node. The bound is a hang
	// guard, not a speed figure: under -race on two busy cores a clean stop
	// (tasks drain, the session ends, Raft stops) has taken 6 s.
	for _, n := range []*Node{worker, raftNode} {
		start := time.Now()
		if err := n.Close(); err != nil {
			t.Fatalf("Close of %s: %v", n.RESTURL(), err)
		}
		if took := time.Since(start); took > 20*time.Second {
			t.Fatalf("Close of %s took %v", n.RESTURL(), took)
		}
	}
}
