package fsm

import (
	"context"
	"fmt"

	"github.com/kcd-project/kcd/store"
)

// Local is a store.Store over one FSM in one process, without Raft. Each
// write becomes a Command that is validated, encoded, applied as the entry
// after AppliedIndex (term 1), and answered from its Result; writes go one
// at a time. It is not replicated and must not share its file with a Raft
// node: it exists for tests, single-process tools, and as the model of the
// Raft backend, which does the same except that it proposes the command and
// waits for the Result carrying its request ID.
type Local struct {
	f *FSM
	// sem admits one writer at a time. It is a channel rather than a mutex
	// so that a waiting caller can give up when its context ends.
	sem    chan struct{}
	nextID uint64 // guarded by sem
}

var _ store.Loader = (*Local)(nil)

// OpenLocal opens the state file at path as a Local store.
func OpenLocal(path string, opts Options) (*Local, error) {
	f, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	// Each write is an entry of its own, so ids above the applied index
	// are new: a reopened file's remembered ids do not answer new writes.
	return &Local{f: f, sem: make(chan struct{}, 1), nextID: f.AppliedIndex()}, nil
}

// write applies c and returns its Result.
func (l *Local) write(ctx context.Context, c Command) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if err := c.Validate(); err != nil {
		return Result{}, fmt.Errorf("fsm: %s: %w", c.Kind, err)
	}
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	defer func() { <-l.sem }()
	// select picks at random when both are ready; a call whose context has
	// ended must not write.
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	l.nextID++
	c.ID = l.nextID
	data, err := EncodeCommand(c)
	if err != nil {
		return Result{}, err
	}
	results, err := l.f.Apply([]Entry{{Index: l.f.AppliedIndex() + 1, Term: 1, Data: data}})
	if err != nil {
		return Result{}, err
	}
	if len(results) != 1 || results[0].ID != c.ID {
		return Result{}, fmt.Errorf("fsm: %s: no result for request %d", c.Kind, c.ID)
	}
	r := results[0]
	if r.Err != nil {
		return r, fmt.Errorf("fsm: %s: %w", c.Kind, r.Err)
	}
	return r, nil
}

// Get implements store.Store.
func (l *Local) Get(ctx context.Context, key string) (store.KV, bool, error) {
	if err := ctx.Err(); err != nil {
		return store.KV{}, false, err
	}
	return l.f.Get(key)
}

// Put implements store.Store.
func (l *Local) Put(ctx context.Context, key string, value []byte) (int64, error) {
	r, err := l.write(ctx, Command{Kind: KindPut, Key: key, Value: value})
	return r.Rev, err
}

// Delete implements store.Store.
func (l *Local) Delete(ctx context.Context, key string) (int64, bool, error) {
	r, err := l.write(ctx, Command{Kind: KindDelete, Key: key})
	return r.Rev, r.Deleted, err
}

// CompareAndSet implements store.Store.
func (l *Local) CompareAndSet(ctx context.Context, key string, expectModRev int64, value []byte) (int64, bool, error) {
	r, err := l.write(ctx, Command{Kind: KindCompareAndSet, Key: key, ExpectModRev: expectModRev, Value: value})
	return r.Rev, r.OK, err
}

// Scan implements store.Store.
func (l *Local) Scan(ctx context.Context, prefix string, limit int) ([]store.KV, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	return l.f.Scan(prefix, limit)
}

// Batch implements store.Store.
func (l *Local) Batch(ctx context.Context, conds []store.Cond, ops []store.Op) (int64, bool, error) {
	r, err := l.write(ctx, Command{Kind: KindBatch, Conds: conds, Ops: ops})
	return r.Rev, r.OK, err
}

// Watch implements store.Store. The state is always current, so a revision
// above it can only come from a history a Clear or Load replaced: such a
// watch fails with store.ErrCompacted (FSM.WatchKnown).
func (l *Local) Watch(ctx context.Context, prefix string, afterRev int64) (store.Watcher, error) {
	return l.f.WatchKnown(ctx, prefix, afterRev)
}

// Revision implements store.Store.
func (l *Local) Revision(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return l.f.Revision()
}

// Compact drops the watch history up to revision rev: a later Watch from
// before it fails with store.ErrCompacted. It is the optional interface the
// conformance suite (storetest) uses to test that.
func (l *Local) Compact(ctx context.Context, rev int64) error {
	_, err := l.write(ctx, Command{Kind: KindCompact, Rev: rev})
	return err
}

// Clear implements store.Loader.
func (l *Local) Clear(ctx context.Context, keep ...string) error {
	_, err := l.write(ctx, Command{Kind: KindClear, Prefixes: keep})
	return err
}

// Load implements store.Loader.
func (l *Local) Load(ctx context.Context, rev int64, kvs []store.KV, deleted []string) error {
	_, err := l.write(ctx, Command{Kind: KindLoad, Rev: rev, KVs: kvs, Keys: deleted})
	return err
}

// Freeze makes writes to keys outside the exempt prefixes fail with
// ErrFrozen until Thaw.
func (l *Local) Freeze(ctx context.Context, exempt ...string) error {
	_, err := l.write(ctx, Command{Kind: KindFreeze, Frozen: true, Prefixes: exempt})
	return err
}

// Thaw ends Freeze.
func (l *Local) Thaw(ctx context.Context) error {
	_, err := l.write(ctx, Command{Kind: KindFreeze})
	return err
}

// Frozen returns the freeze state and its exempt prefixes.
func (l *Local) Frozen() (bool, []string, error) { return l.f.Frozen() }

// Close implements store.Store: it ends the watchers and closes the file.
func (l *Local) Close() error { return l.f.Close() }
