package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connectstore"
)

// Connectors whose records are bytes already (connect.SerializedRecords),
// as the Java connector host's are; each finds its test's hook by the name
// in its "hook" setting.
const (
	rawSourceClass = "kcd.test.RawSource"
	rawSinkClass   = "kcd.test.RawSink"
	rawPreClass    = "kcd.test.RawPreCommitSink" // its tasks are SinkPreCommitters
)

func init() {
	connect.Register(connect.Plugin{Class: rawSourceClass, Type: connect.PluginSource, Version: "test",
		New: func() connect.Connector { return &rawSource{} }})
	connect.Register(connect.Plugin{Class: rawSinkClass, Type: connect.PluginSink, Version: "test",
		New: func() connect.Connector { return &rawSink{} }})
	connect.Register(connect.Plugin{Class: rawPreClass, Type: connect.PluginSink, Version: "test",
		New: func() connect.Connector { return &rawSink{preCommit: true} }})
}

var rawHooks sync.Map // hook name → *rawSourceHook or *rawSinkHook

// noConverter is a converter class the Go side does not know: a serialized
// connector's tasks run all the same.
const noConverter = "com.example.NoSuchConverter"

type rawConnector struct{ cfg map[string]string }

func (c *rawConnector) Version() string              { return "test" }
func (c *rawConnector) ConfigDef() connect.ConfigDef { return nil }
func (c *rawConnector) Stop() error                  { return nil }
func (c *rawConnector) SerializedRecords()           {}
func (c *rawConnector) Start(_ connect.ConnectorContext, cfg map[string]string) error {
	c.cfg = cfg
	return nil
}
func (c *rawConnector) TaskConfigs(int) ([]map[string]string, error) {
	return []map[string]string{maps.Clone(c.cfg)}, nil
}

type rawSource struct{ rawConnector }

func (c *rawSource) NewTask() connect.SourceTask { return &rawSourceTask{} }

type rawSourceHook struct {
	recs []*connect.SourceRecord // returned by the first Poll

	mu      sync.Mutex
	commits []connect.RecordMetadata // CommitRecord's, by index in recs
	order   []int
}

type rawSourceTask struct {
	h    *rawSourceHook
	sent bool
}

func (t *rawSourceTask) Start(_ connect.SourceTaskContext, cfg map[string]string) error {
	h, _ := rawHooks.Load(cfg["hook"])
	t.h = h.(*rawSourceHook)
	return nil
}

func (t *rawSourceTask) Poll(ctx context.Context) ([]*connect.SourceRecord, error) {
	if !t.sent {
		t.sent = true
		return t.h.recs, nil
	}
	select {
	case <-time.After(50 * time.Millisecond):
	case <-ctx.Done():
	}
	return nil, nil
}

func (t *rawSourceTask) CommitRecord(rec *connect.SourceRecord, md connect.RecordMetadata) error {
	t.h.mu.Lock()
	defer t.h.mu.Unlock()
	i := slices.Index(t.h.recs, rec)
	t.h.commits[i] = md
	t.h.order = append(t.h.order, i)
	return nil
}

func (t *rawSourceTask) Stop() error { return nil }

func TestWorkerSerializedSource(t *testing.T) {
	t.Parallel()
	scenarioSerializedSource(fakeEnv(t), nil)
}
func TestIntegrationSerializedSource(t *testing.T) {
	t.Parallel()
	scenarioSerializedSource(kafkaEnv(t), nil)
}

// Without exactly-once support: the worker's shared producer.
func TestIntegrationSerializedSourceNoTxn(t *testing.T) {
	t.Parallel()
	scenarioSerializedSource(kafkaEnv(t), func(c *Config) { c.ExactlyOnceSource = ExactlyOnceDisabled })
}

