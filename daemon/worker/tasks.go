package worker

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/kcd-project/kcd/daemon/connectstore"
)

// taskSlot is one task id of the connector on this worker: its run, if
// any, and its failure and restart history.
type taskSlot struct {
	run    *taskRun
	gen    int64 // of the task configs it last ran
	failed bool
	// fenced: the broker fenced the last run (another run of the task
	// took its transactional id over). Not a failure: the slot starts the
	// task again at retryAt, and only if this worker still owns it then.
	fenced bool
	// claim is the assignment's claim the fenced run started under: a
	// newer one gives the task here anew, so it starts at once.
	claim connectstore.Fence
	// started is the claim its last run started under: a run under
	// another reports its status afresh, as another worker may have
	// reported the task meanwhile.
	started  connectstore.Fence
	err      error
	failures int // consecutive, for the backoff
	restarts int // automatic restarts, shown in its status
	retryAt  time.Time
}

// collectTasks takes note of runs that ended by themselves: they failed.
func (s *supervisor) collectTasks(ctx context.Context) {
	for id, sl := range s.slots {
		r := sl.run
		if r == nil || !r.finished() {
			continue
		}
		sl.run = nil
		err := r.err
		if err == nil {
			err = errors.New("task stopped unexpectedly")
		}
		healthy := r.isRunning() && time.Since(r.startedAt) >= s.w.cfg.RestartBackoff.Max
		if errors.Is(err, errFenced) {
			s.fenceTask(id, sl, r, err, healthy)
			continue
		}
		s.failTask(ctx, id, sl, err, healthy)
	}
}

// fenceTask takes note of a run the broker fenced. It reports nothing: the
// task is another worker's now, which reports it, or this worker starts it
// again if the assignment gives it here: at once when it gives it under a
// newer claim than the run's (the fencing came from the run that preceded
// this worker's current ownership), otherwise after the backoff, so that
// two workers that both believe they own a task never fence each other in
// quick turns.
func (s *supervisor) fenceTask(id int, sl *taskSlot, r *taskRun, err error, healthy bool) {
	sl.fenced, sl.claim = true, r.claim
	if s.regained(id, sl) {
		sl.retryAt = time.Time{}
		s.log.Info("task fenced by a run of it that preceded this worker's current ownership; starting it again at once", "task", id, "err", err)
		return
	}
	if healthy {
		sl.failures = 0
	}
	sl.failures++
	delay := s.w.cfg.RestartBackoff.Delay(sl.failures)
	sl.retryAt = time.Now().Add(delay)
	s.log.Warn("task fenced: a newer run of it produces elsewhere; it stops here", "task", id, "err", err, "retry_in_if_still_owned", delay)
}

// regained tells whether the assignment gives task id to this worker under
// a newer claim than that of its fenced run.
func (s *supervisor) regained(id int, sl *taskSlot) bool {
	return s.w.cfg.Assignment.Task(s.name, id) && !slices.Equal(s.w.cfg.Assignment.Fence(s.name, id), sl.claim)
}

func (s *supervisor) failTask(ctx context.Context, id int, sl *taskSlot, err error, healthy bool) {
	if healthy {
		sl.failures = 0
	}
	sl.failures++
	sl.failed, sl.err = true, err
	delay := s.w.cfg.RestartBackoff.Delay(sl.failures)
	sl.retryAt = time.Now().Add(delay)
	s.log.Error("task failed; restarting it later", "task", id, "err", err, "retry_in", delay)
	s.report(ctx, id, connectstore.StateFailed, err.Error(), sl.restarts)
}

// reconcileTasks runs the stored task configs this worker owns, of the
// current generation, paused or not as the target state says.
func (s *supervisor) reconcileTasks(ctx context.Context) {
	sp := s.spec
	want := map[int]map[string]string{}
	if sp.target != connectstore.TargetStopped && s.pluginErr == nil {
		for id, tc := range sp.tasks.Tasks {
			if s.w.cfg.Assignment.Task(s.name, id) {
				want[id] = tc
			}
		}
	}

	// Stop what must not run any more, or runs an older generation; all
	// at once, so that a new generation starts after the old one committed.
	var stopping []*taskRun
	for id, sl := range s.slots {
		_, ok := want[id]
		// A source run whose claim is gone although the task is this
		// worker's again stops too: the task ran elsewhere meanwhile.
		if sl.run != nil && (!ok || sl.run.gen != sp.tasks.Generation || (!sl.run.stats.sink && sl.run.superseded())) {
			stopping = append(stopping, sl.run)
			sl.run = nil
		}
		if sl.gen != sp.tasks.Generation {
			sl.gen, sl.failed, sl.fenced, sl.failures = sp.tasks.Generation, false, false, 0 // a new generation starts afresh
		}
		if !ok && sl.run == nil {
			delete(s.slots, id)
			delete(s.reported, id) // reported elsewhere now; report afresh if it comes back
		}
	}
	s.stopRuns(stopping)

	paused := sp.target == connectstore.TargetPaused
	now := time.Now()
	for id, tc := range want {
		sl := s.slots[id]
		if sl == nil {
			sl = &taskSlot{gen: sp.tasks.Generation, restarts: s.restarts[id]}
			delete(s.restarts, id)
			s.slots[id] = sl
		}
		if sl.run == nil {
			if (sl.failed || sl.fenced) && now.Before(sl.retryAt) && !(sl.fenced && !sl.failed && s.regained(id, sl)) {
				continue
			}
			if sl.fenced {
				s.log.Info("starting a fenced task again: the assignment still gives it to this worker", "task", id)
			}
			sl.fenced, sl.claim = false, nil
			if sl.failed {
				sl.restarts++
				s.log.Info("task restarted after a failure", "task", id, "restarts", sl.restarts)
			}
			sl.failed, sl.err = false, nil
			sl.run = s.startTask(id, tc, paused, s.sink.partsFor(id, len(sp.tasks.Tasks)))
			if !slices.Equal(sl.run.claim, sl.started) {
				delete(s.reported, id)
				sl.started = sl.run.claim
			}
			continue
		}
		sl.run.setPaused(paused)
		if sl.run.isRunning() {
			state := connectstore.StateRunning
			if paused {
				state = connectstore.StatePaused
			}
			s.report(ctx, id, state, "", sl.restarts)
		}
	}
}

// restartTask reports RESTARTING and stops the task; reconcileTasks
// starts it again at once.
func (s *supervisor) restartTask(ctx context.Context, id int, sl *taskSlot) {
	s.report(ctx, id, connectstore.StateRestarting, "", sl.restarts)
	if sl.run != nil {
		s.stopRuns([]*taskRun{sl.run})
		sl.run = nil
	}
	sl.failed, sl.fenced, sl.failures, sl.err = false, false, 0, nil
}

// stopRuns stops runs cleanly (at once when the worker halts) and waits for
// them; a run that does not end in time is cut short, then abandoned.
func (s *supervisor) stopRuns(runs []*taskRun) {
	halt := s.w.halted.Load()
	for _, r := range runs {
		if halt {
			r.hardStop()
		} else {
			r.stop()
		}
	}
	grace := 2*s.w.cfg.ShutdownTimeout + time.Second
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	for _, r := range runs {
		select {
		case <-r.done:
			continue
		case <-deadline.C:
			deadline.Reset(0)
		}
		r.hardStop()
		select {
		case <-r.done:
		case <-time.After(time.Second):
			// Its producer goes now: a next run of the task may start.
			s.log.Error("task did not stop; abandoning it", "task", r.id.Task)
			r.closeProducer()
		}
	}
}
