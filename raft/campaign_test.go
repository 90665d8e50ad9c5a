package raft_test

import (
	"context"
	"testing"
	"time"

	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/rafttest"
)

// stoppedClock gives raft a tick of an hour: no election timeout elapses
// during a test, so a node leads only if it campaigned at once.
func stoppedClock(cfg *raft.Config) { cfg.TickInterval = time.Hour }

// A single-node cluster is led at once after its bootstrap and after each
// restart (with entries to replay first), by one election each time.
func TestLoneVoterCampaignsAtOnce(t *testing.T) {
	c := rafttest.NewCluster(t, 1, stoppedClock)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	n := c.Leader(10 * time.Second)
	if _, err := put(ctx, n, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	// The bootstrap leaves term 1; one election (pre-vote does not count).
	if got := n.Term(); got != 2 {
		t.Errorf("term %d after the bootstrap's election, want 2", got)
	}
	if got := n.AloneCampaigns(); got != 1 {
		t.Errorf("%d immediate campaigns, want 1", got)
	}

	for restart, wantTerm := range []uint64{3, 4} {
		c.Kill(1)
		n = c.Start(1, false)
		n = c.Leader(10 * time.Second)
		if err := n.LinearizableRead(ctx); err != nil {
			t.Fatalf("restart %d: read: %v", restart, err)
		}
		if got := mustGet(t, n, "k"); got != "v1" {
			t.Fatalf("restart %d: k=%q", restart, got)
		}
		if _, err := put(ctx, n, "k", "v1"); err != nil {
			t.Fatal(err)
		}
		if got := n.Term(); got != wantTerm {
			t.Errorf("restart %d: term %d, want %d", restart, got, wantTerm)
		}
		if got := n.AloneCampaigns(); got != 1 {
			t.Errorf("restart %d: %d immediate campaigns, want 1", restart, got)
		}
	}
}

// Voters of a larger configuration keep their election timer: neither a
// fresh three-node cluster nor a restarted member of a grown one campaigns
// before its timeout.
func TestVotersOfLargerConfigurationWaitForTimeout(t *testing.T) {
	c := rafttest.NewCluster(t, 3, stoppedClock)
	for _, n := range c.Nodes() {
		waitFor(t, 10*time.Second, "the campaign decision", n.CampaignDecided)
	}
	for _, n := range c.Nodes() {
		if n.AloneCampaigns() != 0 || n.Leader() != 0 || n.Term() != 1 {
			t.Errorf("node %d: %d immediate campaigns, leader %d, term %d; want none, none, 1",
				n.ID(), n.AloneCampaigns(), n.Leader(), n.Term())
		}
	}

	// A single node grows to two voters, then restarts alone: its
	// configuration (as the log has it) holds a voter it cannot reach.
	g := rafttest.NewCluster(t, 1, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := g.OnLeader(ctx, func(l *raft.Node) error {
		return l.AddLearner(ctx, raft.Member{ID: 2, PeerURL: "http://node2"})
	}); err != nil {
		t.Fatalf("add learner: %v", err)
	}
	g.Start(2, true)
	waitFor(t, 10*time.Second, "node 2 promoted", func() bool {
		return g.OnLeader(ctx, func(l *raft.Node) error { return l.PromoteLearner(ctx, 2) }) == nil
	})
	g.Kill(2)
	g.Kill(1)
	cfg := g.Config(1, false)
	stoppedClock(&cfg)
	n, err := raft.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Halt()
	waitFor(t, 10*time.Second, "the campaign decision", n.CampaignDecided)
	if n.AloneCampaigns() != 0 || n.Leader() != 0 {
		t.Errorf("restarted member of two voters: %d immediate campaigns, leader %d; want none", n.AloneCampaigns(), n.Leader())
	}
}

// A read that waits for a leader goes to it as soon as one is elected, not
// at the next tick of its retry.
func TestReadWaitingForLeaderFollowsElection(t *testing.T) {
	c := rafttest.NewCluster(t, 3, stoppedClock)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	reader := c.Node(2)
	done := make(chan error, 1)
	go func() { done <- reader.LinearizableRead(ctx) }()
	waitFor(t, 10*time.Second, "a read index request without a leader", func() bool { return reader.ReadIndexPending() > 0 })
	if err := c.Node(1).Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("read: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the read did not complete after the election")
	}
}
