package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/secrets"
	"github.com/kcd-project/kcd/store"
)

// connState is the connector instance's side of a supervisor.
type connState struct {
	inst      connect.Connector
	cctx      *connectorContext
	cfgRev    int64  // the config it was started with
	state     string // last reported: RUNNING, PAUSED, STOPPED, FAILED; "" before any
	err       error
	failures  int // consecutive, for the backoff
	restarts  int // automatic restarts, shown in its status
	retryAt   time.Time
	startedAt time.Time
	needTasks bool // TaskConfigs must be asked (again)
}

// connectorContext is the connect.ConnectorContext of one instance.
type connectorContext struct {
	sup *supervisor
	log *slog.Logger

	mu     sync.Mutex
	err    error
	reconf bool
}

func (c *connectorContext) RequestTaskReconfiguration() {
	c.mu.Lock()
	c.reconf = true
	c.mu.Unlock()
	c.sup.poke()
}

func (c *connectorContext) RaiseError(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	c.sup.poke()
}

func (c *connectorContext) Logger() *slog.Logger { return c.log }

// Files is the worker's file confinement (connect.FilesOf).
func (c *connectorContext) Files() *connect.Files { return c.sup.w.cfg.Files }

// OffsetReader reads the connector's stored source offsets, as Kafka
// Connect's SourceConnectorContext.offsetStorageReader does.
func (c *connectorContext) OffsetReader() connect.OffsetReader { return connectorOffsets{c.sup} }

type connectorOffsets struct{ sup *supervisor }

func (r connectorOffsets) Offset(ctx context.Context, partition map[string]any) (map[string]any, error) {
	return r.sup.w.store.SourceOffset(ctx, r.sup.name, partition)
}

// take returns and clears what the connector asked for.
func (c *connectorContext) take() (err error, reconf bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	err, reconf = c.err, c.reconf
	c.err, c.reconf = nil, false
	return err, reconf
}

// reconcileConnector runs the connector instance as the target state says,
// when this worker owns it.
// taskClassKey is Kafka Connect's task.class, in every task config.
const taskClassKey = "task.class"

func (s *supervisor) reconcileConnector(ctx context.Context) {
	c := &s.conn
	owned := s.w.cfg.Assignment.Connector(s.name)
	if c.inst != nil && (!owned || c.cfgRev != s.spec.cfgRev) {
		s.stopConnector() // moved away, or reconfigured: started again below
	}
	if c.cctx != nil {
		err, reconf := c.cctx.take()
		if err != nil && c.inst != nil {
			s.failConnector(ctx, fmt.Errorf("connector raised an error: %w", err))
			return
		}
		c.needTasks = c.needTasks || reconf
	}
	if !owned {
		// Another worker reports it now: forget what was reported here, so
		// that it is reported again if it comes back.
		c.state = ""
		delete(s.reported, -1)
		return
	}
	switch s.spec.target {
	case connectstore.TargetPaused:
		s.stopConnector()
		c.state = connectstore.StatePaused
		s.report(ctx, -1, connectstore.StatePaused, "", c.restarts)
	case connectstore.TargetStopped:
		s.stopConnector()
		c.state = connectstore.StateStopped
		s.report(ctx, -1, connectstore.StateStopped, "", c.restarts)
		if len(s.spec.tasks.Tasks) > 0 {
			// Kafka Connect stops a connector by writing an empty task set;
			// only while it is still stopped: spec's target and tasks are
			// two reads, and an import sets a connector's task configs and
			// final target after it made it exist stopped.
			if _, err := s.w.store.ClearTasks(ctx, s.name, s.w.cfg.Assignment.Fence(s.name, -1)); err != nil {
				s.storeFailed("clear the task configs of a stopped connector", err)
			}
		}
	default:
		if c.inst == nil {
			if c.state == connectstore.StateFailed && time.Now().Before(c.retryAt) {
				return
			}
			if c.state == connectstore.StateFailed {
				c.restarts++ // an automatic restart, successful or not
				s.log.Info("restarting the connector after a failure", "restarts", c.restarts)
			}
			if err := s.startConnector(); err != nil {
				s.failConnector(ctx, err)
				return
			}
			c.state, c.err, c.needTasks = connectstore.StateRunning, nil, true
		}
		s.report(ctx, -1, connectstore.StateRunning, "", c.restarts)
		if c.needTasks || s.spec.tasksRev < s.spec.cfgRev {
			if err := s.writeTaskConfigs(ctx); err != nil {
				return
			}
			c.needTasks = false
		}
	}
}

func (s *supervisor) startConnector() error {
	s.w.startups.connAttempts.Add(1)
	if err := s.doStartConnector(); err != nil {
		s.w.startups.connFailed.Add(1)
		return err
	}
	s.w.startups.connOK.Add(1)
	return nil
}

