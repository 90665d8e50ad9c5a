package remotestore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/store"
)

// Watch implements store.Store; see the package comment for how a watch
// survives the loss of the node it streams from.
func (s *Store) Watch(ctx context.Context, prefix string, afterRev int64) (store.Watcher, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if afterRev < 0 {
		return nil, fmt.Errorf("remotestore: watch: %w: negative revision %d", store.ErrInvalid, afterRev)
	}
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.life, cancel)
	w := &watcher{
		s: s, ctx: ctx, wctx: wctx, cancel: cancel, stopLife: stop,
		prefix: prefix,
		out:    make(chan store.Event),
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	st, err := w.open(afterRev, true)
	if err != nil {
		stop()
		cancel()
		if e := s.check(ctx); e != nil {
			if errors.Is(e, store.ErrClosed) {
				return nil, e
			}
			return nil, fmt.Errorf("remotestore: watch: %w", e)
		}
		return nil, err
	}
	w.start = st.start
	w.wg.Add(2)
	go w.pump()
	go w.follow(st)
	return w, nil
}

// stream is one open watch request.
type stream struct {
	node      string
	body      io.ReadCloser
	rd        *bufio.Reader
	start     int64
	heartbeat time.Duration
	cancel    context.CancelFunc // ends the request
	// skip events of revision skipRev are ones delivered before the
	// stream this one resumes broke.
	skipRev int64
	skip    int
	skipped int
}

// For tests: partialResumes counts resumes that continued inside a
// revision; breakStream, when set, is asked after each line whether to
// drop the connection there.
var (
	partialResumes atomic.Int64
	breakStream    func() bool
)

type watcher struct {
	s        *Store
	ctx      context.Context // the caller's
	wctx     context.Context // ends with the watch
	cancel   context.CancelFunc
	stopLife func() bool
	prefix   string
	start    int64 // the revision the watch started after

	// Position of the reader, kept by follow: the revision of the last
	// event queued and how many events of that revision were queued.
	last      int64
	lastCount int

	out  chan store.Event
	wake chan struct{}
	done chan struct{}
	wg   sync.WaitGroup

	mu          sync.Mutex
	pending     []store.Event
	queued      int
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

func (w *watcher) Close() {
	w.end(nil)
	w.wg.Wait()
}

// end stops the watch for err; the first reason wins.
func (w *watcher) end(err error) {
	w.mu.Lock()
	if !w.stopped {
		w.stopped, w.err = true, err
		w.pending = nil
		close(w.done)
	}
	w.mu.Unlock()
	w.cancel()
	w.stopLife()
}

// endErr is why the watch ended when its context did: the store's Close or
// the caller's context.
func (w *watcher) endErr() error {
	if w.s.life.Err() != nil {
		return store.ErrClosed
	}
	return w.ctx.Err()
}

// queue adds events for the reader; false when the watch is over (it was
// stopped, or now for lagging).
func (w *watcher) queue(evs []store.Event) bool {
	size := 0
	for _, ev := range evs {
		size += eventSize(ev)
	}
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return false
	}
	if w.queued > 0 && (w.queued+len(evs) > w.s.opts.WatchBuffer || w.queuedBytes+size > w.s.opts.WatchBufferBytes) {
		w.mu.Unlock()
		w.end(store.ErrWatcherLagging)
		return false
	}
	w.pending = append(w.pending, evs...)
	w.queued += len(evs)
	w.queuedBytes += size
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return true
}

func eventSize(ev store.Event) int { return 64 + len(ev.KV.Key) + len(ev.KV.Value) }

// pump feeds Events from the queue.
func (w *watcher) pump() {
	defer w.wg.Done()
	defer close(w.out)
	var spare []store.Event
	for {
		w.mu.Lock()
		if w.stopped {
			w.mu.Unlock()
			return
		}
		batch := w.pending
		w.pending = spare[:0]
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
		for _, ev := range batch {
			select {
			case w.out <- ev:
			case <-w.done:
				return
			}
			w.mu.Lock()
			w.queued--
			w.queuedBytes -= eventSize(ev)
			w.mu.Unlock()
		}
		clear(batch)
		spare = batch
	}
}

// follow reads streams, opening the watch again on another node when one
// breaks, until the watch ends.
func (w *watcher) follow(st *stream) {
	defer w.wg.Done()
	for {
		err := w.read(st)
		st.body.Close()
		st.cancel()
		if w.wctx.Err() != nil {
			w.end(w.endErr())
			return
		}
		var re *remoteError
		if errors.As(err, &re) {
			switch re.status {
			case api.StatusLagging, http.StatusBadRequest:
				w.end(re.storeErr())
				return
			}
			// ErrCompacted in a stream comes from that node (it installed
			// a snapshot): another node, or this one, may still have the
			// history; resuming says for sure.
		}
		w.s.log.Debug("store watch broke; resuming on another node", "node", st.node, "after", w.last, "err", err)
		w.s.demote(st.node)
		w.s.refreshNow()
		after := w.start
		if w.last > 0 {
			// Part of revision last may be missing (the events of one
			// revision may span lines): watch from the one before and skip
			// what was delivered of last.
			after = w.last - 1
		}
		if after == 0 {
			w.end(fmt.Errorf("remotestore: watch: %w: the stream broke and there is no revision to resume from", store.ErrCompacted))
			return
		}
		st, err = w.open(after, false)
		if err != nil {
			if w.wctx.Err() != nil {
				w.end(w.endErr())
			} else {
				w.end(err)
			}
			return
		}
		if w.last > 0 {
			st.skipRev, st.skip = w.last, w.lastCount
		}
	}
}

