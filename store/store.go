// Package store is kcd's metadata store: one small interface that every
// backend implements (the Raft-replicated bbolt default, MySQL/MariaDB,
// PostgreSQL, and third-party backends registered in Go), and the
// conformance suite each backend must pass (storetest).
//
// The model is a flat, ordered key space of byte values with a store-wide
// revision that grows by one with every change (a Put, a Delete that removed
// something, or an atomic Batch as a whole). Each key remembers the revision
// that created it and the one that last changed it, which is what
// compare-and-set compares against. Watchers follow changes from a revision.
package store

import (
	"context"
	"errors"
)

// KV is a key, its value and its revisions.
type KV struct {
	Key   string
	Value []byte
	// CreateRevision is the revision that created the key (since it last
	// did not exist); ModRevision the one that last changed it.
	CreateRevision int64
	ModRevision    int64
}

// OpType says what an Op does.
type OpType int

// The kinds of Op.
const (
	OpPut OpType = iota + 1
	OpDelete
)

// Op is one change inside an atomic Batch.
type Op struct {
	Type  OpType
	Key   string
	Value []byte // OpPut only
}

// Put returns an Op that sets key to value.
func Put(key string, value []byte) Op { return Op{Type: OpPut, Key: key, Value: value} }

// Delete returns an Op that removes key.
func Delete(key string) Op { return Op{Type: OpDelete, Key: key} }

// Cond is a condition of a Batch on the current state of one key:
// ModRevision 0 means the key must not exist; any other value means the key
// must exist with exactly that ModRevision.
type Cond struct {
	Key         string
	ModRevision int64
}

// EventType says what happened to a key.
type EventType int

// The kinds of Event.
const (
	EventPut EventType = iota + 1
	EventDelete
)

// Event is one change seen by a watcher. Events of one Batch share a
// revision and arrive together, in the order of the Batch's ops.
type Event struct {
	Type EventType
	KV   KV // for EventDelete, Value is nil and ModRevision is the deleting revision
}

// Watcher delivers the events of a Watch in revision order.
type Watcher interface {
	// Events delivers the changes. It is closed when the watch ends: by
	// Close, by the context, or because the watcher fell too far behind
	// (Err then says ErrWatcherLagging; watch again from the next revision).
	Events() <-chan Event
	// Err says why Events was closed, after it was.
	Err() error
	Close()
}

// Store is the interface every metadata backend implements. All methods are
// safe for concurrent use. Reads are linearizable: a read that starts after a
// write returned sees that write.
type Store interface {
	// Get returns the key's value; found is false when it does not exist.
	Get(ctx context.Context, key string) (kv KV, found bool, err error)
	// Put sets key to value and returns the new revision.
	Put(ctx context.Context, key string, value []byte) (rev int64, err error)
	// Delete removes key. It returns the new revision, or the current one
	// and deleted=false when the key did not exist.
	Delete(ctx context.Context, key string) (rev int64, deleted bool, err error)
	// CompareAndSet sets key to value when its ModRevision equals
	// expectModRev (0: when it does not exist). ok says whether it did; rev is
	// the new revision when ok, the current one when not.
	CompareAndSet(ctx context.Context, key string, expectModRev int64, value []byte) (rev int64, ok bool, err error)
	// Scan returns the keys starting with prefix in key order, at most limit
	// of them (0: no limit), and the revision the result was read at.
	Scan(ctx context.Context, prefix string, limit int) (kvs []KV, rev int64, err error)
	// Batch applies ops atomically, as one revision, when every cond holds.
	// ok says whether it did; rev is the new revision when ok, the current
	// one when not. An empty ops with conds that hold changes nothing.
	Batch(ctx context.Context, conds []Cond, ops []Op) (rev int64, ok bool, err error)
	// Watch delivers every change to keys starting with prefix made after
	// revision afterRev (0: from now on). It fails with ErrCompacted when
	// changes after afterRev are no longer kept.
	Watch(ctx context.Context, prefix string, afterRev int64) (Watcher, error)
	// Revision returns the store's current revision.
	Revision(ctx context.Context) (int64, error)
	// Close releases the store.
	Close() error
}

// Limits every backend enforces, so that no request grows a buffer without
// bound; a request over them fails with ErrInvalid.
const (
	MaxKeySize   = 1024    // bytes of one key
	MaxValueSize = 1 << 20 // bytes of one value
	MaxBatchOps  = 4096    // ops (and conds) of one Batch
	// MaxLoadBytes bounds the keys and values of one Loader.Load (a single
	// KV of any allowed size is always accepted); with MaxBatchOps on
	// len(kvs)+len(deleted), so that a chunk fits one Raft proposal.
	MaxLoadBytes = 448 << 10
)

// Errors every backend reports the same way.
var (
	// ErrCompacted: the changes a watch asked for are no longer kept.
	ErrCompacted = errors.New("store: revision compacted")
	// ErrWatcherLagging: a watcher did not keep up and was dropped.
	ErrWatcherLagging = errors.New("store: watcher fell behind and was dropped")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store: closed")
	// ErrInvalid: the request is malformed (empty key, unknown op, ...).
	ErrInvalid = errors.New("store: invalid request")
)

// Loader is implemented by a backend that can take over the content of
// another store: the target of an online switch (kcctl store switch). The
// switch clears the target, loads a copy of the source in chunks while the
// source still takes writes, then loads what changed meanwhile while
// writes are held. Load and Clear must not be mixed with ordinary writes:
// the target is not active while it is loaded.
type Loader interface {
	Store
	// Clear removes every key and all watch history, and sets the
	// revision to 0. Keys under a prefix in keep are left alone, and with
	// keep the revision stays (the Raft backend keeps the cluster's own
	// settings).
	Clear(ctx context.Context, keep ...string) error
	// Load writes kvs with the revisions they carry (CreateRevision and
	// ModRevision as given, each at most rev), removes the keys in
	// deleted, and sets the store's revision to rev, atomically. rev must
	// not be below the store's current revision. It makes no events: the
	// watch history afterwards starts at rev, so a watch from rev or later
	// works and one from before it fails with ErrCompacted.
	Load(ctx context.Context, rev int64, kvs []KV, deleted []string) error
}
