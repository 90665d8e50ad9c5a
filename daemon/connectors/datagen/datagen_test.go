package datagen

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/data"
)

type fakeCtx struct{ off map[string]any }

func (c fakeCtx) Logger() *slog.Logger                                           { return slog.New(slog.DiscardHandler) }
func (c fakeCtx) OffsetReader() connect.OffsetReader                             { return c }
func (c fakeCtx) Offset(context.Context, map[string]any) (map[string]any, error) { return c.off, nil }

func tasks(t *testing.T, n int, cfg map[string]string) []map[string]string {
	t.Helper()
	c := &Connector{}
	if err := c.Start(nil, cfg); err != nil {
		t.Fatal(err)
	}
	tcs, err := c.TaskConfigs(n)
	if err != nil || len(tcs) != n {
		t.Fatalf("task configs %v %v", tcs, err)
	}
	return tcs
}

func TestCounterNumberedAndBounded(t *testing.T) {
	tcs := tasks(t, 2, map[string]string{TopicConfig: "t", MaxRecordsConfig: "5", BatchSizeConfig: "2", KeyConfig: KeyTask})
	task := &Task{}
	if err := task.Start(fakeCtx{}, tcs[1]); err != nil {
		t.Fatal(err)
	}
	var got []*connect.SourceRecord
	stopped, stop := context.WithCancel(t.Context())
	stop() // the fourth poll, after max.records, waits until the task stops
	for i := range 4 {
		ctx := t.Context()
		if i == 3 {
			ctx = stopped
		}
		recs, err := task.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, recs...)
	}
	if len(got) != 5 {
		t.Fatalf("%d records, want 5", len(got))
	}
	for i, r := range got {
		if r.Value != Counter(1, int64(i)) || r.Key != int32(1) || r.Headers[1].Value != int64(i) || r.Topic != "t" {
			t.Errorf("record %d: %+v", i, r)
		}
		// The last record of each poll (batches of 2) carries the offset.
		last := i%2 == 1 || i == 4
		if last != (r.SourceOffset != nil) || (last && (r.SourceOffset[SeqField] != int64(i) || r.SourcePartition[TaskField] != 1)) {
			t.Errorf("record %d: offset %v partition %v", i, r.SourceOffset, r.SourcePartition)
		}
	}
}

func TestResumeAfterStoredOffset(t *testing.T) {
	tcs := tasks(t, 1, map[string]string{TopicConfig: "t", ShapeConfig: ShapeUser, KeyConfig: KeySequence})
	task := &Task{}
	if err := task.Start(fakeCtx{off: map[string]any{SeqField: json.Number("41")}}, tcs[0]); err != nil {
		t.Fatal(err)
	}
	recs, _ := task.Poll(t.Context())
	r := recs[0]
	st, ok := r.Value.(*data.Struct)
	if !ok || recs[len(recs)-1].SourceOffset[SeqField] != int64(42+len(recs)-1) || st.Get("id") != UserID(0, 42) || r.ValueSchema != UserSchema || r.Key != int64(42) {
		t.Fatalf("first record after resume: %+v", r)
	}
	if st.Get("created").(time.Time).IsZero() || st.Get("name") == "" {
		t.Errorf("user %v", st.Values)
	}
}

func TestBytesShapeAndRate(t *testing.T) {
	tcs := tasks(t, 3, map[string]string{TopicConfig: "t", ShapeConfig: ShapeBytes, RecordSizeConfig: "64", RateConfig: "50"})
	task := &Task{}
	if err := task.Start(fakeCtx{}, tcs[2]); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(200 * time.Millisecond)
	n := 0
	for time.Now().Before(deadline) {
		recs, _ := task.Poll(t.Context())
		for _, r := range recs {
			b := r.Value.([]byte)
			tk, seq, ok := ParsePayload(b)
			// The values of a batch share an array: appending to one
			// must not write into the next.
			if len(b) != 64 || cap(b) != 64 || !ok || tk != 2 || seq != int64(n) {
				t.Fatalf("payload %d: %v %d %d", n, b, tk, seq)
			}
			n++
		}
	}
	// 50/s for 0.2 s: about 10 (the first is immediate).
	if n < 5 || n > 15 {
		t.Errorf("%d records in 200 ms at 50/s", n)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []map[string]string{
		{},
		{TopicConfig: "t", ShapeConfig: "nope"},
		{TopicConfig: "t", RateConfig: "-1"},
		{TopicConfig: "t", KeyConfig: "x"},
	} {
		if err := (&Connector{}).Start(nil, cfg); err == nil {
			t.Errorf("config %v accepted", cfg)
		}
	}
	if p, ok := connect.Lookup("Datagen"); !ok || p.Class != Class {
		t.Error("alias Datagen")
	}
	if _, ok := connect.Lookup("DatagenConnector"); !ok {
		t.Error("alias DatagenConnector")
	}
}

// Records given back are reused by the next Poll, zeroed; what they
// pointed to (values, offsets) is not, since it may still be in flight.
func TestRecycledRecords(t *testing.T) {
	tcs := tasks(t, 1, map[string]string{TopicConfig: "t", ShapeConfig: ShapeBytes, RecordSizeConfig: "20", BatchSizeConfig: "3"})
	task := &Task{}
	if err := task.Start(fakeCtx{}, tcs[0]); err != nil {
		t.Fatal(err)
	}
	first, _ := task.Poll(t.Context())
	r0, v0, off := first[0], first[0].Value.([]byte), first[2].SourceOffset
	task.RecycleRecords(first)
	second, _ := task.Poll(t.Context())
	if second[0] != r0 {
		t.Error("the recycled records were not reused")
	}
	for i, r := range second {
		_, seq, _ := ParsePayload(r.Value.([]byte))
		if seq != int64(3+i) || r.Headers[1].Value != int64(3+i) || (i < 2) != (r.SourceOffset == nil) {
			t.Errorf("record %d of the second poll: seq %d, %+v", i, seq, r)
		}
	}
	if _, seq, _ := ParsePayload(v0); seq != 0 || off[SeqField] != int64(2) {
		t.Errorf("a value or offset of the first poll changed: seq %d, offset %v", seq, off)
	}
	// A slice that is not the last poll's is ignored.
	task.RecycleRecords(slices.Clone(second))
	if third, _ := task.Poll(t.Context()); third[0] == second[0] {
		t.Error("reused records the runtime had not given back")
	}
}
