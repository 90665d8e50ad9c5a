package herder_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/coordinator"
	"github.com/kcd-project/kcd/daemon/herder"
	"github.com/kcd-project/kcd/daemon/herder/herdertest"
)

const notStopped = "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/%s/stop' endpoint"

func TestSourceOffsets(t *testing.T) {
	ctx := context.Background()
	h, s := newHerderStore(t)
	if _, err := h.CreateConnector(ctx, "src", cfg("name", "src", "connector.class", herdertest.CheckedClass, "topic", "t"), connectstore.TargetStarted); err != nil {
		t.Fatal(err)
	}
	_, err := s.SetTasks(ctx, "src", []map[string]string{{}}, nil)
	must(t, err)
	offs := []herder.ConnectorOffset{{Partition: map[string]any{"filename": "/a"}, Offset: map[string]any{"position": json.Number("9007199254740993")}}}

	// Not stopped: refused, and nothing is written.
	before := revision(t, s)
	_, err = h.AlterOffsets(ctx, "src", offs)
	if !errors.Is(err, herder.ErrBadRequest) || err.Error() != strings.Replace(notStopped, "%s", "src", 1) {
		t.Errorf("alter while running: %v", err)
	}
	if _, err := h.ResetOffsets(ctx, "src"); !errors.Is(err, herder.ErrBadRequest) {
		t.Errorf("reset while running: %v", err)
	}
	if revision(t, s) != before {
		t.Error("a refused offsets request wrote to the store")
	}

	must(t, h.Stop(ctx, "src"))
	must(t, s.PutTaskStatus(ctx, "src", 0, connectstore.Status{State: "RUNNING", WorkerID: "w"}, nil))
	if _, err := h.AlterOffsets(ctx, "src", offs); !errors.Is(err, herder.ErrBadRequest) {
		t.Errorf("alter while a task still reports RUNNING: %v", err)
	}
	must(t, s.DeleteTaskStatuses(ctx, "src", 0))

	msg, err := h.AlterOffsets(ctx, "src", offs)
	if err != nil || msg.Message != "The offsets for this connector have been altered successfully" {
		t.Fatalf("alter: %+v %v", msg, err)
	}
	got, err := h.Offsets(ctx, "src")
	if err != nil || len(got.Offsets) != 1 || got.Offsets[0].Offset["position"] != json.Number("9007199254740993") {
		t.Errorf("offsets %+v %v", got, err)
	}
	// The connector's own check rejects a bad offset; nothing changes.
	bad := []herder.ConnectorOffset{{Partition: map[string]any{"filename": "/a"}, Offset: map[string]any{"position": json.Number("-1")}}}
	if _, err := h.AlterOffsets(ctx, "src", bad); !errors.Is(err, herder.ErrBadRequest) ||
		err.Error() != "The value for the 'position' key in the offset should be a non-negative value" {
		t.Errorf("negative position: %v", err)
	}
	for _, o := range [][]herder.ConnectorOffset{
		nil,
		{{Offset: map[string]any{"position": json.Number("1")}}},
		{{Partition: map[string]any{"filename": map[string]any{}}, Offset: nil}},
	} {
		if _, err := h.AlterOffsets(ctx, "src", o); !errors.Is(err, herder.ErrBadRequest) {
			t.Errorf("alter %+v: %v", o, err)
		}
	}
	// A null offset resets the partition.
	msg, err = h.AlterOffsets(ctx, "src", []herder.ConnectorOffset{{Partition: map[string]any{"filename": "/a"}}})
	if got, _ := h.Offsets(ctx, "src"); err != nil || len(got.Offsets) != 0 {
		t.Errorf("after a null offset: %+v %v %v", got, msg, err)
	}
	must(t, s.PutSourceOffsets(ctx, "src", []connectstore.SourceOffset{{Partition: map[string]any{"filename": "/b"}, Offset: map[string]any{"position": 3}}}, nil))
	msg, err = h.ResetOffsets(ctx, "src")
	if err != nil || msg.Message != "The offsets for this connector have been reset successfully" {
		t.Errorf("reset: %+v %v", msg, err)
	}
	if got, _ := h.Offsets(ctx, "src"); len(got.Offsets) != 0 {
		t.Errorf("after reset: %+v", got)
	}
	if _, err := h.Offsets(ctx, "nope"); !errors.Is(err, herder.ErrNotFound) || err.Error() != "Connector nope not found" {
		t.Errorf("offsets of a missing connector: %v", err)
	}
}

