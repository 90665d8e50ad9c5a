package worker

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connect"
)

// sendBatch holds what a source task produces from one Poll batch: the
// kgo.Records, their headers and header values, and per record what the
// task's budget and offset tracker need. One acknowledgement function
// serves all its records (a record's index in recs gives its sequence
// number), instead of a closure per record; once Kafka answered for every
// record, the batch goes back to a pool and its memory serves another
// batch, so that in the steady state a task allocates nothing per record
// beyond what its connector and its converters make.
type sendBatch struct {
	st      *sourceRun
	recs    []kgo.Record
	hdrs    []kgo.RecordHeader // recs' headers, handed out in order
	nh      int                // hdrs handed out
	buf     []byte             // header values formatted by headerValue
	sizes   []int64            // bytes counted in the budgets, per record
	pend    []pending          // the records' places in the offset tracker
	skipped []bool             // could not be converted: not produced
	src     []*connect.SourceRecord
	base    uint64 // sequence number of recs[0] in the tracker
	// run: records Kafka acknowledged that the tracker, the budget and
	// the stats have not heard of yet, sequence numbers [runStart,
	// runStart+runLen). Only promises touch it, and franz-go calls a
	// client's promises one at a time.
	runStart uint64
	runLen   int
	// refs: the records in flight (a run's until it is handed on), plus
	// one for the producing goroutine.
	refs    atomic.Int32
	promise func(*kgo.Record, error) // b.acked, made once
}

var sendBatches sync.Pool

// maxPooledBatch is the most records of a batch that goes back to the
// pool: an unusually large Poll does not keep its memory around.
const maxPooledBatch = 1 << 14

// getSendBatch returns an empty batch for n records with nh headers in
// all.
func getSendBatch(st *sourceRun, n, nh int) *sendBatch {
	b, _ := sendBatches.Get().(*sendBatch)
	if b == nil {
		b = &sendBatch{}
		b.promise = b.acked
	}
	b.st = st
	b.recs = resize(b.recs, n)
	b.hdrs = resize(b.hdrs, nh)
	b.sizes = resize(b.sizes, n)
	b.pend = resize(b.pend, n)
	b.skipped = resize(b.skipped, n)
	if st.committer != nil {
		b.src = resize(b.src, n)
	} else {
		b.src = b.src[:0]
	}
	if b.buf == nil {
		b.buf = make([]byte, 0, 8*nh)
	}
	b.refs.Store(1)
	return b
}

// resize returns s with length n: s itself when it is large enough, zero
// beyond what was used (recycle clears what was).
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// headers hands out room for the next record's n headers: from the
// batch's slab, sized by the polled records' headers, or its own when
// transforms added headers beyond it.
func (b *sendBatch) headers(n int) []kgo.RecordHeader {
	if b.nh+n > len(b.hdrs) {
		return make([]kgo.RecordHeader, n)
	}
	hs := b.hdrs[b.nh : b.nh+n : b.nh+n]
	b.nh += n
	return hs
}

// acked is the promise of every record of b. A record delivered (no
// committer to tell) joins the run of acknowledged records, which is
// handed on at once when it breaks, when it is maxAckRun long, and when
// no record of b produced so far is unacknowledged: acknowledging a run
// costs a lock and the budget's atomics once rather than per record,
// while the tracker still commits an offset only once its record and
// every earlier one are acknowledged.
func (b *sendBatch) acked(kr *kgo.Record, err error) {
	i := b.index(kr)
	seq := b.base + uint64(i)
	if err == nil && len(b.src) == 0 {
		st := b.st
		st.tr.w.used.useCached(&st.lastUse, st.tr.id, kr.Topic)
		if b.runLen > 0 && seq != b.runStart+uint64(b.runLen) {
			b.flush()
		}
		if b.runLen == 0 {
			b.runStart = seq
		}
		b.runLen++
		// refs counts the records in flight, those of the run among them,
		// and the producer's hold while it has it: at most one more than
		// the run, no other record of b is in flight now (one produced
		// later flushes its own run), so the last acknowledgement always
		// hands the run on.
		if b.runLen >= maxAckRun || b.refs.Load()-int32(b.runLen) <= 1 {
			b.flush()
		}
		return
	}
	b.flush()
	var r *connect.SourceRecord
	if len(b.src) > 0 {
		r = b.src[i]
	}
	b.st.acked(seq, r, kr, err)
	b.done()
}

// maxAckRun bounds a run of acknowledgements held back: the budget's
// records come back at least every maxAckRun records.
const maxAckRun = 128

// flush hands the run of acknowledged records on.
func (b *sendBatch) flush() {
	if b.runLen == 0 {
		return
	}
	st, k := b.st, b.runLen
	st.tr.stats.records.Add(int64(k))
	n, bytes := st.tracker.ackRun(b.runStart, k, true)
	st.budget.release(n, bytes)
	b.runLen = 0
	b.release(int32(k))
}

// index returns the index of kr in b.recs. franz-go hands back the
// pointer it was given.
func (b *sendBatch) index(kr *kgo.Record) int {
	const size = unsafe.Sizeof(kgo.Record{})
	off := uintptr(unsafe.Pointer(kr)) - uintptr(unsafe.Pointer(unsafe.SliceData(b.recs)))
	if off%size != 0 || off/size >= uintptr(len(b.recs)) {
		panic("worker: acknowledgement of a record that is not in its batch")
	}
	return int(off / size)
}

// done drops one reference; the last one recycles b.
func (b *sendBatch) done() { b.release(1) }

// release drops n references; the last one recycles b.
func (b *sendBatch) release(n int32) {
	if b.refs.Add(-n) != 0 {
		return
	}
	if cap(b.recs) > maxPooledBatch {
		return
	}
	clear(b.recs)
	clear(b.hdrs)
	clear(b.pend)
	clear(b.skipped)
	clear(b.src)
	b.buf, b.nh, b.st, b.base, b.runStart, b.runLen = b.buf[:0], 0, nil, 0, 0, 0
	sendBatches.Put(b)
}
