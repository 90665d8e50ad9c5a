package raft_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/rafttest"
	"github.com/kcd-project/kcd/raft/transport"
)

// httpCluster is a cluster of raft nodes that talk over the real HTTP/2
// transport on loopback, each with its own peer listener.
type httpCluster struct {
	nodes map[uint64]*raft.Node
	urls  map[uint64]string
}

func newHTTPCluster(t *testing.T, size int) *httpCluster {
	t.Helper()
	c := &httpCluster{nodes: map[uint64]*raft.Node{}, urls: map[uint64]string{}}
	lns := map[uint64]net.Listener{}
	var initial []raft.Member
	for id := uint64(1); id <= uint64(size); id++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[id] = ln
		c.urls[id] = "http://" + ln.Addr().String()
		initial = append(initial, raft.Member{ID: id, PeerURL: c.urls[id]})
	}
	dir := t.TempDir()
	for id := uint64(1); id <= uint64(size); id++ {
		n, err := raft.Start(raft.Config{
			ID: id, Dir: filepath.Join(dir, fmt.Sprint(id)),
			Self:           raft.Member{ID: id, PeerURL: c.urls[id]},
			InitialCluster: initial,
			TickInterval:   20 * time.Millisecond,
			Logger:         rafttest.Logger(),
		})
		if err != nil {
			t.Fatal(err)
		}
		c.nodes[id] = n
		mux := http.NewServeMux()
		mux.Handle("/raft/", n.Transport().Handler())
		srv := &http.Server{Handler: mux}
		n.Transport().(*transport.HTTP).ConfigureServer(srv)
		go func() { _ = srv.Serve(lns[id]) }()
		t.Cleanup(func() {
			n.Halt()
			_ = srv.Close()
		})
	}
	return c
}

// leader waits for one leader that every node agrees on.
func (c *httpCluster) leader(t *testing.T) *raft.Node {
	t.Helper()
	var lead *raft.Node
	waitFor(t, 10*time.Second, "a leader every node knows", func() bool {
		var id uint64
		for _, n := range c.nodes {
			if n.Leader() == 0 || (id != 0 && n.Leader() != id) {
				return false
			}
			id = n.Leader()
		}
		lead = c.nodes[id]
		return lead != nil
	})
	return lead
}

// stranger is a peer transport of id that knows the cluster id (which is no
// secret) but is no member.
type stranger struct{}

func (stranger) Process(context.Context, *pb.Message) error     { return nil }
func (stranger) ReportUnreachable(uint64)                       {}
func (stranger) ReportSnapshot(uint64, etcdraft.SnapshotStatus) {}
func (stranger) IsIDRemoved(uint64) bool                        { return false }

