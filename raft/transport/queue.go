package transport

import (
	"sync"

	"go.etcd.io/raft/v3/raftpb"
)

// queue is a peer's outbound buffer, bounded by message count and bytes.
// The batch the sender has taken stays accounted until the sender releases
// it, so the bounds hold for everything the transport holds for the peer,
// not only for what still waits.
type queue struct {
	maxMsgs, maxBytes int

	mu       sync.Mutex
	msgs     []*raftpb.Message
	sizes    []int // frame size of each queued message, to release exactly
	held     int   // messages queued or being written
	heldSize int   // and their bytes
	ready    chan struct{}
}

func newQueue(maxMsgs, maxBytes int) *queue {
	return &queue{maxMsgs: maxMsgs, maxBytes: maxBytes, ready: make(chan struct{}, 1)}
}

// push queues m, whose frame is size bytes; false means it did not fit.
func (q *queue) push(m *raftpb.Message, size int) bool {
	q.mu.Lock()
	if q.held+1 > q.maxMsgs || q.heldSize+size > q.maxBytes {
		q.mu.Unlock()
		return false
	}
	q.msgs = append(q.msgs, m)
	q.sizes = append(q.sizes, size)
	q.held++
	q.heldSize += size
	q.mu.Unlock()
	select { // wake the sender; a pending wake-up already covers this message
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// take moves everything queued into batch (reusing its storage) and returns
// it with the bytes it accounts for; the caller must release them.
func (q *queue) take(batch []*raftpb.Message) ([]*raftpb.Message, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	size := 0
	for _, s := range q.sizes {
		size += s
	}
	batch = append(batch[:0], q.msgs...)
	clear(q.msgs)
	q.msgs, q.sizes = q.msgs[:0], q.sizes[:0]
	return batch, size
}

// release returns the capacity of a batch taken earlier.
func (q *queue) release(n, size int) {
	q.mu.Lock()
	q.held -= n
	q.heldSize -= size
	q.mu.Unlock()
}

// len reports the messages and bytes held.
func (q *queue) len() (int, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.held, q.heldSize
}