func TestSinkOffsets(t *testing.T) {
	ctx := context.Background()
	h, s := newHerderStore(t)
	if _, err := h.CreateConnector(ctx, "sink", cfg("name", "sink", "connector.class", herdertest.SinkClass, "topics", "a"), connectstore.TargetStopped); err != nil {
		t.Fatal(err)
	}
	must(t, s.PutSinkOffsets(ctx, "sink", []connectstore.SinkOffset{{Topic: "a", Partition: 1, Offset: 5}, {Topic: "a", Partition: 0, Offset: 7}}, nil))
	got, err := h.Offsets(ctx, "sink")
	if err != nil || len(got.Offsets) != 2 {
		t.Fatalf("offsets %+v %v", got, err)
	}
	b, _ := json.Marshal(got)
	if want := `{"offsets":[{"partition":{"kafka_partition":0,"kafka_topic":"a"},"offset":{"kafka_offset":7}},{"partition":{"kafka_partition":1,"kafka_topic":"a"},"offset":{"kafka_offset":5}}]}`; string(b) != want {
		t.Errorf("offsets\n got %s\nwant %s", b, want)
	}

	msg, err := h.AlterOffsets(ctx, "sink", []herder.ConnectorOffset{
		{Partition: map[string]any{"kafka_topic": "a", "kafka_partition": "1"}, Offset: map[string]any{"kafka_offset": "42"}},
		{Partition: map[string]any{"kafka_topic": "a", "kafka_partition": json.Number("0")}},
		{Partition: map[string]any{"kafka_topic": "b", "kafka_partition": json.Number("3")}, Offset: map[string]any{"kafka_offset": json.Number("1")}},
	})
	if err != nil || !strings.HasPrefix(msg.Message, "The Connect framework-managed offsets for this connector have been altered successfully.") {
		t.Fatalf("alter: %+v %v", msg, err)
	}
	stored, _ := s.SinkOffsets(ctx, "sink")
	if len(stored) != 2 || stored[0] != (connectstore.SinkOffset{Topic: "a", Partition: 1, Offset: 42}) || stored[1] != (connectstore.SinkOffset{Topic: "b", Partition: 3, Offset: 1}) {
		t.Errorf("stored %+v", stored)
	}

	before := revision(t, s)
	for _, c := range []struct {
		o   herder.ConnectorOffset
		msg string
	}{
		{herder.ConnectorOffset{}, "The partition for a sink connector offset cannot be null or missing"},
		{herder.ConnectorOffset{Partition: map[string]any{"kafka_topic": "a"}}, "The partition for a sink connector offset must contain the keys 'kafka_topic' and 'kafka_partition'"},
		{herder.ConnectorOffset{Partition: map[string]any{"kafka_topic": nil, "kafka_partition": "0"}}, "Kafka topic names must be valid strings and may not be null"},
		{herder.ConnectorOffset{Partition: map[string]any{"kafka_topic": "a", "kafka_partition": nil}}, "Kafka partitions must be valid numbers and may not be null"},
		{herder.ConnectorOffset{Partition: map[string]any{"kafka_topic": "a", "kafka_partition": "x"}},
			"Failed to parse the following Kafka partition value in the provided offsets: 'x'. Partition values for sink connectors need to be integers."},
		{herder.ConnectorOffset{Partition: map[string]any{"kafka_topic": "a", "kafka_partition": "0"}, Offset: map[string]any{"x": 1}},
			"The offset for a sink connector should either be null or contain the key 'kafka_offset'"},
		{herder.ConnectorOffset{Partition: map[string]any{"kafka_topic": "a", "kafka_partition": "0"}, Offset: map[string]any{"kafka_offset": json.Number("1.5")}},
			"Failed to parse the following Kafka offset value in the provided offsets: '1.5'. Offset values for sink connectors need to be integers."},
	} {
		// The good entry first: a bad one anywhere rejects the whole request.
		good := herder.ConnectorOffset{Partition: map[string]any{"kafka_topic": "z", "kafka_partition": "0"}, Offset: map[string]any{"kafka_offset": "1"}}
		if _, err := h.AlterOffsets(ctx, "sink", []herder.ConnectorOffset{good, c.o}); !errors.Is(err, herder.ErrBadRequest) || err.Error() != c.msg {
			t.Errorf("%+v: %v", c.o, err)
		}
	}
	if revision(t, s) != before {
		t.Error("a refused offsets request wrote to the store")
	}
	msg, err = h.ResetOffsets(ctx, "sink")
	if err != nil || !strings.HasPrefix(msg.Message, "The Connect framework-managed offsets for this connector have been reset successfully.") {
		t.Errorf("reset %+v %v", msg, err)
	}
	if stored, _ := s.SinkOffsets(ctx, "sink"); len(stored) != 0 {
		t.Errorf("after reset %+v", stored)
	}
}

// With the coordinator's owners, a stopped connector's offsets change once
// no task owns its unit (a task's commits are fenced on its owner key),
// even when a task's last status, left behind, still says RUNNING; while a
// task owns its unit, they do not.
func TestOffsetsChangeOnceNoTaskOwnsItsUnit(t *testing.T) {
	ctx := context.Background()
	herdertest.Register()
	s := herdertest.Store(t)
	raw := s.Raw()
	h := herder.New(s, herder.Options{Logger: slog.New(slog.DiscardHandler),
		Owners: func(ctx context.Context, name string) (map[int]coordinator.UnitOwner, int64, error) {
			return coordinator.Owners(ctx, raw, name)
		}})
	if _, err := h.CreateConnector(ctx, "src", cfg("name", "src", "connector.class", herdertest.CheckedClass, "topic", "t"), connectstore.TargetStarted); err != nil {
		t.Fatal(err)
	}
	must(t, h.Stop(ctx, "src"))
	must(t, s.PutTaskStatus(ctx, "src", 0, connectstore.Status{State: "RUNNING", WorkerID: "w"}, nil))
	owner := coordinator.OwnerKey(coordinator.Unit{Connector: "src", Task: 0})
	b, _ := json.Marshal(coordinator.Owner{Worker: "w"})
	_, err := raw.Put(ctx, owner, b)
	must(t, err)
	offs := []herder.ConnectorOffset{{Partition: map[string]any{"filename": "/a"}, Offset: map[string]any{"position": json.Number("7")}}}
	if _, err := h.AlterOffsets(ctx, "src", offs); !errors.Is(err, herder.ErrBadRequest) {
		t.Errorf("alter while task 0 owns its unit: %v", err)
	}
	_, _, err = raw.Delete(ctx, owner)
	must(t, err)
	if _, err := h.AlterOffsets(ctx, "src", offs); err != nil {
		t.Errorf("alter once no task owns its unit, with a RUNNING status left behind: %v", err)
	}
}
