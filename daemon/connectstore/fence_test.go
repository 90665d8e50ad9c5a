package connectstore

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

// A worker's writes carry the fence of its claim; once the claim key moves
// on (the task went to another worker), every kind of write is refused and
// what the new owner wrote stays.
func TestFencedWritesAreRefusedOnceTheClaimMoves(t *testing.T) {
	ctx := context.Background()
	c := open(t)
	if _, err := c.CreateConnector(ctx, "c", map[string]string{"connector.class": "X"}, TargetStarted); err != nil {
		t.Fatal(err)
	}
	claim := "kcd/assign/owner/c/0"
	rev, err := c.Raw().Put(ctx, claim, []byte(`{"worker":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	fenceA := Fence{{Key: claim, ModRevision: rev}}
	st := Status{State: StateRunning, WorkerID: "a"}
	if err := c.PutTaskStatus(ctx, "c", 0, st, fenceA); err != nil {
		t.Fatalf("status under a holding fence: %v", err)
	}
	part := map[string]any{"p": "x"}
	if err := c.PutSourceOffsets(ctx, "c", []SourceOffset{{Partition: part, Offset: map[string]any{"o": 1}}}, fenceA); err != nil {
		t.Fatalf("offsets under a holding fence: %v", err)
	}
	if _, err := c.SetTasks(ctx, "c", []map[string]string{{"k": "v"}}, fenceA); err != nil {
		t.Fatalf("task configs under a holding fence: %v", err)
	}

	// The task moves to b.
	rev, err = c.Raw().Put(ctx, claim, []byte(`{"worker":"b"}`))
	if err != nil {
		t.Fatal(err)
	}
	fenceB := Fence{{Key: claim, ModRevision: rev}}
	if err := c.PutTaskStatus(ctx, "c", 0, Status{State: StateRunning, WorkerID: "b"}, fenceB); err != nil {
		t.Fatal(err)
	}
	if err := c.PutSourceOffsets(ctx, "c", []SourceOffset{{Partition: part, Offset: map[string]any{"o": 2}}}, fenceB); err != nil {
		t.Fatal(err)
	}

	// a, the zombie, is refused everywhere.
	if err := c.PutTaskStatus(ctx, "c", 0, Status{State: StateUnassigned, WorkerID: "a"}, fenceA); !errors.Is(err, ErrFenced) {
		t.Fatalf("zombie status: %v, want ErrFenced", err)
	}
	if err := c.PutConnectorStatus(ctx, "c", Status{State: StateRunning, WorkerID: "a"}, fenceA); !errors.Is(err, ErrFenced) {
		t.Fatalf("zombie connector status: %v, want ErrFenced", err)
	}
	if err := c.PutSourceOffsets(ctx, "c", []SourceOffset{{Partition: part, Offset: map[string]any{"o": 1}}}, fenceA); !errors.Is(err, ErrFenced) {
		t.Fatalf("zombie offsets: %v, want ErrFenced", err)
	}
	if err := c.PutSinkOffsets(ctx, "c", []SinkOffset{{Topic: "t", Partition: 0, Offset: 9}}, fenceA); !errors.Is(err, ErrFenced) {
		t.Fatalf("zombie sink offsets: %v, want ErrFenced", err)
	}
	if _, err := c.SetTasks(ctx, "c", []map[string]string{{"k": "zombie"}}, fenceA); !errors.Is(err, ErrFenced) {
		t.Fatalf("zombie task configs: %v, want ErrFenced", err)
	}
	// A claim that was deleted fences too.
	if _, _, err := c.Raw().Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	if err := c.PutTaskStatus(ctx, "c", 0, st, fenceB); !errors.Is(err, ErrFenced) {
		t.Fatalf("status after the claim was deleted: %v, want ErrFenced", err)
	}

	sts, err := c.Statuses(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if got := sts.Tasks[0]; got.WorkerID != "b" || got.State != StateRunning {
		t.Fatalf("task status = %+v, want b's RUNNING", got)
	}
	if sts.Connector != nil {
		t.Fatalf("connector status written by a zombie: %+v", sts.Connector)
	}
	off, err := c.SourceOffset(ctx, "c", part)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := off["o"].(json.Number); n.String() != "2" {
		t.Fatalf("offset = %v, want b's 2", off)
	}
	if so, err := c.SinkOffsets(ctx, "c"); err != nil || len(so) != 0 {
		t.Fatalf("sink offsets = %v, %v; want the fenced write refused", so, err)
	}
	if tc, err := c.Tasks(ctx, "c"); err != nil || tc.Tasks[0]["k"] != "v" {
		t.Fatalf("task configs = %+v, %v; want the fenced write refused", tc, err)
	}
}