// A SerializedRecords source's bytes reach Kafka as they are (null and
// empty kept apart, headers included), with a converter class the Go side
// does not know in its config; Dropped records produce nothing, their
// offsets commit in order, and CommitRecord gets them with empty metadata.
func scenarioSerializedSource(e *env, mod func(*Config)) {
	t := e.t
	topic, name := e.name("rawsrc"), e.name("rawsrc")
	part := map[string]any{"file": "a"}
	off := func(n int) map[string]any { return map[string]any{"pos": float64(n)} }
	h := &rawSourceHook{recs: []*connect.SourceRecord{
		{SourcePartition: part, SourceOffset: off(0), Topic: topic, Key: []byte{0, 1, 2}, Value: []byte("v0"),
			Headers: []connect.Header{{Key: "bin", Value: []byte{0xff, 0}}, {Key: "null", Value: nil}, {Key: "empty", Value: []byte{}}}},
		{SourcePartition: part, SourceOffset: off(1), Topic: topic, Key: nil, Value: []byte{}},
		{SourcePartition: part, SourceOffset: off(2), Dropped: true},
		{SourcePartition: part, SourceOffset: off(3), Topic: topic, Key: []byte{}, Value: nil},
		{SourcePartition: part, SourceOffset: off(4), Topic: topic, Dropped: true},
	}}
	h.commits = make([]connect.RecordMetadata, len(h.recs))
	rawHooks.Store(name, h)
	e.createTopic(topic, 1)
	e.create(name, map[string]string{"connector.class": rawSourceClass, "hook": name,
		"key.converter": noConverter, "value.converter": noConverter, "header.converter": noConverter})
	e.start(mod)

	got := e.consumeN(topic, 3, 500*time.Millisecond)
	if len(got) != 3 {
		t.Fatalf("%d records in Kafka, want 3 (the dropped ones produce nothing)", len(got))
	}
	type kv struct {
		k, v []byte
	}
	want := []kv{{[]byte{0, 1, 2}, []byte("v0")}, {nil, []byte{}}, {[]byte{}, nil}}
	for i, r := range got {
		if !sameBytes(r.Key, want[i].k) || !sameBytes(r.Value, want[i].v) {
			t.Errorf("record %d: key %#v value %#v, want %#v %#v", i, r.Key, r.Value, want[i].k, want[i].v)
		}
	}
	hs := got[0].Headers
	if len(hs) != 3 || hs[0].Key != "bin" || !sameBytes(hs[0].Value, []byte{0xff, 0}) ||
		hs[1].Key != "null" || hs[1].Value != nil || hs[2].Key != "empty" || !sameBytes(hs[2].Value, []byte{}) {
		t.Errorf("headers: %#v", hs)
	}
	waitFor(t, 10*time.Second, "the last (dropped) record's offset stored", func() (bool, string) {
		o, err := e.cs.SourceOffset(context.Background(), name, part)
		return err == nil && fmt.Sprint(o) == fmt.Sprint(off(4)), fmt.Sprint(o, err)
	})
	waitFor(t, 10*time.Second, "every record committed", func() (bool, string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.order) == len(h.recs), fmt.Sprint(h.order)
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, md := range h.commits {
		if h.recs[i].Dropped != (md == connect.RecordMetadata{}) || (!h.recs[i].Dropped && md.Topic != topic) {
			t.Errorf("record %d (dropped %v) committed with %+v", i, h.recs[i].Dropped, md)
		}
	}
}

// sameBytes compares bytes keeping null (nil) and empty apart.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

type rawSink struct {
	rawConnector
	preCommit bool
}

func (c *rawSink) NewTask() connect.SinkTask {
	t := &rawSinkTask{}
	if c.preCommit {
		return &rawPreCommitTask{t}
	}
	return t
}

// rawSinkHook sees what a raw sink task is given and lets the test drive
// its context.
type rawSinkHook struct {
	mu         sync.Mutex
	ctx        connect.SinkTaskContext
	got        []*connect.SinkRecord
	flushes    int
	preCommits []map[connect.TopicPartition]int64
	// put, when set, runs in Put after the records are noted.
	put func(h *rawSinkHook, recs []*connect.SinkRecord) error
	// open, when set, runs in Open.
	open func(h *rawSinkHook, parts []connect.TopicPartition)
	// preCommit chooses what PreCommit returns.
	preCommit func(map[connect.TopicPartition]int64) map[connect.TopicPartition]int64
}

func (h *rawSinkHook) control() connect.SinkTaskControl {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ctx.(connect.SinkTaskControl)
}

// offsets returns the offsets delivered of a partition, in order.
func (h *rawSinkHook) offsets(p int32) []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int64
	for _, r := range h.got {
		if r.Partition == p {
			out = append(out, r.Offset)
		}
	}
	return out
}

