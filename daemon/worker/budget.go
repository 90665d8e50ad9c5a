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
// Taking and releasing are a few atomic operations (they run for every
// record, from the task's goroutine and from the producer's); only a
// caller that must wait takes the mutex.
type budget struct {
	parent               *budget
	maxRecords, maxBytes int64

	records, bytes         atomic.Int64
	peakRecords, peakBytes atomic.Int64

	waiters atomic.Int32
	mu      sync.Mutex
	freed   chan struct{} // closed at the next release; nil when no one waits
}

func newBudget(maxRecords int, maxBytes int64, parent *budget) *budget {
	return &budget{parent: parent, maxRecords: int64(maxRecords), maxBytes: maxBytes}
}

// tryTake takes one record of n bytes from b alone if it fits.
func (b *budget) tryTake(n int64) bool {
	r := b.records.Add(1)
	by := b.bytes.Add(n)
	if r == 1 || (r <= b.maxRecords && by <= b.maxBytes) {
		storeMax(&b.peakRecords, r)
		storeMax(&b.peakBytes, by)
		return true
	}
	b.give(1, n) // may have made another taker fail: give wakes it
	return false
}

// room tells whether anything fits at all.
func (b *budget) room() bool {
	return b.records.Load() < b.maxRecords && b.bytes.Load() < b.maxBytes
}

// take takes one record of n bytes from b and its parent, or returns the
// budget that is full.
func (b *budget) take(n int64) (full *budget) {
	if !b.tryTake(n) {
		return b
	}
	if b.parent != nil && !b.parent.tryTake(n) {
		b.give(1, n)
		return b.parent
	}
	return nil
}

// acquire takes one record of n bytes, waiting for room.
func (b *budget) acquire(ctx context.Context, n int64) error {
	return b.wait(ctx, func() *budget { return b.take(n) })
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
