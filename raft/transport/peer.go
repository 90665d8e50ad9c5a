package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// dropLogEvery limits drop warnings: a full queue drops at the rate raft
// sends, and the count is in Stats.
const dropLogEvery = 10 * time.Second

// peer is one destination: a bounded queue drained by a sender goroutine,
// and a one-slot snapshot lane.
type peer struct {
	t      *HTTP
	id     uint64
	q      *queue
	snapc  chan *raftpb.Message // one pending snapshot; more are refused
	urlc   chan struct{}        // wakes a backoff sleep when the url changes
	ctx    context.Context      // cancelled by RemovePeer and Close
	cancel context.CancelFunc

	sent, dropped atomic.Uint64
	dropLogged    atomic.Int64 // unix nanoseconds of the last drop warning

	mu          sync.Mutex
	url         string
	urlErr      error
	abort       func(error) // aborts the stream being opened or written, if any
	reachable   bool
	failing     bool // a failure was logged and no success since
	lastContact time.Time
	lastErr     string
}

func newPeer(t *HTTP, id uint64, rawURL string) *peer {
	ctx, cancel := context.WithCancel(t.ctx)
	p := &peer{
		t:      t,
		id:     id,
		q:      newQueue(t.cfg.MaxQueueMsgs, t.cfg.MaxQueueBytes),
		snapc:  make(chan *raftpb.Message, 1),
		urlc:   make(chan struct{}, 1),
		ctx:    ctx,
		cancel: cancel,
	}
	p.url, p.urlErr = baseURL(rawURL)
	return p
}

// baseURL keeps scheme and host: the handler's paths are fixed.
func baseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("peer url %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("peer url %q is not http(s)://host:port", raw)
	}
	return u.Scheme + "://" + u.Host, nil
}

func (p *peer) setURL(raw string) {
	u, err := baseURL(raw)
	p.mu.Lock()
	changed := u != p.url || (err == nil) != (p.urlErr == nil)
	p.url, p.urlErr = u, err
	abort := p.abort
	p.mu.Unlock()
	if !changed {
		return
	}
	if abort != nil {
		abort(errors.New("peer url changed"))
	}
	select {
	case p.urlc <- struct{}{}:
	default:
	}
}

func (p *peer) currentURL() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.url, p.urlErr
}

func (p *peer) setAbort(f func(error)) {
	p.mu.Lock()
	p.abort = f
	p.mu.Unlock()
}

// send queues m or drops it; it never blocks.
func (p *peer) send(m *raftpb.Message) {
	size := frameSize(m)
	if size > p.t.cfg.MaxFrameBytes {
		p.dropped.Add(1)
		p.t.log.Error("raft message too large to send; raise MaxFrameBytes on every member",
			"peer", p.id, "type", m.GetType(), "bytes", size, "limit", p.t.cfg.MaxFrameBytes)
		p.reportDrop(m)
		return
	}
	if m.GetType() == raftpb.MsgSnap {
		select {
		case p.snapc <- m:
		default: // a snapshot is already pending; raft will ask again
			p.dropped.Add(1)
			p.reportDrop(m)
		}
		return
	}
	if !p.q.push(m, size) {
		p.dropped.Add(1)
		if now := time.Now().UnixNano(); now-p.dropLogged.Load() > int64(dropLogEvery) {
			p.dropLogged.Store(now)
			n, size := p.q.len()
			p.t.log.Warn("raft messages dropped: the peer's queue is full", "peer", p.id,
				"queued", n, "bytes", size, "dropped_total", p.dropped.Load())
		}
		p.reportDrop(m)
	}
}

func (p *peer) reportDrop(m *raftpb.Message) {
	if p.ctx.Err() != nil {
		return // removed or closed: raft no longer cares
	}
	if m.GetType() == raftpb.MsgSnap {
		p.t.recv.ReportSnapshot(p.id, raft.SnapshotFailure)
	}
	p.t.recv.ReportUnreachable(p.id)
}

// run is the sender goroutine: it connects when there is something to send,
// streams until the stream breaks, then backs off and reconnects.
func (p *peer) run() {
	defer p.t.wg.Done()
	backoff := minBackoff
	for {
		if n, _ := p.q.len(); n == 0 {
			select {
			case <-p.q.ready:
			case <-p.ctx.Done():
				return
			}
		}
		s, err := p.open()
		if err == nil {
			p.succeeded()
			opened := time.Now()
			err = p.pump(s)
			s.close()
			// Only a stream that lived resets the backoff, so a peer that
			// accepts and at once drops streams is not hammered.
			if time.Since(opened) > maxBackoff {
				backoff = minBackoff
			}
		}
		if p.ctx.Err() != nil {
			return
		}
		p.failed(err)
		if !p.sleep(backoff) {
			return
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// sleep waits d, or less if the url changes; false when the peer is stopped.
func (p *peer) sleep(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-p.urlc:
	case <-p.ctx.Done():
		return false
	}
	return true
}

func (p *peer) succeeded() {
	p.mu.Lock()
	p.reachable = true
	p.lastContact = time.Now()
	p.lastErr = ""
	recovered := p.failing
	p.failing = false
	p.mu.Unlock()
	if recovered {
		p.t.log.Info("raft peer reachable again", "peer", p.id)
	}
}

// failed marks the peer unreachable, discards what was queued (it is stale
// by the time the peer is back, and raft resends from its own progress
// state) and tells raft.
func (p *peer) failed(err error) {
	p.mu.Lock()
	p.reachable = false
	p.lastErr = err.Error()
	first := !p.failing
	p.failing = true
	p.mu.Unlock()
	batch, size := p.q.take(nil)
	p.q.release(len(batch), size)
	p.dropped.Add(uint64(len(batch)))
	if first {
		level := slog.LevelWarn
		var se *statusError
		if errors.As(err, &se) && se.fatal() {
			level = slog.LevelError
		}
		p.t.log.Log(p.ctx, level, "raft peer unreachable", "peer", p.id, "err", err, "discarded", len(batch))
	}
	p.t.recv.ReportUnreachable(p.id)
}

func (p *peer) contact() {
	p.mu.Lock()
	p.lastContact = time.Now()
	p.mu.Unlock()
}

func (p *peer) stats() PeerStats {
	n, size := p.q.len()
	p.mu.Lock()
	defer p.mu.Unlock()
	return PeerStats{
		Reachable:   p.reachable,
		LastContact: p.lastContact,
		QueueLen:    n,
		QueueBytes:  size,
		Sent:        p.sent.Load(),
		Dropped:     p.dropped.Load(),
		LastError:   p.lastErr,
	}
}
