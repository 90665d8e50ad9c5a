package worker

import (
	"cmp"
	"fmt"
	"runtime/debug"
	"slices"
	"sync/atomic"

	"github.com/kcd-project/kcd/daemon/connect"
)

// TaskID names one task of a connector.
type TaskID struct {
	Connector string
	Task      int
}

// Stats is a snapshot of what the worker holds in memory and has moved.
type Stats struct {
	// Source records in flight over the whole worker, now and at most.
	InFlightRecords, InFlightBytes         int64
	PeakInFlightRecords, PeakInFlightBytes int64
	Tasks                                  []TaskStats
}

// TaskStats describes one running task.
type TaskStats struct {
	ID   TaskID
	Sink bool
	// Records the task moved: acknowledged by Kafka (source) or handed to
	// Put (sink); Skipped were dropped under errors.tolerance=all.
	Records, Skipped int64
	// Source: records and bytes in flight, now and at most.
	InFlightRecords, InFlightBytes         int64
	PeakInFlightRecords, PeakInFlightBytes int64
	// Sink: bytes fetched and buffered by the task's consumer, now and at
	// most, and the largest batch handed to Put.
	BufferedFetchBytes, PeakBufferedFetchBytes int64
	PeakBatch                                  int64
	// Sink: the partitions the task consumes.
	Partitions []connect.TopicPartition
	// Sink: the records the task is behind, as of the last fetch: over its
	// partitions, the end of what it may read (high watermark, or last
	// stable offset under read_committed) minus the next offset it reads.
	// 0 without partitions; -1 while no partition's lag is known yet (from
	// a fetch, or listed after an empty poll), and for sources.
	Lag int64
}

// taskStats are the live counters of a running task.
type taskStats struct {
	id                   TaskID
	sink                 bool
	records, skipped     atomic.Int64
	budget               *budget // source
	fetched, peakFetched atomic.Int64
	peakBatch            atomic.Int64
	parts                atomic.Pointer[[]connect.TopicPartition]
	lag                  atomic.Int64 // sink; -1: unknown
}

func newTaskStats(id TaskID, sink bool) *taskStats {
	t := &taskStats{id: id, sink: sink}
	t.lag.Store(-1)
	return t
}

func (t *taskStats) snapshot() TaskStats {
	s := TaskStats{ID: t.id, Sink: t.sink, Records: t.records.Load(), Skipped: t.skipped.Load(),
		PeakBufferedFetchBytes: t.peakFetched.Load(), PeakBatch: t.peakBatch.Load()}
	if t.budget != nil {
		u := t.budget.usage()
		s.InFlightRecords, s.InFlightBytes, s.PeakInFlightRecords, s.PeakInFlightBytes = u.Records, u.Bytes, u.PeakRecords, u.PeakBytes
	}
	s.BufferedFetchBytes = t.fetched.Load()
	s.Lag = t.lag.Load()
	if p := t.parts.Load(); p != nil {
		s.Partitions = *p
	}
	return s
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// Stats returns the worker's counters.
func (w *Worker) Stats() Stats {
	u := w.budget.usage()
	st := Stats{InFlightRecords: u.Records, InFlightBytes: u.Bytes, PeakInFlightRecords: u.PeakRecords, PeakInFlightBytes: u.PeakBytes}
	w.mu.Lock()
	for _, t := range w.tasks {
		st.Tasks = append(st.Tasks, t.snapshot())
	}
	w.mu.Unlock()
	slices.SortFunc(st.Tasks, func(a, b TaskStats) int {
		return cmp.Or(cmp.Compare(a.ID.Connector, b.ID.Connector), cmp.Compare(a.ID.Task, b.ID.Task))
	})
	return st
}

// Task returns the counters of one running task.
func (st Stats) Task(connector string, task int) (TaskStats, bool) {
	for _, t := range st.Tasks {
		if t.ID == (TaskID{connector, task}) {
			return t, true
		}
	}
	return TaskStats{}, false
}

// Running lists the connector instances (Task -1) and tasks running on
// this worker now: started and not yet completely stopped.
func (w *Worker) Running() []TaskID {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]TaskID, 0, len(w.tasks)+len(w.conns))
	for name := range w.conns {
		out = append(out, TaskID{Connector: name, Task: -1})
	}
	for id := range w.tasks {
		out = append(out, id)
	}
	return out
}

func (w *Worker) setConnectorRunning(name string, on bool) {
	w.mu.Lock()
	if on {
		w.conns[name] = true
		w.starts[TaskID{Connector: name, Task: -1}]++
	} else {
		delete(w.conns, name)
	}
	w.mu.Unlock()
}

// Starts counts, per connector instance (Task -1) and task, how many times
// this worker started it since the process began.
func (w *Worker) Starts() map[TaskID]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[TaskID]int, len(w.starts))
	for id, n := range w.starts {
		out[id] = n
	}
	return out
}

func (w *Worker) register(t *taskStats) {
	w.mu.Lock()
	w.tasks[t.id] = t
	w.starts[t.id]++
	w.mu.Unlock()
}

func (w *Worker) unregister(t *taskStats) {
	w.mu.Lock()
	if w.tasks[t.id] == t {
		delete(w.tasks, t.id)
	}
	w.mu.Unlock()
}

// safe calls a plugin's method, turning a panic into an error so that a
// faulty connector fails instead of crashing the node.
func safe(what string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s panicked: %v\n%s", what, r, debug.Stack())
		}
	}()
	return f()
}
