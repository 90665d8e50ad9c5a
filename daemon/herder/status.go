package herder

import (
	"context"
	"errors"
	"fmt"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/coordinator"
)

// Status returns a connector's status and its tasks', tasks by id: what
// the workers reported, as it holds now (see current). A connector no
// worker reported on yet has no status (404), as in Kafka Connect; tasks
// without a status are not listed.
func (h *Herder) Status(ctx context.Context, name string) (ConnectorStateInfo, error) {
	st, err := h.statuses(ctx, name)
	if err != nil {
		return ConnectorStateInfo{}, err
	}
	if st.Connector == nil {
		return ConnectorStateInfo{}, errorf(ErrNotFound, "No status found for connector %s", name)
	}
	typ, version, err := h.typeAndVersion(ctx, name)
	if err != nil {
		return ConnectorStateInfo{}, err
	}
	out := ConnectorStateInfo{
		Name: name,
		Connector: ConnectorState{
			State: st.Connector.State, WorkerID: st.Connector.WorkerID, Trace: st.Connector.Trace, Version: version,
		},
		Tasks: make([]TaskState, 0, len(st.Tasks)),
		Type:  typ,
	}
	for _, id := range st.TaskIDs() {
		out.Tasks = append(out.Tasks, taskState(id, st.Tasks[id], version))
	}
	return out, nil
}

// statuses reads a connector's reported statuses and turns each into what
// holds now. The owners are read first: a status written after them was
// written by the owner of its unit at that time (status writes are fenced
// on the owner key), so it stands as reported.
func (h *Herder) statuses(ctx context.Context, name string) (connectstore.Statuses, error) {
	var owners map[int]coordinator.UnitOwner
	var rev int64
	if h.opts.Owners != nil {
		var err error
		if owners, rev, err = h.opts.Owners(ctx, name); err != nil {
			return connectstore.Statuses{}, fmt.Errorf("read the status of connector %s: %w", name, err)
		}
	}
	st, err := h.store.Statuses(ctx, name)
	if err != nil {
		return connectstore.Statuses{}, fmt.Errorf("read the status of connector %s: %w", name, err)
	}
	if owners == nil {
		return st, nil
	}
	if st.Connector != nil {
		c := current(*st.Connector, owners[-1], rev)
		st.Connector = &c
	}
	for id, s := range st.Tasks {
		st.Tasks[id] = current(s, owners[id], rev)
	}
	return st, nil
}

// current is what a reported status says now. It stands while the worker
// that reported it owns the unit and holds a session. Otherwise nothing
// runs the unit: its owner's session ended (the worker died, froze or was
// cut off, and has stopped it), it has no owner (no worker can take it),
// or it moved to another worker that has not reported yet. Then it is
// UNASSIGNED, with the id of the worker that reported last, as Kafka
// Connect shows a unit its worker stopped.
func current(s connectstore.Status, o coordinator.UnitOwner, ownersRev int64) connectstore.Status {
	if s.ModRevision > ownersRev || s.State == connectstore.StateUnassigned {
		return s
	}
	if o.Alive && o.Worker == s.WorkerID {
		return s
	}
	return connectstore.Status{State: connectstore.StateUnassigned, WorkerID: s.WorkerID, Generation: s.Generation, ModRevision: s.ModRevision}
}

func taskState(id int, s connectstore.Status, version string) TaskState {
	return TaskState{ID: id, State: s.State, WorkerID: s.WorkerID, Trace: s.Trace, Version: version}
}

// typeAndVersion returns the type and plugin version of a connector's
// class; unknown and "" when the connector or its class is gone.
func (h *Herder) typeAndVersion(ctx context.Context, name string) (ConnectorType, string, error) {
	cfg, _, err := h.store.Config(ctx, name)
	if errors.Is(err, connectstore.ErrNotFound) {
		return TypeUnknown, "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("read the config of connector %s: %w", name, err)
	}
	p, ok := connect.LookupConfig(cfg)
	if !ok {
		return TypeUnknown, "", nil
	}
	return ConnectorType(p.Type), p.Version, nil
}

