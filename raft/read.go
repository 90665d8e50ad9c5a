package raft

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	etcdraft "go.etcd.io/raft/v3"
)

// readBatcher turns concurrent linearizable reads into rounds: every read
// that arrives while a round is in flight joins the next one, so one
// ReadIndex (one round of heartbeats) serves them all.
type readBatcher struct {
	n      *Node
	signal chan struct{}

	mu      sync.Mutex
	next    *readRound
	seq     uint64
	pending map[uint64]chan uint64 // request ctx → read index
	// synced is when the ReadIndex request of the last completed round
	// was sent: the state machine has applied every write acknowledged
	// before then. Zero until a round completes.
	synced time.Time
	// stuck is when a BoundedRead last gave up waiting for a round; while
	// no round sent since then has completed, BoundedRead does not wait.
	stuck time.Time
}

type readRound struct {
	done chan struct{}
	err  error
}

func newReadBatcher(n *Node) *readBatcher {
	return &readBatcher{
		n:       n,
		signal:  make(chan struct{}, 1),
		next:    &readRound{done: make(chan struct{})},
		pending: map[uint64]chan uint64{},
	}
}

func (b *readBatcher) read(ctx context.Context) error {
	b.mu.Lock()
	r := b.next
	b.mu.Unlock()
	select {
	case b.signal <- struct{}{}:
	default:
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	case <-b.n.donec:
		return ErrStopped
	}
}

func (b *readBatcher) run() {
	for {
		select {
		case <-b.signal:
		case <-b.n.donec:
			return
		}
		b.mu.Lock()
		r := b.next
		b.next = &readRound{done: make(chan struct{})}
		b.mu.Unlock()
		r.err = b.round()
		close(r.done)
	}
}

// round gets a read index confirmed by a quorum and waits until the state
// machine has applied it. A ReadIndex request that gets no answer (it was
// dropped: no leader, a leader change) is sent again, until readTimeout.
func (b *readBatcher) round() error {
	timeout := max(readTimeout, 10*b.n.cfg.electionTimeout())
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		// Without a leader raft drops the request at once: ask again after
		// a tick, so that the read completes soon after one is elected. With
		// one, the request or its answer may still be lost with a broken
		// peer stream (a peer that was frozen): ask again after a few ticks,
		// not a whole election timeout; a repeated request costs the leader
		// one heartbeat round.
		retry := min(b.n.cfg.electionTimeout(), 5*b.n.cfg.TickInterval)
		if b.n.Leader() == 0 {
			retry = b.n.cfg.TickInterval
		}
		sent := time.Now()
		index, err := b.readIndex(ctx, retry)
		if err == nil {
			if err := b.n.WaitApplied(ctx, index); err != nil {
				return err
			}
			b.mu.Lock()
			if sent.After(b.synced) {
				b.synced = sent
			}
			b.mu.Unlock()
			return nil
		}
		if !errors.Is(err, errNoAnswer) {
			return err
		}
		if ctx.Err() != nil {
			if b.n.Leader() == 0 {
				return fmt.Errorf("%w: linearizable read timed out after %v", ErrNoLeader, timeout)
			}
			return fmt.Errorf("raft: linearizable read timed out after %v", timeout)
		}
	}
}

// readTimeout bounds how long a linearizable read waits for a quorum.
const readTimeout = 5 * time.Second

// syncInterval is how often a node with a leader completes a read round
// when no reads made one: the age of its state, should it lose the
// leader, starts from at most this.
const syncInterval = time.Second

// keepSynced runs a read round whenever none completed for syncInterval
// while a leader is known, so that BoundedRead's bound stays small on a
// node nobody reads from.
func (b *readBatcher) keepSynced() {
	tick := time.NewTicker(syncInterval / 2)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-b.n.donec:
			return
		}
		if b.n.Leader() == 0 {
			continue
		}
		if synced, ok := b.lastSync(); ok && time.Since(synced) < syncInterval {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), syncInterval)
		_ = b.read(ctx)
		cancel()
	}
}

// kick starts a round unless one is pending, without waiting for it.
func (b *readBatcher) kick() {
	select {
	case b.signal <- struct{}{}:
	default:
	}
}

// gaveUp notes that a BoundedRead stopped waiting for a round.
func (b *readBatcher) gaveUp() {
	b.mu.Lock()
	b.stuck = time.Now()
	b.mu.Unlock()
}

// isStuck tells whether a BoundedRead gave up since the last round that
// completed was sent.
func (b *readBatcher) isStuck() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stuck.After(b.synced)
}

// lastSync is when the request of the last completed read round was sent;
// false when none has completed since the node started.
func (b *readBatcher) lastSync() (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.synced, !b.synced.IsZero()
}

var errNoAnswer = errors.New("raft: no answer to read index")

// readIndex sends one ReadIndex request and waits up to wait for its answer.
func (b *readBatcher) readIndex(ctx context.Context, wait time.Duration) (uint64, error) {
	b.mu.Lock()
	b.seq++
	id := b.seq
	ch := make(chan uint64, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
	}()
	var rctx [8]byte
	binary.BigEndian.PutUint64(rctx[:], id)
	lead, term := b.n.Leader(), b.n.Term()
	if err := b.n.rn.ReadIndex(ctx, rctx[:]); err != nil {
		if ctx.Err() != nil {
			return 0, errNoAnswer
		}
		return 0, fmt.Errorf("raft: read index: %w", err)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	// raft drops a request made with no leader or to a leader that lost
	// its place: once a leader of another term is known, send again at
	// once rather than after wait (an election or a leadership transfer
	// takes milliseconds).
	for {
		moved := b.n.leaderMoves()
		if l := b.n.Leader(); l != 0 && (l != lead || b.n.Term() != term) {
			return 0, errNoAnswer
		}
		select {
		case index := <-ch:
			return index, nil
		case <-moved:
		case <-timer.C:
			return 0, errNoAnswer
		case <-ctx.Done():
			return 0, errNoAnswer
		case <-b.n.donec:
			return 0, ErrStopped
		}
	}
}

// answer hands a ReadState from a Ready to the round waiting for it.
func (b *readBatcher) answer(rs etcdraft.ReadState) {
	if len(rs.RequestCtx) != 8 {
		return
	}
	id := binary.BigEndian.Uint64(rs.RequestCtx)
	b.mu.Lock()
	ch := b.pending[id]
	b.mu.Unlock()
	if ch != nil {
		select {
		case ch <- rs.Index:
		default:
		}
	}
}
