package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync/atomic"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/secrets"
)

// supervisor runs one connector's instance and tasks on this worker. Only
// its goroutine touches its fields, except pokeCh.
type supervisor struct {
	w      *Worker
	name   string
	log    *slog.Logger
	pokeCh chan struct{}
	// stale: the connector's keys may have changed in the store since
	// they were last read (a watch event, a resync); a poke without it
	// (the assignment changed, a task ended) reconciles with spec as read.
	stale atomic.Bool
	// pre is the connector's spec as a resync read it in bulk, for the
	// next read in place of the store; a watch event drops it.
	pre atomic.Pointer[connectstore.Spec]

	seen bool // the store was read once
	// deleted: the supervisor ended because the connector is gone (not
	// because its last unit left this worker). Read by the worker once
	// run has returned.
	deleted    bool
	spec       spec
	plugin     *connect.Plugin
	pluginErr  error
	settings   settings
	restartSeq int64
	// resolved is spec.cfg with its references resolved: what the
	// connector, its converters and the runtime settings see.
	resolved    map[string]string
	settingsErr error // of settings, parsed from resolved
	// masker hides the connector's secrets in what the supervisor, the
	// connector and its tasks log and in the statuses it reports.
	masker atomic.Pointer[secrets.Masker]
	// states is reported's states, published for Worker.States.
	states atomic.Pointer[map[int]string]

	conn  connState
	slots map[int]*taskSlot
	sink  sinkState

	reported      map[int]connectstore.Status // last status written, -1 for the connector
	restarts      map[int]int                 // stored restart counts of tasks without a slot yet
	wakeAt        time.Time                   // retry after a store error
	storeFailures int                         // in a row
}

// spec is the connector's desired state as stored.
type spec struct {
	cfg      map[string]string
	cfgRev   int64
	target   string
	tasks    connectstore.TaskConfigs
	tasksRev int64
	restart  connectstore.RestartRequest
}

// storeRetry paces a supervisor's tries after store errors.
var storeRetry = Backoff{Initial: time.Second, Max: 30 * time.Second}

func newSupervisor(w *Worker, name string) *supervisor {
	s := &supervisor{
		w:        w,
		name:     name,
		pokeCh:   make(chan struct{}, 1),
		slots:    map[int]*taskSlot{},
		sink:     sinkState{listed: make(chan listResult, 1)},
		reported: map[int]connectstore.Status{},
	}
	s.log = slog.New(secrets.NewMaskingHandler(w.log.Handler(), &s.masker)).With("connector", name)
	return s
}

// poke asks the supervisor to read the store again.
func (s *supervisor) poke() {
	select {
	case s.pokeCh <- struct{}{}:
	default:
	}
}

// run reconciles until the connector is gone or ctx ends.
func (s *supervisor) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		// A poke that comes while reconcile reads is kept for the next round.
		select {
		case <-s.pokeCh:
		default:
		}
		gone := s.reconcile(ctx)
		s.publishStates()
		if gone {
			s.deleted = true
			return
		}
		if s.idle() {
			// Its last unit left: a new supervisor reads the store afresh
			// if one comes back.
			return
		}
		timer.Reset(s.nextWake())
		select {
		case <-ctx.Done():
			s.teardown(!s.w.halted.Load())
			s.publishStates()
			return
		case <-s.pokeCh:
		case res := <-s.sink.listed:
			s.sink.apply(s, res)
		case <-timer.C:
		}
	}
}

// idle tells whether the worker no longer follows the connector and
// nothing of it runs here any more.
func (s *supervisor) idle() bool {
	if s.w.follows(s.name) || s.conn.inst != nil {
		return false
	}
	for _, sl := range s.slots {
		if sl.run != nil {
			return false
		}
	}
	return true
}

