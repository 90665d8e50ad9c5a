package worker

import (
	"encoding/json"
	"reflect"
	"sync"

	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/internal/connectjson"
)

// offsetTracker follows a source task's records from production to
// acknowledgement. A record's source offset becomes committable only when
// it and every record the task produced before it were acknowledged, so
// that a restart from committed offsets never skips a record that Kafka
// does not have. Its ring holds at most the task's in-flight limit of
// records: the budget is released when records leave the ring. The ring
// starts small and doubles up to that limit as records pile up, and goes
// back to its first size when it is empty at an offset commit, so that an
// idle or slow task does not hold a ring sized for the limit.
type offsetTracker struct {
	mu    sync.Mutex
	ring  []pending
	limit int    // the most records ever in flight
	head  uint64 // sequence number of the oldest pending record
	next  uint64 // sequence number the next record gets
	empty chan struct{}
	// poisoned: a record was lost; nothing after it may be committed.
	poisoned bool

	// committable offsets not yet stored, by partition key, and the
	// newest one, not in dirty yet: a run of records of one partition (the
	// usual case) writes dirty once, not once per record.
	dirty map[string]connectstore.SourceOffset
	cur   pending
	// With transactions, offsets in dirty and cur belong to records of the
	// open transaction: seal moves them to sealed once it committed, and
	// take returns only sealed ones.
	txn    bool
	sealed map[string]connectstore.SourceOffset
	// the partition key of the last record that left the ring, to avoid
	// encoding the same partition for every record.
	lastPart map[string]any
	lastKey  string
	// keyPrefix is `["<connector>",`: with a record's partition JSON (a
	// Java plugin's) it makes the offsets topic key Kafka Connect writes.
	keyPrefix string
}

type pending struct {
	partition, offset map[string]any
	partJSON          string // connect.SourceRecord.SourcePartitionJSON
	size              int64
	acked, lost, used bool
}

// initialRing is the ring's size before it grows: small, since every
// task has one and most of a busy task's ring is grown on demand (at 1024,
// 2,000 idle tasks held 80 MB of rings, which the garbage collector
// scanned over and over near the memory limit).
const initialRing = 16

func newOffsetTracker(connector string, capacity int) *offsetTracker {
	return &offsetTracker{ring: make([]pending, min(capacity, initialRing)), limit: capacity, dirty: map[string]connectstore.SourceOffset{},
		keyPrefix: connectjson.OffsetKeyPrefix(connector)}
}

// grow doubles the ring (up to the limit) when it is full; t.mu is held.
func (t *offsetTracker) grow() {
	n := len(t.ring)
	if int(t.next-t.head) < n || n >= t.limit {
		return
	}
	ring := make([]pending, min(2*n, t.limit))
	for seq := t.head; seq < t.next; seq++ {
		ring[seq%uint64(len(ring))] = t.ring[seq%uint64(n)]
	}
	t.ring = ring
}

// shrink gives back a ring grown past its initial size once nothing is
// in flight (take calls it at every offset commit): a task that produced a
// burst and went idle does not keep a ring sized for the burst (about
// 40 bytes a record: a megabyte for 26,000 records, per task). t.mu is
// held.
func (t *offsetTracker) shrink() {
	if t.head == t.next && len(t.ring) > initialRing {
		t.ring = make([]pending, min(t.limit, initialRing))
	}
}

// add registers a produced record and returns its sequence number. The
// caller holds budget for it, so the ring has room.
func (t *offsetTracker) add(partition, offset map[string]any, size int64) uint64 {
	return t.addAll([]pending{{partition: partition, offset: offset, size: size}})
}

// addAll registers produced records in order (their partition, offset and
// size), under one lock, and returns the sequence number of the first;
// the others follow it. The caller holds budget for them all.
func (t *offsetTracker) addAll(ps []pending) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	first := t.next
	for i := range ps {
		t.grow()
		slot := &t.ring[t.next%uint64(len(t.ring))]
		if slot.used {
			panic("worker: offset tracker overflow") // the budget admits at most len(ring) records
		}
		*slot = ps[i]
		slot.used = true
		t.next++
	}
	return first
}

// ack marks a record answered for (ok: delivered) and returns how many
// records (and bytes) left the ring because of it. Once a record that was
// not delivered leaves the ring, no later offset becomes committable: the
// task fails and restarts from the offsets before it.
func (t *offsetTracker) ack(seq uint64, ok bool) (records int, bytes int64) {
	return t.ackRun(seq, 1, ok)
}

