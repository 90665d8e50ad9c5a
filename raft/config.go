package raft

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/raft/transport"
)

// Config configures a Node.
type Config struct {
	// ID is the node's raft id: unique in the cluster, never reused.
	ID uint64
	// Dir holds the node's raft state: the log, snapshots, the state machine.
	Dir string
	// Self is how the other members reach this node (PeerURL) and what it is.
	Self Member

	// InitialCluster bootstraps a new cluster: every founding voter, this
	// node included. Ignored when Dir already holds a cluster.
	InitialCluster []Member
	// Join starts a node that an existing member adds to its cluster (as a
	// learner first); ClusterID must then be the cluster's id.
	Join      bool
	ClusterID string
	// JoinPeers are the current members as the joining node was told of
	// them; it needs their addresses to answer the leader before the log
	// (or a snapshot) tells it the membership.
	JoinPeers []Member

	// TickInterval, ElectionTicks and HeartbeatTicks set raft's clock: an
	// election starts after 1-2 × ElectionTicks ticks without a leader.
	TickInterval   time.Duration
	ElectionTicks  int
	HeartbeatTicks int

	// SnapshotEntries is how many applied entries trigger a snapshot (for
	// a state over 1 MiB up to four times as many while they hold less than
	// half its size: see maybeSnapshot); SnapshotCatchUp how many entries before it
	// stay in the log so that a slightly lagging follower catches up
	// without a snapshot.
	SnapshotEntries uint64
	SnapshotCatchUp uint64

	// FSM tunes the state machine. Every member must use the same options.
	// Its NoSync and (unless set) CommitInterval are set by the node: see
	// SyncApply.
	FSM fsm.Options
	// SyncApply fsyncs the state machine (bbolt) on every apply, as kcd did
	// before: two more fsyncs per Ready on every node. By default applies
	// are not synced; the WAL and the snapshots make them durable, and after
	// a crash of the machine the state is rebuilt from those.
	SyncApply bool

	// CorruptionCheckInterval is how often the leader has the members
	// compare hashes of their states (see corruption.go); 0: never.
	CorruptionCheckInterval time.Duration

	// ClientTLS and ServerTLS secure peer traffic (nil: cleartext HTTP/2).
	ClientTLS *tls.Config
	ServerTLS *tls.Config
	// NewTransport replaces the HTTP transport, for in-process tests.
	NewTransport func(clusterID string, r transport.Receiver) (transport.Transport, error)

	Logger *slog.Logger
}

// Defaults, measured in ../shared/reference/raft.md: a 50 ms tick with 10
// election ticks kept failover under 1 s where etcd's 100 ms × 10 missed 2 s
// in the tail.
const (
	DefaultTickInterval    = 50 * time.Millisecond
	DefaultElectionTicks   = 10
	DefaultHeartbeatTicks  = 1
	DefaultSnapshotEntries = 10000
	DefaultSnapshotCatchUp = 5000
)

func (c *Config) validate() error {
	if c.ID == 0 {
		return errors.New("raft: node id must be non-zero")
	}
	if c.Dir == "" {
		return errors.New("raft: no data dir")
	}
	if c.Self.ID == 0 {
		c.Self.ID = c.ID
	}
	if c.Self.ID != c.ID {
		return fmt.Errorf("raft: self member id %d differs from node id %d", c.Self.ID, c.ID)
	}
	if c.Join && len(c.InitialCluster) > 0 {
		return errors.New("raft: join and initial cluster exclude each other")
	}
	if c.Join && c.ClusterID == "" {
		return errors.New("raft: joining needs the cluster id")
	}
	if c.TickInterval <= 0 {
		c.TickInterval = DefaultTickInterval
	}
	if c.ElectionTicks <= 0 {
		c.ElectionTicks = DefaultElectionTicks
	}
	if c.HeartbeatTicks <= 0 {
		c.HeartbeatTicks = DefaultHeartbeatTicks
	}
	if c.HeartbeatTicks >= c.ElectionTicks {
		return fmt.Errorf("raft: heartbeat ticks (%d) must be fewer than election ticks (%d)", c.HeartbeatTicks, c.ElectionTicks)
	}
	if c.SnapshotEntries == 0 {
		c.SnapshotEntries = DefaultSnapshotEntries
	}
	if c.SnapshotCatchUp == 0 {
		c.SnapshotCatchUp = DefaultSnapshotCatchUp
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// electionTimeout is the longest a healthy cluster goes without a leader
// after losing one.
func (c *Config) electionTimeout() time.Duration {
	return 2 * time.Duration(c.ElectionTicks) * c.TickInterval
}
