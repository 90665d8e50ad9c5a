package raft

import (
	"context"
	"errors"
	"fmt"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"

	"github.com/kcd-project/kcd/raft/fsm"
)

// ErrLearnerBehind is returned when promoting a learner that has not caught
// up with the leader's log yet.
var ErrLearnerBehind = errors.New("raft: learner has not caught up yet")

// promoteSlack is how many committed entries a learner may still miss when
// it is promoted (entries in flight under load).
const promoteSlack = 64

func fsmResult(id, index uint64) fsm.Result { return fsm.Result{ID: id, Index: index} }

// AddLearner adds m as a learner: it receives the log but does not vote
// until it is promoted. Call it on the leader.
func (n *Node) AddLearner(ctx context.Context, m Member) error {
	if m.ID == 0 || m.PeerURL == "" {
		return errors.New("raft: a new member needs an id and a peer URL")
	}
	if n.peers.isRemoved(m.ID) {
		return fmt.Errorf("raft: id %d belonged to a removed member and is never reused", m.ID)
	}
	if _, ok := n.peers.get(m.ID); ok {
		return fmt.Errorf("raft: member %d already exists", m.ID)
	}
	return n.changeConf(ctx, pb.ConfChangeType_ConfChangeAddLearnerNode, m)
}

// PromoteLearner makes learner id a voter, once it has caught up.
func (n *Node) PromoteLearner(ctx context.Context, id uint64) error {
	st := n.rn.Status()
	if st.RaftState != etcdraft.StateLeader {
		return ErrNotLeader
	}
	if _, ok := st.Config.Learners[id]; !ok {
		return fmt.Errorf("raft: %d is not a learner", id)
	}
	// Caught up: the leader is streaming entries to it (it answered) and it
	// holds nearly everything committed. A voter that is far behind would
	// weaken the quorum the moment it is promoted.
	pr, ok := st.Progress[id]
	if !ok || pr.State != tracker.StateReplicate || !pr.RecentActive || pr.Match+promoteSlack < st.GetCommit() {
		return fmt.Errorf("%w: it has %d of %d committed entries", ErrLearnerBehind, pr.Match, st.GetCommit())
	}
	m, _ := n.peers.get(id)
	m.ID = id
	return n.changeConf(ctx, pb.ConfChangeType_ConfChangeAddNode, m)
}

// RemoveMember removes id from the cluster for good.
func (n *Node) RemoveMember(ctx context.Context, id uint64) error {
	if _, ok := n.peers.get(id); !ok {
		return fmt.Errorf("raft: no member %d", id)
	}
	if voters := n.voters(); len(voters) == 1 && voters[0] == id {
		return errors.New("raft: cannot remove the last voter")
	}
	return n.changeConf(ctx, pb.ConfChangeType_ConfChangeRemoveNode, Member{ID: id})
}

func (n *Node) changeConf(ctx context.Context, typ pb.ConfChangeType, m Member) error {
	if !n.IsLeader() {
		return ErrNotLeader
	}
	id := n.nextID()
	cc := &pb.ConfChangeV2{
		Changes: []*pb.ConfChangeSingle{{Type: typ.Enum(), NodeId: new(m.ID)}},
		Context: confContext{Member: m, RequestID: id}.encode(),
	}
	ch := n.wait(id)
	defer n.unwait(id)
	if err := n.rn.ProposeConfChange(ctx, cc); err != nil {
		return n.proposeErr(ctx, ctx, err)
	}
	var res fsm.Result
	select {
	case res = <-ch:
	case <-ctx.Done():
		return ctx.Err()
	case <-n.donec:
		return ErrStopped
	}
	// raft counts the change applied only once the Ready that carried it is
	// advanced, and until then silently drops the next change proposed:
	// return when the next one can be proposed.
	tick := time.NewTicker(n.cfg.TickInterval / 5)
	defer tick.Stop()
	for n.rn.Status().Applied < res.Index {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil // applied; only raft's bookkeeping lags
		case <-n.donec:
			return nil
		}
	}
	return nil
}

// TransferLeadership hands leadership to voter to (0: the most up-to-date
// other voter) and waits until it has it. Call it on the leader.
func (n *Node) TransferLeadership(ctx context.Context, to uint64) error {
	st := n.rn.Status()
	if st.RaftState != etcdraft.StateLeader {
		return ErrNotLeader
	}
	if to == st.ID {
		return nil
	}
	alarmed := map[uint64]bool{}
	for _, a := range n.Alarms() {
		alarmed[a.Member] = true
	}
	if alarmed[to] && to != 0 {
		return fmt.Errorf("raft: member %d has a corruption alarm and must not lead", to)
	}
	if to == 0 {
		var best uint64
		for id := range st.Config.Voters.IDs() {
			if id != st.ID && !alarmed[id] && (to == 0 || st.Progress[id].Match > best) {
				to, best = id, st.Progress[id].Match
			}
		}
		if to == 0 {
			return errors.New("raft: no other voter to transfer leadership to")
		}
	} else if _, ok := st.Config.Voters.IDs()[to]; !ok {
		return fmt.Errorf("raft: %d is not a voter", to)
	}
	n.log.Info("transferring leadership", "to", to)
	n.rn.TransferLeadership(ctx, st.ID, to)
	tick := time.NewTicker(n.cfg.TickInterval / 5)
	defer tick.Stop()
	for n.leader.Load() != to {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("raft: leadership transfer to %d: %w", to, ctx.Err())
		case <-n.donec:
			return ErrStopped
		}
	}
	return nil
}

// MemberStatus is one member as this node sees it.
type MemberStatus struct {
	Member
	Raft        string // voter, learner, or none
	Reachable   bool
	LastContact time.Time // zero: never, or this node itself
}

// Status is the cluster as this node sees it.
type Status struct {
	ClusterID    string
	ID           uint64
	Leader       uint64
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	Members      []MemberStatus
}

// Status reports the cluster as this node sees it.
func (n *Node) Status() Status {
	st := n.rn.Status()
	out := Status{
		ClusterID:    n.clusterID,
		ID:           n.cfg.ID,
		Leader:       st.Lead,
		Term:         st.GetTerm(),
		CommitIndex:  st.GetCommit(),
		AppliedIndex: n.applied.Load(),
	}
	stats := n.tr.Stats()
	for _, m := range n.peers.list() {
		ms := MemberStatus{Member: m, Raft: raftRole(st.Config, m.ID)}
		if m.ID == n.cfg.ID {
			ms.Reachable = true
		} else if ps, ok := stats[m.ID]; ok {
			ms.Reachable, ms.LastContact = ps.Reachable, ps.LastContact
		}
		out.Members = append(out.Members, ms)
	}
	return out
}

func raftRole(c tracker.Config, id uint64) string {
	if _, ok := c.Voters.IDs()[id]; ok {
		return "voter"
	}
	if _, ok := c.Learners[id]; ok {
		return "learner"
	}
	return "none"
}
