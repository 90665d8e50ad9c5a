package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kcd-project/kcd/store"
)

// StoreTimer times the operations of a metadata store (TimeStore).
type StoreTimer struct {
	hist *prometheus.HistogramVec
	errs *prometheus.CounterVec
	// Resolved once: no label lookup per operation.
	obs  [numOps]prometheus.Observer
	errc [numOps]prometheus.Counter
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
func NewStoreTimer() *StoreTimer {
	t := &StoreTimer{
		hist: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kcd_store_op_duration_seconds",
			Help:    "Time the metadata store's operations took on this node, by operation (through the active backend, whichever it is).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"op"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kcd_store_op_errors_total",
			Help: "Operations of the metadata store that failed, by operation.",
		}, []string{"op"}),
	}
	for i := range numOps {
		t.obs[i] = t.hist.WithLabelValues(opNames[i])
		t.errc[i] = t.errs.WithLabelValues(opNames[i])
	}
	return t
}

func (t *StoreTimer) done(o op, start time.Time, err error) {
	t.obs[o].Observe(time.Since(start).Seconds())
	if err != nil {
		t.errc[o].Inc()
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
