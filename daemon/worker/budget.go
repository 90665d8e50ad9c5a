package worker

import (
	"context"
	"sync"
	"sync/atomic"
)

// budget bounds records and bytes in flight. A task's budget has the
// worker's as parent: taking from one takes from both. A record larger
// than the byte limit is admitted when nothing else is in flight, so that
// it cannot wait forever.
//
// Taking is done once per chunk of a Poll batch, under takeMu; releasing
// is a few atomic operations (it runs as records are acknowledged, from
// the producer's goroutines); only a caller that must wait takes mu.
type budget struct {
	parent               *budget
	maxRecords, maxBytes int64

	records, bytes         atomic.Int64
	peakRecords, peakBytes atomic.Int64

	takeMu  sync.Mutex
	waiters atomic.Int32
	mu      sync.Mutex
	freed   chan struct{} // closed at the next release; nil when no one waits
}

func newBudget(maxRecords int, maxBytes int64, parent *budget) *budget {
	return &budget{parent: parent, maxRecords: int64(maxRecords), maxBytes: maxBytes}
}

// fit returns the length and bytes of the longest prefix of sizes
// (records of those bytes) that fits in b alone: 0 when none does. A
// record too large for the byte limit fits alone when nothing else is in
// flight. The caller holds b.takeMu: takers are few (a task's goroutine,
// or the tasks of the worker, once per chunk of a Poll batch), and givers
// only ever lower the counts, so what fit read stays an upper bound.
func (b *budget) fit(sizes []int64) (k int, bytes int64) {
	r, by := b.records.Load(), b.bytes.Load()
	for k < len(sizes) && r+int64(k) < b.maxRecords && by+bytes+sizes[k] <= b.maxBytes {
		bytes += sizes[k]
		k++
	}
	if k == 0 && r == 0 && len(sizes) > 0 {
		k, bytes = 1, sizes[0]
	}
	return k, bytes
}

// add counts k records of n bytes in b; b.takeMu is held.
func (b *budget) add(k int, n int64) {
	storeMax(&b.peakRecords, b.records.Add(int64(k)))
	storeMax(&b.peakBytes, b.bytes.Add(n))
}

// room tells whether anything fits at all.
func (b *budget) room() bool {
	return b.records.Load() < b.maxRecords && b.bytes.Load() < b.maxBytes
}

// take takes the longest prefix of sizes that fits in b and in its
// parent, and returns its length; 0 and the budget that is full when not
// even the first record fits.
func (b *budget) take(sizes []int64) (k int, full *budget) {
	b.takeMu.Lock()
	defer b.takeMu.Unlock()
	k, n := b.fit(sizes)
	if k == 0 {
		return 0, b
	}
	if p := b.parent; p != nil {
		p.takeMu.Lock()
		pk, pn := p.fit(sizes[:k])
		if pk > 0 {
			p.add(pk, pn)
		}
		p.takeMu.Unlock()
		if pk == 0 {
			return 0, p
		}
		k, n = pk, pn
	}
	b.add(k, n)
	return k, nil
}

// acquire takes one record of n bytes, waiting for room.
func (b *budget) acquire(ctx context.Context, n int64) error {
	_, err := b.acquireSome(ctx, []int64{n})
	return err
}

// acquireSome takes the longest prefix of sizes (at least one record)
// that fits, waiting for room, and returns its length: a Poll batch is
// taken in as few chunks as the limits allow, one budget operation per
// chunk rather than per record, and never over the limits.
func (b *budget) acquireSome(ctx context.Context, sizes []int64) (int, error) {
	var k int
	err := b.wait(ctx, func() (full *budget) {
		k, full = b.take(sizes)
		return full
	})
	return k, err
}

// waitRoom waits until there is room for at least one more record.
func (b *budget) waitRoom(ctx context.Context) error {
	return b.wait(ctx, func() *budget {
		for x := b; x != nil; x = x.parent {
			if !x.room() {
				return x
			}
		}
		return nil
	})
}

// wait calls try until it reports no full budget, sleeping on the full
// one's next release in between.
func (b *budget) wait(ctx context.Context, try func() *budget) error {
	for {
		full := try()
		if full == nil {
			return nil
		}
		full.waiters.Add(1)
		full.mu.Lock()
		if full.freed == nil {
			full.freed = make(chan struct{})
		}
		ch := full.freed
		full.mu.Unlock()
		// Registered: a release from now on closes ch. Try again, in case
		// one came before; if another budget is the full one now, wait on
		// that one instead.
		if again := try(); again != full {
			full.waiters.Add(-1)
			if again == nil {
				return nil
			}
			continue
		}
		select {
		case <-ch:
			full.waiters.Add(-1)
		case <-ctx.Done():
			full.waiters.Add(-1)
			return ctx.Err()
		}
	}
}

// give returns records of n bytes to b alone and wakes its waiters once
// b is down to three quarters of its limits: a full budget then lets its
// waiters go in one wake-up per quarter, not one per record released.
func (b *budget) give(records int, n int64) {
	r := b.records.Add(-int64(records))
	by := b.bytes.Add(-n)
	if b.waiters.Load() > 0 && (r == 0 || (r <= b.maxRecords-b.maxRecords/4 && by <= b.maxBytes-b.maxBytes/4)) {
		b.mu.Lock()
		if b.freed != nil {
			close(b.freed)
			b.freed = nil
		}
		b.mu.Unlock()
	}
}

// release returns records records of n bytes in all, to b and its parent.
func (b *budget) release(records int, n int64) {
	if records == 0 {
		return
	}
	for x := b; x != nil; x = x.parent {
		x.give(records, n)
	}
}

// usage reports what is in flight now and the most ever in flight.
type usage struct {
	Records, Bytes, PeakRecords, PeakBytes int64
}

func (b *budget) usage() usage {
	return usage{b.records.Load(), b.bytes.Load(), b.peakRecords.Load(), b.peakBytes.Load()}
}

// reserve counts n bytes in b and its parents without waiting or
// fitting: the estimated size of a Poll batch polled ahead (pollahead.go),
// which exists already. A task polls ahead only when roomFor says both
// its batches fit, the next taken as large as the last; a larger one
// takes the bytes over a limit by what it exceeds that. Records are not
// counted: a budget whose records are all reserved would never admit the
// one record that fit admits when nothing is in flight, and the batch
// being sent would wait for the reservation that waits for it.
func (b *budget) reserve(n int64) {
	if n == 0 {
		return
	}
	for x := b; x != nil; x = x.parent {
		x.takeMu.Lock() // not between a taker's fit and add
		storeMax(&x.peakBytes, x.bytes.Add(n))
		x.takeMu.Unlock()
	}
}

// unreserve returns what reserve counted.
func (b *budget) unreserve(n int64) {
	if n == 0 {
		return
	}
	for x := b; x != nil; x = x.parent {
		x.give(0, n)
	}
}

// roomFor tells whether records records of n bytes in all fit in b and
// its parents now, besides what is in flight.
func (b *budget) roomFor(records int, n int64) bool {
	for x := b; x != nil; x = x.parent {
		if x.records.Load()+int64(records) > x.maxRecords || x.bytes.Load()+n > x.maxBytes {
			return false
		}
	}
	return true
}
