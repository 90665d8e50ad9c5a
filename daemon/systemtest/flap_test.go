package systemtest

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestIntegrationProcessLeaderFlapKeepsTheCoordinator: leadership moved
// away and back at once (two `kcctl cluster transfer-leader` calls, A→B→A)
// must not leave A running the coordinator of its older term, which
// refuses every heartbeat: after each flap the leader answers heartbeats
// again within an election timeout.
func TestIntegrationProcessLeaderFlapKeepsTheCoordinator(t *testing.T) {
	bin := binary(t)
	const election = time.Second
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	c := StartCluster(t, bin, Options{ElectionTimeout: election})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	// A probe worker of weight 0: it takes no work, and its heartbeats
	// say whether the coordinator answers.
	probe := []byte(`{"worker":{"id":"flap-probe","weight":0},"seen_revision":0,"running":[]}`)
	answered := func(n *Node, within time.Duration) error {
		deadline := time.Now().Add(within)
		for {
			hctx, hcancel := context.WithTimeout(ctx, 300*time.Millisecond)
			_, err := n.do(hctx, "POST", "/kcd/v1/workers/flap-probe/heartbeat", probe, nil)
			hcancel()
			if err == nil || time.Now().After(deadline) {
				return err
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	a := c.Node(lead)
	if err := answered(a, 20*time.Second); err != nil {
		t.Fatalf("the first coordinator never answered: %v", err)
	}
	transfer := func(on *Node, to uint64) error {
		_, err := on.do(ctx, "POST", "/kcd/v1/cluster/leader", fmt.Appendf(nil, `{"to":%d}`, to), nil)
		return err
	}
	for i := range 5 {
		b := c.Except(a.ID)[i%2]
		start := time.Now()
		if err := transfer(a, b.ID); err != nil {
			t.Fatalf("flap %d: to node %d: %v", i, b.ID, err)
		}
		if err := transfer(b, a.ID); err != nil {
			t.Fatalf("flap %d: back to node %d: %v", i, a.ID, err)
		}
		flapped := time.Now()
		if err := answered(a, election); err != nil {
			info, _ := a.Info(ctx)
			later := "still refuses them 5 s later"
			if answered(a, 5*time.Second) == nil {
				later = fmt.Sprintf("answers again after %v", time.Since(flapped).Round(time.Millisecond))
			}
			t.Fatalf("flap %d (A→B→A in %v): node %d, leader %d at term %d, refuses heartbeats for longer than an election timeout (%v) after it got leadership back, and %s: %v",
				i, flapped.Sub(start).Round(time.Millisecond), a.ID, info.Leader, info.Term, election, later, err)
		}
		t.Logf("flap %d: A→B→A in %v; heartbeats answered %v later", i, flapped.Sub(start).Round(time.Millisecond), time.Since(flapped).Round(time.Millisecond))
	}
}
