package herder_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/coordinator"
	"github.com/kcd-project/kcd/daemon/herder"
	"github.com/kcd-project/kcd/daemon/herder/herdertest"
)

func TestStatus(t *testing.T) {
	ctx := context.Background()
	h, s := newHerderStore(t)
	if _, err := h.CreateConnector(ctx, "c", sourceConfig("c"), connectstore.TargetStarted); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Status(ctx, "c"); !errors.Is(err, herder.ErrNotFound) || err.Error() != "No status found for connector c" {
		t.Errorf("before any report: %v", err)
	}
	must(t, s.PutConnectorStatus(ctx, "c", connectstore.Status{State: "RUNNING", WorkerID: "w1:8083"}, nil))
	must(t, s.PutTaskStatus(ctx, "c", 10, connectstore.Status{State: "FAILED", WorkerID: "w2:8083", Trace: "boom"}, nil))
	must(t, s.PutTaskStatus(ctx, "c", 2, connectstore.Status{State: "RUNNING", WorkerID: "w1:8083"}, nil))
	st, err := h.Status(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	want := herder.ConnectorStateInfo{
		Name:      "c",
		Connector: herder.ConnectorState{State: "RUNNING", WorkerID: "w1:8083", Version: herdertest.PluginVersion},
		Tasks: []herder.TaskState{
			{ID: 2, State: "RUNNING", WorkerID: "w1:8083", Version: herdertest.PluginVersion},
			{ID: 10, State: "FAILED", WorkerID: "w2:8083", Trace: "boom", Version: herdertest.PluginVersion},
		},
		Type: herder.TypeSource,
	}
	if !equalStatus(st, want) {
		t.Errorf("status %+v", st)
	}
	ts, err := h.TaskStatus(ctx, "c", 10)
	if err != nil || ts != want.Tasks[1] {
		t.Errorf("task status %+v %v", ts, err)
	}
	if _, err := h.TaskStatus(ctx, "c", 3); !errors.Is(err, herder.ErrNotFound) || err.Error() != "No status found for task c-3" {
		t.Errorf("unknown task: %v", err)
	}
}

func equalStatus(a, b herder.ConnectorStateInfo) bool {
	if a.Name != b.Name || a.Connector != b.Connector || a.Type != b.Type || len(a.Tasks) != len(b.Tasks) {
		return false
	}
	for i := range a.Tasks {
		if a.Tasks[i] != b.Tasks[i] {
			return false
		}
	}
	return true
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRestart(t *testing.T) {
	ctx := context.Background()
	h, s := newHerderStore(t)
	if _, err := h.CreateConnector(ctx, "c", sourceConfig("c"), connectstore.TargetStarted); err != nil {
		t.Fatal(err)
	}
	_, err := s.SetTasks(ctx, "c", []map[string]string{{}, {}}, nil)
	must(t, err)

	plan, err := h.Restart(ctx, "c", false, false)
	if err != nil || plan != nil {
		t.Fatalf("plain restart: %+v %v", plan, err)
	}
	req, _ := s.Restart(ctx, "c")
	if req.Seq != 1 || req.IncludeTasks || req.OnlyFailed || req.Task != nil {
		t.Errorf("request %+v", req)
	}
	if _, err := h.Restart(ctx, "c", true, false); !errors.Is(err, herder.ErrNotFound) || err.Error() != "Status for connector c not found" {
		t.Errorf("restart with tasks before any status: %v", err)
	}

	must(t, s.PutConnectorStatus(ctx, "c", connectstore.Status{State: "RUNNING", WorkerID: "w"}, nil))
	must(t, s.PutTaskStatus(ctx, "c", 0, connectstore.Status{State: "RUNNING", WorkerID: "w"}, nil))
	must(t, s.PutTaskStatus(ctx, "c", 1, connectstore.Status{State: "FAILED", WorkerID: "w"}, nil))
	plan, err = h.Restart(ctx, "c", true, true)
	if err != nil || plan.Connector.State != "RUNNING" || plan.Tasks[0].State != "RUNNING" || plan.Tasks[1].State != "RESTARTING" {
		t.Fatalf("only failed: %+v %v", plan, err)
	}
	if req, _ := s.Restart(ctx, "c"); req.Seq != 2 || !req.IncludeTasks || !req.OnlyFailed {
		t.Errorf("request %+v", req)
	}
	plan, _ = h.Restart(ctx, "c", true, false)
	if plan.Connector.State != "RESTARTING" || plan.Tasks[0].State != "RESTARTING" || plan.Tasks[1].State != "RESTARTING" {
		t.Errorf("all: %+v", plan)
	}
	if st, _ := h.Status(ctx, "c"); st.Tasks[0].State != "RUNNING" {
		t.Errorf("the herder must not write statuses: %+v", st)
	}

	must(t, h.RestartTask(ctx, "c", 1))
	if req, _ := s.Restart(ctx, "c"); req.Task == nil || *req.Task != 1 {
		t.Errorf("task request %+v", req)
	}
	if err := h.RestartTask(ctx, "c", 2); !errors.Is(err, herder.ErrNotFound) || err.Error() != "Unknown task: c-2" {
		t.Errorf("unknown task: %v", err)
	}
	if err := h.RestartTask(ctx, "nope", 0); !errors.Is(err, herder.ErrNotFound) || err.Error() != "Unknown connector: nope" {
		t.Errorf("unknown connector: %v", err)
	}
	if _, err := h.Restart(ctx, "nope", false, false); !errors.Is(err, herder.ErrNotFound) || err.Error() != "Unknown connector: nope" {
		t.Errorf("unknown connector: %v", err)
	}
}

func TestTasks(t *testing.T) {
	ctx := context.Background()
	h, s := newHerderStore(t)
	if _, err := h.Tasks(ctx, "nope"); !errors.Is(err, herder.ErrNotFound) {
		t.Errorf("tasks of a missing connector: %v", err)
	}
	if _, err := h.CreateConnector(ctx, "c", sourceConfig("c"), connectstore.TargetStarted); err != nil {
		t.Fatal(err)
	}
	_, err := s.SetTasks(ctx, "c", []map[string]string{{"a": "0"}, {"a": "1"}}, nil)
	must(t, err)
	tasks, err := h.Tasks(ctx, "c")
	if err != nil || len(tasks) != 2 || tasks[1].ID != (herder.TaskID{Connector: "c", Task: 1}) || tasks[1].Config["a"] != "1" {
		t.Errorf("tasks %+v %v", tasks, err)
	}
}

// A status stands while the worker that reported it owns the unit and
// holds a session; otherwise the unit runs nowhere and shows UNASSIGNED
// with the last worker's id, as Kafka Connect shows a unit its worker
// stopped.
func TestStatusIsUnassignedWhereNoLiveWorkerRunsIt(t *testing.T) {
	ctx := context.Background()
	herdertest.Register()
	s := herdertest.Store(t)
	raw := s.Raw()
	h := herder.New(s, herder.Options{Logger: slog.New(slog.DiscardHandler),
		Owners: func(ctx context.Context, name string) (map[int]coordinator.UnitOwner, int64, error) {
			return coordinator.Owners(ctx, raw, name)
		}})
	if _, err := h.CreateConnector(ctx, "c", sourceConfig("c"), connectstore.TargetStarted); err != nil {
		t.Fatal(err)
	}
	own := func(task int, worker string) {
		t.Helper()
		b, _ := json.Marshal(coordinator.Owner{Worker: worker})
		if _, err := raw.Put(ctx, coordinator.OwnerKey(coordinator.Unit{Connector: "c", Task: task}), b); err != nil {
			t.Fatal(err)
		}
	}
	session := func(worker string, alive bool) {
		t.Helper()
		var err error
		if alive {
			b, _ := json.Marshal(coordinator.WorkerInfo{ID: worker})
			_, err = raw.Put(ctx, coordinator.WorkerPrefix+worker, b)
		} else {
			_, _, err = raw.Delete(ctx, coordinator.WorkerPrefix+worker)
		}
		must(t, err)
	}
	session("w1", true)
	session("w2", true)
	own(-1, "w1")
	own(0, "w1")
	own(1, "w2")
	must(t, s.PutConnectorStatus(ctx, "c", connectstore.Status{State: "RUNNING", WorkerID: "w1"}, nil))
	for id := range 3 {
		must(t, s.PutTaskStatus(ctx, "c", id, connectstore.Status{State: "RUNNING", WorkerID: "w1"}, nil))
	}
	// Task 1 moved to w2, which has not reported yet; task 2 has no owner.
	states := func() string {
		t.Helper()
		st, err := h.Status(ctx, "c")
		if err != nil {
			t.Fatal(err)
		}
		out := st.Connector.State + "@" + st.Connector.WorkerID
		for _, ts := range st.Tasks {
			out += " " + ts.State + "@" + ts.WorkerID
			one, err := h.TaskStatus(ctx, "c", ts.ID)
			if err != nil || one != ts {
				t.Errorf("task %d: TaskStatus %+v %v, Status %+v", ts.ID, one, err, ts)
			}
		}
		return out
	}
	if got, want := states(), "RUNNING@w1 RUNNING@w1 UNASSIGNED@w1 UNASSIGNED@w1"; got != want {
		t.Errorf("status %q, want %q", got, want)
	}
	must(t, s.PutTaskStatus(ctx, "c", 1, connectstore.Status{State: "RUNNING", WorkerID: "w2"}, nil))
	if got, want := states(), "RUNNING@w1 RUNNING@w1 RUNNING@w2 UNASSIGNED@w1"; got != want {
		t.Errorf("after w2 reported: status %q, want %q", got, want)
	}
	// w1's session ends: nothing it owned runs.
	session("w1", false)
	if got, want := states(), "UNASSIGNED@w1 UNASSIGNED@w1 RUNNING@w2 UNASSIGNED@w1"; got != want {
		t.Errorf("after w1's session ended: status %q, want %q", got, want)
	}
}
