// Package top is the model of `kcctl top`, kcd's live dashboard: what a
// cluster looks like at one moment (Snapshot), the messages that change
// it, and the actions an operator takes from it (Backend).
//
// The model knows no HTTP: a Feed (feed.go) turns the REST API's answers
// and events into these messages, so the model is tested with snapshots
// built by hand and golden frames.
package top

import (
	"context"
	"time"
)

// Snapshot is the cluster as one poll saw it.
type Snapshot struct {
	At     time.Time // when the poll finished
	Server string    // the REST URL that answered

	Cluster    Cluster
	Members    []Member    // by id
	Workers    []Worker    // by id
	Connectors []Connector // by name
	Rebalances []Rebalance // newest first, at most the last 20
}

// Cluster is the header line.
type Cluster struct {
	ID       string
	Leader   uint64 // Raft node id; 0: none known
	Term     uint64
	Store    string // active metadata backend: raft, mysql, postgres, ...
	Voters   int
	VotersUp int
	Quorum   int  // voters needed
	QuorumOK bool // a leader and a quorum of voters up
	Alarms   []string
}

// Member is one node of the cluster.
type Member struct {
	ID        uint64
	RESTURL   string
	Roles     []string // raft, worker
	Raft      string   // voter, learner or none
	Reachable bool
	Leader    bool
	// WorkerID is the id of the node's worker ("" when it runs none).
	WorkerID string
}

// Worker is one worker, with what runs on it.
type Worker struct {
	ID       string
	NodeID   uint64 // 0 for a worker-only node
	Leader   bool   // runs on the Raft leader (which takes a smaller share)
	Weight   float64
	Draining bool
	Alive    bool // holds its session
	// Tasks counts the tasks assigned to it by state (RUNNING, FAILED,
	// PAUSED, UNASSIGNED, RESTARTING, STOPPED); Connectors the
	// connectors it runs.
	Tasks      map[string]int
	Connectors int
}

// Connector is one connector and its tasks.
type Connector struct {
	Name     string
	Type     string // source, sink or "" when unknown
	State    string // RUNNING, PAUSED, STOPPED, FAILED, UNASSIGNED, RESTARTING
	WorkerID string
	Trace    string
	Tasks    []Task // by id
	// RecordsPerSec is what its tasks moved per second between the last
	// two polls (negative: unknown, e.g. the first poll).
	RecordsPerSec float64
	// SinkLag is the records a sink is behind: the sum of its running
	// tasks' lags, each as of the task's last fetch (negative: unknown or
	// not a sink).
	SinkLag int64
}

// Task is one task of a connector.
type Task struct {
	ID       int
	State    string
	WorkerID string
	Trace    string
}

// Rebalance is one entry of the coordinator's journal.
type Rebalance struct {
	At       time.Time
	Epoch    string // term.generation
	Leader   uint64
	Triggers []string
	Moves    int
	Units    int
	Workers  int
	Took     time.Duration
}

// Messages the Feed sends the model (tea.Msg values).
type (
	// SnapshotMsg replaces what the model shows. Seq grows with every poll
	// the feed starts; the model drops a snapshot older than one it has.
	SnapshotMsg struct {
		Seq      uint64
		Snapshot Snapshot
	}
	// StatusMsg is one status change from the event stream, applied to the
	// current snapshot until the next one replaces it. Task < 0: the
	// connector's own status. Deleted: the connector is gone.
	StatusMsg struct {
		Connector string
		Task      int
		State     string
		WorkerID  string
		Trace     string
		Deleted   bool
	}
	// LeaderMsg: the Raft leader changed (the header flashes).
	LeaderMsg struct {
		Leader, Term uint64
	}
	// FeedStateMsg says how the feed gets its data: Live (events and
	// polls), Polling (the event stream is down), or Err set (the last
	// poll failed on every server; Server is the last one tried).
	FeedStateMsg struct {
		Live    bool
		Polling bool
		Server  string
		Err     error
	}
	// ActionDoneMsg is the outcome of a Backend call the model started.
	ActionDoneMsg struct {
		What string // e.g. "restart gen/2"
		Err  error
	}
	// OffsetsMsg answers a drill-in's request for a connector's offsets.
	OffsetsMsg struct {
		Connector string
		Offsets   []Offset
		Err       error
	}
)

// Offset is one committed offset of a connector, as JSON text.
type Offset struct {
	Partition string
	Offset    string
}

// Backend is what the dashboard's keys do. The model calls it from tea
// commands, never from Update itself.
type Backend interface {
	// RestartConnector restarts the connector and, with tasks, all its tasks.
	RestartConnector(ctx context.Context, name string, tasks bool) error
	RestartTask(ctx context.Context, name string, task int) error
	PauseConnector(ctx context.Context, name string) error
	ResumeConnector(ctx context.Context, name string) error
	Offsets(ctx context.Context, name string) ([]Offset, error)
}