// nextWake is how long until something is due: a retry or a listing.
func (s *supervisor) nextWake() time.Duration {
	next := time.Now().Add(time.Hour)
	consider := func(t time.Time) {
		if !t.IsZero() && t.Before(next) {
			next = t
		}
	}
	consider(s.wakeAt)
	if s.conn.state == connectstore.StateFailed {
		consider(s.conn.retryAt)
	}
	for _, sl := range s.slots {
		if sl.failed || sl.fenced {
			consider(sl.retryAt)
		}
	}
	consider(s.sink.nextList)
	return max(time.Until(next), time.Millisecond)
}

// reconcile converges to the stored state; it reports true when the
// connector is gone and everything of it stopped.
func (s *supervisor) reconcile(ctx context.Context) (gone bool) {
	if ctx.Err() != nil {
		return false
	}
	sp, found, err := s.spec, true, error(nil)
	if !s.seen || s.stale.Swap(false) {
		// An event that comes during the read marks it stale again.
		if p := s.pre.Swap(nil); p != nil {
			sp = spec{cfg: p.Config, cfgRev: p.ConfigRev, target: p.Target, tasks: p.Tasks, tasksRev: p.TasksRev, restart: p.Restart}
		} else {
			sp, found, err = s.read(ctx)
		}
	}
	if err != nil {
		s.stale.Store(true)
		if ctx.Err() == nil {
			s.storeFailed("read the connector from the store", err)
		}
		return false
	}
	s.wakeAt, s.storeFailures = time.Time{}, 0
	if !found {
		if s.seen {
			s.log.Info("connector deleted; stopping it")
		}
		s.teardown(false)
		s.cleanupStatuses(ctx)
		return true
	}
	first := !s.seen
	s.seen = true
	if first {
		s.loadRestarts(ctx)
	}
	if first || sp.cfgRev != s.spec.cfgRev {
		s.configure(sp.cfg)
		s.conn.retryAt = time.Time{} // a new config is tried at once
		s.sink.reset()
		// The connector may have been deleted and created again between
		// two reads, its statuses with it: write them all again.
		clear(s.reported)
	} else if s.plugin == nil {
		// A class not found may be found now: a Java host's plugins are
		// known only once the host runs, and it may have been down.
		s.configure(sp.cfg)
	}
	prevTasks := len(s.spec.tasks.Tasks)
	s.spec = sp

	s.collectTasks(ctx)
	if !first && sp.restart.Seq > s.restartSeq {
		s.restart(ctx, sp.restart)
	}
	s.restartSeq = max(s.restartSeq, sp.restart.Seq)
	s.reconcileConnector(ctx)
	s.reconcileTasks(ctx)
	if s.w.cfg.Assignment.Connector(s.name) && (first || prevTasks != len(sp.tasks.Tasks)) {
		// Statuses of tasks the connector no longer has go, as Kafka
		// Connect's leader tombstones them.
		if err := s.w.store.DeleteTaskStatuses(ctx, s.name, len(sp.tasks.Tasks)); err != nil {
			s.storeFailed("delete statuses of removed tasks", err)
		}
		for id := range s.reported {
			if id >= len(sp.tasks.Tasks) {
				delete(s.reported, id)
			}
		}
	}
	s.reconcileSink(ctx)
	return false
}

// loadRestarts takes the restart counts over from the stored statuses, so
// that they survive a restart of the worker.
func (s *supervisor) loadRestarts(ctx context.Context) {
	st, err := s.w.store.Statuses(ctx, s.name)
	if err != nil {
		return // counting from 0 is no harm
	}
	if st.Connector != nil {
		s.conn.restarts = st.Connector.Restarts
	}
	s.restarts = map[int]int{}
	for id, ts := range st.Tasks {
		s.restarts[id] = ts.Restarts
	}
}

// configure looks the plugin and the runtime settings up for a new config,
// with its references resolved as they are now (resolve).
func (s *supervisor) configure(cfg map[string]string) {
	class := cfg["connector.class"]
	s.plugin, s.pluginErr = nil, nil
	if p, ok := connect.LookupConfig(cfg); ok {
		s.plugin = p
	} else {
		s.pluginErr = fmt.Errorf("failed to find any class that implements Connector and which name matches %s", class)
	}
	s.resolved = nil
	if err := s.resolve(cfg); err != nil && s.pluginErr == nil && !errors.Is(err, errUnresolved) {
		s.pluginErr = err
	}
}

