package restapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	kcdapi "github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/coordinator"
	"github.com/kcd-project/kcd/store"
)

// Coordinator is what the API needs of the coordinator on a Raft node.
// Its methods are only called on the leader: the API forwards there.
type Coordinator interface {
	Heartbeat(ctx context.Context, hb coordinator.Heartbeat) (coordinator.HeartbeatReply, error)
	Leave(ctx context.Context, id string) error
	Plan(ctx context.Context, drain string) (coordinator.PlanResult, error)
}

// The bodies of /kcd/v1/workers and /kcd/v1/assignments (see package api).
type (
	WorkerView     = kcdapi.WorkerView
	AssignmentView = kcdapi.AssignmentView
	WorkerWeight   = kcdapi.WorkerWeight
)

func (a *api) workerRoutes() []route {
	return []route{
		{"POST", "/kcd/v1/workers/{id}/heartbeat", a.withCoordinator(a.leaderOnly(a.heartbeat))},
		{"DELETE", "/kcd/v1/workers/{id}/session", a.withCoordinator(a.leaderOnly(a.leaveSession))},
		{"GET", "/kcd/v1/workers", a.withStore(a.listWorkers)},
		{"GET", "/kcd/v1/worker", a.localWorker},
		{"PUT", "/kcd/v1/workers/{id}/weight", a.withStore(a.setWeight)},
		{"PUT", "/kcd/v1/workers/{id}/drain", a.withStore(a.drain(true))},
		{"PUT", "/kcd/v1/workers/{id}/undrain", a.withStore(a.drain(false))},
		{"GET", "/kcd/v1/assignments", a.withStore(a.listAssignments)},
		{"GET", "/kcd/v1/rebalances", a.withStore(a.listRebalances)},
		{"GET", "/kcd/v1/rebalances/plan", a.withCoordinator(a.leaderOnly(a.rebalancePlan))},
		{"GET", "/kcd/v1/events", a.withStore(a.events)},
	}
}

func (a *api) withCoordinator(fn func(*http.Request) (int, any, *Error)) func(*http.Request) (int, any, *Error) {
	return func(r *http.Request) (int, any, *Error) {
		if a.cluster == nil {
			return 0, nil, Errorf(http.StatusServiceUnavailable, "this node is not part of a cluster yet")
		}
		if a.coord == nil {
			return 0, nil, Errorf(http.StatusServiceUnavailable, "this node runs no coordinator (it is not a Raft member); ask a Raft node")
		}
		return fn(r)
	}
}

func (a *api) withStore(fn func(*http.Request) (int, any, *Error)) func(*http.Request) (int, any, *Error) {
	return func(r *http.Request) (int, any, *Error) {
		if a.store == nil {
			return 0, nil, Errorf(http.StatusServiceUnavailable, "this node has no metadata store yet")
		}
		return fn(r)
	}
}

func coordError(err error) *Error {
	switch {
	case errors.Is(err, coordinator.ErrNotLeader):
		return Errorf(http.StatusServiceUnavailable, "%v; retry", err)
	case errors.Is(err, coordinator.ErrUnknownWorker):
		return Errorf(http.StatusNotFound, "%v", err)
	case errors.Is(err, store.ErrInvalid):
		return Errorf(http.StatusBadRequest, "%v", err)
	}
	return asError(err)
}

func (a *api) heartbeat(r *http.Request) (int, any, *Error) {
	var hb coordinator.Heartbeat
	if e := decodeBody(r, &hb); e != nil {
		return 0, nil, e
	}
	if id := r.PathValue("id"); hb.Worker.ID != id {
		return 0, nil, Errorf(http.StatusBadRequest, "worker id %q in the body differs from %q in the path", hb.Worker.ID, id)
	}
	reply, err := a.coord.Heartbeat(r.Context(), hb)
	if err != nil {
		return 0, nil, coordError(err)
	}
	return http.StatusOK, reply, nil
}

func (a *api) leaveSession(r *http.Request) (int, any, *Error) {
	if err := a.coord.Leave(r.Context(), r.PathValue("id")); err != nil {
		return 0, nil, coordError(err)
	}
	return http.StatusNoContent, nil, nil
}

