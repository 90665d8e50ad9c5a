package api

import "net/http"

// The store API: every operation of store.Store over HTTP under
// /kcd/v1/store/ (get, put, delete, cas, scan, batch, revision, compact,
// watch), which nodes without a store of their own use. Keys, prefixes
// and values are bytes: base64 in JSON. The protocol is described in
// daemon/restapi/store_api.go.

// StoreKV is a key and its value as the store API carries them.
type StoreKV struct {
	Key            []byte `json:"key"`
	Value          []byte `json:"value"`
	CreateRevision int64  `json:"create_revision"`
	ModRevision    int64  `json:"mod_revision"`
}

// StoreRequest is the body of every store API request; each operation
// reads the fields it needs (see daemon/restapi/store_api.go).
type StoreRequest struct {
	Key               []byte      `json:"key,omitempty"`
	Value             []byte      `json:"value,omitempty"`
	Prefix            []byte      `json:"prefix,omitempty"`
	Limit             int         `json:"limit,omitempty"`
	ExpectModRevision int64       `json:"expect_mod_revision,omitempty"`
	AfterRevision     int64       `json:"after_revision,omitempty"`
	HeartbeatMS       int64       `json:"heartbeat_ms,omitempty"`
	Revision          int64       `json:"revision,omitempty"`
	Conds             []StoreCond `json:"conds,omitempty"`
	Ops               []StoreOp   `json:"ops,omitempty"`
}

// StoreCond is a condition of a batch.
type StoreCond struct {
	Key         []byte `json:"key"`
	ModRevision int64  `json:"mod_revision"`
}

// StoreOp is an op of a batch: Type "put" or "delete".
type StoreOp struct {
	Type  string `json:"type"`
	Key   []byte `json:"key"`
	Value []byte `json:"value,omitempty"`
}

// StoreResponse is the body of every successful store API answer.
type StoreResponse struct {
	Revision int64     `json:"revision"`
	Found    *bool     `json:"found,omitempty"`
	KV       *StoreKV  `json:"kv,omitempty"`
	KVs      []StoreKV `json:"kvs,omitempty"`
	OK       *bool     `json:"ok,omitempty"`
	Deleted  *bool     `json:"deleted,omitempty"`
}

// StoreEvent is one change in a watch stream: Type "put" or "delete".
type StoreEvent struct {
	Type string  `json:"type"`
	KV   StoreKV `json:"kv"`
}

// WatchMessage is one line of a watch stream.
type WatchMessage struct {
	StartRevision *int64        `json:"start_revision,omitempty"`
	HeartbeatMS   int64         `json:"heartbeat_ms,omitempty"`
	Events        []StoreEvent  `json:"events,omitempty"`
	Error         *ErrorMessage `json:"error,omitempty"`
}

// Store API constants shared with its client.
const (
	// MaxStoreRequest bounds a store API request body: a larger batch
	// fails with 413 (store.ErrInvalid).
	MaxStoreRequest = 64 << 20
	// UnappliedHeader marks an error answer given before the request did
	// anything.
	UnappliedHeader = "X-Kcd-Store-Unapplied"
	// Status codes of store errors.
	StatusCompacted = http.StatusGone
	StatusLagging   = http.StatusTooManyRequests
)

// Headers of reads that may be stale.
const (
	// AllowStaleHeader: true on a store API read (get, scan, revision)
	// lets the node answer from its replica when it cannot confirm it is
	// current (store.AllowStale); worker-only nodes send it for the REST
	// reads they serve.
	AllowStaleHeader = "X-Kcd-Allow-Stale"
	// StaleHeader is on an answer read from a replica that could not
	// confirm it is current: the value, in milliseconds, bounds how stale
	// it may be (it holds every write acknowledged more than that long
	// ago). Absent: the read was linearizable.
	StaleHeader = "X-Kcd-Stale-Ms"
)
