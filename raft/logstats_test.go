package raft_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/raft/rafttest"
)

// LogStats counts the command bytes a member applies and the snapshots it
// takes, on every member alike.
func TestLogStatsCountEntryBytesAndSnapshots(t *testing.T) {
	c := rafttest.NewCluster(t, 3, func(cfg *raft.Config) { cfg.SnapshotEntries = 20 })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	lead := c.Leader(5 * time.Second)
	before := map[uint64]raft.LogStats{}
	for _, m := range c.Nodes() {
		before[m.ID()] = m.LogStats()
	}
	const n = 50
	var want uint64
	for i := range n {
		cmd := fsm.Command{Kind: fsm.KindPut, Key: fmt.Sprintf("k%03d", i), Value: []byte("value")}
		b, err := fsm.EncodeCommand(cmd)
		if err != nil {
			t.Fatal(err)
		}
		want += uint64(len(b))
		if _, err := lead.Propose(ctx, cmd); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	for _, m := range c.Nodes() {
		if err := m.WaitApplied(ctx, lead.AppliedIndex()); err != nil {
			t.Fatal(err)
		}
		st := m.LogStats()
		// The commands, with the request id the proposer adds to each.
		if got := st.EntryBytes - before[m.ID()].EntryBytes; got < want || got > want+16*n {
			t.Errorf("node %d: %d entry bytes for %d bytes of commands", m.ID(), got, want)
		}
		if took := st.Snapshots - before[m.ID()].Snapshots; took < 2 || st.SnapshotBytes == 0 {
			t.Errorf("node %d: %d snapshots, the last of %d bytes, after %d entries with a snapshot every 20", m.ID(), took, st.SnapshotBytes, n)
		}
	}
}
