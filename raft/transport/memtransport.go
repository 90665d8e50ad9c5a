package transport

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// MemTransport is one node's Transport on a Network. Like the HTTP
// transport it only sends to peers it was given with AddPeer (urls are
// ignored) and reports drops the way the HTTP transport would.
type MemTransport struct {
	net    *Network
	id     uint64
	recv   Receiver
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	links  map[uint64]*link // outgoing, by destination
}

var _ Transport = (*MemTransport)(nil)

func newMemTransport(n *Network, id uint64, r Receiver) *MemTransport {
	ctx, cancel := context.WithCancel(context.Background())
	return &MemTransport{net: n, id: id, recv: r, ctx: ctx, cancel: cancel, links: make(map[uint64]*link)}
}

// link is one direction between two nodes.
type link struct {
	from, to uint64
	q        chan envelope
	ctx      context.Context
	cancel   context.CancelFunc

	delivered, dropped atomic.Uint64
	lastContact        atomic.Int64 // unix nanoseconds of the last delivery

	mu  sync.Mutex
	rng *rand.Rand
}

type envelope struct {
	m      *raftpb.Message
	due    time.Time
	report bool // the copy whose fate is reported for a snapshot
}

// Send routes each message through the network's faults; it never blocks.
func (t *MemTransport) Send(msgs []*raftpb.Message) {
	for _, m := range msgs {
		t.mu.Lock()
		l, closed := t.links[m.GetTo()], t.closed
		t.mu.Unlock()
		switch {
		case closed:
		case l == nil:
			t.lost(m.GetTo(), m, true)
		default:
			t.route(l, m)
		}
	}
}

// lost reports a message the network did not deliver. A silent loss (random
// drop) only fails a snapshot; a broken link is also reported unreachable,
// as the HTTP transport would find out.
func (t *MemTransport) lost(to uint64, m *raftpb.Message, unreachable bool) {
	if t.ctx.Err() != nil {
		return
	}
	if unreachable {
		t.recv.ReportUnreachable(to)
	}
	if m.GetType() == raftpb.MsgSnap {
		t.recv.ReportSnapshot(to, raft.SnapshotFailure)
	}
}

func (t *MemTransport) route(l *link, m *raftpb.Message) {
	lf := t.net.faultsFor(l.from, l.to)
	// Always draw the same numbers, so that changing one fault does not
	// shift the random sequence of the others.
	l.mu.Lock()
	uDrop, uDup := l.rng.Float64(), l.rng.Float64()
	d1, d2 := l.rng.Float64(), l.rng.Float64()
	l.mu.Unlock()
	switch {
	case lf.blocked:
		l.dropped.Add(1)
		t.lost(l.to, m, true)
		return
	case uDrop < lf.drop:
		l.dropped.Add(1)
		t.lost(l.to, m, false)
		return
	}
	now := time.Now()
	delay := func(u float64) time.Duration { return lf.min + time.Duration(u*float64(lf.max-lf.min)) }
	// Each copy is a deep copy: the receiver must not share memory with the
	// sender, as it would not over a wire.
	t.enqueue(l, envelope{m: proto.CloneOf(m), due: now.Add(delay(d1)), report: true})
	if uDup < lf.dup {
		t.enqueue(l, envelope{m: proto.CloneOf(m), due: now.Add(delay(d2))})
	}
}

func (t *MemTransport) enqueue(l *link, e envelope) {
	select {
	case l.q <- e:
	default: // the link is full: drop, as the HTTP transport does
		l.dropped.Add(1)
		if e.report {
			t.lost(l.to, e.m, true)
		}
	}
}

// run delivers a link's messages in order, each when it is due.
func (t *MemTransport) run(l *link) {
	defer t.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var e envelope
		select {
		case e = <-l.q:
		case <-l.ctx.Done():
			return
		}
		if wait := time.Until(e.due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-l.ctx.Done():
				return
			}
		}
		t.deliver(l, e)
	}
}

func (t *MemTransport) deliver(l *link, e envelope) {
	dst := t.net.live(l.to)
	if dst == nil || t.net.blocked(l.from, l.to) { // down, or cut while in flight
		l.dropped.Add(1)
		if e.report {
			t.lost(l.to, e.m, true)
		}
		return
	}
	if dst.recv.IsIDRemoved(l.from) {
		// Refused as the HTTP transport refuses it (410 Gone): a member
		// cut off before it applied its own removal learns it this way.
		l.dropped.Add(1)
		if rl, ok := t.recv.(RemovalListener); ok && t.ctx.Err() == nil {
			rl.SelfRemoved()
		}
		return
	}
	if err := dst.recv.Process(l.ctx, e.m); err != nil {
		if e.report {
			t.lost(l.to, e.m, false)
		}
		return
	}
	l.delivered.Add(1)
	l.lastContact.Store(time.Now().UnixNano())
	if e.report && e.m.GetType() == raftpb.MsgSnap && t.ctx.Err() == nil {
		t.recv.ReportSnapshot(l.to, raft.SnapshotFinish)
	}
}

// AddPeer opens the link to id; the url is ignored.
func (t *MemTransport) AddPeer(id uint64, _ string) {
	if id == t.id || id == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.links[id] != nil {
		return
	}
	ctx, cancel := context.WithCancel(t.ctx)
	l := &link{
		from: t.id, to: id,
		q:   make(chan envelope, t.net.linkQueue),
		ctx: ctx, cancel: cancel,
		rng: rand.New(rand.NewPCG(t.net.seed, t.id*0x9e3779b97f4a7c15^id)),
	}
	t.links[id] = l
	t.wg.Add(1)
	go t.run(l)
}

// RemovePeer closes the link to id, dropping what is in flight.
func (t *MemTransport) RemovePeer(id uint64) {
	t.mu.Lock()
	l := t.links[id]
	delete(t.links, id)
	t.mu.Unlock()
	if l != nil {
		l.cancel()
	}
}

// UpdatePeer adds id if it is unknown; urls mean nothing here.
func (t *MemTransport) UpdatePeer(id uint64, url string) { t.AddPeer(id, url) }

// Handler has nothing to serve: peers are reached in memory.
func (t *MemTransport) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "the in-memory raft transport has no HTTP side", http.StatusNotImplemented)
	})
}

// Stats reports each link; QueueBytes is not tracked (0), Sent counts
// deliveries.
func (t *MemTransport) Stats() map[uint64]PeerStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[uint64]PeerStats, len(t.links))
	for id, l := range t.links {
		st := PeerStats{
			Reachable: t.net.live(id) != nil && !t.net.blocked(t.id, id),
			QueueLen:  len(l.q),
			Sent:      l.delivered.Load(),
			Dropped:   l.dropped.Load(),
		}
		if ns := l.lastContact.Load(); ns != 0 {
			st.LastContact = time.Unix(0, ns)
		}
		out[id] = st
	}
	return out
}

// Close takes the node off the network and waits for its link goroutines;
// messages still queued to or from it are lost.
func (t *MemTransport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.mu.Unlock()
	t.net.leave(t)
	t.cancel()
	t.wg.Wait()
	return nil
}
