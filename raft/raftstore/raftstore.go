// Package raftstore is the default metadata store backend: the store lives
// in the Raft group's replicated state machine (bbolt on every Raft node).
// Writes are proposed through Raft and answered once applied on this node;
// reads are served from this node's state machine after a ReadIndex barrier,
// so they are linearizable on every node, leader or not.
//
// A read under a context from store.AllowStale is linearizable when the
// barrier completes within Options.StaleReadWait; otherwise (no leader, no
// quorum, a leader that does not answer) it is served from this node's
// state as it is, provided that state holds every write acknowledged more
// than Options.StaleReadMax ago, and the context's Staleness records how
// stale it may be (raft.Node.BoundedRead).
package raftstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/store"
)

// Options tune a Store; zero values take the defaults.
type Options struct {
	// StaleReadWait is how long a read that may be stale waits for the
	// read barrier before it is served from the local state (default
	// 300 ms).
	StaleReadWait time.Duration
	// StaleReadMax is how stale such a read may be: the local state must
	// hold every write acknowledged more than this long ago (default 30 s).
	// Negative: reads are always linearizable.
	StaleReadMax time.Duration
}

// Defaults of Options.
const (
	DefaultStaleReadWait = 300 * time.Millisecond
	DefaultStaleReadMax  = 30 * time.Second
)

// Store is a store.Store over a raft.Node. It does not own the node: Close
// leaves it running.
type Store struct {
	n    *raft.Node
	opts Options
	// life ends with Close, and with it every watcher of this store.
	life  context.Context
	close context.CancelFunc
}

var _ store.Loader = (*Store)(nil)

// ErrFrozen is the error (errors.Is) of a write refused because the store
// is frozen (Freeze): another metadata backend is active, and the Raft
// copy takes only Load, Clear and writes under the exempt prefixes. Such a
// write changed nothing; it may be retried once the store is thawed or on
// the active backend.
var ErrFrozen = fsm.ErrFrozen

// New returns the store of node n with the default Options.
func New(n *raft.Node) *Store { return NewWithOptions(n, Options{}) }

// NewWithOptions returns the store of node n.
func NewWithOptions(n *raft.Node, opts Options) *Store {
	if opts.StaleReadWait <= 0 {
		opts.StaleReadWait = DefaultStaleReadWait
	}
	if opts.StaleReadMax == 0 {
		opts.StaleReadMax = DefaultStaleReadMax
	}
	life, cancel := context.WithCancel(context.Background())
	return &Store{n: n, opts: opts, life: life, close: cancel}
}

// check refuses calls after Close or with an ended context: such a call
// must change nothing, and raft could still take a proposal whose context
// just ended.
func (s *Store) check(ctx context.Context) error {
	if s.life.Err() != nil {
		return store.ErrClosed
	}
	if err := s.n.Corrupt(); err != nil {
		// This replica serves nothing more: another member must.
		return fmt.Errorf("%w: %w", store.ErrClosed, err)
	}
	return ctx.Err()
}

func (s *Store) write(ctx context.Context, c fsm.Command) (fsm.Result, error) {
	if err := s.check(ctx); err != nil {
		return fsm.Result{}, err
	}
	r, err := s.n.Propose(ctx, c)
	if err != nil {
		return r, fmt.Errorf("raft store: %s: %w", c.Kind, err)
	}
	return r, nil
}

// barrier makes this node's state machine reflect every acknowledged write,
// or, under store.AllowStale, every one acknowledged more than
// StaleReadMax ago.
func (s *Store) barrier(ctx context.Context) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if st := store.StaleOK(ctx); st != nil && s.opts.StaleReadMax > 0 {
		age, err := s.n.BoundedRead(ctx, s.opts.StaleReadWait, s.opts.StaleReadMax)
		if err != nil {
			return fmt.Errorf("raft store: read: %w", err)
		}
		if age > 0 {
			st.Record(age)
		}
		return nil
	}
	if err := s.n.LinearizableRead(ctx); err != nil {
		return fmt.Errorf("raft store: read: %w", err)
	}
	return nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (store.KV, bool, error) {
	if err := s.barrier(ctx); err != nil {
		return store.KV{}, false, err
	}
	return s.n.FSM().Get(key)
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, key string, value []byte) (int64, error) {
	r, err := s.write(ctx, fsm.Command{Kind: fsm.KindPut, Key: key, Value: value})
	return r.Rev, err
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key string) (int64, bool, error) {
	r, err := s.write(ctx, fsm.Command{Kind: fsm.KindDelete, Key: key})
	return r.Rev, r.Deleted, err
}

