package fsm

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/kcd-project/kcd/store"
)

// Replay reads history in chunks of at most these many revisions, events
// and bytes (a chunk ends on a revision boundary, and holds at least one
// revision), so that catching up from far back holds neither a read
// transaction nor memory for long.
const (
	replayRevs   = 256
	replayEvents = 1024
	replayBytes  = 4 << 20
)

// eventOverhead approximates the memory of an Event besides its key and
// value, for the byte bound of a watcher's queue.
const eventOverhead = 64

func eventSize(ev store.Event) int {
	return eventOverhead + len(ev.KV.Key) + len(ev.KV.Value)
}

// Watch delivers the changes to keys starting with prefix made after
// revision afterRev (0: from now on): first those still in history, then
// those of later Apply calls as they commit, in revision order, with no gap
// and no duplicate. It fails with store.ErrCompacted when history no longer
// reaches back to afterRev+1. The watch ends when ctx ends, when the watcher
// is closed, when its reader falls behind by more than the watch buffer
// (store.ErrWatcherLagging), when the FSM is closed (store.ErrClosed) or
// restored from a snapshot (store.ErrCompacted).
//
// Apply never waits for a watcher: each has its own bounded queue, emptied
// by a goroutine of its own into the Events channel.
func (f *FSM) Watch(ctx context.Context, prefix string, afterRev int64) (store.Watcher, error) {
	return f.watch(ctx, prefix, afterRev, false)
}

// WatchKnown is Watch, except that a revision above the current one fails
// with store.ErrCompacted instead of waiting for it: for a caller that
// knows this state holds every revision made so far (after a read
// barrier), to which a revision above it can only come from a history a
// Clear or Load replaced.
func (f *FSM) WatchKnown(ctx context.Context, prefix string, afterRev int64) (store.Watcher, error) {
	return f.watch(ctx, prefix, afterRev, true)
}

