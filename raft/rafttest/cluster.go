// Package rafttest runs in-process kcd Raft clusters on a fault-injecting
// network, for tests of the raft node and of what is built on it.
package rafttest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/transport"
)

// Cluster is an in-process cluster whose nodes keep their data dirs across
// Kill and Start.
type Cluster struct {
	t       testing.TB
	net     *transport.Network
	dir     string
	initial []raft.Member
	tweak   func(*raft.Config)

	mu    sync.Mutex
	nodes map[uint64]*raft.Node
}

// NewCluster starts size nodes (ids 1..size) that bootstrap a cluster.
// tweak, when not nil, adjusts each node's configuration.
func NewCluster(t testing.TB, size int, tweak func(*raft.Config)) *Cluster {
	t.Helper()
	c := &Cluster{
		t:     t,
		net:   transport.NewNetwork(transport.WithSeed(uint64(time.Now().UnixNano()))),
		dir:   t.TempDir(),
		tweak: tweak,
		nodes: map[uint64]*raft.Node{},
	}
	for id := uint64(1); id <= uint64(size); id++ {
		c.initial = append(c.initial, raft.Member{ID: id, PeerURL: peerURL(id)})
	}
	for id := uint64(1); id <= uint64(size); id++ {
		c.Start(id, false)
	}
	t.Cleanup(func() {
		c.mu.Lock()
		nodes := c.nodes
		c.nodes = map[uint64]*raft.Node{}
		c.mu.Unlock()
		for _, n := range nodes {
			n.Halt()
		}
		c.net.Close()
	})
	return c
}

func peerURL(id uint64) string { return fmt.Sprintf("http://node%d", id) }

// Net is the cluster's network, for injecting faults.
func (c *Cluster) Net() *transport.Network { return c.net }

// Config is the configuration node id starts with.
func (c *Cluster) Config(id uint64, join bool) raft.Config {
	cfg := raft.Config{
		ID:              id,
		Dir:             filepath.Join(c.dir, fmt.Sprint(id)),
		Self:            raft.Member{ID: id, PeerURL: peerURL(id)},
		TickInterval:    20 * time.Millisecond,
		SnapshotEntries: 200,
		SnapshotCatchUp: 50,
		Logger:          Logger(),
		NewTransport: func(_ string, r transport.Receiver) (transport.Transport, error) {
			return c.net.Transport(id, r)
		},
	}
	if join {
		cfg.Join = true
		cfg.ClusterID = raft.ClusterIDFor(c.initial)
		cfg.JoinPeers = c.initial
	} else {
		cfg.InitialCluster = c.initial
	}
	if c.tweak != nil {
		c.tweak(&cfg)
	}
	return cfg
}

// Start starts node id from its data dir (join: as a node that joins).
func (c *Cluster) Start(id uint64, join bool) *raft.Node {
	c.t.Helper()
	n, err := raft.Start(c.Config(id, join))
	if err != nil {
		c.t.Fatalf("start node %d: %v", id, err)
	}
	c.mu.Lock()
	c.nodes[id] = n
	c.mu.Unlock()
	return n
}

// Kill stops node id the way a crash does.
func (c *Cluster) Kill(id uint64) {
	c.mu.Lock()
	n := c.nodes[id]
	delete(c.nodes, id)
	c.mu.Unlock()
	if n != nil {
		n.Halt()
	}
}

// Node returns the running node id, or nil.
func (c *Cluster) Node(id uint64) *raft.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

// Nodes returns the running nodes.
func (c *Cluster) Nodes() []*raft.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*raft.Node, 0, len(c.nodes))
	for _, n := range c.nodes {
		out = append(out, n)
	}
	return out
}

// Leader waits up to timeout for a running node that is leader.
func (c *Cluster) Leader(timeout time.Duration) *raft.Node {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, n := range c.Nodes() {
			if n.IsLeader() {
				return n
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatal("no leader elected")
	return nil
}

// Follower returns a running node that is not the leader.
func (c *Cluster) Follower() *raft.Node {
	c.t.Helper()
	lead := c.Leader(5 * time.Second)
	for _, n := range c.Nodes() {
		if n != lead {
			return n
		}
	}
	c.t.Fatal("no follower")
	return nil
}

// OnLeader runs fn on the current leader, again on the next one when
// leadership moved in between.
func (c *Cluster) OnLeader(ctx context.Context, fn func(*raft.Node) error) error {
	for {
		err := fn(c.Leader(5 * time.Second))
		if !errors.Is(err, raft.ErrNotLeader) && !errors.Is(err, raft.ErrNoLeader) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Logger logs to stderr at debug level under go test -v, and nowhere
// otherwise.
func Logger() *slog.Logger {
	if testing.Testing() && testingVerbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func testingVerbose() bool {
	defer func() { _ = recover() }()
	return testing.Verbose()
}
