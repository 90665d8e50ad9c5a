// Package memstore is an EXAMPLE of a third-party metadata store backend for
// kcd: a store.Store and store.Loader kept in the memory of one process. It
// shows what a backend implements, how it registers, and how it runs the
// conformance suites (memstore_test.go); cmd/kcd-memstore builds a kcd with
// it. See docs/stores.md, "Writing a backend".
//
// Do not run a cluster on it: its content lives in the Raft leader's memory
// only and is lost when that process stops or leadership moves. It is not
// part of the kcd binary.
//
// Importing the package registers the backend "memory":
//
//	import _ "github.com/kcd-project/kcd/examples/memstore"
//
// It takes one optional setting, "history": how many events it keeps for
// watches that replay (default 100000); older ones are compacted.
package memstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kcd-project/kcd/store"
)

// Name is the name the backend registers under.
const Name = "memory"

func init() {
	// Like a database/sql driver: registered when the package is imported.
	store.Register(Name, func(ctx context.Context, settings map[string]string) (store.Store, error) {
		opts := Options{}
		for k, v := range settings {
			switch k {
			case "history":
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 {
					// The value is not echoed: a backend's errors never
					// show a setting (store.Open masks them too).
					return nil, fmt.Errorf("memstore: setting history must be a positive number")
				}
				opts.History = n
			default:
				return nil, fmt.Errorf("memstore: unknown setting %q", k)
			}
		}
		return New(opts), nil
	})
}

// Options tune a Store.
type Options struct {
	// History is how many events the store keeps for watches that replay;
	// 0: DefaultHistory.
	History int
}

// DefaultHistory is the default of Options.History.
const DefaultHistory = 100_000

// maxPending bounds the events queued for one watcher that its reader has
// not taken (beyond those of its replay); a watcher over it is dropped with
// store.ErrWatcherLagging, so that a slow reader never holds up writers or
// memory.
const maxPending = 4 * store.MaxBatchOps

// Store is the in-memory store. It implements store.Store, store.Loader
// and storetest.Compacter.
type Store struct {
	mu       sync.Mutex
	closed   bool
	rev      int64
	data     map[string]*entry
	history  []store.Event // the latest events, in revision order
	compact  int64         // a Watch from below this revision fails
	limit    int           // of history
	watchers map[*watcher]struct{}
}

type entry struct {
	value       []byte
	create, mod int64
}

var (
	_ store.Store  = (*Store)(nil)
	_ store.Loader = (*Store)(nil)
)

// New returns an empty store.
func New(opts Options) *Store {
	if opts.History <= 0 {
		opts.History = DefaultHistory
	}
	return &Store{data: map[string]*entry{}, limit: opts.History, watchers: map[*watcher]struct{}{}}
}

// begin checks the context and that the store is open, and locks it.
func (s *Store) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: %w", err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return store.ErrClosed
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("memstore: %w: %s", store.ErrInvalid, fmt.Sprintf(format, args...))
}

func checkKey(key string) error {
	if key == "" {
		return invalid("empty key")
	}
	if len(key) > store.MaxKeySize {
		return invalid("key of %d bytes is over %d", len(key), store.MaxKeySize)
	}
	return nil
}

func checkPut(key string, value []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if len(value) > store.MaxValueSize {
		return invalid("value of %d bytes is over %d", len(value), store.MaxValueSize)
	}
	return nil
}

