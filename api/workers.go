package api

import "time"

// The workers (GET /kcd/v1/workers, GET /kcd/v1/worker), their settings
// (PUT /kcd/v1/workers/{id}/weight, /drain, /undrain) and the assignments
// (GET /kcd/v1/assignments), and the heartbeats by which a worker holds
// its session with the coordinator (POST /kcd/v1/workers/{id}/heartbeat).

// WorkerView is one worker in GET /kcd/v1/workers: the workers with a
// session, then those whose session ended (listed for up to ten minutes after
// it ended, at most a hundred of them).
type WorkerView struct {
	ID string `json:"id"`
	// State is alive, draining (alive and drained), expired (its session
	// expired: it went silent) or left (it ended its session).
	State    string    `json:"state"`
	RESTURL  string    `json:"rest_url,omitempty"`
	NodeID   uint64    `json:"node_id"`
	Weight   float64   `json:"weight"`
	Capacity int       `json:"capacity"` // 0: no limit
	Draining bool      `json:"draining"`
	Since    time.Time `json:"since"`
	// GoneAt is when the session ended; absent while it holds.
	GoneAt *time.Time `json:"gone_at,omitempty"`
	// Connectors and Tasks count the units the worker owns now; a worker
	// that is gone runs none of them.
	Connectors int `json:"connectors"`
	Tasks      int `json:"tasks"`
}

// AssignmentView is one unit in GET /kcd/v1/assignments.
type AssignmentView struct {
	Connector string `json:"connector"`
	Task      *int   `json:"task"` // null for the connector instance
	Worker    string `json:"worker"`
	Epoch     Epoch  `json:"epoch"`
	// RevokingTo names the worker the unit waits to move to.
	RevokingTo string `json:"revoking_to,omitempty"`
}

// WorkerWeight is the body of PUT /kcd/v1/workers/{id}/weight.
type WorkerWeight struct {
	Weight *float64 `json:"weight"`
}

// Settings are what an operator changed of a worker at run time: the
// answer of PUT /kcd/v1/workers/{id}/weight, /drain and /undrain.
type Settings struct {
	Weight   *float64 `json:"weight,omitempty"`
	Draining bool     `json:"draining,omitempty"`
}

// LocalWorkerView is the body of GET /kcd/v1/worker: what this node's
// worker runs now and how often it started each unit.
type LocalWorkerView struct {
	ID string `json:"id"`
	// SessionHeld: the coordinator answered a heartbeat within the
	// session timeout; when false the worker runs nothing.
	SessionHeld bool        `json:"session_held"`
	Units       []LocalUnit `json:"units"`
}

// LocalUnit is a connector instance (task null) or a task this worker has
// run since its process started.
type LocalUnit struct {
	Connector string `json:"connector"`
	Task      *int   `json:"task"`
	Running   bool   `json:"running"`
	Starts    int    `json:"starts"`
	Records   int64  `json:"records"`
	// Lag is a running sink task's consumer lag as of its last fetch: over
	// its partitions, the high watermark (last stable offset under
	// read_committed) minus the next offset it reads. Absent for sources,
	// connector instances, stopped units and while not known yet.
	Lag *int64 `json:"lag,omitempty"`
}

// WorkerInfo is what a worker tells about itself when it registers, and
// the record of a worker with a live session.
type WorkerInfo struct {
	ID      string `json:"id"`
	RESTURL string `json:"rest_url,omitempty"`
	// NodeID is the node id (--node-id) of the kcd node the worker runs
	// in. It does not choose the worker that gets the leader's reduced
	// share: that is the worker in the leader's own process.
	NodeID uint64  `json:"node_id"`
	Weight float64 `json:"weight"`
	// Capacity is the most units the worker takes; 0: no limit.
	Capacity int `json:"capacity,omitempty"`
	// Since is when the session started.
	Since time.Time `json:"since"`
}

// Heartbeat is what a worker sends the coordinator.
type Heartbeat struct {
	Worker WorkerInfo `json:"worker"`
	// SeenRevision is the store revision up to which the member has
	// followed the assignment; Running what it runs now. Together they
	// tell the coordinator that a revoked unit has stopped.
	SeenRevision int64    `json:"seen_revision"`
	Running      []string `json:"running"`
}

// HeartbeatReply is the coordinator's answer to a Heartbeat.
type HeartbeatReply struct {
	Epoch            Epoch  `json:"epoch"`
	Leader           uint64 `json:"leader"`
	SessionTimeoutMS int64  `json:"session_timeout_ms"`
	// Assigned: the worker's session is counted in the stored
	// assignment. A session the coordinator has just (re)started is not,
	// until a rebalance that includes it is written; the worker runs
	// nothing until then.
	Assigned bool `json:"assigned"`
	// Revision is a store revision at or after every assignment change
	// made so far; a worker whose session lapsed runs nothing until it has
	// followed the assignment up to it.
	Revision int64 `json:"revision"`
}