// TaskStatus returns one task's status.
func (h *Herder) TaskStatus(ctx context.Context, name string, id int) (TaskState, error) {
	st, err := h.statuses(ctx, name)
	if err != nil {
		return TaskState{}, err
	}
	s, ok := st.Tasks[id]
	if !ok {
		return TaskState{}, errorf(ErrNotFound, "No status found for task %s-%d", name, id)
	}
	_, version, err := h.typeAndVersion(ctx, name)
	if err != nil {
		return TaskState{}, err
	}
	return taskState(id, s, version), nil
}

// Tasks returns a connector's task configs, as the workers generated them.
func (h *Herder) Tasks(ctx context.Context, name string) ([]TaskInfo, error) {
	if _, _, err := h.config(ctx, name, msgNotFound); err != nil {
		return nil, err
	}
	tasks, err := h.store.Tasks(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("read the tasks of connector %s: %w", name, err)
	}
	out := make([]TaskInfo, len(tasks.Tasks))
	for i, cfg := range tasks.Tasks {
		if cfg == nil {
			cfg = map[string]string{}
		}
		out[i] = TaskInfo{ID: TaskID{Connector: name, Task: i}, Config: cfg}
	}
	return out, nil
}

// Restart asks the workers to restart a connector and, with includeTasks,
// its tasks; with onlyFailed, only those that FAILED. With both false it
// returns nil (Kafka Connect's 204); otherwise the current status with
// RESTARTING for what will restart (Kafka Connect's 202).
func (h *Herder) Restart(ctx context.Context, name string, includeTasks, onlyFailed bool) (*ConnectorStateInfo, error) {
	if _, _, err := h.config(ctx, name, msgUnknownRestart); err != nil {
		return nil, err
	}
	req := connectstore.RestartRequest{IncludeTasks: includeTasks, OnlyFailed: onlyFailed}
	if !includeTasks && !onlyFailed {
		return nil, h.requestRestart(ctx, name, req)
	}
	st, err := h.Status(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return nil, errorf(ErrNotFound, "Status for connector %s not found", name)
	}
	if err != nil {
		return nil, err
	}
	if !onlyFailed || st.Connector.State == connectstore.StateFailed {
		st.Connector.State = connectstore.StateRestarting
	}
	for i, t := range st.Tasks {
		if includeTasks && (!onlyFailed || t.State == connectstore.StateFailed) {
			st.Tasks[i].State = connectstore.StateRestarting
		}
	}
	if err := h.requestRestart(ctx, name, req); err != nil {
		return nil, err
	}
	return &st, nil
}

// RestartTask asks the workers to restart one task.
func (h *Herder) RestartTask(ctx context.Context, name string, id int) error {
	if _, _, err := h.config(ctx, name, msgUnknownRestart); err != nil {
		return err
	}
	tasks, err := h.store.Tasks(ctx, name)
	if err != nil {
		return fmt.Errorf("read the tasks of connector %s: %w", name, err)
	}
	if id < 0 || id >= len(tasks.Tasks) {
		return errorf(ErrNotFound, "Unknown task: %s-%d", name, id)
	}
	return h.requestRestart(ctx, name, connectstore.RestartRequest{Task: &id})
}

func (h *Herder) requestRestart(ctx context.Context, name string, req connectstore.RestartRequest) error {
	if err := h.store.RequestRestart(ctx, name, req); err != nil {
		return fmt.Errorf("request a restart of connector %s: %w", name, err)
	}
	attrs := []any{"connector", name, "include_tasks", req.IncludeTasks, "only_failed", req.OnlyFailed}
	if req.Task != nil {
		attrs = append(attrs, "task", *req.Task)
	}
	h.log.Info("connector restart requested", attrs...)
	return nil
}
