package systemtest

import (
	"context"
	"strings"
	"testing"
	"time"
)

// restDebug tells whether n's log holds a DEBUG line of the rest subsystem
// (it logs every request at DEBUG).
func restDebug(n *Node) bool {
	for _, line := range strings.Split(n.Log(), "\n") {
		if strings.Contains(line, "level=DEBUG") && strings.Contains(line, "subsys=rest") && strings.Contains(line, `msg="rest request"`) {
			return true
		}
	}
	return false
}

// TestIntegrationProcessLoggers: a level set with scope=cluster on one kcd
// process reaches the other Raft member and a worker-only process started
// afterwards (through its remote store): each starts writing the rest
// subsystem's DEBUG lines to its log, which none wrote at INFO.
func TestIntegrationProcessLoggers(t *testing.T) {
	bin := binary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c := StartCluster(t, bin, Options{Size: 2, Kafka: DevKafkaFirst})
	if _, err := WaitLeader(ctx, c.Nodes()...); err != nil {
		t.Fatal(err)
	}
	n1, n2 := c.Node(1), c.Node(2)
	level := func(n *Node) string {
		var l struct {
			Level string `json:"level"`
		}
		if _, err := n.do(ctx, "GET", "/admin/loggers/rest", nil, &l); err != nil {
			return err.Error()
		}
		return l.Level
	}
	for _, n := range []*Node{n1, n2} {
		if got := level(n); got != "INFO" {
			t.Fatalf("node %d: rest is %s", n.ID, got)
		}
		if restDebug(n) {
			t.Fatalf("node %d logs rest's DEBUG lines at INFO", n.ID)
		}
	}

	if code, err := n1.do(ctx, "PUT", "/admin/loggers/rest?scope=cluster", []byte(`{"level":"DEBUG"}`), nil); err != nil || code != 204 {
		t.Fatalf("PUT scope=cluster: %d %v", code, err)
	}
	w3 := c.NewWorker(3)
	if err := w3.Start(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*Node{n1, n2, w3} {
		if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
			return level(n) == "DEBUG" && restDebug(n), nil
		}); err != nil {
			t.Fatalf("node %d did not apply the cluster's level (rest is %s): %v\n%s", n.ID, level(n), err, n.LogTail(20))
		}
	}
}