func (s *supervisor) doStartConnector() error {
	if s.pluginErr != nil {
		return s.pluginErr
	}
	if err := s.resolve(s.spec.cfg); err != nil {
		return err
	}
	inst := s.plugin.New()
	cctx := &connectorContext{sup: s, log: s.log.With("subsys", "connector")}
	cfg := maps.Clone(s.resolved)
	if err := safe("Start", func() error { return inst.Start(cctx, cfg) }); err != nil {
		_ = safe("Stop", inst.Stop)
		return fmt.Errorf("start connector: %w", err)
	}
	s.conn.inst, s.conn.cctx, s.conn.cfgRev, s.conn.startedAt = inst, cctx, s.spec.cfgRev, time.Now()
	s.w.setConnectorRunning(s.name, true)
	s.log.Info("connector started", "class", s.plugin.Class)
	return nil
}

func (s *supervisor) stopConnector() {
	c := &s.conn
	if c.inst == nil {
		return
	}
	if err := safe("Stop", c.inst.Stop); err != nil {
		s.log.Warn("stop connector", "err", err)
	}
	c.inst, c.cctx = nil, nil
	s.w.setConnectorRunning(s.name, false)
	s.log.Info("connector stopped")
}

// failConnector stops the instance, reports FAILED with the error and
// schedules the automatic restart.
func (s *supervisor) failConnector(ctx context.Context, err error) {
	c := &s.conn
	healthy := c.inst != nil && time.Since(c.startedAt) >= s.w.cfg.RestartBackoff.Max
	s.stopConnector()
	if healthy {
		c.failures = 0
	}
	c.failures++
	c.state, c.err = connectstore.StateFailed, err
	delay := s.w.cfg.RestartBackoff.Delay(c.failures)
	c.retryAt = time.Now().Add(delay)
	s.log.Error("connector failed; restarting it later", "err", err, "retry_in", delay)
	s.report(ctx, -1, connectstore.StateFailed, err.Error(), c.restarts)
}

// writeTaskConfigs asks the connector for its task configs and stores
// them when they differ from the stored ones, or when those were written
// before the connector's config last changed (so that the tasks restart
// with the new converters and settings). A failing TaskConfigs fails the
// connector.
func (s *supervisor) writeTaskConfigs(ctx context.Context) error {
	maxTasks, err := tasksMax(s.resolved)
	if err == nil && maxTasks > s.w.cfg.MaxTasksPerConnector {
		err = fmt.Errorf("invalid value %d for configuration tasks.max: the workers run at most %d tasks per connector (max-tasks-per-connector)", maxTasks, s.w.cfg.MaxTasksPerConnector)
	}
	if err != nil {
		s.failConnector(ctx, err)
		return err
	}
	var cfgs []map[string]string
	err = safe("TaskConfigs", func() (err error) {
		cfgs, err = s.conn.inst.TaskConfigs(maxTasks)
		return err
	})
	if err == nil && len(cfgs) > maxTasks && !strings.EqualFold(strings.TrimSpace(s.resolved["tasks.max.enforce"]), "false") {
		err = fmt.Errorf("the connector %s has generated %d tasks, which is greater than %d, the maximum number of tasks it is configured to create", s.name, len(cfgs), maxTasks)
	}
	if err != nil {
		s.failConnector(ctx, fmt.Errorf("task configs: %w", err))
		return err
	}
	if cfgs == nil {
		cfgs = []map[string]string{}
	}
	// Stored task configs keep the references of the connector's config,
	// never the values resolved from them.
	cfgs = secrets.ReverseTransform(s.spec.cfg, cfgs)
	for i, tc := range cfgs {
		tc = maps.Clone(tc)
		if tc == nil {
			tc = map[string]string{}
		}
		// As Kafka Connect does, task configs name the task class (the
		// Java host's come with theirs), and sink task configs carry the
		// topics.
		if _, ok := tc[taskClassKey]; !ok {
			tc[taskClassKey] = s.plugin.TaskClassName()
		}
		if s.plugin.Type == connect.PluginSink {
			for _, k := range []string{"topics", "topics.regex"} {
				if v, ok := s.spec.cfg[k]; ok {
					tc[k] = v
				}
			}
		}
		cfgs[i] = tc
	}
	same := slices.EqualFunc(cfgs, s.spec.tasks.Tasks, maps.Equal)
	if same && s.spec.tasksRev > s.spec.cfgRev {
		return nil
	}
	tc, err := s.w.store.SetTasks(ctx, s.name, cfgs, s.w.cfg.Assignment.Fence(s.name, -1))
	if errors.Is(err, store.ErrInvalid) {
		// Too large for the store (a value over store.MaxValueSize):
		// retrying cannot help, the connector's config must change.
		s.failConnector(ctx, fmt.Errorf("store %d task configs: %w", len(cfgs), err))
		return err
	}
	if err != nil {
		s.storeFailed("store task configs", err)
		return err
	}
	s.log.Info("task configs stored", "tasks", len(cfgs), "generation", tc.Generation)
	return nil
}

func tasksMax(cfg map[string]string) (int, error) {
	v := strings.TrimSpace(cfg["tasks.max"])
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("invalid value %s for configuration tasks.max: must be at least 1", v)
	}
	return n, nil
}
