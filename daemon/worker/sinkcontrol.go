package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connect"
)

// sinkControl holds what a sink task asked of the runtime through
// connect.SinkTaskControl, which it may do from any goroutine; the task's
// loop applies it before its next fetch.
type sinkControl struct {
	mu      sync.Mutex
	resets  map[connect.TopicPartition]int64 // to seek before the next fetch
	paused  map[connect.TopicPartition]bool  // the task's wish
	changed bool                             // paused changed since applied
	// The batch given to Put last, and the fetched records it came from:
	// ReportErrant finds a record's original there.
	slab []connect.SinkRecord
	orig []*kgo.Record

	timeout atomic.Int64 // ns; 0: the runtime's retry backoff
	commit  atomic.Bool  // a commit was requested
	errant  atomic.Pointer[error]
}

// setBatch notes the batch being handed to Put.
func (c *sinkControl) setBatch(slab []connect.SinkRecord, orig []*kgo.Record) {
	c.mu.Lock()
	c.slab, c.orig = slab, orig
	c.mu.Unlock()
}

// original returns a copy of the fetched record rec was made from when rec
// is of the batch being put: the fetched record goes back to its pool
// once Put returned (see recycle).
func (c *sinkControl) original(rec *connect.SinkRecord) *kgo.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.slab) == 0 {
		return nil
	}
	const size = unsafe.Sizeof(connect.SinkRecord{})
	off := uintptr(unsafe.Pointer(rec)) - uintptr(unsafe.Pointer(unsafe.SliceData(c.slab)))
	if off%size != 0 || off/size >= uintptr(len(c.orig)) {
		return nil
	}
	r := *c.orig[off/size]
	r.Context = nil // its pool's
	return &r
}

// applyControl applies the task's resets and pauses to the fetching, and
// commits when the task asked for it; it runs before each fetch.
func (st *sinkRun) applyControl() error {
	c := &st.ctl
	if p := c.errant.Load(); p != nil {
		return *p
	}
	c.mu.Lock()
	resets := c.resets
	c.resets = nil
	var pause, resume map[string][]int32
	if c.changed {
		c.changed = false
		pause, resume = map[string][]int32{}, map[string][]int32{}
		for _, tp := range st.assigned {
			switch want, have := c.paused[tp], st.pausedNow[tp]; {
			case want && !have:
				pause[tp.Topic] = append(pause[tp.Topic], tp.Partition)
				st.pausedNow[tp] = true
			case !want && have:
				resume[tp.Topic] = append(resume[tp.Topic], tp.Partition)
				delete(st.pausedNow, tp)
			}
		}
	}
	c.mu.Unlock()
	if st.client != nil {
		if len(pause) > 0 {
			st.client.PauseFetchPartitions(pause)
		}
		if len(resume) > 0 {
			st.client.ResumeFetchPartitions(resume)
		}
	}
	if len(resets) > 0 && st.client != nil {
		set := map[string]map[int32]kgo.EpochOffset{}
		add := map[string]map[int32]kgo.Offset{}
		for tp, o := range resets {
			if !st.owns(tp) || o < 0 {
				continue
			}
			if set[tp.Topic] == nil {
				set[tp.Topic], add[tp.Topic] = map[int32]kgo.EpochOffset{}, map[int32]kgo.Offset{}
			}
			set[tp.Topic][tp.Partition] = kgo.EpochOffset{Epoch: -1, Offset: o}
			add[tp.Topic][tp.Partition] = kgo.NewOffset().At(o)
			// The committed offset follows the new position.
			st.consumed[tp], st.pos[tp] = o, o
			delete(st.lags, tp)
		}
		// A partition added but not fetched yet (a reset from Open)
		// starts where AddConsumePartitions says; SetOffsets moves the
		// ones being fetched and drops their buffered records: either
		// way the next fetch starts at the new offsets.
		st.client.AddConsumePartitions(add)
		st.client.SetOffsets(set)
	}
	return nil
}

// forget drops the control state of revoked partitions: a partition
// assigned again later starts unpaused, as in Kafka Connect.
func (st *sinkRun) forget(revoked []connect.TopicPartition) {
	c := &st.ctl
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tp := range revoked {
		delete(c.paused, tp)
		delete(c.resets, tp)
		delete(st.pausedNow, tp)
	}
}

// refreshPaused re-applies the task's pauses to partitions just added.
func (st *sinkRun) refreshPaused() {
	c := &st.ctl
	c.mu.Lock()
	c.changed = c.changed || len(c.paused) > 0
	c.mu.Unlock()
}

// retryDelay is the wait before retrying a Put that failed with a
// RetriableError: the task's Timeout when it set one.
func (st *sinkRun) retryDelay(attempt int) time.Duration {
	if d := time.Duration(st.ctl.timeout.Load()); d > 0 {
		return d
	}
	return retryBackoff(st.tr, attempt)
}

func (c sinkContext) ResetOffsets(offsets map[connect.TopicPartition]int64) {
	ctl := &c.st.ctl
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	if ctl.resets == nil {
		ctl.resets = map[connect.TopicPartition]int64{}
	}
	for tp, o := range offsets {
		ctl.resets[tp] = o
	}
}

func (c sinkContext) Pause(partitions ...connect.TopicPartition) {
	c.setPaused(partitions, true)
}