// errUnresolved marks a reference that could not be resolved: the
// connector fails at its start, and tries again at its next (the file or
// variable may appear).
var errUnresolved = errors.New("resolve config provider references")

// resolve resolves cfg's references with the worker's config providers,
// as Kafka Connect does each time it starts a connector, and takes the
// runtime settings from the result. An unresolved reference leaves the
// config as stored, with an error that names the reference.
func (s *supervisor) resolve(cfg map[string]string) error {
	resolved, rerr := s.w.cfg.ConfigProviders.Transform(cfg)
	if rerr != nil {
		resolved = cfg
	}
	if s.resolved == nil || !maps.Equal(resolved, s.resolved) {
		s.resolved = resolved
		s.masker.Store(secrets.NewMasker(s.passwordKeys(), cfg, resolved))
		// With defaults where a reference stays unresolved.
		var typ connect.PluginType
		if s.plugin != nil {
			typ = s.plugin.Type
		}
		s.settings, s.settingsErr = parseSettingsFor(s.name, resolved, s.w.cfg, typ)
	}
	if rerr != nil {
		return fmt.Errorf("%w: %w", errUnresolved, rerr)
	}
	return s.settingsErr
}

// passwordKeys tells the keys the connector's ConfigDef types PASSWORD.
func (s *supervisor) passwordKeys() func(string) bool {
	if s.plugin == nil {
		return nil
	}
	var def connect.ConfigDef
	if err := safe("ConfigDef", func() error { def = s.plugin.New().ConfigDef(); return nil }); err != nil {
		return nil
	}
	return func(k string) bool {
		ck, ok := def.Key(k)
		return ok && ck.Type == connect.TypePassword
	}
}

// mask returns s with the connector's secrets hidden.
func (s *supervisor) mask(text string) string { return s.masker.Load().String(text) }

// read returns the connector's stored state; found is false when it has
// no config (it was deleted, or never existed).
func (s *supervisor) read(ctx context.Context) (sp spec, found bool, err error) {
	if r := s.w.readers; r != nil {
		select {
		case r <- struct{}{}:
		case <-ctx.Done():
			return sp, false, ctx.Err()
		}
		defer func() { <-r }()
	}
	cs := s.w.store
	sp.cfg, sp.cfgRev, err = cs.Config(ctx, s.name)
	if errors.Is(err, connectstore.ErrNotFound) {
		return sp, false, nil
	}
	if err != nil {
		return sp, false, fmt.Errorf("config: %w", err)
	}
	if sp.target, err = cs.Target(ctx, s.name); err != nil {
		return sp, false, fmt.Errorf("target state: %w", err)
	}
	kv, ok, err := cs.Raw().Get(ctx, tasksKey(s.name))
	if err != nil {
		return sp, false, fmt.Errorf("task configs: %w", err)
	}
	if ok {
		if err := json.Unmarshal(kv.Value, &sp.tasks); err != nil {
			return sp, false, fmt.Errorf("task configs: %w", err)
		}
		sp.tasksRev = kv.ModRevision
	}
	if sp.restart, err = cs.Restart(ctx, s.name); err != nil {
		return sp, false, fmt.Errorf("restart request: %w", err)
	}
	return sp, true, nil
}

