package api

import "time"

// StoreSwitchRequest is the body of POST /kcd/v1/store/switch: make Backend
// the cluster's metadata store, copying everything from the active one.
type StoreSwitchRequest struct {
	// Backend is "raft", "mysql", "postgres" or a registered third-party
	// backend.
	Backend string `json:"backend"`
	// Settings are the backend's connection settings ("dsn" for the SQL
	// backends). A value may be a reference, ${env:NAME} or ${file:PATH},
	// resolved by each node that opens the backend; the reference, not
	// the secret, is what the cluster stores.
	Settings map[string]string `json:"settings,omitempty"`
	// Force allows a target that already holds keys: they are removed.
	Force bool `json:"force,omitempty"`
	// DryRun checks the target and answers what a switch would copy,
	// changing nothing but this: opening a SQL target creates its
	// missing tables, empty.
	DryRun bool `json:"dry_run,omitempty"`
}

// States of a StoreSwitch.
const (
	SwitchRunning = "running"
	SwitchDone    = "done"
	SwitchFailed  = "failed"
	SwitchDryRun  = "dry-run"
)

// Phases of a running StoreSwitch, in order.
const (
	PhaseCheck  = "check"  // reach the target, create its schema, check it is empty
	PhaseCopy   = "copy"   // copy everything while writes go on
	PhaseVerify = "verify" // compare the copy with the source (counts, checksum)
	PhaseHold   = "hold"   // writes held: copy what changed, verify it, record the new backend
	PhaseDone   = "done"
)

// StoreSwitch is a switch: the answer of POST /kcd/v1/store/switch (202
// while it runs, 200 for a dry run) and the last switch of StoreStatus.
type StoreSwitch struct {
	ID    string `json:"id"`
	From  string `json:"from"`
	To    string `json:"to"`
	State string `json:"state"`
	Phase string `json:"phase"`
	// Copied of Total keys copied so far.
	Copied int64 `json:"copied"`
	Total  int64 `json:"total"`
	// Revision is the store revision the new backend took over at.
	Revision int64 `json:"revision,omitempty"`
	// Checksum is of the keys, values and revisions copied, as verified
	// on the target.
	Checksum string `json:"checksum,omitempty"`
	// HoldMillis is how long metadata writes were held.
	HoldMillis float64   `json:"hold_ms"`
	StartedAt  time.Time `json:"started_at"`
	EndedAt    time.Time `json:"ended_at,omitzero"`
	// Error says why a switch failed; the old backend stays active.
	Error string `json:"error,omitempty"`
	// Warnings of a dry run (a non-empty target without force, ...).
	Warnings []string `json:"warnings,omitempty"`
}

// StoreStatus is the answer of GET /kcd/v1/store/status.
type StoreStatus struct {
	// Backend is the active backend and Settings its settings, with every
	// secret masked.
	Backend  string            `json:"backend"`
	Settings map[string]string `json:"settings,omitempty"`
	// Since is when it became active (zero: since the cluster started).
	Since time.Time `json:"since,omitzero"`
	// Healthy says whether a read of the active backend just succeeded,
	// LatencyMillis how long it took, Error why not.
	Healthy       bool    `json:"healthy"`
	LatencyMillis float64 `json:"latency_ms"`
	Error         string  `json:"error,omitempty"`
	Revision      int64   `json:"revision"`
	// Backends are the backends this node can open.
	Backends []string `json:"backends"`
	// LastSwitch is the running or the last finished switch.
	LastSwitch *StoreSwitch `json:"last_switch,omitempty"`
}

// The keys of the metadata store as GET, PUT and DELETE
// /kcd/v1/store/keys/{key} and GET /kcd/v1/store/keys show them.

// KeyValue is one key of the metadata store as the store API shows it.
type KeyValue struct {
	Key            string `json:"key"`
	Value          string `json:"value"`
	CreateRevision int64  `json:"create_revision"`
	ModRevision    int64  `json:"mod_revision"`
}

// KeyList is the body of GET /kcd/v1/store/keys.
type KeyList struct {
	Revision int64      `json:"revision"`
	Keys     []KeyValue `json:"keys"`
}

// StoreWrite is the body answered to a write of the store API.
type StoreWrite struct {
	Revision int64 `json:"revision"`
	Deleted  *bool `json:"deleted,omitempty"`
}
