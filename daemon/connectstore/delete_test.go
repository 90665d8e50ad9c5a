package connectstore

import (
	"context"
	"strconv"
	"testing"

	"github.com/kcd-project/kcd/store"
)

// A connector with more statuses than one store batch holds can be
// deleted (and its statuses trimmed), and a delete cut short after the
// connector went leaves nothing a new connector of that name sees.
func TestDeleteConnectorWithThousandsOfTasks(t *testing.T) {
	ctx := context.Background()
	c := open(t)
	const tasks = 2*store.MaxBatchOps + 100
	putStatuses := func(name string) {
		t.Helper()
		var ops []store.Op
		for id := range tasks {
			ops = append(ops, store.Put(taskStatusKey(name, id), mustJSON(Status{State: StateRunning, WorkerID: "w"})))
		}
		for len(ops) > 0 {
			n := min(len(ops), store.MaxBatchOps)
			if _, _, err := c.Raw().Batch(ctx, nil, ops[:n]); err != nil {
				t.Fatal(err)
			}
			ops = ops[n:]
		}
	}
	create := func(name string) {
		t.Helper()
		if ok, err := c.CreateConnector(ctx, name, map[string]string{"connector.class": "X", "tasks.max": strconv.Itoa(tasks)}, TargetStarted); err != nil || !ok {
			t.Fatalf("create %s: %v %v", name, ok, err)
		}
	}

	create("big")
	cfgs := make([]map[string]string, tasks)
	for i := range cfgs {
		cfgs[i] = map[string]string{"task.id": strconv.Itoa(i)}
	}
	if _, err := c.SetTasks(ctx, "big", cfgs, nil); err != nil {
		t.Fatal(err)
	}
	putStatuses("big")
	if err := c.PutConnectorStatus(ctx, "big", Status{State: StateRunning, WorkerID: "w"}, nil); err != nil {
		t.Fatal(err)
	}

	// Fewer tasks: the statuses of the others go.
	if err := c.DeleteTaskStatuses(ctx, "big", 1); err != nil {
		t.Fatalf("trim statuses: %v", err)
	}
	if st, _ := c.Statuses(ctx, "big"); len(st.Tasks) != 1 {
		t.Fatalf("%d task statuses after trimming to 1", len(st.Tasks))
	}
	putStatuses("big")

	if deleted, err := c.DeleteConnector(ctx, "big"); err != nil || !deleted {
		t.Fatalf("delete: %v %v", deleted, err)
	}
	if names, _ := c.Connectors(ctx); len(names) != 0 {
		t.Errorf("connectors after delete: %v", names)
	}
	if kvs, _, _ := c.Raw().Scan(ctx, Prefix, 0); len(kvs) != 0 {
		t.Errorf("%d keys left after delete, first %s", len(kvs), kvs[0].Key)
	}

	// A delete cut short: the connector is gone, its statuses are not.
	// Neither another delete nor a new connector of the name sees them.
	putStatuses("big")
	if deleted, err := c.DeleteConnector(ctx, "big"); err != nil || deleted {
		t.Fatalf("delete of a deleted connector: %v %v", deleted, err)
	}
	if st, _ := c.Statuses(ctx, "big"); len(st.Tasks) != 0 {
		t.Errorf("%d statuses left by a second delete", len(st.Tasks))
	}
	putStatuses("big")
	create("big")
	if st, _ := c.Statuses(ctx, "big"); len(st.Tasks) != 0 || st.Connector != nil {
		t.Errorf("a new connector sees %d task statuses of an old one", len(st.Tasks))
	}
	if kvs, _, _ := c.Raw().Scan(ctx, Prefix+"status/", 0); len(kvs) != 0 {
		t.Errorf("%d statuses left", len(kvs))
	}
}