// TestForgedMessagesFromNonMemberChangeNothing: a peer that is no member
// (id 99) but knows the cluster id streams heartbeats, appends, votes and
// pre-votes with a far higher term to every member's peer port. The term
// and the leader stay what they were, writes keep committing, and every
// member counts what it refused.
func TestForgedMessagesFromNonMemberChangeNothing(t *testing.T) {
	c := newHTTPCluster(t, 3)
	lead := c.leader(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := put(ctx, lead, "before", "1"); err != nil {
		t.Fatal(err)
	}
	term, leader := lead.Term(), lead.ID()

	forger, err := transport.NewHTTP(transport.Config{ID: 99, ClusterID: lead.ClusterID(), Receiver: stranger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer forger.Close()
	for id, u := range c.urls {
		forger.AddPeer(id, u)
	}
	forged := func(to uint64, round int) []*pb.Message {
		hi := term + 1000 + uint64(round)
		return []*pb.Message{
			{Type: pb.MessageType_MsgHeartbeat.Enum(), From: new(uint64(99)), To: new(to), Term: new(hi)},
			{Type: pb.MessageType_MsgApp.Enum(), From: new(uint64(99)), To: new(to), Term: new(hi), Index: new(uint64(1 << 30)), LogTerm: new(hi)},
			{Type: pb.MessageType_MsgPreVote.Enum(), From: new(uint64(99)), To: new(to), Term: new(hi + 1), Index: new(uint64(1 << 30)), LogTerm: new(hi)},
			{Type: pb.MessageType_MsgVote.Enum(), From: new(uint64(99)), To: new(to), Term: new(hi), Index: new(uint64(1 << 30)), LogTerm: new(hi)},
		}
	}
	// Twenty rounds, each to every member, as the attack that was seen.
	for round := range 20 {
		for id := range c.nodes {
			forger.Send(forged(id, round))
		}
		time.Sleep(20 * time.Millisecond) // pacing of the attack, not a wait for a result
	}
	// Proof of delivery: the forger's transport put every message on the
	// wire, and every member handled all it was sent: refused them (or, if
	// they reached raft, the term moved, which the checks below catch).
	const sent = 20 * 4
	var stats map[uint64]transport.PeerStats
	waitFor(t, 10*time.Second, "the forger to have sent everything", func() bool {
		stats = forger.Stats()
		for id := range c.nodes {
			if st := stats[id]; st.QueueLen > 0 || st.Sent+st.Dropped < sent {
				return false
			}
		}
		return true
	})
	for id, n := range c.nodes {
		if stats[id].Sent == 0 {
			t.Fatalf("no forged message reached node %d (stats %+v)", id, stats[id])
		}
		waitFor(t, 10*time.Second, fmt.Sprintf("node %d to handle the %d forged messages it was sent", id, stats[id].Sent), func() bool {
			return n.Refused() >= stats[id].Sent || n.Term() != term
		})
	}
	for id, n := range c.nodes {
		if n.Term() != term {
			t.Errorf("node %d: term %d after the forged messages, want %d", id, n.Term(), term)
		}
		if n.Leader() != leader {
			t.Errorf("node %d: leader %d after the forged messages, want %d", id, n.Leader(), leader)
		}
	}
	if _, err := put(ctx, lead, "after", "2"); err != nil {
		t.Errorf("write after the forged messages: %v", err)
	}
	if lead.Term() != term || !lead.IsLeader() {
		t.Errorf("leader %d: term %d, leading %v after the forged messages; want term %d, leading", leader, lead.Term(), lead.IsLeader(), term)
	}
}

// TestProcessRefusesOutsideConfiguration: the intake refuses, before raft,
// a message from an id outside the configuration, from a removed member,
// and one addressed to another node; a member's message gets through.
func TestProcessRefusesOutsideConfiguration(t *testing.T) {
	c := rafttest.NewCluster(t, 3, nil)
	lead := c.Leader(10 * time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// A learner, then its removal: its id is then refused too.
	if err := lead.AddLearner(ctx, raft.Member{ID: 4, PeerURL: "http://node4"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "every node to know learner 4", func() bool {
		for _, n := range c.Nodes() {
			if raftRoleOf(n.Status(), 4) != "learner" {
				return false
			}
		}
		return true
	})
	f := c.Follower()
	term := f.Term()
	hb := func(from, to uint64) *pb.Message {
		return &pb.Message{Type: pb.MessageType_MsgHeartbeat.Enum(), From: new(from), To: new(to), Term: new(term + 100)}
	}
	// A learner is in the configuration: its message passes (a stale
	// heartbeat response, which raft ignores).
	learnerMsg := &pb.Message{Type: pb.MessageType_MsgHeartbeatResp.Enum(), From: new(uint64(4)), To: new(f.ID()), Term: new(uint64(0))}
	if err := f.Process(ctx, learnerMsg); errors.Is(err, raft.ErrRefused) {
		t.Errorf("a message from learner 4 was refused: %v", err)
	}
	before := f.Refused()
	if err := f.Process(ctx, hb(99, f.ID())); !errors.Is(err, raft.ErrRefused) {
		t.Errorf("heartbeat from non-member 99: err %v, want ErrRefused", err)
	}
	other := uint64(1)
	if other == f.ID() {
		other = 2
	}
	if err := f.Process(ctx, hb(lead.ID(), other+10)); !errors.Is(err, raft.ErrRefused) {
		t.Errorf("heartbeat meant for node %d: err %v, want ErrRefused", other+10, err)
	}
	if err := lead.RemoveMember(ctx, 4); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "every node to apply the removal of 4", func() bool {
		for _, n := range c.Nodes() {
			if raftRoleOf(n.Status(), 4) != "" {
				return false
			}
		}
		return true
	})
	if err := f.Process(ctx, hb(4, f.ID())); !errors.Is(err, raft.ErrRefused) {
		t.Errorf("heartbeat from removed member 4: err %v, want ErrRefused", err)
	}
	if got := f.Refused() - before; got != 3 {
		t.Errorf("refused count grew by %d, want 3", got)
	}
	if f.Term() != term {
		t.Errorf("follower %d: term %d, want %d", f.ID(), f.Term(), term)
	}
}

// TestRejoinAfterIsolationDoesNotDisrupt: a follower cut off for several
// election timeouts (it campaigns in vain meanwhile) and a follower that
// crashes and restarts come back without changing the leader or the term:
// PreVote keeps the cut-off node's term where it was, CheckQuorum keeps the
// others from listening to it while they hear their leader.
func TestRejoinAfterIsolationDoesNotDisrupt(t *testing.T) {
	// A longer election timeout than the other tests' (0.8-1.6 s): a
	// loaded machine must not elect on its own while this test watches.
	c := rafttest.NewCluster(t, 3, func(cfg *raft.Config) { cfg.ElectionTicks = 40 })
	lead := c.Leader(10 * time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	mustPutOnLeader(ctx, t, c, "before", "1")
	lead = c.Leader(10 * time.Second)
	term, leader := lead.Term(), lead.ID()
	f := c.Follower()
	fid := f.ID()

	c.Net().Isolate(fid)
	cfg := c.Config(fid, false)
	deadline := time.Now().Add(4 * time.Duration(cfg.ElectionTicks) * cfg.TickInterval) // 4 election timeouts at least
	waitFor(t, 10*time.Second, "the isolated follower to lose its leader", func() bool { return f.Leader() == 0 })
	mustPutOnLeader(ctx, t, c, "while-isolated", "2")
	time.Sleep(time.Until(deadline)) // how long the fault lasts, not a wait for a condition
	if f.Term() != term {
		t.Errorf("isolated follower %d raised its term to %d (was %d)", fid, f.Term(), term)
	}
	c.Net().Heal()
	waitFor(t, 10*time.Second, "the follower to catch up", func() bool {
		_, found, _ := f.FSM().Get("while-isolated")
		return found
	})

	c.Kill(fid)
	mustPutOnLeader(ctx, t, c, "while-down", "3")
	f = c.Start(fid, false)
	waitFor(t, 10*time.Second, "the restarted follower to catch up", func() bool {
		_, found, _ := f.FSM().Get("while-down")
		return found
	})
	for _, n := range c.Nodes() {
		if n.Term() != term || n.Leader() != leader {
			t.Errorf("node %d: leader %d term %d, want leader %d term %d throughout", n.ID(), n.Leader(), n.Term(), leader, term)
		}
	}
}
