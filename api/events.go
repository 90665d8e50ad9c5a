package api

// GET /kcd/v1/events streams server-sent events: the event name is
// "status", "rebalance", "worker" or "leader", and its data the JSON of
// a StatusEvent, a Rebalance, a WorkerEvent or a LeaderEvent.

// StatusEvent is the data of a "status" event.
type StatusEvent struct {
	Connector string `json:"connector"`
	Task      *int   `json:"task"` // null for the connector
	State     string `json:"state"`
	WorkerID  string `json:"worker_id,omitempty"`
	Trace     string `json:"trace,omitempty"`
	Deleted   bool   `json:"deleted,omitempty"`
}

// WorkerEvent is the data of a "worker" event.
type WorkerEvent struct {
	ID     string `json:"id"`
	Joined bool   `json:"joined"`
}

// LeaderEvent is the data of a "leader" event.
type LeaderEvent struct {
	Leader uint64 `json:"leader"`
	Term   uint64 `json:"term"`
}