// CompareAndSet implements store.Store.
func (s *Store) CompareAndSet(ctx context.Context, key string, expectModRev int64, value []byte) (int64, bool, error) {
	r, err := s.write(ctx, fsm.Command{Kind: fsm.KindCompareAndSet, Key: key, ExpectModRev: expectModRev, Value: value})
	return r.Rev, r.OK, err
}

// Scan implements store.Store.
func (s *Store) Scan(ctx context.Context, prefix string, limit int) ([]store.KV, int64, error) {
	if err := s.barrier(ctx); err != nil {
		return nil, 0, err
	}
	return s.n.FSM().Scan(prefix, limit)
}

// Batch implements store.Store.
func (s *Store) Batch(ctx context.Context, conds []store.Cond, ops []store.Op) (int64, bool, error) {
	r, err := s.write(ctx, fsm.Command{Kind: fsm.KindBatch, Conds: conds, Ops: ops})
	return r.Rev, r.OK, err
}

// Watch implements store.Store. A watch from now on starts after a read
// barrier, so it misses no write acknowledged before the call; a watch from
// a revision waits up to StaleReadWait for one, so that it sees a Compact
// acknowledged on another node (without a leader it opens on what this node
// holds). A watcher
// ends with store.ErrCompacted when this node installs a snapshot from the
// leader (watch again from the last revision seen) and when it applies a
// Load or Clear (the history before it is gone: read the state again). A
// watch from a revision above the store's present one, which only a
// history a Clear or Load replaced can have made, fails with
// store.ErrCompacted too.
func (s *Store) Watch(ctx context.Context, prefix string, afterRev int64) (store.Watcher, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	f := s.n.FSM()
	watch := f.Watch
	if afterRev == 0 {
		if err := s.barrier(ctx); err != nil {
			return nil, err
		}
	} else {
		// A read barrier first, when one completes within StaleReadWait,
		// so that a Compact acknowledged on another node is seen here.
		// Without a leader the watch opens on what this node holds: its
		// events are the store's, only that compaction may be missed.
		bctx, bcancel := context.WithTimeout(ctx, s.opts.StaleReadWait)
		err := s.n.LinearizableRead(bctx)
		bcancel()
		if err != nil && ctx.Err() != nil {
			return nil, fmt.Errorf("raft store: watch: %w", ctx.Err())
		}
		// A revision above this replica's: wait until it holds every
		// acknowledged write. One still above then was never made in the
		// store's present history (a Clear or Load replaced the history
		// the caller saw it in): ErrCompacted, so that the caller reads
		// the state again instead of missing the revisions up to it.
		if rev, err := f.Revision(); err == nil && afterRev > rev {
			if err := s.n.LinearizableRead(ctx); err != nil {
				return nil, fmt.Errorf("raft store: watch: %w", err)
			}
		}
		watch = f.WatchKnown
	}
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.life, cancel)
	w, err := watch(wctx, prefix, afterRev)
	if err != nil {
		stop()
		cancel()
		return nil, err
	}
	return &watcher{Watcher: w, life: s.life, release: func() { stop(); cancel() }}, nil
}

// watcher ends with store.ErrClosed when its store is closed.
type watcher struct {
	store.Watcher
	life    context.Context
	release func()
}

func (w *watcher) Err() error {
	err := w.Watcher.Err()
	if err != nil && w.life.Err() != nil && errors.Is(err, context.Canceled) {
		return store.ErrClosed
	}
	return err
}

func (w *watcher) Close() {
	w.Watcher.Close()
	w.release()
}