func (e *entry) kv(key string) store.KV {
	return store.KV{Key: key, Value: slices.Clone(e.value), CreateRevision: e.create, ModRevision: e.mod}
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (store.KV, bool, error) {
	if err := checkKey(key); err != nil {
		return store.KV{}, false, err
	}
	if err := s.begin(ctx); err != nil {
		return store.KV{}, false, err
	}
	defer s.mu.Unlock()
	e := s.data[key]
	if e == nil {
		return store.KV{}, false, nil
	}
	return e.kv(key), true, nil
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, key string, value []byte) (int64, error) {
	rev, _, err := s.Batch(ctx, nil, []store.Op{store.Put(key, value)})
	return rev, err
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key string) (int64, bool, error) {
	if err := checkKey(key); err != nil {
		return 0, false, err
	}
	if err := s.begin(ctx); err != nil {
		return 0, false, err
	}
	defer s.mu.Unlock()
	if s.data[key] == nil {
		return s.rev, false, nil
	}
	return s.apply([]store.Op{store.Delete(key)}), true, nil
}

// CompareAndSet implements store.Store.
func (s *Store) CompareAndSet(ctx context.Context, key string, expectModRev int64, value []byte) (int64, bool, error) {
	if expectModRev < 0 {
		return 0, false, invalid("negative revision %d", expectModRev)
	}
	return s.Batch(ctx, []store.Cond{{Key: key, ModRevision: expectModRev}}, []store.Op{store.Put(key, value)})
}

// Scan implements store.Store.
func (s *Store) Scan(ctx context.Context, prefix string, limit int) ([]store.KV, int64, error) {
	if limit < 0 {
		return nil, 0, invalid("negative limit %d", limit)
	}
	if err := s.begin(ctx); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	var keys []string
	for k := range s.data {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if limit > 0 && len(keys) > limit {
		keys = keys[:limit]
	}
	kvs := make([]store.KV, len(keys))
	for i, k := range keys {
		kvs[i] = s.data[k].kv(k)
	}
	return kvs, s.rev, nil
}

// Batch implements store.Store.
func (s *Store) Batch(ctx context.Context, conds []store.Cond, ops []store.Op) (int64, bool, error) {
	if len(conds) > store.MaxBatchOps || len(ops) > store.MaxBatchOps {
		return 0, false, invalid("batch of %d conditions and %d ops is over %d", len(conds), len(ops), store.MaxBatchOps)
	}
	for _, c := range conds {
		if err := checkKey(c.Key); err != nil {
			return 0, false, err
		}
		if c.ModRevision < 0 {
			return 0, false, invalid("condition on %q with a negative revision", c.Key)
		}
	}
	for _, op := range ops {
		var err error
		switch op.Type {
		case store.OpPut:
			err = checkPut(op.Key, op.Value)
		case store.OpDelete:
			err = checkKey(op.Key)
		default:
			err = invalid("op of unknown type %d", op.Type)
		}
		if err != nil {
			return 0, false, err
		}
	}
	if err := s.begin(ctx); err != nil {
		return 0, false, err
	}
	defer s.mu.Unlock()
	for _, c := range conds {
		e := s.data[c.Key]
		if (c.ModRevision == 0 && e != nil) || (c.ModRevision != 0 && (e == nil || e.mod != c.ModRevision)) {
			return s.rev, false, nil
		}
	}
	return s.apply(ops), true, nil
}

// apply applies valid ops as one revision, unless they change nothing,
// and hands their events to the watchers. s.mu is held.
func (s *Store) apply(ops []store.Op) int64 {
	rev := s.rev + 1
	var events []store.Event
	for _, op := range ops {
		switch op.Type {
		case store.OpPut:
			e := s.data[op.Key]
			if e == nil {
				e = &entry{create: rev}
				s.data[op.Key] = e
			}
			e.value, e.mod = slices.Clone(op.Value), rev
			events = append(events, store.Event{Type: store.EventPut, KV: e.kv(op.Key)})
		case store.OpDelete:
			if s.data[op.Key] == nil {
				continue
			}
			delete(s.data, op.Key)
			events = append(events, store.Event{Type: store.EventDelete, KV: store.KV{Key: op.Key, ModRevision: rev}})
		}
	}
	if len(events) == 0 {
		return s.rev
	}
	s.rev = rev
	s.history = append(s.history, events...)
	if len(s.history) > s.limit {
		// Drop whole revisions, the oldest first.
		drop := len(s.history) - s.limit
		last := s.history[drop-1].KV.ModRevision
		for drop < len(s.history) && s.history[drop].KV.ModRevision == last {
			drop++
		}
		s.history = slices.Delete(s.history, 0, drop)
		s.compact = last
	}
	for w := range s.watchers {
		w.send(events)
	}
	return rev
}

// Watch implements store.Store.
func (s *Store) Watch(ctx context.Context, prefix string, afterRev int64) (store.Watcher, error) {
	if afterRev < 0 {
		return nil, invalid("negative revision %d", afterRev)
	}
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if afterRev != 0 && afterRev < s.compact {
		return nil, fmt.Errorf("memstore: watch from %d, history starts at %d: %w", afterRev, s.compact, store.ErrCompacted)
	}
	if afterRev == 0 {
		afterRev = s.rev
	}
	w := &watcher{
		s: s, prefix: prefix, after: afterRev,
		out: make(chan store.Event), wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
	// Replay under the lock, so that nothing falls between history and
	// the live events.
	start, _ := slices.BinarySearchFunc(s.history, afterRev+1, func(e store.Event, rev int64) int {
		return int(min(max(e.KV.ModRevision-rev, -1), 1))
	})
	// The replay may hold up to the whole history: the queue's bound
	// starts above it.
	replay := s.history[start:]
	w.limit = len(replay) + maxPending
	w.send(replay)
	s.watchers[w] = struct{}{}
	go w.run(ctx)
	return w, nil
}

// Revision implements store.Store.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	return s.rev, nil
}

// Compact drops the watch history of revisions up to rev (it implements
// storetest.Compacter).
func (s *Store) Compact(ctx context.Context, rev int64) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if rev <= s.compact {
		return nil
	}
	i := 0
	for i < len(s.history) && s.history[i].KV.ModRevision <= rev {
		i++
	}
	s.history = slices.Delete(s.history, 0, i)
	s.compact = rev
	return nil
}

// Close implements store.Store: open watchers end with store.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.endWatchers(store.ErrClosed)
	s.data, s.history = nil, nil
	return nil
}

