package raft_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/raft/rafttest"
	"github.com/kcd-project/kcd/raft/transport"
)

func put(ctx context.Context, n *raft.Node, key, value string) (fsm.Result, error) {
	return n.Propose(ctx, fsm.Command{Kind: fsm.KindPut, Key: key, Value: []byte(value)})
}

func mustGet(t *testing.T, n *raft.Node, key string) string {
	t.Helper()
	kv, ok, err := n.FSM().Get(key)
	if err != nil || !ok {
		t.Fatalf("node %d: get %s: found=%v err=%v", n.ID(), key, ok, err)
	}
	return string(kv.Value)
}

func TestClusterReplicatesAndSurvivesLeaderCrash(t *testing.T) {
	c := rafttest.NewCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	lead := c.Leader(5 * time.Second)
	for i := range 50 {
		if _, err := put(ctx, lead, fmt.Sprintf("k%03d", i), fmt.Sprint(i)); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	// A follower proposes too: raft forwards it to the leader.
	var follower *raft.Node
	for id := uint64(1); id <= 3; id++ {
		if id != lead.ID() {
			follower = c.Node(id)
			break
		}
	}
	if _, err := put(ctx, follower, "from-follower", "yes"); err != nil {
		t.Fatalf("put through a follower: %v", err)
	}

	// Every node applies every write.
	for id := uint64(1); id <= 3; id++ {
		n := c.Node(id)
		if err := n.LinearizableRead(ctx); err != nil {
			t.Fatalf("node %d: read barrier: %v", id, err)
		}
		if got := mustGet(t, n, "k049"); got != "49" {
			t.Errorf("node %d: k049=%q", id, got)
		}
		if got := mustGet(t, n, "from-follower"); got != "yes" {
			t.Errorf("node %d: from-follower=%q", id, got)
		}
	}

	// Crash the leader: a new one is elected and takes writes.
	old := lead.ID()
	c.Kill(old)
	lead = c.Leader(5 * time.Second)
	if lead.ID() == old {
		t.Fatal("the killed node is still the leader")
	}
	for i := 50; i < 400; i++ { // past SnapshotEntries: the log gets compacted
		if _, err := put(ctx, lead, fmt.Sprintf("k%03d", i), fmt.Sprint(i)); err != nil {
			t.Fatalf("put %d after failover: %v", i, err)
		}
	}

	// The old leader restarts from its data dir and catches up (by snapshot:
	// the entries it missed were compacted away).
	restarted := c.Start(old, false)
	deadline := time.Now().Add(10 * time.Second)
	for restarted.AppliedIndex() < lead.AppliedIndex() {
		if time.Now().After(deadline) {
			t.Fatalf("restarted node at %d, leader at %d", restarted.AppliedIndex(), lead.AppliedIndex())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := range 400 {
		if got := mustGet(t, restarted, fmt.Sprintf("k%03d", i)); got != fmt.Sprint(i) {
			t.Fatalf("restarted node: k%03d=%q", i, got)
		}
	}
	if st := restarted.Status(); len(st.Members) != 3 {
		t.Errorf("restarted node knows %d members: %+v", len(st.Members), st.Members)
	}
}

func TestMembershipAddPromoteRemove(t *testing.T) {
	c := rafttest.NewCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	lead := c.Leader(5 * time.Second)
	for i := range 300 {
		if _, err := put(ctx, lead, fmt.Sprintf("k%03d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}

	// Node 4 joins as a learner, catches up (by snapshot), is promoted.
	if err := c.OnLeader(ctx, func(l *raft.Node) error { return l.AddLearner(ctx, raft.Member{ID: 4, PeerURL: "http://node4"}) }); err != nil {
		t.Fatalf("add learner: %v", err)
	}
	n4 := c.Start(4, true)
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.OnLeader(ctx, func(l *raft.Node) error { return l.PromoteLearner(ctx, 4) })
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("promote: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	lead = c.Leader(5 * time.Second)
	if got := raftRoleOf(lead.Status(), 4); got != "voter" {
		t.Fatalf("node 4 is %q after promotion", got)
	}
	if err := n4.LinearizableRead(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, n4, "k299"); got != "v" {
		t.Errorf("node 4: k299=%q", got)
	}

	// Remove a follower: it is gone for good, and its id cannot come back.
	var victim uint64
	for id := uint64(1); id <= 3; id++ {
		if id != lead.ID() {
			victim = id
			break
		}
	}
	if err := c.OnLeader(ctx, func(l *raft.Node) error { return l.RemoveMember(ctx, victim) }); err != nil {
		t.Fatalf("remove %d: %v", victim, err)
	}
	lead = c.Leader(5 * time.Second)
	if got := raftRoleOf(lead.Status(), victim); got != "" {
		t.Errorf("removed member still listed as %q", got)
	}
	err := c.OnLeader(ctx, func(l *raft.Node) error { return l.AddLearner(ctx, raft.Member{ID: victim, PeerURL: "http://again"}) })
	if err == nil || !strings.Contains(err.Error(), "never reused") {
		t.Errorf("re-adding a removed id: %v", err)
	}
	if _, err := put(ctx, lead, "after-remove", "ok"); err != nil {
		t.Fatalf("write after remove: %v", err)
	}
	// The removed node stops itself, and refuses to start again.
	removed := c.Node(victim)
	select {
	case <-removed.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the removed node keeps running")
	}
	if !errors.Is(removed.Err(), raft.ErrRemoved) {
		t.Errorf("removed node stopped with %v", removed.Err())
	}
	c.Kill(victim)
	if _, err := raft.Start(c.Config(victim, false)); !errors.Is(err, raft.ErrRemoved) {
		t.Errorf("restart of a removed node: %v", err)
	}
}

func raftRoleOf(st raft.Status, id uint64) string {
	for _, m := range st.Members {
		if m.ID == id {
			return m.Raft
		}
	}
	return ""
}

func TestTransferLeadership(t *testing.T) {
	c := rafttest.NewCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	lead := c.Leader(5 * time.Second)
	target := lead.ID()%3 + 1
	if err := lead.TransferLeadership(ctx, target); err != nil {
		t.Fatal(err)
	}
	if !c.Node(target).IsLeader() && c.Leader(time.Second).ID() != target {
		t.Fatalf("leader is %d, want %d", c.Leader(time.Second).ID(), target)
	}
	if err := c.Node(target).TransferLeadership(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if c.Leader(time.Second).ID() == target {
		t.Error("transfer to any voter left leadership where it was")
	}
}

func TestIdentityChecks(t *testing.T) {
	dir := t.TempDir()
	net := transport.NewNetwork()
	defer net.Close()
	cfg := func(id uint64, initial string) raft.Config {
		members, err := raft.ParseInitialCluster(initial)
		if err != nil {
			t.Fatal(err)
		}
		return raft.Config{
			ID: id, Dir: dir, Self: raft.Member{ID: id, PeerURL: "http://x"}, InitialCluster: members,
			Logger: slog.New(slog.DiscardHandler),
			NewTransport: func(_ string, r transport.Receiver) (transport.Transport, error) {
				return net.Transport(id, r)
			},
		}
	}
	n, err := raft.Start(cfg(1, "1=a:1"))
	if err != nil {
		t.Fatal(err)
	}
	n.Stop()

	if _, err := raft.Start(cfg(2, "2=a:1")); err == nil || !strings.Contains(err.Error(), "belongs to node 1") {
		t.Errorf("other node id on the same dir: %v", err)
	}
	if _, err := raft.Start(cfg(1, "1=a:1,3=b:1")); err == nil || !strings.Contains(err.Error(), "belongs to cluster") {
		t.Errorf("other cluster on the same dir: %v", err)
	}
	if _, err := raft.Start(cfg(5, "1=a:1")); err == nil || !strings.Contains(err.Error(), "not in the initial cluster") {
		t.Errorf("node outside the initial cluster: %v", err)
	}
}