// Revision implements store.Store.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	if err := s.barrier(ctx); err != nil {
		return 0, err
	}
	return s.n.FSM().Revision()
}

// Compact drops the watch history up to revision rev, on every node.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	_, err := s.write(ctx, fsm.Command{Kind: fsm.KindCompact, Rev: rev})
	return err
}

// Clear implements store.Loader, on every member: every key outside the
// prefixes in keep goes, the revision becomes 0 (stays, with keep), and
// every watcher of every member ends with store.ErrCompacted.
//
// A large state is deleted in chunks first (each one Load of deletions, of
// the limits of one Load), so that no single entry holds every member's
// apply loop for long: a Clear of 100,000 keys as one entry stalls it for
// most of a second, long enough for heartbeats to lapse.
func (s *Store) Clear(ctx context.Context, keep ...string) error {
	kvs, _, err := s.Scan(ctx, "", 0)
	if err != nil {
		return err
	}
	var keys []string
	for _, kv := range kvs {
		if !kept(kv.Key, keep) {
			keys = append(keys, kv.Key)
		}
	}
	for len(keys) > clearChunkKeys {
		n, size := 0, 0
		for n < len(keys) && n < store.MaxBatchOps && size+len(keys[n]) <= store.MaxLoadBytes {
			size += len(keys[n])
			n++
		}
		if err := s.loadAtRevision(ctx, nil, keys[:n]); err != nil {
			return err
		}
		keys = keys[n:]
	}
	_, err = s.write(ctx, fsm.Command{Kind: fsm.KindClear, Prefixes: keep})
	return err
}

// loadAtRevision loads at the current revision, which writes to exempt
// keys may move between reading it and the Load: then it reads again.
func (s *Store) loadAtRevision(ctx context.Context, kvs []store.KV, deleted []string) error {
	for attempt := 0; ; attempt++ {
		rev, err := s.Revision(ctx)
		if err != nil {
			return err
		}
		err = s.Load(ctx, rev, kvs, deleted)
		if err == nil || attempt == 2 || !errors.Is(err, store.ErrInvalid) {
			return err
		}
	}
}

// clearChunkKeys is how many keys Clear leaves to its final entry.
const clearChunkKeys = 1024

func kept(key string, keep []string) bool {
	for _, p := range keep {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Load implements store.Loader, on every member, as one Raft entry: the
// request is checked against the limits (store.MaxBatchOps,
// store.MaxLoadBytes) before it is proposed. Every watcher of every member
// ends with store.ErrCompacted.
func (s *Store) Load(ctx context.Context, rev int64, kvs []store.KV, deleted []string) error {
	_, err := s.write(ctx, fsm.Command{Kind: fsm.KindLoad, Rev: rev, KVs: kvs, Keys: deleted})
	return err
}

// Freeze makes every member refuse, with ErrFrozen, each Put, Delete,
// CompareAndSet and Batch that writes a key outside the exempt prefixes,
// until Thaw; Load, Clear and Compact still apply. The state is replicated:
// it survives restarts and travels in snapshots. Freezing again replaces
// the exempt prefixes.
func (s *Store) Freeze(ctx context.Context, exempt ...string) error {
	_, err := s.write(ctx, fsm.Command{Kind: fsm.KindFreeze, Frozen: true, Prefixes: exempt})
	return err
}

// Thaw ends Freeze on every member.
func (s *Store) Thaw(ctx context.Context) error {
	_, err := s.write(ctx, fsm.Command{Kind: fsm.KindFreeze})
	return err
}

// Frozen reports this member's freeze state as applied so far (no read
// barrier) and the exempt prefixes; false when the state cannot be read.
func (s *Store) Frozen() (bool, []string) {
	frozen, exempt, err := s.n.FSM().Frozen()
	if err != nil {
		return false, nil
	}
	return frozen, exempt
}

// Close implements store.Store: later calls fail with store.ErrClosed and
// watchers end. The node stays up: its owner stops it.
func (s *Store) Close() error {
	s.close()
	return nil
}