func (a *api) rebalancePlan(r *http.Request) (int, any, *Error) {
	plan, err := a.coord.Plan(r.Context(), r.URL.Query().Get("drain"))
	if err != nil {
		return 0, nil, coordError(err)
	}
	return http.StatusOK, plan, nil
}

func (a *api) listWorkers(r *http.Request) (int, any, *Error) {
	ctx := r.Context()
	live, _, err := coordinator.LiveWorkers(ctx, a.store)
	if err != nil {
		return 0, nil, asError(err)
	}
	gone, err := coordinator.GoneWorkers(ctx, a.store)
	if err != nil {
		return 0, nil, asError(err)
	}
	settings, err := a.readSettings(ctx)
	if err != nil {
		return 0, nil, asError(err)
	}
	owners, _, err := a.readAssignments(ctx)
	if err != nil {
		return 0, nil, asError(err)
	}
	out := []WorkerView{}
	for _, id := range slices.Sorted(maps.Keys(live)) {
		out = append(out, workerView(live[id], coordinator.WorkerAlive, nil))
	}
	for _, id := range slices.Sorted(maps.Keys(gone)) {
		if _, ok := live[id]; ok {
			continue // back: its record goes with the next rebalance
		}
		g := gone[id]
		g.ID = id
		out = append(out, workerView(g.WorkerInfo, g.State, &g.At))
	}
	for i := range out {
		v := &out[i]
		if s, ok := settings[v.ID]; ok {
			if s.Weight != nil {
				v.Weight = *s.Weight
			}
			v.Draining = s.Draining
			if v.Draining && v.State == coordinator.WorkerAlive {
				v.State = coordinator.WorkerDraining
			}
		}
		for _, o := range owners {
			if o.Worker != v.ID {
				continue
			}
			if o.Task == nil {
				v.Connectors++
			} else {
				v.Tasks++
			}
		}
	}
	return http.StatusOK, out, nil
}

func workerView(w coordinator.WorkerInfo, state string, goneAt *time.Time) WorkerView {
	return WorkerView{ID: w.ID, State: state, RESTURL: w.RESTURL, NodeID: w.NodeID, Weight: w.Weight, Capacity: w.Capacity, Since: w.Since, GoneAt: goneAt}
}

func (a *api) readSettings(ctx context.Context) (map[string]coordinator.Settings, error) {
	kvs, _, err := a.store.Scan(ctx, coordinator.SettingsPrefix, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]coordinator.Settings{}
	for _, kv := range kvs {
		var s coordinator.Settings
		if json.Unmarshal(kv.Value, &s) == nil {
			out[strings.TrimPrefix(kv.Key, coordinator.SettingsPrefix)] = s
		}
	}
	return out, nil
}

// updateSettings changes one worker's settings with compare-and-set.
func (a *api) updateSettings(ctx context.Context, id string, change func(*coordinator.Settings)) (coordinator.Settings, error) {
	key := coordinator.SettingsPrefix + id
	for {
		kv, found, err := a.store.Get(ctx, key)
		if err != nil {
			return coordinator.Settings{}, err
		}
		var s coordinator.Settings
		if found {
			if err := json.Unmarshal(kv.Value, &s); err != nil {
				return coordinator.Settings{}, fmt.Errorf("settings of worker %s: %w", id, err)
			}
		}
		change(&s)
		b, _ := json.Marshal(s)
		_, ok, err := a.store.CompareAndSet(ctx, key, kv.ModRevision, b)
		if err != nil {
			return coordinator.Settings{}, err
		}
		if ok {
			return s, nil
		}
	}
}

func validWorkerID(id string) *Error {
	if id == "" || len(id) > 256 || strings.ContainsAny(id, "\x00") {
		return Errorf(http.StatusBadRequest, "invalid worker id %q", id)
	}
	return nil
}

func (a *api) setWeight(r *http.Request) (int, any, *Error) {
	id := r.PathValue("id")
	if e := validWorkerID(id); e != nil {
		return 0, nil, e
	}
	var body WorkerWeight
	if e := decodeBody(r, &body); e != nil {
		return 0, nil, e
	}
	if body.Weight == nil || *body.Weight < 0 || math.IsNaN(*body.Weight) || math.IsInf(*body.Weight, 0) || *body.Weight > 1e6 {
		return 0, nil, Errorf(http.StatusBadRequest, "weight must be a number from 0 to 1000000 (0 takes no work)")
	}
	s, err := a.updateSettings(r.Context(), id, func(s *coordinator.Settings) { s.Weight = body.Weight })
	if err != nil {
		return 0, nil, asError(err)
	}
	return http.StatusOK, s, nil
}

