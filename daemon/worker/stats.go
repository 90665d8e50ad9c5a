package worker

import (
	"cmp"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

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

	// Polled: source records the task's Poll returned; Read: sink records
	// fetched for the task (Kafka Connect's source-record-poll-total and
	// sink-record-read-total). Records above is source-record-write-total
	// and sink-record-send-total.
	Polled, Read int64
	// Batches handed over (Poll batches of sources, Put batches of sinks),
	// the records in them, and the time spent in Poll or Put.
	Batches, BatchRecords    int64
	BatchTime, PeakBatchTime time.Duration
	// Offset commits that completed, failed, or were skipped because the
	// task asked to commit later (a sink's Flush or PreCommit answering a
	// RetriableError), and the time completed and failed ones took.
	Commits, CommitFailures, CommitSkips int64
	CommitTime, PeakCommitTime           time.Duration
	Errors                               ErrorStats
}

// ErrorStats are a task's counters of Kafka Connect's task-error-metrics.
type ErrorStats struct {
	Failures     int64 // total-record-failures: failed attempts, retries included
	Errors       int64 // total-record-errors: records that ended in an error
	Retries      int64 // total-retries
	Logged       int64 // total-errors-logged
	DLQRequests  int64 // deadletterqueue-produce-requests
	DLQFailures  int64 // deadletterqueue-produce-failures
	LastErrorUTC int64 // last-error-timestamp, Unix milliseconds; 0: none
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

	polled, read                   atomic.Int64
	batches, batchRecords          atomic.Int64
	batchNanos, peakBatchNanos     atomic.Int64
	commits, commitFails, skips    atomic.Int64
	commitNanos, peakCommitNanos   atomic.Int64
	failures, errors, retries      atomic.Int64
	logged, dlqRequests, dlqFailed atomic.Int64
	lastError                      atomic.Int64 // Unix ms
}

// batch counts one batch of n records handed over in d.
func (t *taskStats) batch(n int, d time.Duration) {
	t.batches.Add(1)
	t.batchRecords.Add(int64(n))
	t.batchNanos.Add(int64(d))
	storeMax(&t.peakBatchNanos, int64(d))
}

// commit counts one offset commit that took d.
func (t *taskStats) commit(ok bool, d time.Duration) {
	if ok {
		t.commits.Add(1)
	} else {
		t.commitFails.Add(1)
	}
	t.commitNanos.Add(int64(d))
	storeMax(&t.peakCommitNanos, int64(d))
}

// failed counts a record that ended in an error; skipped when
// errors.tolerance=all let the task go on. Its failed attempts are counted
// where they fail.
func (t *taskStats) failed(skipped bool) {
	t.errors.Add(1)
	if skipped {
		t.skipped.Add(1)
	}
	t.lastError.Store(time.Now().UnixMilli())
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
	s.Polled, s.Read = t.polled.Load(), t.read.Load()
	s.Batches, s.BatchRecords = t.batches.Load(), t.batchRecords.Load()
	s.BatchTime, s.PeakBatchTime = time.Duration(t.batchNanos.Load()), time.Duration(t.peakBatchNanos.Load())
	s.Commits, s.CommitFailures, s.CommitSkips = t.commits.Load(), t.commitFails.Load(), t.skips.Load()
	s.CommitTime, s.PeakCommitTime = time.Duration(t.commitNanos.Load()), time.Duration(t.peakCommitNanos.Load())
	s.Errors = ErrorStats{Failures: t.failures.Load(), Errors: t.errors.Load(), Retries: t.retries.Load(), Logged: t.logged.Load(),
		DLQRequests: t.dlqRequests.Load(), DLQFailures: t.dlqFailed.Load(), LastErrorUTC: t.lastError.Load()}
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

// Stats returns the worker's counters, its tasks sorted by connector and
// task.
func (w *Worker) Stats() Stats {
	var st Stats
	w.StatsInto(&st)
	slices.SortFunc(st.Tasks, func(a, b TaskStats) int {
		return cmp.Or(cmp.Compare(a.ID.Connector, b.ID.Connector), cmp.Compare(a.ID.Task, b.ID.Task))
	})
	return st
}

// StatsInto fills st with the worker's counters, its tasks in no
// particular order, reusing st.Tasks: a scraper that calls it again and
// again allocates only when tasks grow.
func (w *Worker) StatsInto(st *Stats) {
	u := w.budget.usage()
	tasks := st.Tasks[:0]
	*st = Stats{InFlightRecords: u.Records, InFlightBytes: u.Bytes, PeakInFlightRecords: u.PeakRecords, PeakInFlightBytes: u.PeakBytes}
	w.mu.Lock()
	for _, t := range w.tasks {
		tasks = append(tasks, t.snapshot())
	}
	w.mu.Unlock()
	st.Tasks = tasks
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

// Startups counts the starts of connector instances and tasks on this
// worker since it began (Kafka Connect's connect-worker-metrics
// connector-startup-* and task-startup-*): a start succeeds when the
// plugin's Start returned without error.
type Startups struct {
	ConnectorAttempts, ConnectorSuccesses, ConnectorFailures int64
	TaskAttempts, TaskSuccesses, TaskFailures                int64
}

type startupStats struct {
	connAttempts, connOK, connFailed atomic.Int64
	taskAttempts, taskOK, taskFailed atomic.Int64
}

// Startups returns the worker's startup counters.
func (w *Worker) Startups() Startups {
	s := &w.startups
	return Startups{
		ConnectorAttempts: s.connAttempts.Load(), ConnectorSuccesses: s.connOK.Load(), ConnectorFailures: s.connFailed.Load(),
		TaskAttempts: s.taskAttempts.Load(), TaskSuccesses: s.taskOK.Load(), TaskFailures: s.taskFailed.Load(),
	}
}

// UnitState is the state this worker last reported of a connector
// instance (Task -1) or task it holds.
type UnitState struct {
	ID    TaskID
	State string // connectstore.State*
}

// States appends to dst the states of the connectors and tasks this worker
// holds now, as it last reported them; a unit that moved away or was
// deleted is left out.
func (w *Worker) States(dst []UnitState) []UnitState {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.sups {
		if m := s.states.Load(); m != nil {
			for id, state := range *m {
				dst = append(dst, UnitState{ID: TaskID{Connector: s.name, Task: id}, State: state})
			}
		}
	}
	return dst
}

// publishStates makes what the supervisor reported last visible to
// States; it runs once per reconcile, not per record.
func (s *supervisor) publishStates() {
	m := make(map[int]string, len(s.reported))
	for id, st := range s.reported {
		m[id] = st.State
	}
	if old := s.states.Load(); old != nil && maps.Equal(*old, m) {
		return
	}
	s.states.Store(&m)
}