// teardown stops the connector and its tasks; tasks drain and commit
// their offsets unless the worker halts. With report (the worker shuts
// down) their statuses say UNASSIGNED; a deleted connector gets none.
func (s *supervisor) teardown(report bool) {
	var runs []*taskRun
	for _, sl := range s.slots {
		if sl.run != nil {
			runs = append(runs, sl.run)
		}
	}
	s.stopRuns(runs)
	s.stopConnector()
	if !report || s.w.halted.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.w.cfg.ShutdownTimeout)
	defer cancel()
	if s.w.cfg.Assignment.Connector(s.name) && s.conn.state != "" {
		s.report(ctx, -1, connectstore.StateUnassigned, "", s.conn.restarts)
	}
	for id, sl := range s.slots {
		if sl.run != nil || sl.failed {
			s.report(ctx, id, connectstore.StateUnassigned, "", sl.restarts)
		}
	}
}

// cleanupStatuses removes statuses a status write may have put back after
// the connector was deleted.
func (s *supervisor) cleanupStatuses(ctx context.Context) {
	if s.w.halted.Load() || len(s.reported) == 0 || ctx.Err() != nil {
		return
	}
	if _, _, err := s.w.store.Config(ctx, s.name); !errors.Is(err, connectstore.ErrNotFound) {
		return // re-created meanwhile: its new supervisor reports
	}
	if err := s.w.store.DeleteTaskStatuses(ctx, s.name, 0); err != nil {
		s.log.Warn("remove task statuses of a deleted connector", "err", err)
	}
	if _, _, err := s.w.store.Raw().Delete(ctx, connectorStatusKey(s.name)); err != nil {
		s.log.Warn("remove status of a deleted connector", "err", err)
	}
}

// report writes a status of the connector (id -1) or of a task, unless it
// is the one written last.
func (s *supervisor) report(ctx context.Context, id int, state, trace string, restarts int) {
	if s.w.halted.Load() {
		return
	}
	st := connectstore.Status{
		State:      state,
		Trace:      s.mask(trace),
		WorkerID:   s.w.cfg.WorkerID,
		Generation: s.spec.tasks.Generation,
		Restarts:   restarts,
	}
	if last, ok := s.reported[id]; ok && last == st {
		return
	}
	var err error
	fence := s.w.cfg.Assignment.Fence(s.name, id)
	if id < 0 {
		err = s.w.store.PutConnectorStatus(ctx, s.name, st, fence)
	} else {
		err = s.w.store.PutTaskStatus(ctx, s.name, id, st, fence)
	}
	if err != nil {
		s.storeFailed("report status", err)
		delete(s.reported, id)
		return
	}
	s.reported[id] = st
}

// storeFailed logs a store error (the first of a series, then every tenth)
// and schedules another try, backing off while the store stays away.
func (s *supervisor) storeFailed(what string, err error) {
	s.storeFailures++
	if !errors.Is(err, context.Canceled) && s.storeFailures%10 == 1 {
		s.log.Warn(what, "err", err, "failures", s.storeFailures)
	}
	s.wakeAt = time.Now().Add(storeRetry.Delay(s.storeFailures))
}

// restart carries out a restart request, as Kafka Connect's
// POST /connectors/{c}/restart and /tasks/{t}/restart do: the restarted
// parts report RESTARTING, stop, and are started again by reconcile.
func (s *supervisor) restart(ctx context.Context, req connectstore.RestartRequest) {
	s.log.Info("restart requested", "include_tasks", req.IncludeTasks, "only_failed", req.OnlyFailed, "task", req.Task)
	connect.NotifyRestart(s.name) // a fresh chance, e.g. out of the Java host's quarantine
	if req.Task != nil {
		if sl := s.slots[*req.Task]; sl != nil {
			s.restartTask(ctx, *req.Task, sl)
		}
		return
	}
	if s.w.cfg.Assignment.Connector(s.name) && (!req.OnlyFailed || s.conn.state == connectstore.StateFailed) {
		s.report(ctx, -1, connectstore.StateRestarting, "", s.conn.restarts)
		s.stopConnector()
		s.conn.state, s.conn.failures = "", 0
	}
	if req.IncludeTasks {
		for id, sl := range s.slots {
			if !req.OnlyFailed || sl.failed {
				s.restartTask(ctx, id, sl)
			}
		}
	}
}