func (a *api) drain(on bool) func(*http.Request) (int, any, *Error) {
	return func(r *http.Request) (int, any, *Error) {
		id := r.PathValue("id")
		if e := validWorkerID(id); e != nil {
			return 0, nil, e
		}
		s, err := a.updateSettings(r.Context(), id, func(s *coordinator.Settings) { s.Draining = on })
		if err != nil {
			return 0, nil, asError(err)
		}
		return http.StatusOK, s, nil
	}
}

// readAssignments lists every unit's owner, sorted by connector and task.
func (a *api) readAssignments(ctx context.Context) ([]AssignmentView, int64, error) {
	kvs, rev, err := a.store.Scan(ctx, coordinator.AssignPrefix, 0)
	if err != nil {
		return nil, 0, err
	}
	views := map[coordinator.Unit]*AssignmentView{}
	revokes := map[coordinator.Unit]string{}
	for _, kv := range kvs {
		u, isRevoke, ok := coordinator.ParseUnitKey(kv.Key)
		if !ok {
			continue
		}
		if isRevoke {
			var rv coordinator.Revoke
			if json.Unmarshal(kv.Value, &rv) == nil {
				revokes[u] = rv.To
			}
			continue
		}
		var o coordinator.Owner
		if json.Unmarshal(kv.Value, &o) != nil {
			continue
		}
		v := &AssignmentView{Connector: u.Connector, Worker: o.Worker, Epoch: o.Epoch}
		if u.Task >= 0 {
			t := u.Task
			v.Task = &t
		}
		views[u] = v
	}
	out := make([]AssignmentView, 0, len(views))
	for u, v := range views {
		v.RevokingTo = revokes[u]
		out = append(out, *v)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Connector != out[j].Connector {
			return out[i].Connector < out[j].Connector
		}
		return taskOrder(out[i].Task) < taskOrder(out[j].Task)
	})
	return out, rev, nil
}

func taskOrder(t *int) int {
	if t == nil {
		return -1
	}
	return *t
}

func (a *api) listAssignments(r *http.Request) (int, any, *Error) {
	out, _, err := a.readAssignments(r.Context())
	if err != nil {
		return 0, nil, asError(err)
	}
	return http.StatusOK, out, nil
}

// listRebalances answers the journal, newest first; ?limit=N keeps N.
func (a *api) listRebalances(r *http.Request) (int, any, *Error) {
	limit := 0
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, nil, Errorf(http.StatusBadRequest, "limit must be a positive integer, not %q", v)
		}
		limit = n
	}
	kvs, _, err := a.store.Scan(r.Context(), coordinator.RebalancePrefix, 0)
	if err != nil {
		return 0, nil, asError(err)
	}
	out := []coordinator.Rebalance{}
	for _, kv := range slices.Backward(kvs) {
		var rb coordinator.Rebalance
		if json.Unmarshal(kv.Value, &rb) == nil {
			out = append(out, rb)
		}
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return http.StatusOK, out, nil
}

// LocalWorker is this node's worker, for GET /kcd/v1/worker.
type LocalWorker interface {
	LocalWorker() LocalWorkerView
}

// LocalWorkerView and LocalUnit are the body of GET /kcd/v1/worker (see
// package api).
type (
	LocalWorkerView = kcdapi.LocalWorkerView
	LocalUnit       = kcdapi.LocalUnit
)

func (a *api) localWorker(*http.Request) (int, any, *Error) {
	if a.worker == nil {
		return 0, nil, Errorf(http.StatusNotFound, "this node runs no worker")
	}
	v := a.worker.LocalWorker()
	sort.Slice(v.Units, func(i, j int) bool {
		if v.Units[i].Connector != v.Units[j].Connector {
			return v.Units[i].Connector < v.Units[j].Connector
		}
		return taskOrder(v.Units[i].Task) < taskOrder(v.Units[j].Task)
	})
	return http.StatusOK, v, nil
}