// read delivers the events of one stream until it breaks or ends. A
// stream with no line for three heartbeats (and a margin) counts as
// broken: its node may be frozen.
func (w *watcher) read(st *stream) error {
	quiet := 3*st.heartbeat + min(st.heartbeat, 2*time.Second)
	idle := time.AfterFunc(quiet, func() { st.body.Close() })
	defer idle.Stop()
	for {
		line, err := readLine(st.rd)
		if err != nil {
			return err
		}
		idle.Reset(quiet)
		var m api.WatchMessage
		if err := json.Unmarshal(line, &m); err != nil {
			return fmt.Errorf("watch stream of %s: %w", st.node, err)
		}
		if m.Error != nil {
			return &remoteError{url: st.node, status: m.Error.ErrorCode, message: m.Error.Message}
		}
		evs := make([]store.Event, 0, len(m.Events))
		for _, e := range m.Events {
			ev := store.Event{Type: store.EventPut, KV: kvOf(e.KV)}
			if e.Type == "delete" {
				ev.Type = store.EventDelete
				ev.KV.Value = nil
			}
			rev := ev.KV.ModRevision
			switch {
			case st.skip > 0 && rev == st.skipRev:
				st.skip--
				st.skipped++
				continue
			case rev < w.last:
				continue // never deliver twice
			case rev == w.last:
				if st.skipRev == rev && st.skip == 0 && w.lastCount == st.skipped {
					partialResumes.Add(1) // the first event after the seam
				}
				w.lastCount++
			default:
				w.last, w.lastCount = rev, 1
			}
			st.skip = 0
			evs = append(evs, ev)
		}
		if len(evs) > 0 && !w.queue(evs) {
			return nil
		}
		if breakStream != nil && breakStream() {
			return errors.New("stream broken by the test")
		}
	}
}

// readLine reads one line of at most maxLine bytes.
func readLine(rd *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		part, err := rd.ReadSlice('\n')
		if err == nil {
			if buf == nil {
				return part, nil
			}
			return append(buf, part...), nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if len(buf)+len(part) > maxLine {
			return nil, fmt.Errorf("watch line longer than %d bytes", maxLine)
		}
		buf = append(buf, part...)
	}
}

// open starts the watch on some node. The first open (first) fails at once
// on a store error; a resume keeps trying nodes until the watch ends, and
// fails only with a store error (ErrCompacted from a node that answered).
func (w *watcher) open(after int64, first bool) (*stream, error) {
	body, err := json.Marshal(api.StoreRequest{Prefix: []byte(w.prefix), AfterRevision: after, HeartbeatMS: w.s.opts.WatchHeartbeat.Milliseconds()})
	if err != nil {
		return nil, fmt.Errorf("remotestore: watch: %w", err)
	}
	var deadline <-chan time.Time
	if first {
		t := time.NewTimer(w.s.opts.RetryTimeout)
		defer t.Stop()
		deadline = t.C
	}
	var lastErr error
	for backoff := 50 * time.Millisecond; ; backoff = min(backoff*2, time.Second) {
		for _, ep := range w.s.Endpoints() {
			st, err := w.openOn(ep, body, after == 0)
			if err == nil {
				w.s.succeeded(ep)
				return st, nil
			}
			if w.wctx.Err() != nil {
				return nil, w.wctx.Err()
			}
			w.s.demote(ep)
			var re *remoteError
			if errors.As(err, &re) {
				if se := re.storeErr(); se != nil {
					return nil, se
				}
			}
			lastErr = err
			w.s.refreshNow()
		}
		select {
		case <-w.wctx.Done():
			return nil, w.wctx.Err()
		case <-deadline:
			return nil, fmt.Errorf("remotestore: watch: no node answered within %v: %w", w.s.opts.RetryTimeout, lastErr)
		case <-time.After(backoff):
		}
	}
}

// openTimeout bounds how long a watch from a revision waits for a node's
// first line: it needs no read barrier, so a node that does not answer at
// once is frozen or overloaded, and the next one is tried.
const openTimeout = time.Second

// openOn sends the watch request to node ep and reads the stream's first
// line, waiting up to RequestTimeout for a watch from now (barrier: the
// node first waits for a read barrier) and openTimeout for one from a
// revision.
func (w *watcher) openOn(ep string, body []byte, barrier bool) (_ *stream, err error) {
	wait := w.s.opts.RequestTimeout
	if !barrier {
		wait = min(wait, openTimeout)
	}
	// The request's context lives as long as the stream; until the first
	// line it ends after wait.
	sctx, cancel := context.WithCancel(w.wctx)
	t := time.AfterFunc(wait, cancel)
	defer func() {
		if err != nil {
			t.Stop()
			cancel()
		}
	}()
	req, err := http.NewRequestWithContext(sctx, http.MethodPost, ep+"/kcd/v1/store/watch", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := w.s.whc.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		defer res.Body.Close()
		return nil, readRemoteError(ep, res)
	}
	st := &stream{node: ep, body: res.Body, cancel: cancel, rd: bufio.NewReaderSize(res.Body, 64<<10)}
	line, err := readLine(st.rd)
	if err == nil && !t.Stop() {
		err = fmt.Errorf("no first line within %v", wait)
	}
	var m api.WatchMessage
	if err == nil {
		err = json.Unmarshal(line, &m)
	}
	if err == nil && m.StartRevision == nil {
		err = errors.New("the stream does not start with its revision")
	}
	if err != nil {
		res.Body.Close()
		return nil, fmt.Errorf("watch stream of %s: %w", ep, err)
	}
	st.start = *m.StartRevision
	st.heartbeat = time.Duration(m.HeartbeatMS) * time.Millisecond
	if st.heartbeat <= 0 {
		st.heartbeat = 5 * time.Second
	}
	return st, nil
}