type rawSinkTask struct{ h *rawSinkHook }

func (t *rawSinkTask) Start(ctx connect.SinkTaskContext, cfg map[string]string) error {
	h, _ := rawHooks.Load(cfg["hook"])
	t.h = h.(*rawSinkHook)
	t.h.mu.Lock()
	t.h.ctx = ctx
	t.h.mu.Unlock()
	return nil
}
func (t *rawSinkTask) Open(parts []connect.TopicPartition) error {
	if t.h.open != nil {
		t.h.open(t.h, parts)
	}
	return nil
}
func (t *rawSinkTask) Close([]connect.TopicPartition) error { return nil }
func (t *rawSinkTask) Put(recs []*connect.SinkRecord) error {
	t.h.mu.Lock()
	for _, r := range recs {
		c := *r
		t.h.got = append(t.h.got, &c)
	}
	put := t.h.put
	t.h.mu.Unlock()
	if put != nil {
		return put(t.h, recs)
	}
	return nil
}
func (t *rawSinkTask) Flush(map[connect.TopicPartition]int64) error {
	t.h.mu.Lock()
	t.h.flushes++
	t.h.mu.Unlock()
	return nil
}
func (t *rawSinkTask) Stop() error { return nil }

type rawPreCommitTask struct{ *rawSinkTask }

func (t *rawPreCommitTask) PreCommit(offs map[connect.TopicPartition]int64) (map[connect.TopicPartition]int64, error) {
	t.h.mu.Lock()
	defer t.h.mu.Unlock()
	t.h.preCommits = append(t.h.preCommits, maps.Clone(offs))
	return t.h.preCommit(offs), nil
}

// produceTo produces records to the given partitions of topic and waits
// for Kafka to have them.
func (e *env) produceTo(recs ...*kgo.Record) {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		e.t.Fatal(err)
	}
}

// groupOffsets returns the committed offsets of a connector's consumer
// group by partition of topic.
func (e *env) groupOffsets(name, topic string) map[int32]int64 {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).FetchOffsets(context.Background(), "connect-"+name)
	if err != nil {
		return nil
	}
	out := map[int32]int64{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.Topic == topic && o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out
}

// startRawSink creates a raw sink connector on topic with the hook and
// extra settings, and waits until its task owns parts partitions.
func (e *env) startRawSink(topic string, parts int, h *rawSinkHook, extra map[string]string) (name string) {
	name = e.name("rawsink")
	rawHooks.Store(name, h)
	cfg := map[string]string{"connector.class": rawSinkClass, "hook": name, "topics": topic,
		"key.converter": noConverter, "value.converter": noConverter, "header.converter": noConverter}
	maps.Copy(cfg, extra)
	e.create(name, cfg)
	e.start(nil)
	waitFor(e.t, 30*time.Second, "the sink task owns its partitions", func() (bool, string) {
		h.mu.Lock()
		ctx := h.ctx
		h.mu.Unlock()
		if ctx == nil {
			return false, "not started"
		}
		a := ctx.Assignment()
		return len(a) == parts, fmt.Sprint(a)
	})
	return name
}

func TestWorkerSerializedSink(t *testing.T)      { t.Parallel(); scenarioSerializedSink(fakeEnv(t)) }
func TestIntegrationSerializedSink(t *testing.T) { t.Parallel(); scenarioSerializedSink(kafkaEnv(t)) }