func (f *FSM) watch(ctx context.Context, prefix string, afterRev int64, known bool) (store.Watcher, error) {
	if afterRev < 0 {
		return nil, fmt.Errorf("fsm: watch: %w: negative revision %d", store.ErrInvalid, afterRev)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := &watcher{
		f:         f,
		prefix:    prefix,
		maxEvents: f.opts.WatchBuffer,
		maxBytes:  f.opts.WatchBufferBytes,
		out:       make(chan store.Event),
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	f.wmu.Lock()
	if f.closed {
		f.wmu.Unlock()
		return nil, store.ErrClosed
	}
	if err := f.fenced(); err != nil { // under wmu: Fence stops those registered before
		f.wmu.Unlock()
		return nil, err
	}
	// Revisions up to cur are committed and in history; every later one
	// will be offered to w by publish, since publish runs under wmu too.
	cur := f.rev
	if afterRev != 0 && afterRev < f.compacted {
		compacted := f.compacted
		f.wmu.Unlock()
		return nil, fmt.Errorf("fsm: watch after revision %d: %w (history starts after %d)", afterRev, store.ErrCompacted, compacted)
	}
	if known && afterRev > cur {
		f.wmu.Unlock()
		return nil, fmt.Errorf("fsm: watch after revision %d: %w (the revision is %d: the history that revision belongs to was replaced by a Clear or Load)", afterRev, store.ErrCompacted, cur)
	}
	if afterRev == 0 {
		afterRev = cur
	}
	w.after = afterRev
	f.watchers[w] = struct{}{}
	f.wmu.Unlock()

	w.stopCtx = context.AfterFunc(ctx, func() { w.end(ctx.Err()) })
	go w.run(afterRev+1, cur)
	return w, nil
}

// publish makes a commit visible to watchers. Apply calls it after its
// transaction committed, with the revisions it made; reset says that a Load
// or Clear replaced the history, which ends every watcher there is.
func (f *FSM) publish(rev, compacted int64, reset bool, revs []revEvents) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	f.rev, f.compacted = rev, compacted
	if reset {
		f.stopWatchersLocked(fmt.Errorf("%w: the store was loaded or cleared at revision %d", store.ErrCompacted, compacted))
	}
	for _, re := range revs {
		for w := range f.watchers {
			if !w.offer(re.rev, re.events) {
				delete(f.watchers, w)
			}
		}
	}
}

func (f *FSM) stopWatchersLocked(err error) {
	for w := range f.watchers {
		w.stop(err)
		delete(f.watchers, w)
	}
}

func (f *FSM) forget(w *watcher) {
	f.wmu.Lock()
	delete(f.watchers, w)
	f.wmu.Unlock()
}

type watcher struct {
	f                   *FSM
	prefix              string
	after               int64 // only revisions above it are delivered
	maxEvents, maxBytes int

	out     chan store.Event
	wake    chan struct{} // a token: pending has grown
	done    chan struct{} // closed by stop
	stopCtx func() bool

	mu          sync.Mutex
	pending     []store.Event
	queued      int // events in pending or taken by run and not yet sent
	queuedBytes int
	stopped     bool
	err         error
}

func (w *watcher) Events() <-chan store.Event { return w.out }

func (w *watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *watcher) Close() { w.end(nil) }

// end stops w for err and removes it from the FSM.
func (w *watcher) end(err error) {
	w.stop(err)
	w.f.forget(w)
}

// stop ends the watch for err (the first reason wins) and drops the queue.
// It does not touch the FSM's watcher set, so publish may call it.
func (w *watcher) stop(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopLocked(err)
}

func (w *watcher) stopLocked(err error) {
	if w.stopped {
		return
	}
	w.stopped, w.err = true, err
	w.pending = nil
	close(w.done)
}

// offer queues the events of revision rev that match w's prefix. It
// returns false when w is finished: stopped before, or now for lagging.
// It runs under the FSM's wmu and must never block.
func (w *watcher) offer(rev int64, evs []store.Event) bool {
	if rev <= w.after {
		return true
	}
	n, size := 0, 0
	for _, ev := range evs {
		if strings.HasPrefix(ev.KV.Key, w.prefix) {
			n++
			size += eventSize(ev)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return false
	}
	if n == 0 {
		return true
	}
	// A revision is queued whole or not at all, so a reader never sees part
	// of a Batch; when the queue is empty it is taken whatever its size.
	if w.queued > 0 && (w.queued+n > w.maxEvents || w.queuedBytes+size > w.maxBytes) {
		w.stopLocked(store.ErrWatcherLagging)
		return false
	}
	for _, ev := range evs {
		if strings.HasPrefix(ev.KV.Key, w.prefix) {
			// Each watcher owns its copy: a reader that modifies a value
			// affects no one else.
			ev.KV.Value = bytes.Clone(ev.KV.Value)
			w.pending = append(w.pending, ev)
		}
	}
	w.queued += n
	w.queuedBytes += size
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return true
}

// run feeds Events: first history from revision from to to, then what offer
// queues.
func (w *watcher) run(from, to int64) {
	defer close(w.out)
	defer w.stopCtx()
	for from <= to {
		evs, next, err := w.f.history(w.prefix, from, to)
		if err != nil {
			w.end(err)
			return
		}
		for _, ev := range evs {
			if !w.send(ev) {
				return
			}
		}
		from = next
	}
	var spare []store.Event
	for {
		w.mu.Lock()
		if w.stopped {
			w.mu.Unlock()
			return
		}
		batch := w.pending
		w.pending = spare
		w.mu.Unlock()
		if len(batch) == 0 {
			spare = batch
			select {
			case <-w.wake:
			case <-w.done:
				return
			}
			continue
		}
		size := 0
		for _, ev := range batch {
			if !w.send(ev) {
				return
			}
			size += eventSize(ev)
		}
		w.mu.Lock()
		w.queued -= len(batch)
		w.queuedBytes -= size
		w.mu.Unlock()
		clear(batch)
		spare = batch[:0]
	}
}

func (w *watcher) send(ev store.Event) bool {
	select {
	case w.out <- ev:
		return true
	case <-w.done:
		return false
	}
}

// history reads the events of revisions from..to matching prefix, one chunk
// of them, and returns the first revision it did not read.
func (f *FSM) history(prefix string, from, to int64) (evs []store.Event, next int64, err error) {
	next = from
	err = f.view(func(tx *bolt.Tx) error {
		if compacted := int64(getUint(tx.Bucket(bucketMeta), metaCompacted)); from <= compacted {
			return fmt.Errorf("%w: revision %d (history starts after %d)", store.ErrCompacted, from, compacted)
		}
		c := tx.Bucket(bucketHistory).Cursor()
		size, revs := 0, 0
		full := false
		// The record holding from is the first whose last revision is
		// not before it; the ones after follow it without a gap.
		for k, v := c.Seek(revKey(from)); next <= to && !full; k, v = c.Next() {
			if k == nil || len(k) != 8 {
				return fmt.Errorf("history of revision %d is missing", next)
			}
			last := int64(binary.BigEndian.Uint64(k))
			err := eachRevision(v, last, next, func(rev int64, rec []byte) (bool, error) {
				if rev != next { // a record starting after it: a gap
					return false, fmt.Errorf("history of revision %d is missing", next)
				}
				if rev > to {
					return false, nil
				}
				before := len(evs)
				var err error
				if evs, err = decodeEvents(evs, rec, rev, prefix); err != nil {
					return false, fmt.Errorf("history of revision %d: %w", rev, err)
				}
				for _, ev := range evs[before:] {
					size += eventSize(ev)
				}
				next = rev + 1
				revs++
				full = revs >= replayRevs || len(evs) >= replayEvents || size >= replayBytes
				return !full, nil
			})
			if err != nil {
				return fmt.Errorf("history record of revision %d: %w", last, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, from, fmt.Errorf("fsm: watch: %w", err)
	}
	return evs, next, nil
}