// endWatchers ends every watcher with err. s.mu is held.
func (s *Store) endWatchers(err error) {
	for w := range s.watchers {
		w.end(err)
	}
	clear(s.watchers)
}

// Clear implements store.Loader.
func (s *Store) Clear(ctx context.Context, keep ...string) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	for k := range s.data {
		if !slices.ContainsFunc(keep, func(p string) bool { return strings.HasPrefix(k, p) }) {
			delete(s.data, k)
		}
	}
	if len(keep) == 0 {
		s.rev = 0
	}
	// With keys kept the revision stays (it never goes back under them);
	// either way the history is gone.
	s.compact, s.history = s.rev, nil
	s.endWatchers(fmt.Errorf("memstore: cleared: %w", store.ErrCompacted))
	return nil
}

// Load implements store.Loader.
func (s *Store) Load(ctx context.Context, rev int64, kvs []store.KV, deleted []string) error {
	if rev < 0 {
		return invalid("negative revision %d", rev)
	}
	if n := len(kvs) + len(deleted); n > store.MaxBatchOps {
		return invalid("load of %d keys is over %d", n, store.MaxBatchOps)
	}
	size := 0
	for _, kv := range kvs {
		if err := checkPut(kv.Key, kv.Value); err != nil {
			return err
		}
		if kv.CreateRevision < 1 || kv.CreateRevision > kv.ModRevision || kv.ModRevision > rev {
			return invalid("key %q with revisions %d, %d at revision %d", kv.Key, kv.CreateRevision, kv.ModRevision, rev)
		}
		size += len(kv.Key) + len(kv.Value)
	}
	for _, k := range deleted {
		if err := checkKey(k); err != nil {
			return err
		}
		size += len(k)
	}
	if size > store.MaxLoadBytes && len(kvs)+len(deleted) > 1 {
		return invalid("load of %d bytes is over %d", size, store.MaxLoadBytes)
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if rev < s.rev {
		return invalid("load at revision %d, below the store's %d", rev, s.rev)
	}
	for _, kv := range kvs {
		s.data[kv.Key] = &entry{value: slices.Clone(kv.Value), create: kv.CreateRevision, mod: kv.ModRevision}
	}
	for _, k := range deleted {
		delete(s.data, k)
	}
	// No events: the history starts at rev.
	s.rev, s.compact, s.history = rev, rev, nil
	s.endWatchers(fmt.Errorf("memstore: loaded at revision %d: %w", rev, store.ErrCompacted))
	return nil
}

// watcher queues the events of its prefix for its reader; run delivers
// them.
type watcher struct {
	s      *Store
	prefix string
	after  int64 // events up to this revision are not delivered
	limit  int   // of pending
	out    chan store.Event
	wake   chan struct{} // 1: pending has events
	done   chan struct{} // closed by end

	mu      sync.Mutex
	pending []store.Event
	ended   bool
	err     error
}

// send queues the events of w's prefix; over maxPending the watcher is
// dropped. The store's lock is held.
func (w *watcher) send(events []store.Event) {
	w.mu.Lock()
	for _, ev := range events {
		if ev.KV.ModRevision > w.after && strings.HasPrefix(ev.KV.Key, w.prefix) {
			w.pending = append(w.pending, ev)
		}
	}
	lagging := len(w.pending) > w.limit
	w.mu.Unlock()
	if lagging {
		delete(w.s.watchers, w)
		w.end(store.ErrWatcherLagging)
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// end ends the watch with err (nil: by Close); the first reason wins.
func (w *watcher) end(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	w.ended, w.err, w.pending = true, err, nil
	close(w.done)
}

func (w *watcher) run(ctx context.Context) {
	defer close(w.out)
	for {
		select {
		case <-w.done:
			return
		case <-ctx.Done():
			w.stop(ctx.Err())
			return
		case <-w.wake:
		}
		w.mu.Lock()
		batch := w.pending
		w.pending = nil
		w.mu.Unlock()
		for _, ev := range batch {
			select {
			case w.out <- ev:
			case <-w.done:
				return
			case <-ctx.Done():
				w.stop(ctx.Err())
				return
			}
		}
	}
}

// stop ends the watch and forgets it.
func (w *watcher) stop(err error) {
	w.s.mu.Lock()
	delete(w.s.watchers, w)
	w.s.mu.Unlock()
	w.end(err)
}

// Events implements store.Watcher.
func (w *watcher) Events() <-chan store.Event { return w.out }

// Err implements store.Watcher.
func (w *watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close implements store.Watcher.
func (w *watcher) Close() { w.stop(nil) }