// A SerializedRecords sink gets the raw bytes of the Kafka records, null
// (an untyped nil) and empty kept apart, header values too, no schemas.
func scenarioSerializedSink(e *env) {
	t := e.t
	topic := e.name("rawsink")
	e.createTopic(topic, 1)
	e.produceTo(
		&kgo.Record{Topic: topic, Key: []byte{0, 0xfe}, Value: []byte("v"), Headers: []kgo.RecordHeader{
			{Key: "bin", Value: []byte{1, 2}}, {Key: "null"}, {Key: "empty", Value: []byte{}}}},
		&kgo.Record{Topic: topic, Key: nil, Value: []byte{}},
		&kgo.Record{Topic: topic, Key: []byte{}, Value: nil},
	)
	h := &rawSinkHook{}
	e.startRawSink(topic, 1, h, nil)
	waitFor(t, 30*time.Second, "3 records delivered", func() (bool, string) {
		n := len(h.offsets(0))
		return n >= 3, fmt.Sprint(n)
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.got) != 3 {
		t.Fatalf("%d records delivered, want 3", len(h.got))
	}
	same := func(v any, want []byte) bool {
		if want == nil {
			return v == nil
		}
		b, ok := v.([]byte)
		return ok && sameBytes(b, want)
	}
	want := [][2][]byte{{{0, 0xfe}, []byte("v")}, {nil, {}}, {{}, nil}}
	for i, r := range h.got {
		if !same(r.Key, want[i][0]) || !same(r.Value, want[i][1]) || r.KeySchema != nil || r.ValueSchema != nil {
			t.Errorf("record %d: key %#v value %#v (schemas %v %v)", i, r.Key, r.Value, r.KeySchema, r.ValueSchema)
		}
	}
	hs := h.got[0].Headers
	if len(hs) != 3 || hs[0].Key != "bin" || !same(hs[0].Value, []byte{1, 2}) || hs[1].Key != "null" || hs[1].Value != nil ||
		hs[2].Key != "empty" || !same(hs[2].Value, []byte{}) || hs[0].Schema != nil {
		t.Errorf("headers: %#v", hs)
	}
}

func TestWorkerSinkResetPause(t *testing.T)      { t.Parallel(); scenarioSinkResetPause(fakeEnv(t)) }
func TestIntegrationSinkResetPause(t *testing.T) { t.Parallel(); scenarioSinkResetPause(kafkaEnv(t)) }

// ResetOffsets rewinds a partition and the committed offsets follow the
// new position; Pause stops the delivery of one partition while the other
// flows; Resume restarts it; RequestCommit commits without waiting for the
// flush interval.
func scenarioSinkResetPause(e *env) {
	t := e.t
	topic := e.name("ctl")
	e.createTopic(topic, 2)
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: fmt.Appendf(nil, "r%d", i)})
	}
	e.produceTo(recs...)
	// A reset from Open applies before the first fetch.
	h := &rawSinkHook{open: func(h *rawSinkHook, parts []connect.TopicPartition) {
		for _, tp := range parts {
			if tp.Partition == 1 {
				h.ctx.(connect.SinkTaskControl).ResetOffsets(map[connect.TopicPartition]int64{tp: 2})
			}
		}
	}}
	// A long flush interval: only RequestCommit commits soon.
	name := e.startRawSink(topic, 2, h, map[string]string{"offset.flush.interval.ms": "600000"})
	waitFor(t, 30*time.Second, "5 records of partition 0, 3 of 1 (reset to 2 in Open)", func() (bool, string) {
		a, b := h.offsets(0), h.offsets(1)
		return len(a) == 5 && len(b) == 3, fmt.Sprint(a, b)
	})
	if b := h.offsets(1); !slices.Equal(b, []int64{2, 3, 4}) {
		t.Fatalf("partition 1 delivered %v, want [2 3 4] after the reset in Open", b)
	}
	ctl := h.control()
	ctl.RequestCommit()
	waitFor(t, 30*time.Second, "committed at the end of both partitions", func() (bool, string) {
		g := e.groupOffsets(name, topic)
		return g[0] == 5 && g[1] == 5, fmt.Sprint(g)
	})

	// Rewind partition 0 and pause it: nothing is read again, but the
	// committed offset follows the new position.
	p0 := connect.TopicPartition{Topic: topic, Partition: 0}
	ctl.ResetOffsets(map[connect.TopicPartition]int64{p0: 2})
	ctl.Pause(p0)
	ctl.RequestCommit()
	waitFor(t, 30*time.Second, "partition 0 committed at its new position", func() (bool, string) {
		g := e.groupOffsets(name, topic)
		return g[0] == 2 && g[1] == 5, fmt.Sprint(g)
	})
	// Partition 1 flows while 0 is paused.
	var more []*kgo.Record
	for i := range 4 {
		more = append(more, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: fmt.Appendf(nil, "m%d", i)})
	}
	e.produceTo(more...)
	waitFor(t, 30*time.Second, "partition 1's new records", func() (bool, string) {
		b := h.offsets(1)
		return len(b) == 5, fmt.Sprint(b)
	})
	if a := h.offsets(0); len(a) != 5 {
		t.Fatalf("partition 0 delivered while paused: %v", a)
	}
	// Resumed, partition 0 is read again from offset 2, up to its end.
	ctl.Resume(p0)
	waitFor(t, 30*time.Second, "partition 0 read again from 2", func() (bool, string) {
		a := h.offsets(0)
		return slices.Equal(a, []int64{0, 1, 2, 3, 4, 2, 3, 4, 5, 6}), fmt.Sprint(a)
	})
	ctl.RequestCommit()
	waitFor(t, 30*time.Second, "committed at the new ends", func() (bool, string) {
		g := e.groupOffsets(name, topic)
		return g[0] == 7 && g[1] == 7, fmt.Sprint(g)
	})
}

