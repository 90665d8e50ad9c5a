package connectstore

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/kcd-project/kcd/raft/fsm"
)

func open(t *testing.T) *Store {
	t.Helper()
	l, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), fsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return New(l)
}

func TestConnectorLifecycle(t *testing.T) {
	ctx := context.Background()
	c := open(t)
	cfg := map[string]string{"connector.class": "X", "tasks.max": "2"}
	if created, err := c.CreateConnector(ctx, "a b", cfg, TargetPaused); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	if created, err := c.CreateConnector(ctx, "a b", cfg, TargetStarted); err != nil || created {
		t.Fatalf("second create: %v %v", created, err)
	}
	// "a" is another connector.
	if _, _, err := c.Config(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("config of a: %v", err)
	}
	got, rev, err := c.Config(ctx, "a b")
	if err != nil || got["tasks.max"] != "2" {
		t.Fatalf("config: %v %v", got, err)
	}
	if st, _ := c.Target(ctx, "a b"); st != TargetPaused {
		t.Errorf("target %q", st)
	}
	if ok, err := c.UpdateConfig(ctx, "a b", map[string]string{"tasks.max": "3"}, rev); err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	if ok, _ := c.UpdateConfig(ctx, "a b", map[string]string{"tasks.max": "4"}, rev); ok {
		t.Error("update with a stale revision succeeded")
	}
	names, _ := c.Connectors(ctx)
	if len(names) != 1 || names[0] != "a b" {
		t.Errorf("names %v", names)
	}

	t1, err := c.SetTasks(ctx, "a b", []map[string]string{{"t": "0"}, {"t": "1"}}, nil)
	if err != nil || t1.Generation != 1 {
		t.Fatalf("set tasks: %+v %v", t1, err)
	}
	t2, _ := c.SetTasks(ctx, "a b", []map[string]string{{"t": "0"}}, nil)
	if t2.Generation != 2 || len(t2.Tasks) != 1 {
		t.Errorf("second set %+v", t2)
	}
	if err := c.PutTaskStatus(ctx, "a b", 0, Status{State: StateRunning, WorkerID: "w"}, nil); err != nil {
		t.Fatal(err)
	}
	_ = c.PutTaskStatus(ctx, "a b", 1, Status{State: StateRunning, WorkerID: "w"}, nil)
	_ = c.PutConnectorStatus(ctx, "a b", Status{State: StateRunning, WorkerID: "w"}, nil)
	if err := c.DeleteTaskStatuses(ctx, "a b", 1); err != nil {
		t.Fatal(err)
	}
	st, _ := c.Statuses(ctx, "a b")
	if st.Connector == nil || len(st.Tasks) != 1 {
		t.Errorf("statuses %+v", st)
	}

	// Offsets survive deletion, as in Kafka Connect; everything else goes.
	part := map[string]any{"filename": "/tmp/x"}
	if err := c.PutSourceOffsets(ctx, "a b", []SourceOffset{{Partition: part, Offset: map[string]any{"position": int64(1 << 53)}}}, nil); err != nil {
		t.Fatal(err)
	}
	if deleted, err := c.DeleteConnector(ctx, "a b"); err != nil || !deleted {
		t.Fatalf("delete: %v %v", deleted, err)
	}
	if deleted, _ := c.DeleteConnector(ctx, "a b"); deleted {
		t.Error("second delete deleted")
	}
	if st, _ := c.Statuses(ctx, "a b"); st.Connector != nil || len(st.Tasks) != 0 {
		t.Errorf("statuses after delete %+v", st)
	}
	off, err := c.SourceOffset(ctx, "a b", map[string]any{"filename": "/tmp/x"})
	if err != nil || off["position"] != json.Number("9007199254740992") {
		t.Fatalf("offset kept exactly: %#v %v", off, err)
	}
	if err := c.DeleteOffsets(ctx, "a b"); err != nil {
		t.Fatal(err)
	}
	if all, _ := c.SourceOffsets(ctx, "a b"); len(all) != 0 {
		t.Errorf("offsets after reset: %v", all)
	}
}

func TestSinkOffsetsAndRestart(t *testing.T) {
	ctx := context.Background()
	c := open(t)
	if err := c.PutSinkOffsets(ctx, "s", []SinkOffset{{Topic: "t/1", Partition: 3, Offset: 42}, {Topic: "u", Partition: 0, Offset: 7}}, nil); err != nil {
		t.Fatal(err)
	}
	got, err := c.SinkOffsets(ctx, "s")
	if err != nil || len(got) != 2 {
		t.Fatalf("%v %v", got, err)
	}
	for _, o := range got {
		if (o.Topic == "t/1" && o.Offset != 42) || (o.Topic == "u" && o.Offset != 7) {
			t.Errorf("%+v", o)
		}
	}
	if err := c.RequestRestart(ctx, "s", RestartRequest{IncludeTasks: true}); err != nil {
		t.Fatal(err)
	}
	_ = c.RequestRestart(ctx, "s", RestartRequest{})
	r, _ := c.Restart(ctx, "s")
	if r.Seq != 2 || r.IncludeTasks {
		t.Errorf("restart %+v", r)
	}
	if _, err := c.SetTasks(ctx, "missing", nil, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("tasks of a missing connector: %v", err)
	}
	if err := c.SetTarget(ctx, "missing", TargetPaused); !errors.Is(err, ErrNotFound) {
		t.Errorf("target of a missing connector: %v", err)
	}
}

// ClearTasks empties the task configs only of a connector still stopped:
// a worker that read STOPPED before an import (or a resume) set the target
// and the task configs must not wipe the new ones.
func TestClearTasksOnlyWhileStopped(t *testing.T) {
	ctx := context.Background()
	c := open(t)
	if _, err := c.CreateConnector(ctx, "c", map[string]string{"connector.class": "X"}, TargetStopped); err != nil {
		t.Fatal(err)
	}
	tasks := []map[string]string{{"k": "v"}}
	if _, err := c.SetTasks(ctx, "c", tasks, nil); err != nil {
		t.Fatal(err)
	}
	// The target moved on (as an import's roll-forward does) after the
	// caller read STOPPED.
	if err := c.SetTarget(ctx, "c", TargetPaused); err != nil {
		t.Fatal(err)
	}
	if cleared, err := c.ClearTasks(ctx, "c", nil); err != nil || cleared {
		t.Fatalf("ClearTasks of a paused connector: cleared %v, %v", cleared, err)
	}
	if tc, err := c.Tasks(ctx, "c"); err != nil || len(tc.Tasks) != 1 {
		t.Fatalf("task configs of the paused connector: %+v %v", tc, err)
	}
	if err := c.SetTarget(ctx, "c", TargetStopped); err != nil {
		t.Fatal(err)
	}
	if cleared, err := c.ClearTasks(ctx, "c", nil); err != nil || !cleared {
		t.Fatalf("ClearTasks of a stopped connector: cleared %v, %v", cleared, err)
	}
	tc, err := c.Tasks(ctx, "c")
	if err != nil || len(tc.Tasks) != 0 || tc.Generation != 2 {
		t.Fatalf("task configs after the clear: %+v %v", tc, err)
	}
	if cleared, err := c.ClearTasks(ctx, "c", nil); err != nil || cleared {
		t.Fatalf("a second ClearTasks: cleared %v, %v (nothing to clear)", cleared, err)
	}
}
