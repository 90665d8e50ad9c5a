package api

import "time"

// An import brings connectors, with their target states, task configs and
// offsets, into kcd at once: all of them or none. The client opens it with
// POST /kcd/v1/imports (the connectors), sends the offsets in chunks to
// POST /kcd/v1/imports/{id}/offsets, and commits it with
// POST /kcd/v1/imports/{id}/commit; DELETE /kcd/v1/imports/{id} drops it.
// Everything sent before the commit is staged, invisible to the cluster.
// The commit is one atomic write that makes every connector of the import
// exist (stopped); the leader then moves the staged offsets into place and
// sets each connector's target state, and a new leader finishes that work
// if the old one stops. Any node answers; the requests go to the leader.

// Import limits.
const (
	// MaxImportConnectors is the most connectors one import takes.
	MaxImportConnectors = 2000
	// MaxImportOffsets is the most offsets (source and sink together) one
	// ImportOffsets request takes.
	MaxImportOffsets = 4000
	// MaxSourceOffsetKey is the most bytes of an ImportSourceOffset's Key:
	// a key is a connector name and a few partition fields.
	MaxSourceOffsetKey = 8192
)

// Actions of an ImportItem.
const (
	ImportCreate    = "create"    // no connector of that name: created
	ImportOverwrite = "overwrite" // one exists, stopped, and Overwrite was asked: replaced
	ImportExists    = "exists"    // one exists with another config: left alone
	ImportUnchanged = "unchanged" // one exists with the same config: left alone
	ImportBlocked   = "blocked"   // one exists, not stopped, and Overwrite was asked: the import cannot commit
)

// States of an Import.
const (
	ImportStaging   = "staging"   // open: taking offsets
	ImportCommitted = "committed" // committed: the leader is moving offsets into place
	ImportDone      = "done"
	ImportAborted   = "aborted"
)

// ImportConnector is one connector of an import.
type ImportConnector struct {
	Name   string            `json:"name"`
	Config map[string]string `json:"config"`
	// Target is STARTED, PAUSED or STOPPED.
	Target string `json:"target"`
	// Tasks are the connector's task configs, in task order; empty for a
	// stopped connector or one whose task configs kcd is to generate.
	Tasks []map[string]string `json:"tasks,omitempty"`
}

// ImportRequest is the body of POST /kcd/v1/imports.
type ImportRequest struct {
	Connectors []ImportConnector `json:"connectors"`
	// Overwrite replaces connectors that exist in kcd, provided each is
	// stopped (kcctl stop, or PUT /connectors/{name}/stop); without it
	// they are left alone.
	Overwrite bool `json:"overwrite,omitempty"`
	// DryRun answers what the import would do (the items' actions),
	// opening nothing.
	DryRun bool `json:"dry_run,omitempty"`
}

// ImportSourceOffset is one source partition's offset.
type ImportSourceOffset struct {
	Connector string         `json:"connector"`
	Partition map[string]any `json:"partition"`
	Offset    map[string]any `json:"offset"`
	// Key is the offsets topic's record key for this partition as Kafka
	// Connect writes it, ["<connector>",{<partition>}] with the fields in
	// the connector's Java map order, byte for byte: Kafka Connect finds
	// an offset by these bytes. Empty when kcd does not know them; at most
	// MaxSourceOffsetKey bytes, and it must decode to Connector and
	// Partition.
	Key string `json:"key,omitempty"`
}

// ImportSinkOffset is the next offset a sink connector reads of one
// topic-partition.
type ImportSinkOffset struct {
	Connector string `json:"connector"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// ImportOffsets is the body of POST /kcd/v1/imports/{id}/offsets: at most
// MaxImportOffsets offsets, each of a connector of the import whose action
// is create or overwrite. A partition sent twice keeps the later offset.
type ImportOffsets struct {
	Source []ImportSourceOffset `json:"source,omitempty"`
	Sink   []ImportSinkOffset   `json:"sink,omitempty"`
}

// ImportItem is what an import does with one connector.
type ImportItem struct {
	Name   string `json:"name"`
	Action string `json:"action"`
	// Reason explains exists, unchanged and blocked.
	Reason string `json:"reason,omitempty"`
}

// Import is an import's state: the answer of every /kcd/v1/imports call.
type Import struct {
	ID    string       `json:"id"`
	State string       `json:"state"`
	Items []ImportItem `json:"items"`
	// SourceOffsets and SinkOffsets count the offsets staged so far.
	SourceOffsets int64     `json:"source_offsets"`
	SinkOffsets   int64     `json:"sink_offsets"`
	Revision      int64     `json:"revision,omitempty"` // the commit's store revision
	StartedAt     time.Time `json:"started_at"`
	EndedAt       time.Time `json:"ended_at,omitzero"`
	Error         string    `json:"error,omitempty"`
}

// ExportConnector is one connector as GET /kcd/v1/export gives it.
type ExportConnector struct {
	Name   string            `json:"name"`
	Config map[string]string `json:"config"`
	Target string            `json:"target"`
	// Tasks are the current task configs, in task order.
	Tasks         []map[string]string  `json:"tasks"`
	SourceOffsets []ImportSourceOffset `json:"source_offsets,omitempty"`
	SinkOffsets   []ImportSinkOffset   `json:"sink_offsets,omitempty"`
}

// Export is the answer of GET /kcd/v1/export?after=NAME&limit=N: the
// connectors after NAME in name order, at most N (default 100, at most
// 1000), read at one store revision; Next is the name to ask after for
// the next page, empty on the last.
type Export struct {
	Revision   int64             `json:"revision"`
	Connectors []ExportConnector `json:"connectors"`
	Next       string            `json:"next,omitempty"`
}