func TestWorkerSinkPreCommit(t *testing.T)      { t.Parallel(); scenarioSinkPreCommit(fakeEnv(t)) }
func TestIntegrationSinkPreCommit(t *testing.T) { t.Parallel(); scenarioSinkPreCommit(kafkaEnv(t)) }

// A SinkPreCommitter is asked instead of Flush, with the next offsets of
// its partitions, and only what it returns is committed.
func scenarioSinkPreCommit(e *env) {
	t := e.t
	topic := e.name("pre")
	e.createTopic(topic, 2)
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: fmt.Appendf(nil, "r%d", i)})
	}
	e.produceTo(recs...)
	h := &rawSinkHook{preCommit: func(offs map[connect.TopicPartition]int64) map[connect.TopicPartition]int64 {
		out := map[connect.TopicPartition]int64{}
		for tp, o := range offs {
			if tp.Partition == 0 {
				out[tp] = o - 1 // all but the last record
			}
		}
		return out
	}}
	name := e.startRawSink(topic, 2, h, map[string]string{"connector.class": rawPreClass})
	waitFor(t, 30*time.Second, "partition 0 committed as PreCommit said", func() (bool, string) {
		g := e.groupOffsets(name, topic)
		return g[0] == 4, fmt.Sprint(g)
	})
	if g := e.groupOffsets(name, topic); len(g) != 1 {
		t.Errorf("group offsets %v: only partition 0 is to be committed", g)
	}
	offs, err := e.cs.SinkOffsets(context.Background(), name)
	if err != nil || len(offs) != 1 || offs[0].Partition != 0 || offs[0].Offset != 4 {
		t.Errorf("stored sink offsets %v (%v): want only partition 0 at 4", offs, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.flushes != 0 {
		t.Errorf("Flush called %d times on a SinkPreCommitter", h.flushes)
	}
	last := h.preCommits[len(h.preCommits)-1]
	if last[connect.TopicPartition{Topic: topic, Partition: 0}] != 5 || last[connect.TopicPartition{Topic: topic, Partition: 1}] != 5 {
		t.Errorf("PreCommit given %v, want both partitions at 5", last)
	}
}

func TestWorkerSinkReportErrant(t *testing.T) { t.Parallel(); scenarioSinkReportErrant(fakeEnv(t)) }
func TestIntegrationSinkReportErrant(t *testing.T) {
	t.Parallel()
	scenarioSinkReportErrant(kafkaEnv(t))
}

// ReportErrant sends the original record to the dead letter queue with
// Kafka Connect's headers (stage TASK_PUT) and the task goes on; under
// errors.tolerance=none it fails the task.
func scenarioSinkReportErrant(e *env) {
	t := e.t
	topic, dlq := e.name("errant"), e.name("dlq")
	e.createTopic(topic, 1)
	e.produceTo(
		&kgo.Record{Topic: topic, Value: []byte("ok 0")},
		&kgo.Record{Topic: topic, Key: []byte{7}, Value: []byte("bad 1"), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte{9}}}},
		&kgo.Record{Topic: topic, Value: []byte("ok 2")},
	)
	report := func(h *rawSinkHook, recs []*connect.SinkRecord) error {
		for _, r := range recs {
			if v, _ := r.Value.([]byte); bytes.HasPrefix(v, []byte("bad")) {
				if err := h.control().ReportErrant(context.Background(), r, errors.New("cannot write "+string(v))); err != nil {
					return err
				}
			}
		}
		return nil
	}
	h := &rawSinkHook{put: report}
	name := e.startRawSink(topic, 1, h, map[string]string{"errors.tolerance": "all",
		"errors.deadletterqueue.topic.name": dlq, "errors.deadletterqueue.topic.replication.factor": "-1",
		"errors.deadletterqueue.context.headers.enable": "true"})
	dead := e.consumeN(dlq, 1, 300*time.Millisecond)
	if len(dead) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dead))
	}
	d := dead[0]
	hs := map[string]string{}
	for _, h := range d.Headers {
		hs[h.Key] = string(h.Value)
	}
	if !sameBytes(d.Key, []byte{7}) || string(d.Value) != "bad 1" || hs["h"] != "\x09" || hs["__connect.errors.stage"] != "TASK_PUT" ||
		hs["__connect.errors.topic"] != topic || hs["__connect.errors.partition"] != "0" || hs["__connect.errors.offset"] != "1" ||
		hs["__connect.errors.connector.name"] != name || hs["__connect.errors.exception.message"] != "cannot write bad 1" {
		t.Errorf("dead letter: key %#v value %q headers %v", d.Key, d.Value, hs)
	}
	// The task goes on: a later record is delivered and the offsets pass
	// the errant one.
	e.produceTo(&kgo.Record{Topic: topic, Value: []byte("ok 3")})
	waitFor(t, 30*time.Second, "the next record delivered and committed", func() (bool, string) {
		g := e.groupOffsets(name, topic)
		return len(h.offsets(0)) == 4 && g[0] == 4, fmt.Sprint(h.offsets(0), g)
	})
	if st := e.waitState(name, 0, connectstore.StateRunning); st.State != connectstore.StateRunning {
		t.Errorf("task state %s", st.State)
	}

	// errors.tolerance=none: the report fails the task.
	strictHook := &rawSinkHook{put: report}
	strict := e.name("strict")
	rawHooks.Store(strict, strictHook)
	e.create(strict, map[string]string{"connector.class": rawSinkClass, "hook": strict, "topics": topic})
	st := e.waitState(strict, 0, connectstore.StateFailed)
	if !bytes.Contains([]byte(st.Trace), []byte("tolerance exceeded")) || !bytes.Contains([]byte(st.Trace), []byte(topic+"-0@1")) {
		t.Errorf("strict task's trace: %q", st.Trace)
	}
}

