package metrics

import (
	"context"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/kcd-project/kcd/store"
)

// StoreTimer times the operations of a metadata store (TimeStore): a
// histogram and an error count per operation, kept in atomics and written
// by hand at a scrape (client_golang's registry took a third of a scrape
// for these 136 series).
type StoreTimer struct {
	ops [numOps]opTimer
}

// storeBuckets are the histogram's upper bounds, in seconds.
var storeBuckets = [...]float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

type opTimer struct {
	counts  [len(storeBuckets) + 1]atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sumBits atomic.Uint64                        // float64 bits of the sum, in seconds
	errs    atomic.Uint64
}

func (o *opTimer) observe(v float64) {
	i := 0
	for i < len(storeBuckets) && v > storeBuckets[i] {
		i++
	}
	o.counts[i].Add(1)
	for {
		old := o.sumBits.Load()
		if o.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

type op int

const (
	opGet op = iota
	opPut
	opDelete
	opCAS
	opScan
	opBatch
	opRevision
	opWatch
	numOps
)

var opNames = [numOps]string{"get", "put", "delete", "compare_and_set", "scan", "batch", "revision", "watch"}

// NewStoreTimer returns a timer of store operations.
func NewStoreTimer() *StoreTimer { return new(StoreTimer) }

func (t *StoreTimer) done(o op, start time.Time, err error) {
	t.ops[o].observe(time.Since(start).Seconds())
	if err != nil {
		t.ops[o].errs.Add(1)
	}
}

var (
	storeDuration = family{"kcd_store_op_duration_seconds", "histogram", "Time the metadata store's operations took on this node, by operation (through the active backend, whichever it is)."}
	storeErrors   = family{"kcd_store_op_errors_total", "counter", "Operations of the metadata store that failed, by operation."}
)

// writeStore writes t's histograms and error counts. Bucket counts are
// read one by one, so the count is their total and never below a bucket.
func (w *taskWriter) writeStore(t *StoreTimer) {
	var lb []byte
	w.header(storeDuration)
	for i := range t.ops {
		o := &t.ops[i]
		var n uint64
		for k := range o.counts {
			n += o.counts[k].Load()
			lb = appendLabel(lb[:0], "op", opNames[i])
			lb = append(lb, `,le="`...)
			if k < len(storeBuckets) {
				lb = strconv.AppendFloat(lb, storeBuckets[k], 'g', -1, 64)
			} else {
				lb = append(lb, "+Inf"...)
			}
			lb = append(lb, '"')
			w.line(storeDuration.name, "_bucket", lb, float64(n))
		}
		lb = appendLabel(lb[:0], "op", opNames[i])
		w.line(storeDuration.name, "_sum", lb, math.Float64frombits(o.sumBits.Load()))
		w.line(storeDuration.name, "_count", lb, float64(n))
	}
	w.header(storeErrors)
	for i := range t.ops {
		lb = appendLabel(lb[:0], "op", opNames[i])
		w.line(storeErrors.name, "", lb, float64(t.ops[i].errs.Load()))
	}
}

// TimeStore returns s with its operations timed by t.
func TimeStore(s store.Store, t *StoreTimer) store.Store { return timedStore{s, t} }

type timedStore struct {
	store.Store
	t *StoreTimer
}

func (s timedStore) Get(ctx context.Context, key string) (store.KV, bool, error) {
	start := time.Now()
	kv, found, err := s.Store.Get(ctx, key)
	s.t.done(opGet, start, err)
	return kv, found, err
}

func (s timedStore) Put(ctx context.Context, key string, value []byte) (int64, error) {
	start := time.Now()
	rev, err := s.Store.Put(ctx, key, value)
	s.t.done(opPut, start, err)
	return rev, err
}

func (s timedStore) Delete(ctx context.Context, key string) (int64, bool, error) {
	start := time.Now()
	rev, deleted, err := s.Store.Delete(ctx, key)
	s.t.done(opDelete, start, err)
	return rev, deleted, err
}

func (s timedStore) CompareAndSet(ctx context.Context, key string, expectModRev int64, value []byte) (int64, bool, error) {
	start := time.Now()
	rev, ok, err := s.Store.CompareAndSet(ctx, key, expectModRev, value)
	s.t.done(opCAS, start, err)
	return rev, ok, err
}

func (s timedStore) Scan(ctx context.Context, prefix string, limit int) ([]store.KV, int64, error) {
	start := time.Now()
	kvs, rev, err := s.Store.Scan(ctx, prefix, limit)
	s.t.done(opScan, start, err)
	return kvs, rev, err
}

func (s timedStore) Batch(ctx context.Context, conds []store.Cond, ops []store.Op) (int64, bool, error) {
	start := time.Now()
	rev, ok, err := s.Store.Batch(ctx, conds, ops)
	s.t.done(opBatch, start, err)
	return rev, ok, err
}

func (s timedStore) Revision(ctx context.Context) (int64, error) {
	start := time.Now()
	rev, err := s.Store.Revision(ctx)
	s.t.done(opRevision, start, err)
	return rev, err
}

// Watch is timed until the watch is set up, not while it runs.
func (s timedStore) Watch(ctx context.Context, prefix string, afterRev int64) (store.Watcher, error) {
	start := time.Now()
	w, err := s.Store.Watch(ctx, prefix, afterRev)
	s.t.done(opWatch, start, err)
	return w, err
}