func (c sinkContext) Resume(partitions ...connect.TopicPartition) {
	c.setPaused(partitions, false)
}

func (c sinkContext) setPaused(partitions []connect.TopicPartition, p bool) {
	ctl := &c.st.ctl
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	if ctl.paused == nil {
		ctl.paused = map[connect.TopicPartition]bool{}
	}
	for _, tp := range partitions {
		if p {
			ctl.paused[tp] = true
		} else {
			delete(ctl.paused, tp)
		}
	}
	ctl.changed = true
}

// Timeout sets the wait before a retried Put; 0 or less restores the
// runtime's backoff.
func (c sinkContext) Timeout(d time.Duration) { c.st.ctl.timeout.Store(int64(max(d, 0))) }

func (c sinkContext) RequestCommit() {
	c.st.ctl.commit.Store(true)
	c.st.tr.signal()
}

// ReportErrant hands rec to the connector's error handling, as Kafka
// Connect's ErrantRecordReporter: with errors.tolerance=none it fails the
// task (and returns the error); otherwise the record is skipped, logged
// when errors.log.enable says so, and sent to the dead letter queue when
// one is set, with stage TASK_PUT; it returns once the queue has it.
func (c sinkContext) ReportErrant(ctx context.Context, rec *connect.SinkRecord, cause error) error {
	st, tr := c.st, c.st.tr
	if cause == nil {
		cause = errors.New("reported errant by the task")
	}
	tr.stats.failures.Add(1)
	if err := tr.recordFailed(cause, "a record the task reported errant", "topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset); err != nil {
		err := fmt.Errorf("tolerance exceeded in error handler: the task reported %s-%d@%d: %w", rec.Topic, rec.Partition, rec.Offset, cause)
		st.ctl.errant.CompareAndSwap(nil, &err)
		tr.signal()
		return err
	}
	if st.dlq == nil {
		return nil
	}
	orig := st.ctl.original(rec)
	if orig == nil {
		var err error
		if orig, err = st.reserialize(rec); err != nil {
			return fmt.Errorf("report errant record %s-%d@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
		}
	}
	done := make(chan error, 1)
	st.dlq.sendStage(orig, cause, stageTaskPut, taskClass(tr.plugin.Class), func(err error) { done <- err })
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-tr.hard.Done():
		return tr.hard.Err()
	}
}

// reserialize makes the Kafka record of a sink record not of the last
// batch (the task kept it): its bytes as the converters write them, as
// Kafka Connect's reporter does for a record it has no original of.
func (st *sinkRun) reserialize(rec *connect.SinkRecord) (*kgo.Record, error) {
	r := &kgo.Record{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp}
	if st.serialized {
		var ok bool
		if r.Key, ok = rawBytes(rec.Key); !ok {
			return nil, fmt.Errorf("key is a %T, not []byte", rec.Key)
		}
		if r.Value, ok = rawBytes(rec.Value); !ok {
			return nil, fmt.Errorf("value is a %T, not []byte", rec.Value)
		}
		for _, h := range rec.Headers {
			v, ok := rawBytes(h.Value)
			if !ok {
				return nil, fmt.Errorf("header %s is a %T, not []byte", h.Key, h.Value)
			}
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: v})
		}
		return r, nil
	}
	var err error
	if r.Key, err = st.cs.key.FromConnectData(rec.Topic, rec.KeySchema, rec.Key); err != nil {
		return nil, fmt.Errorf("convert the key: %w", err)
	}
	if r.Value, err = st.cs.value.FromConnectData(rec.Topic, rec.ValueSchema, rec.Value); err != nil {
		return nil, fmt.Errorf("convert the value: %w", err)
	}
	for _, h := range rec.Headers {
		v, err := st.cs.header.FromConnectData(rec.Topic, h.Schema, h.Value)
		if err != nil {
			return nil, fmt.Errorf("convert header %s: %w", h.Key, err)
		}
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: v})
	}
	return r, nil
}

// preCommitted returns what the task lets the runtime commit of next (the
// offsets of the next records to read, per owned partition): next itself
// for a task without PreCommit; ok false when nothing is to be committed
// now (a RetriableError).
func (st *sinkRun) preCommitted(next map[connect.TopicPartition]int64) (map[connect.TopicPartition]int64, bool, error) {
	pc, isPC := st.task.(connect.SinkPreCommitter)
	var out map[connect.TopicPartition]int64
	var err error
	if isPC {
		err = safe("PreCommit", func() (err error) { out, err = pc.PreCommit(next); return err })
	} else {
		err = safe("Flush", func() error { return st.task.Flush(next) })
		out = next
	}
	if re := (*connect.RetriableError)(nil); errors.As(err, &re) {
		st.tr.log.Warn("flush failed; committing later", "err", err)
		return nil, false, nil
	}
	if err != nil {
		if isPC {
			return nil, false, fmt.Errorf("pre-commit: %w", err)
		}
		return nil, false, fmt.Errorf("flush: %w", err)
	}
	// Only partitions the task owns are committed.
	for tp := range out {
		if !st.owns(tp) || out[tp] < 0 {
			delete(out, tp)
		}
	}
	return out, true, nil
}

var _ connect.SinkTaskControl = sinkContext{}