func TestWorkerSinkTimeout(t *testing.T) { t.Parallel(); scenarioSinkTimeout(fakeEnv(t)) }
func TestIntegrationSinkTimeout(t *testing.T) {
	t.Parallel()
	scenarioSinkTimeout(kafkaEnv(t))
}

// A Put that failed with a RetriableError is retried after the task's
// Timeout, not the runtime's (much shorter) retry backoff.
func scenarioSinkTimeout(e *env) {
	t := e.t
	topic := e.name("timeout")
	e.createTopic(topic, 1)
	e.produceTo(&kgo.Record{Topic: topic, Value: []byte("v")})
	const timeout = 1500 * time.Millisecond // the test's retry backoff is at most 200 ms
	var calls []time.Time
	h := &rawSinkHook{put: func(h *rawSinkHook, _ []*connect.SinkRecord) error {
		h.mu.Lock()
		calls = append(calls, time.Now())
		n := len(calls)
		h.mu.Unlock()
		if n == 1 {
			h.control().Timeout(timeout)
			return &connect.RetriableError{Err: errors.New("not now")}
		}
		return nil
	}}
	e.startRawSink(topic, 1, h, nil)
	waitFor(t, 30*time.Second, "the Put retried", func() (bool, string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(calls) >= 2, fmt.Sprint(len(calls))
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if gap := calls[1].Sub(calls[0]); gap < timeout {
		t.Errorf("Put retried after %v, want at least the task's timeout %v", gap, timeout)
	}
}
