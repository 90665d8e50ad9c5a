package raft

import (
	"sync"

	pb "go.etcd.io/raft/v3/raftpb"
)

// maxApplyQueue bounds the committed entries queued for the applier: past
// it the Ready loop waits (back-pressure on raft, not growth).
const maxApplyQueue = 16384

// applyQueue hands committed normal entries from the Ready loop to the
// applier goroutine. The loop queues and goes on; the applier takes
// everything queued at once and applies it in one state machine call, so
// the busier the node, the larger (and cheaper per entry) its applies.
type applyQueue struct {
	mu      sync.Mutex
	cond    sync.Cond
	pending []*pb.Entry
	spare   []*pb.Entry
	busy    bool  // the applier is applying a batch taken from pending
	err     error // the applier's error: the node is stopping
	stopped bool
}

func (q *applyQueue) init() { q.cond.L = &q.mu }

// stop ends runApplier once it has finished the batch it is applying; the
// entries still queued stay unapplied (the log holds them).
func (q *applyQueue) stop() {
	q.mu.Lock()
	q.stopped = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

// runApplier applies what applyAsync queues, in order.
func (n *Node) runApplier() {
	q := &n.applyq
	go func() {
		<-n.stopc
		q.stop()
	}()
	for {
		q.mu.Lock()
		for len(q.pending) == 0 && !q.stopped {
			q.cond.Wait()
		}
		if q.stopped {
			q.mu.Unlock()
			return
		}
		ents := q.pending
		q.pending, q.spare = q.spare[:0], nil
		q.busy = true
		q.cond.Broadcast() // room in the queue
		q.mu.Unlock()

		err := n.applyEntries(ents)
		if err != nil {
			n.stop(err) // the state machine can no longer follow the log
		}
		clear(ents)
		q.mu.Lock()
		q.busy = false
		if err != nil && q.err == nil {
			q.err = err
		}
		if cap(ents) <= maxApplyQueue {
			q.spare = ents[:0]
		}
		q.cond.Broadcast()
		q.mu.Unlock()
	}
}

// applyAsync queues normal committed entries for the applier, waiting only
// while the queue is full. Ready loop only.
func (n *Node) applyAsync(ents []*pb.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	q := &n.applyq
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.pending) >= maxApplyQueue && q.err == nil && !q.stopped {
		q.cond.Wait()
	}
	if q.err != nil {
		return q.err
	}
	if q.stopped {
		return nil
	}
	q.pending = append(q.pending, ents...)
	q.cond.Broadcast()
	return nil
}

// waitApply waits until the applier has applied everything queued (after a
// stop: until it has finished the batch it was applying). Ready loop only.
func (n *Node) waitApply() error {
	q := &n.applyq
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.err == nil && (q.busy || len(q.pending) > 0 && !q.stopped) {
		q.cond.Wait()
	}
	return q.err
}