// ackRun is ack for the n consecutive records from seq on, under one
// lock.
func (t *offsetTracker) ackRun(seq uint64, n int, ok bool) (records int, bytes int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for s := seq; s < seq+uint64(n); s++ {
		slot := &t.ring[s%uint64(len(t.ring))]
		slot.acked, slot.lost = true, !ok
	}
	for t.head < t.next {
		slot := &t.ring[t.head%uint64(len(t.ring))]
		if !slot.acked {
			break
		}
		t.poisoned = t.poisoned || slot.lost
		if !t.poisoned && slot.partition != nil && slot.offset != nil {
			if t.cur.partition != nil && !samePartition(slot.partition, t.cur.partition) {
				t.flushCur()
			}
			t.cur.partition, t.cur.offset, t.cur.partJSON = slot.partition, slot.offset, slot.partJSON
		}
		records++
		bytes += slot.size
		*slot = pending{}
		t.head++
	}
	if t.head == t.next && t.empty != nil {
		close(t.empty)
		t.empty = nil
	}
	return records, bytes
}

// flushCur moves cur into dirty; t.mu is held.
func (t *offsetTracker) flushCur() {
	if t.cur.partition == nil {
		return
	}
	o := connectstore.SourceOffset{Partition: t.cur.partition, Offset: t.cur.offset}
	if j := t.cur.partJSON; j != "" && len(t.keyPrefix)+len(j)+1 <= connectstore.MaxOffsetKeyBytes {
		o.Key = t.keyPrefix + j + "]"
	}
	t.dirty[t.keyOf(t.cur.partition)] = o
	t.cur = pending{}
}

// keyOf returns the canonical key of a source partition; t.mu is held.
func (t *offsetTracker) keyOf(p map[string]any) string {
	if t.lastPart != nil && samePartition(p, t.lastPart) {
		return t.lastKey
	}
	b, err := json.Marshal(p)
	if err != nil {
		b = []byte(err.Error()) // connectstore rejects it at commit and says why
	}
	t.lastPart, t.lastKey = p, string(b)
	return t.lastKey
}

// samePartition compares partitions of primitive values cheaply; anything
// else compares unequal and is encoded.
func samePartition(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	if reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() {
		return true // the same map: tasks often reuse one
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || !primitiveEqual(va, vb) {
			return false
		}
	}
	return true
}

func primitiveEqual(a, b any) bool {
	switch a.(type) {
	case nil, string, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64, json.Number:
		return a == b
	}
	return false
}

// inFlight is the number of records not yet out of the ring.
func (t *offsetTracker) inFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return int(t.next - t.head)
}

// drained returns a channel closed once no record is in flight.
func (t *offsetTracker) drained() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.head == t.next {
		c := make(chan struct{})
		close(c)
		return c
	}
	if t.empty == nil {
		t.empty = make(chan struct{})
	}
	return t.empty
}

// transactional makes offsets committable only through seal.
func (t *offsetTracker) transactional() {
	t.txn, t.sealed = true, map[string]connectstore.SourceOffset{}
}

// seal makes the offsets acknowledged so far committable: the transaction
// of their records committed. The caller produces nothing meanwhile.
func (t *offsetTracker) seal() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flushCur()
	for k, v := range t.dirty {
		t.sealed[k] = v
	}
	clear(t.dirty)
}

// discard forgets the offsets of an aborted transaction's records.
func (t *offsetTracker) discard() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cur = pending{}
	clear(t.dirty)
}

// ready is the map of offsets take hands out; t.mu is held.
func (t *offsetTracker) ready() *map[string]connectstore.SourceOffset {
	if t.txn {
		return &t.sealed
	}
	t.flushCur()
	return &t.dirty
}

// take returns the committable offsets not stored yet and forgets them;
// giveBack returns them after a failed store, unless newer ones came.
func (t *offsetTracker) take() map[string]connectstore.SourceOffset {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.shrink()
	r := t.ready()
	if len(*r) == 0 {
		return nil
	}
	d := *r
	*r = map[string]connectstore.SourceOffset{}
	return d
}

func (t *offsetTracker) giveBack(d map[string]connectstore.SourceOffset) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := *t.ready()
	for k, v := range d {
		if _, newer := r[k]; !newer {
			r[k] = v
		}
	}
}
