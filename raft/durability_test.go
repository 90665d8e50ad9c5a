package raft_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/rafttest"
)

// The state machine commits without fsync; the WAL and the snapshots are
// what make an acknowledged write durable. A power loss of every node at
// once (simulated: the nodes crash, their state files are left as garbage,
// as unsynced bbolt pages may be, and the boot id changes) must lose no
// acknowledged write: each node rebuilds its state from its newest snapshot
// and replays its log.
func TestPowerLossOfAllNodesLosesNoAcknowledgedWrite(t *testing.T) {
	var boot atomic.Value
	boot.Store("boot-1")
	c := rafttest.NewCluster(t, 3, func(cfg *raft.Config) {
		cfg.FSM.BootID = func() string { return boot.Load().(string) }
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	// Concurrent writers, past several snapshots (every 200 entries in
	// rafttest) so that the logs are compacted behind them.
	const writers, perWriter = 8, 60
	var mu sync.Mutex
	acked := map[string]string{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				key, value := fmt.Sprintf("w%d/k%03d", w, i), fmt.Sprintf("v%d-%d", w, i)
				err := c.OnLeader(ctx, func(n *raft.Node) error {
					_, err := put(ctx, n, key, value)
					return err
				})
				if err != nil {
					t.Errorf("put %s: %v", key, err)
					return
				}
				mu.Lock()
				acked[key] = value
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	for id := uint64(1); id <= 3; id++ {
		if _, err := os.Stat(filepath.Join(c.Config(id, false).Dir, "state.db.unsynced")); err != nil {
			t.Fatalf("node %d: no unsynced marker while running: %v", id, err)
		}
	}
	// Power loss: every node stops at once, its unsynced state is lost.
	for id := uint64(1); id <= 3; id++ {
		c.Kill(id)
	}
	garbage := bytes.Repeat([]byte{0xAB}, 64<<10)
	for id := uint64(1); id <= 3; id++ {
		if err := os.WriteFile(filepath.Join(c.Config(id, false).Dir, "state.db"), garbage, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	boot.Store("boot-2")
	for id := uint64(1); id <= 3; id++ {
		c.Start(id, false)
	}

	c.Leader(10 * time.Second)
	for id := uint64(1); id <= 3; id++ {
		n := c.Node(id)
		if err := n.LinearizableRead(ctx); err != nil {
			t.Fatalf("node %d: read barrier: %v", id, err)
		}
		for key, want := range acked {
			kv, ok, err := n.FSM().Get(key)
			if err != nil || !ok || string(kv.Value) != want {
				t.Fatalf("node %d: acknowledged write %s=%s lost after power loss: found=%v value=%q err=%v", id, key, want, ok, kv.Value, err)
			}
		}
	}

	// The same boot again: a crash of the processes only, the state files
	// are trusted as they are.
	for id := uint64(1); id <= 3; id++ {
		c.Kill(id)
		c.Start(id, false)
	}
	c.Leader(10 * time.Second)
	n := c.Node(1)
	if err := n.LinearizableRead(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, n, "w7/k059"); got != "v7-59" {
		t.Fatalf("after a process crash: w7/k059=%q", got)
	}
}
