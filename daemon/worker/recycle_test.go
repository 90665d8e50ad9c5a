package worker

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/data"
)

// A source task that scribbles over the records the worker gives back:
// if the worker still read a record after RecycleRecords (its topic,
// value, headers or offset), what reaches Kafka is wrong.
const scribbleClass = "kcd.test.ScribbleSource"

func init() {
	connect.Register(connect.Plugin{Class: scribbleClass, Type: connect.PluginSource, Version: "test",
		New: func() connect.Connector { return &scribbleSource{} }})
}

type scribbleSource struct{ cfg map[string]string }

func (c *scribbleSource) Version() string              { return "test" }
func (c *scribbleSource) ConfigDef() connect.ConfigDef { return nil }
func (c *scribbleSource) Stop() error                  { return nil }
func (c *scribbleSource) Start(_ connect.ConnectorContext, cfg map[string]string) error {
	c.cfg = cfg
	return nil
}
func (c *scribbleSource) TaskConfigs(int) ([]map[string]string, error) {
	return []map[string]string{c.cfg}, nil
}
func (c *scribbleSource) NewTask() connect.SourceTask { return &scribbleTask{} }

// scribbleRecycled counts the records given back, over all tasks.
var scribbleRecycled atomic.Int64

type scribbleTask struct {
	topic string
	next  int64
	spare []*connect.SourceRecord // given back: reused by the next Poll
}

const scribbleRecords = 3000

func (t *scribbleTask) Start(_ connect.SourceTaskContext, cfg map[string]string) error {
	t.topic = cfg["topic"]
	return nil
}

func (t *scribbleTask) Poll(ctx context.Context) ([]*connect.SourceRecord, error) {
	if t.next >= scribbleRecords {
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
		return nil, nil
	}
	recs := t.spare
	t.spare = nil
	if recs == nil {
		recs = make([]*connect.SourceRecord, 100)
		for i := range recs {
			recs[i] = &connect.SourceRecord{Headers: make([]connect.Header, 1)}
		}
	}
	for _, r := range recs {
		s := strconv.FormatInt(t.next, 10)
		r.Topic, r.ValueSchema, r.Value = t.topic, data.StringSchema, "v-"+s
		r.SourcePartition, r.SourceOffset = map[string]any{"p": 0}, map[string]any{"n": t.next}
		r.Headers[0] = connect.Header{Key: "n", Schema: data.Int64Schema, Value: t.next}
		t.next++
	}
	return recs, nil
}

func (t *scribbleTask) RecycleRecords(recs []*connect.SourceRecord) {
	for _, r := range recs {
		r.Topic, r.Value = "scribbled", "scribbled"
		r.Headers[0].Value = int64(-1)
		r.SourceOffset = map[string]any{"n": int64(-1)}
	}
	scribbleRecycled.Add(int64(len(recs)))
	t.spare = recs
}

func (t *scribbleTask) Stop() error { return nil }

func TestWorkerRecycledRecordsNotReadAgain(t *testing.T) {
	scenarioRecycled(fakeEnv(t))
}

func TestIntegrationRecycledRecordsNotReadAgain(t *testing.T) {
	scenarioRecycled(kafkaEnv(t))
}

func scenarioRecycled(e *env) {
	t := e.t
	topic, name := e.name("recycled"), e.name("recycled")
	e.createTopic(topic, 1)
	before := scribbleRecycled.Load()
	e.create(name, map[string]string{"connector.class": scribbleClass, "topic": topic, "value.converter": StringConverter})
	e.start(nil)
	recs := e.consumeN(topic, scribbleRecords, 200*time.Millisecond)
	if len(recs) != scribbleRecords {
		t.Fatalf("%d records, want %d", len(recs), scribbleRecords)
	}
	for i, r := range recs {
		want := strconv.Itoa(i)
		if string(r.Value) != "v-"+want || len(r.Headers) != 1 || string(r.Headers[0].Value) != want {
			t.Fatalf("record %d: value %q headers %v", i, r.Value, r.Headers)
		}
	}
	if n := scribbleRecycled.Load() - before; n < scribbleRecords-100 {
		t.Errorf("%d records given back, want all but the last batch's at least", n)
	}
	waitFor(t, 10*time.Second, "the last offset stored", func() (bool, string) {
		offs, err := e.cs.SourceOffsets(context.Background(), name)
		if err != nil || len(offs) != 1 {
			return false, fmt.Sprint(offs, err)
		}
		return fmt.Sprint(offs[0].Offset["n"]) == strconv.Itoa(scribbleRecords-1), fmt.Sprint(offs[0].Offset)
	})
}
