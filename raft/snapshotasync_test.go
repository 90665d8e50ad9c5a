package raft_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/raft/rafttest"
)

// Snapshots written off the Ready loop (as a large state's are) are taken
// on every member, compact the log, and bring a member that restarts, or
// that was away while the log was compacted, to the same state.
func TestSnapshotsOffTheReadyLoop(t *testing.T) {
	prev := raft.SetAsyncSnapshotFrom(0)
	defer raft.SetAsyncSnapshotFrom(prev)
	c := rafttest.NewCluster(t, 3, func(cfg *raft.Config) { cfg.SnapshotEntries, cfg.SnapshotCatchUp = 20, 5 })
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	lead := c.Leader(10 * time.Second)
	put := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			cmd := fsm.Command{Kind: fsm.KindPut, Key: fmt.Sprintf("k%04d", i), Value: bytes.Repeat([]byte{byte(i)}, 100)}
			if err := c.OnLeader(ctx, func(n *raft.Node) error { _, err := n.Propose(ctx, cmd); return err }); err != nil {
				t.Fatalf("put %d: %v", i, err)
			}
		}
	}
	put(0, 150)
	var away uint64
	for _, m := range c.Nodes() {
		if m.ID() != lead.ID() {
			away = m.ID()
		}
	}
	c.Kill(away)
	put(150, 300) // the log behind the snapshots is compacted meanwhile
	back := c.Start(away, false)
	put(300, 320)
	deadline := time.Now().Add(30 * time.Second)
	for _, m := range c.Nodes() {
		idx := c.Leader(10 * time.Second).AppliedIndex()
		if err := m.WaitApplied(ctx, idx); err != nil {
			t.Fatalf("node %d: %v", m.ID(), err)
		}
		// The restarted member counts from its restart, after the
		// leader's snapshot it may have installed.
		if m.ID() != back.ID() {
			for m.LogStats().Snapshots < 2 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if st := m.LogStats(); st.Snapshots < 2 || st.SnapshotBytes == 0 {
				t.Errorf("node %d: %d snapshots, the last of %d bytes", m.ID(), st.Snapshots, st.SnapshotBytes)
			}
		}
		for i := range 320 {
			kv, found, err := m.FSM().Get(fmt.Sprintf("k%04d", i))
			if err != nil || !found || !bytes.Equal(kv.Value, bytes.Repeat([]byte{byte(i)}, 100)) {
				t.Fatalf("node %d (restarted: %v): k%04d = %q, %v, %v", m.ID(), m.ID() == back.ID(), i, kv.Value, found, err)
			}
		}
	}
}
