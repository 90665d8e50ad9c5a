package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kcd-project/kcd/store"
)

// revEvents are the events of one revision.
type revEvents struct {
	rev    int64
	events []store.Event
}

// eventOverhead approximates the memory of an Event besides its key and
// value, for the byte bound of a watcher's queue.
const eventOverhead = 64

func eventSize(ev store.Event) int { return eventOverhead + len(ev.KV.Key) + len(ev.KV.Value) }

// readHistory reads the events of the revisions after `after`, up to and
// including `to`, in order: whole revisions only, at most historyRows rows
// (a revision has at most store.MaxBatchOps events, so at least one whole
// revision fits). It does not check that the revisions are contiguous.
func (s *Store) readHistory(ctx context.Context, after, to int64) ([]revEvents, error) {
	q := "SELECT rev, op, k, val, create_rev FROM " + s.q.history +
		" WHERE rev > ? AND rev <= ? ORDER BY rev, seq" + s.d.limit(historyRows)
	rows, err := s.db.QueryContext(ctx, s.d.rebind(q), after, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []revEvents
	n := 0
	for rows.Next() {
		var (
			rev, create int64
			op          string
			k, v        []byte
		)
		if err := rows.Scan(&rev, &op, &k, &v, &create); err != nil {
			return nil, err
		}
		n++
		ev := store.Event{Type: store.EventPut, KV: store.KV{Key: string(k), Value: nonNil(v), CreateRevision: create, ModRevision: rev}}
		if op == "delete" {
			ev.Type, ev.KV.Value = store.EventDelete, nil
		}
		if len(out) == 0 || out[len(out)-1].rev != rev {
			out = append(out, revEvents{rev: rev})
		}
		last := &out[len(out)-1]
		last.events = append(last.events, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if n == historyRows && len(out) > 1 {
		out = out[:len(out)-1] // may be cut short by the limit
	}
	return out, nil
}

// feed is the store's one change feed: it reads history rows after the
// last revision it delivered and offers them to the watchers, woken by
// this store's commits and otherwise every poll_interval. When the
// database is unreachable it retries with backoff and resumes where it
// stopped, so watchers see no gap and no repeat.
func (s *Store) feed() {
	defer close(s.feedDone)
	tick := time.NewTicker(s.cfg.pollInterval)
	defer tick.Stop()
	backoff := time.Duration(0)
	for {
		err := s.poll()
		switch {
		case err == nil:
			if backoff > 0 {
				s.log.Info("sql store: watch feed reconnected")
			}
			backoff = 0
			select {
			case <-s.wake:
			case <-tick.C:
			case <-s.life.Done():
				return
			}
		default:
			if s.life.Err() != nil {
				return
			}
			backoff = min(max(2*backoff, feedBackoffMin), feedBackoffMax)
			s.log.Warn("sql store: watch feed cannot read history; retrying", "err", s.scrub(err.Error()), "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-s.life.Done():
				return
			}
		}
	}
}

// poll delivers every revision committed so far.
func (s *Store) poll() error {
	for {
		ctx, cancel := context.WithTimeout(s.life, s.cfg.opTimeout)
		more, err := s.pollOnce(ctx)
		cancel()
		if err != nil || !more {
			return err
		}
	}
}

// pollOnce delivers one chunk of history and says whether there is more.
func (s *Store) pollOnce(ctx context.Context) (bool, error) {
	// Where the feed stands, before what the database says: a Clear or a
	// Load in between changes the epoch, and nothing read is used.
	s.wmu.Lock()
	last, epoch := s.delivered, s.epoch
	s.wmu.Unlock()
	var rev, compacted int64
	if err := s.db.QueryRowContext(ctx, s.q.readMeta).Scan(&rev, &compacted); err != nil {
		return false, err
	}
	if rev < last {
		// Cleared (Loader.Clear) by another client: what the watchers
		// followed is gone.
		s.skip(epoch, rev, func(after int64) bool { return false },
			fmt.Errorf("%w: the store was cleared", store.ErrCompacted))
		return true, nil
	}
	if compacted > last {
		// History the watchers still needed was trimmed (or replaced by
		// Load) before the feed read it.
		s.skip(epoch, compacted, func(after int64) bool { return after >= compacted },
			fmt.Errorf("%w: history up to revision %d was dropped before it was delivered", store.ErrCompacted, compacted))
		return true, nil
	}
	if rev == last {
		return false, nil
	}
	revs, err := s.readHistory(ctx, last, rev)
	if err != nil {
		return false, err
	}
	next := last + 1
	for _, re := range revs {
		if re.rev != next {
			break
		}
		if !s.publish(epoch, re) {
			return true, nil // moved meanwhile (Clear, Load): read again
		}
		next++
	}
	if next > rev {
		return false, nil
	}
	if len(revs) > 0 && next > revs[len(revs)-1].rev {
		return true, nil // a whole chunk; more to read
	}
	// No history for revision next: trimmed or cleared meanwhile (the
	// next round sees that in meta), or rows removed by hand.
	if err := s.db.QueryRowContext(ctx, s.q.readMeta).Scan(&rev, &compacted); err != nil {
		return false, err
	}
	if rev >= next && compacted < next {
		s.log.Error("sql store: the history of a revision is missing; the watchers that need it end", "rev", next)
		s.skip(epoch, next, func(after int64) bool { return after >= next },
			fmt.Errorf("%w: the history of revision %d is missing", store.ErrCompacted, next))
	}
	return true, nil
}

// publish offers the events of one revision to the watchers, when it is
// the next one of the epoch the feed read it in.
func (s *Store) publish(epoch int64, re revEvents) bool {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.epoch != epoch || re.rev != s.delivered+1 {
		return false
	}
	for w := range s.watchers {
		if !w.offer(re.rev, re.events) {
			delete(s.watchers, w)
		}
	}
	s.delivered = re.rev
	return true
}

// skip moves the feed to revision to without delivering what lies
// between, when still in epoch: the watchers for which keep is false end
// with err.
func (s *Store) skip(epoch, to int64, keep func(after int64) bool, err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.epoch != epoch {
		return
	}
	s.moveLocked(to, keep, err)
}

// moveLocked sets delivered to rev without delivering anything, ending
// the watchers for which keep is false.
func (s *Store) moveLocked(rev int64, keep func(after int64) bool, err error) {
	for w := range s.watchers {
		if !keep(w.after) {
			w.stop(err)
			delete(s.watchers, w)
		}
	}
	s.delivered = rev
	s.epoch++
}

// Watch implements store.Store.
func (s *Store) Watch(ctx context.Context, prefix string, afterRev int64) (store.Watcher, error) {
	if err := s.enter(ctx, "watch"); err != nil {
		return nil, err
	}
	if afterRev < 0 {
		return nil, s.fail(ctx, "watch", fmt.Errorf("%w: negative revision %d", store.ErrInvalid, afterRev))
	}
	w := &watcher{
		s:      s,
		prefix: prefix,
		out:    make(chan store.Event),
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	var delivered int64
	for {
		s.wmu.Lock()
		epoch := s.epoch
		s.wmu.Unlock()
		rev, compacted, err := s.readMeta(ctx, "watch")
		if err != nil {
			return nil, err
		}
		if afterRev != 0 && afterRev < compacted {
			return nil, s.fail(ctx, "watch", fmt.Errorf("%w: watch after revision %d (history starts after %d)", store.ErrCompacted, afterRev, compacted))
		}
		w.after = afterRev
		if afterRev == 0 {
			w.after = rev
		}
		s.wmu.Lock()
		if s.closed.Load() {
			s.wmu.Unlock()
			return nil, s.fail(ctx, "watch", store.ErrClosed)
		}
		if s.epoch != epoch {
			s.wmu.Unlock()
			continue // a Clear or Load moved the revisions meanwhile
		}
		// The feed offers w every revision after delivered; w reads those
		// from after to delivered itself.
		delivered = s.delivered
		s.watchers[w] = struct{}{}
		s.wmu.Unlock()
		break
	}
	w.stopCtx = context.AfterFunc(ctx, func() { w.end(ctx.Err()) })
	go w.run(w.after, delivered)
	return w, nil
}

func (s *Store) forget(w *watcher) {
	s.wmu.Lock()
	delete(s.watchers, w)
	s.wmu.Unlock()
}

type watcher struct {
	s       *Store
	prefix  string
	after   int64 // only revisions above it are delivered
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

func (w *watcher) end(err error) {
	w.stop(err)
	w.s.forget(w)
}

// stop ends the watch for err; the first reason wins.
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

// offer queues the events of revision rev that match w's prefix, whole or
// not at all; it returns false when w is finished. It never blocks.
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
	if w.queued > 0 && (w.queued+n > watchBuffer || w.queuedBytes+size > watchBufferBytes) {
		w.stopLocked(store.ErrWatcherLagging)
		return false
	}
	for _, ev := range evs {
		if strings.HasPrefix(ev.KV.Key, w.prefix) {
			if ev.KV.Value != nil {
				ev.KV.Value = append([]byte{}, ev.KV.Value...) // each watcher owns its copy
			}
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

// run feeds Events: first the history after `after` up to `to`, read from
// the database, then what the feed offers.
func (w *watcher) run(after, to int64) {
	defer close(w.out)
	defer w.stopCtx()
	for after < to {
		ctx, cancel := context.WithTimeout(w.s.life, w.s.cfg.opTimeout)
		revs, err := w.s.readHistory(ctx, after, to)
		cancel()
		if err == nil && (len(revs) == 0 || revs[0].rev != after+1) {
			err = fmt.Errorf("%w: history after revision %d is no longer kept", store.ErrCompacted, after)
		}
		if err != nil {
			if !errors.Is(err, store.ErrCompacted) {
				err = w.s.fail(w.s.life, "watch", err)
			}
			w.end(err)
			return
		}
		for _, re := range revs {
			if re.rev != after+1 {
				w.end(fmt.Errorf("%w: history of revision %d is no longer kept", store.ErrCompacted, after+1))
				return
			}
			for _, ev := range re.events {
				if strings.HasPrefix(ev.KV.Key, w.prefix) && !w.send(ev) {
					return
				}
			}
			after = re.rev
		}
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
