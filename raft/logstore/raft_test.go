package logstore

import (
	"fmt"
	"io"
	"log"
	"testing"

	"go.etcd.io/raft/v3"
	raftpb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// singleNode runs a one-member raft group on a Store with the Ready loop of
// the reference design: persist, then apply, then advance.
type singleNode struct {
	t       *testing.T
	store   *Store
	rn      *raft.RawNode
	cs      *raftpb.ConfState
	applied uint64
	values  []string // applied proposals, in order
}

func startNode(t *testing.T, s *Store, applied uint64, cs *raftpb.ConfState) *singleNode {
	t.Helper()
	rn, err := raft.NewRawNode(&raft.Config{
		ID:              1,
		ElectionTick:    10,
		HeartbeatTick:   1,
		Storage:         s,
		Applied:         applied,
		MaxSizePerMsg:   1 << 20,
		MaxInflightMsgs: 256,
		Logger:          &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &singleNode{t: t, store: s, rn: rn, cs: cs, applied: applied}
}

// drain processes Readys until there are none.
func (n *singleNode) drain() {
	n.t.Helper()
	for n.rn.HasReady() {
		rd := n.rn.Ready()
		if err := n.store.Save(rd.HardState, rd.Entries, rd.Snapshot); err != nil {
			n.t.Fatal(err)
		}
		for _, e := range rd.CommittedEntries {
			switch e.GetType() {
			case raftpb.EntryConfChange:
				var cc raftpb.ConfChange
				if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
					n.t.Fatal(err)
				}
				n.cs = n.rn.ApplyConfChange(&cc)
			case raftpb.EntryNormal:
				if len(e.GetData()) > 0 {
					n.values = append(n.values, string(e.GetData()))
				}
			}
			n.applied = e.GetIndex()
		}
		n.rn.Advance(rd)
	}
}

func (n *singleNode) propose(v string) {
	n.t.Helper()
	if err := n.rn.Propose([]byte(v)); err != nil {
		n.t.Fatal(err)
	}
	n.drain()
}

func TestRawNodeRestart(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{SegmentSize: 4096})
	n := startNode(t, s, 0, nil)
	if err := n.rn.Bootstrap([]raft.Peer{{ID: 1}}); err != nil {
		t.Fatal(err)
	}
	n.drain()
	if err := n.rn.Campaign(); err != nil {
		t.Fatal(err)
	}
	n.drain()
	for i := range 200 {
		n.propose(fmt.Sprint("v", i))
	}
	if len(n.values) != 200 {
		t.Fatalf("applied %d proposals, want 200", len(n.values))
	}
	// Snapshot at the applied index, keep a tail of 20 entries.
	if _, err := s.CreateSnapshot(n.applied, n.cs, []byte(fmt.Sprint(len(n.values)))); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(n.applied - 20); err != nil {
		t.Fatal(err)
	}
	applied, cs, values := n.applied, n.cs, n.values

	// Restart as the node would: the state machine says what is applied.
	s = reopen(t, s)
	if s.IsEmpty() {
		t.Fatal("restarted store is empty")
	}
	n = startNode(t, s, applied, cs)
	n.values = values
	if err := n.rn.Campaign(); err != nil {
		t.Fatal(err)
	}
	n.drain()
	if st := n.rn.Status(); st.RaftState != raft.StateLeader || st.GetCommit() < applied {
		t.Fatalf("after restart: state %v, commit %d (applied before: %d)", st.RaftState, st.GetCommit(), applied)
	}
	for i := 200; i < 250; i++ {
		n.propose(fmt.Sprint("v", i))
	}
	if len(n.values) != 250 || n.values[249] != "v249" {
		t.Fatalf("after restart applied %d proposals", len(n.values))
	}
	hs, _, _ := s.InitialState()
	if hs.GetTerm() < 2 {
		t.Fatalf("term %d after a second election", hs.GetTerm())
	}
}
