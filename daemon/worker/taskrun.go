package worker

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connectstore"
)

// taskRun is one run of a task: from Start to Stop, in its own goroutine.
// The supervisor controls it (pause, partitions, stop) and learns of its
// progress (started, ended) through poke.
type taskRun struct {
	w        *Worker
	sup      *supervisor
	id       TaskID
	gen      int64
	config   map[string]string // the task's, references resolved
	connCfg  map[string]string // the connector's resolved: converters and runtime settings
	settings settings
	plugin   *connect.Plugin
	log      *slog.Logger
	stats    *taskStats
	// claim is the assignment's claim on the task when the run started;
	// a different one later means the task was given to this worker
	// anew meanwhile, and may have run elsewhere in between.
	claim connectstore.Fence
	// producer is the run's own producer (nil: it shares the worker's).
	producerOnce sync.Once
	producer     atomic.Pointer[kgo.Client]

	// hard ends everything at once; ctx (a child) ends the task's loop, after
	// which it drains and commits within the worker's ShutdownTimeout.
	hard     context.Context
	hardStop context.CancelFunc
	ctx      context.Context
	stop     context.CancelFunc

	paused atomic.Bool
	wake   chan struct{} // pause state or partitions changed
	done   chan struct{}

	mu        sync.Mutex
	running   bool // Start returned
	startedAt time.Time
	err       error
	// Sink partitions: the supervisor's latest wish, and a channel closed
	// when the task has applied it.
	want    []connect.TopicPartition
	applied chan struct{}
	// wished: the supervisor has made a wish (it knows the partitions);
	// set by the supervisor under mu, so it reads it without.
	wished bool
	// assigned is the supervisor's record of its last wish.
	assigned []connect.TopicPartition
}

func (s *supervisor) startTask(id int, config map[string]string, paused bool, parts []connect.TopicPartition) *taskRun {
	tid := TaskID{s.name, id}
	hard, hardStop := context.WithCancel(context.Background())
	ctx, stop := context.WithCancel(hard)
	tr := &taskRun{
		w:        s.w,
		sup:      s,
		id:       tid,
		gen:      s.spec.tasks.Generation,
		claim:    s.w.cfg.Assignment.Fence(s.name, id),
		connCfg:  s.resolved,
		settings: s.settings,
		plugin:   s.plugin,
		log:      s.log.With("task", id),
		stats:    newTaskStats(tid, s.plugin.Type == connect.PluginSink),
		hard:     hard,
		hardStop: hardStop,
		ctx:      ctx,
		stop:     stop,
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		want:     parts,
		applied:  make(chan struct{}),
		assigned: parts,
		wished:   s.sink.known, // parts is then the task's share
	}
	tr.paused.Store(paused)
	if !tr.stats.sink {
		lim := s.w.cfg.Limits
		// The producer's buffer.memory bounds a task's bytes in flight
		// below task-in-flight-bytes, never above it.
		bytes := lim.TaskInFlightBytes
		if b := s.settings.producer.BufferMemory; b > 0 {
			bytes = min(bytes, b)
		}
		tr.stats.budget = newBudget(lim.TaskInFlightRecords, bytes, s.w.budget)
	}
	resolved, rerr := s.w.cfg.ConfigProviders.Transform(config)
	tr.config = resolved
	s.w.register(tr.stats)
	s.w.startups.taskAttempts.Add(1)
	go func() {
		var err error
		if rerr != nil {
			tr.finish(fmt.Errorf("resolve config provider references: %w", rerr))
			return
		}
		if tr.stats.sink {
			err = runSink(tr)
		} else {
			err = runSource(tr)
		}
		tr.finish(err)
	}()
	return tr
}

// started marks Start as done, so the supervisor reports RUNNING.
func (tr *taskRun) started() {
	tr.mu.Lock()
	tr.running, tr.startedAt = true, time.Now()
	tr.mu.Unlock()
	tr.w.startups.taskOK.Add(1)
	tr.sup.poke()
}

func (tr *taskRun) finish(err error) {
	tr.w.unregister(tr.stats)
	tr.mu.Lock()
	tr.err = err
	startFailed := !tr.running && err != nil
	tr.mu.Unlock()
	if startFailed {
		tr.w.startups.taskFailed.Add(1)
	}
	tr.hardStop()
	close(tr.done)
	tr.sup.poke()
}

func (tr *taskRun) isRunning() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.running
}

func (tr *taskRun) finished() bool { return isClosed(tr.done) }

