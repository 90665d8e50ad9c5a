package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/data"
)

// Connectors that only the tests use.
const (
	flakyClass  = "kcd.test.FlakySource"
	slowClass   = "kcd.test.SlowSink"
	reconfClass = "kcd.test.ReconfSource"
)

func init() {
	connect.Register(connect.Plugin{Class: flakyClass, Type: connect.PluginSource, Version: "test",
		New: func() connect.Connector { return &testSource{} }})
	connect.Register(connect.Plugin{Class: slowClass, Type: connect.PluginSink, Version: "test",
		New: func() connect.Connector { return &testSink{} }})
	connect.Register(connect.Plugin{Class: reconfClass, Type: connect.PluginSource, Version: "test",
		New: func() connect.Connector { return &testSource{} }})
}

// flaky counts the runs of flaky source tasks; a run fails in Poll while
// failRuns is positive.
var flaky struct {
	failRuns   atomic.Int32
	starts     atomic.Int32
	failStarts atomic.Int32 // connector starts to fail
}

// reconf is how many tasks the ReconfSource connector asks for, and its
// running instance's context.
var reconf struct {
	mu    sync.Mutex
	tasks int
	ctx   connect.ConnectorContext
}

type testSource struct {
	cfg map[string]string
}

func (c *testSource) Version() string              { return "test" }
func (c *testSource) ConfigDef() connect.ConfigDef { return nil }
func (c *testSource) Stop() error                  { return nil }
func (c *testSource) NewTask() connect.SourceTask  { return &flakyTask{} }
func (c *testSource) Start(ctx connect.ConnectorContext, cfg map[string]string) error {
	c.cfg = cfg
	if cfg["fail.start"] == "true" && flaky.failStarts.Add(-1) >= 0 {
		return errors.New("cannot start now")
	}
	if cfg["connector.class"] == reconfClass {
		reconf.mu.Lock()
		reconf.ctx = ctx
		reconf.mu.Unlock()
	}
	return nil
}

func (c *testSource) TaskConfigs(maxTasks int) ([]map[string]string, error) {
	n := 1
	if c.cfg["connector.class"] == reconfClass {
		reconf.mu.Lock()
		n = reconf.tasks
		reconf.mu.Unlock()
	}
	out := make([]map[string]string, n)
	for i := range out {
		out[i] = maps.Clone(c.cfg)
		out[i]["task"] = strconv.Itoa(i)
	}
	return out, nil
}

// flakyTask emits "n" strings slowly, failing if its run is to fail.
type flakyTask struct {
	topic string
	fail  bool
	run   int32
	n     int
}

func (t *flakyTask) Start(_ connect.SourceTaskContext, cfg map[string]string) error {
	t.topic = cfg["topic"]
	t.run = flaky.starts.Add(1)
	t.fail = cfg["connector.class"] == flakyClass && flaky.failRuns.Add(-1) >= 0
	return nil
}

func (t *flakyTask) Poll(ctx context.Context) ([]*connect.SourceRecord, error) {
	if t.fail {
		return nil, fmt.Errorf("boom in run %d", t.run)
	}
	select {
	case <-time.After(10 * time.Millisecond):
	case <-ctx.Done():
		return nil, nil
	}
	t.n++
	return []*connect.SourceRecord{{Topic: t.topic, ValueSchema: data.StringSchema, Value: strconv.Itoa(t.n)}}, nil
}

func (t *flakyTask) Stop() error { return nil }

// testSink counts what it is given, slowly (delay.ms per Put), and can fail
// Put with a RetriableError a few times (retriable.fails).
type testSink struct{ cfg map[string]string }

func (c *testSink) Version() string              { return "test" }
func (c *testSink) ConfigDef() connect.ConfigDef { return nil }
func (c *testSink) Start(_ connect.ConnectorContext, cfg map[string]string) error {
	c.cfg = cfg
	return nil
}
func (c *testSink) Stop() error               { return nil }
func (c *testSink) NewTask() connect.SinkTask { return &slowTask{} }
func (c *testSink) TaskConfigs(n int) ([]map[string]string, error) {
	out := make([]map[string]string, n)
	for i := range out {
		out[i] = maps.Clone(c.cfg)
	}
	return out, nil
}

var sinkPut atomic.Int64

// sinkGates holds, by the name in a task's "gate" setting, a channel that
// Put waits on: closing it lets the task go on.
var sinkGates sync.Map

type slowTask struct {
	delay     time.Duration
	retriable int
	gate      chan struct{}
}

func (t *slowTask) Start(_ connect.SinkTaskContext, cfg map[string]string) error {
	ms, _ := strconv.Atoi(cfg["delay.ms"])
	t.delay = time.Duration(ms) * time.Millisecond
	t.retriable, _ = strconv.Atoi(cfg["retriable.fails"])
	if g, ok := sinkGates.Load(cfg["gate"]); ok {
		t.gate = g.(chan struct{})
	}
	return nil
}
func (t *slowTask) Open([]connect.TopicPartition) error  { return nil }
func (t *slowTask) Close([]connect.TopicPartition) error { return nil }
func (t *slowTask) Put(recs []*connect.SinkRecord) error {
	if t.retriable > 0 && len(recs) > 0 {
		t.retriable--
		return &connect.RetriableError{Err: errors.New("not now")}
	}
	if t.gate != nil {
		<-t.gate
	}
	time.Sleep(t.delay)
	sinkPut.Add(int64(len(recs)))
	return nil
}
func (t *slowTask) Flush(map[connect.TopicPartition]int64) error { return nil }
func (t *slowTask) Stop() error                                  { return nil }