func (tr *taskRun) signal() {
	select {
	case tr.wake <- struct{}{}:
	default:
	}
}

func (tr *taskRun) setPaused(p bool) {
	if tr.paused.Swap(p) != p {
		tr.signal()
	}
}

// setWant hands the task new sink partitions; the channel closes when it
// has applied them (revoked partitions are committed and closed by then).
func (tr *taskRun) setWant(parts []connect.TopicPartition) <-chan struct{} {
	tr.mu.Lock()
	tr.want, tr.wished = parts, true
	tr.applied = make(chan struct{})
	ch := tr.applied
	tr.mu.Unlock()
	tr.assigned = parts
	tr.signal()
	return ch
}

// takeWant returns the partitions wished for, the channel to close once
// they are applied, and whether the supervisor made that wish (before, the
// task has no partitions because they are not known yet).
func (tr *taskRun) takeWant() ([]connect.TopicPartition, chan struct{}, bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.want, tr.applied, tr.wished
}

// halted says the worker halts: nothing more may be committed or reported.
func (tr *taskRun) halted() bool { return tr.w.halted.Load() }

// waitWhilePaused blocks while the task is paused, until it is woken
// (resumed, reassigned) or stopped; it reports whether it waited, so that
// the caller's loop checks again why it was woken.
func (tr *taskRun) waitWhilePaused() bool {
	if !tr.paused.Load() {
		return false
	}
	select {
	case <-tr.wake:
	case <-tr.ctx.Done():
	}
	return true
}

// waitOwned returns true at once while this worker owns the task; while it
// does not (its session lapsed, or the task was revoked and is about to be
// stopped) it waits, and returns false when the task must stop.
func (tr *taskRun) waitOwned() bool {
	for {
		changed := tr.w.assignmentChange()
		if tr.w.cfg.Assignment.Task(tr.id.Connector, tr.id.Task) {
			return true
		}
		// Woken by the next change of the assignment, not a timer: a
		// worker whose session lapsed has thousands of runs waiting. The
		// timeout covers an Assignment that does not signal each change.
		t := time.NewTimer(250 * time.Millisecond)
		select {
		case <-changed:
		case <-t.C:
		case <-tr.ctx.Done():
			t.Stop()
			return false
		}
		t.Stop()
	}
}

// errSuperseded ends a source run that finds the task given to this worker
// anew since it started: a run elsewhere took the task's transactional id
// over in between, so this run's producer is fenced, or its position
// stale. It counts as fenced; the supervisor starts the task again at once.
var errSuperseded = fmt.Errorf("%w: the task was assigned to this worker again since this run started", errFenced)

// superseded tells whether the assignment's claim on the task is no longer
// the one the run started under.
func (tr *taskRun) superseded() bool {
	return !slices.Equal(tr.w.cfg.Assignment.Fence(tr.id.Connector, tr.id.Task), tr.claim)
}

// waitClaim is waitOwned for a source run: it returns errSuperseded when
// the task is this worker's again but under a newer claim than the run's.
func (tr *taskRun) waitClaim() (bool, error) {
	if !tr.waitOwned() {
		return false, nil
	}
	if tr.superseded() {
		return false, errSuperseded
	}
	return true, nil
}

// setProducer records the run's own producer, for closeProducer.
func (tr *taskRun) setProducer(cl *kgo.Client) { tr.producer.Store(cl) }

// closeProducer closes the run's own producer, if any, once. A run that is
// abandoned gets its producer closed so that nothing of it can reach the
// broker again (franz-go may re-initialise a producer id on its own, which
// would fence the task's next run).
func (tr *taskRun) closeProducer() {
	tr.producerOnce.Do(func() {
		if cl := tr.producer.Load(); cl != nil {
			cl.Close()
		}
	})
}

// sleep waits d or until the task must stop; false in the latter case.
func (tr *taskRun) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-tr.ctx.Done():
		return false
	}
}

// logger is what the task sees as its context.
type taskContext struct {
	tr *taskRun
}

func (c taskContext) Logger() *slog.Logger { return c.tr.log }

// TaskInfo names the task and gives its connector's config
// (connect.TaskInfo), for the Java connector host.
func (c taskContext) TaskInfo() (string, int, map[string]string) {
	return c.tr.id.Connector, c.tr.id.Task, maps.Clone(c.tr.connCfg)
}

// Files is the worker's file confinement (connect.FilesOf).
func (c taskContext) Files() *connect.Files { return c.tr.w.cfg.Files }
