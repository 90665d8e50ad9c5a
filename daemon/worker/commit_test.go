package worker

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/data"
)

// committingClass is a source whose tasks are connect.SourceCommitters:
// each Commit reads the offset the store holds for the task's partition.
const committingClass = "kcd.test.CommittingSource"

func init() {
	connect.Register(connect.Plugin{Class: committingClass, Type: connect.PluginSource, Version: "test",
		New: func() connect.Connector { return &committingSource{} }})
}

var commitHooks sync.Map // hook name → *commitHook

// commitHook records what the task's Commits saw.
type commitHook struct {
	mu       sync.Mutex
	seen     []int64 // per Commit: the stored seq, -1 when none was stored
	errs     []error
	stopped  bool
	afterStp int     // Commits after Stop
	started  []int64 // per connector Start: the stored seq its context read, -1 when none
}

func (h *commitHook) snapshot() (seen []int64, errs []error, stopped bool, after int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int64(nil), h.seen...), append([]error(nil), h.errs...), h.stopped, h.afterStp
}

type committingSource struct{ cfg map[string]string }

func (c *committingSource) Version() string              { return "test" }
func (c *committingSource) ConfigDef() connect.ConfigDef { return nil }
func (c *committingSource) Stop() error                  { return nil }
func (c *committingSource) Start(ctx connect.ConnectorContext, cfg map[string]string) error {
	c.cfg = cfg
	h, ok := commitHooks.Load(cfg["hook"])
	r, readable := ctx.(interface{ OffsetReader() connect.OffsetReader })
	if !ok || !readable {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	off, err := r.OffsetReader().Offset(rctx, commitPart)
	seq := int64(-1)
	if err == nil && off != nil {
		seq, err = strconv.ParseInt(fmt.Sprint(off["seq"]), 10, 64)
	}
	hk := h.(*commitHook)
	hk.mu.Lock()
	defer hk.mu.Unlock()
	hk.started = append(hk.started, seq)
	if err != nil {
		hk.errs = append(hk.errs, err)
	}
	return nil
}
func (c *committingSource) TaskConfigs(int) ([]map[string]string, error) {
	return []map[string]string{maps.Clone(c.cfg)}, nil
}

func (c *committingSource) NewTask() connect.SourceTask { return &committingTask{} }

// committingTask emits records seq 0 … max-1 of one partition, ten per
// Poll, then nothing.
type committingTask struct {
	h     *commitHook
	ctx   connect.SourceTaskContext
	topic string
	max   int64
	next  int64
}

var commitPart = map[string]any{"p": "c"}

func (t *committingTask) Start(ctx connect.SourceTaskContext, cfg map[string]string) error {
	h, _ := commitHooks.Load(cfg["hook"])
	t.h, t.ctx, t.topic = h.(*commitHook), ctx, cfg["topic"]
	t.max, _ = strconv.ParseInt(cfg["max"], 10, 64)
	return nil
}

func (t *committingTask) Poll(ctx context.Context) ([]*connect.SourceRecord, error) {
	if t.next >= t.max {
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		}
		return nil, nil
	}
	var out []*connect.SourceRecord
	for range 10 {
		if t.next >= t.max {
			break
		}
		out = append(out, &connect.SourceRecord{SourcePartition: commitPart, SourceOffset: map[string]any{"seq": t.next},
			Topic: t.topic, ValueSchema: data.StringSchema, Value: strconv.FormatInt(t.next, 10)})
		t.next++
	}
	return out, nil
}

func (t *committingTask) Commit() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	off, err := t.ctx.OffsetReader().Offset(ctx, commitPart)
	seq := int64(-1)
	if err == nil && off != nil {
		seq, err = strconv.ParseInt(fmt.Sprint(off["seq"]), 10, 64)
	}
	t.h.mu.Lock()
	defer t.h.mu.Unlock()
	t.h.seen = append(t.h.seen, seq)
	if err != nil {
		t.h.errs = append(t.h.errs, err)
	}
	if t.h.stopped {
		t.h.afterStp++
	}
	return nil
}

func (t *committingTask) Stop() error {
	t.h.mu.Lock()
	defer t.h.mu.Unlock()
	t.h.stopped = true
	return nil
}

var _ connect.SourceCommitter = (*committingTask)(nil)

func TestWorkerSourceCommit(t *testing.T) {
	t.Parallel()
	for _, eos := range []string{ExactlyOnceEnabled, ExactlyOnceDisabled} {
		t.Run(eos, func(t *testing.T) {
			scenarioSourceCommit(fakeEnv(t), func(c *Config) { c.ExactlyOnceSource = eos })
		})
	}
}

// A SourceCommitter task's Commit (Kafka Connect's SourceTask.commit) is
// called while it runs, after each offset flush that stored offsets (with
// transactions: after their transaction committed), and each call finds
// the offsets in the store already; at a clean stop, the last offsets are
// stored and told before the task's Stop.
func scenarioSourceCommit(e *env, mod func(*Config)) {
	t := e.t
	const max = 500
	topic, name := e.name("commit"), e.name("commit")
	h := &commitHook{}
	commitHooks.Store(name, h)
	e.createTopic(topic, 1)
	e.create(name, map[string]string{"connector.class": committingClass, "hook": name, "topic": topic,
		"max": strconv.Itoa(max), "value.converter": StringConverter})
	w := e.start(mod)

	waitFor(t, 30*time.Second, "a Commit that sees the last offset stored", func() (bool, string) {
		seen, _, _, _ := h.snapshot()
		return len(seen) > 0 && seen[len(seen)-1] == max-1, fmt.Sprintf("Commits saw %v", seen)
	})
	w.stop()
	seen, errs, stopped, after := h.snapshot()
	if len(errs) > 0 {
		t.Fatalf("reading the stored offset in Commit: %v", errs)
	}
	for i, s := range seen {
		if s < 0 {
			t.Fatalf("Commit %d of %v ran before the store held any offset", i, seen)
		}
		if i > 0 && s < seen[i-1] {
			t.Fatalf("Commit %d saw offset %d after %d: %v", i, s, seen[i-1], seen)
		}
	}
	if !stopped {
		t.Fatal("the task was not stopped")
	}
	if after > 0 {
		t.Errorf("%d Commits after Stop; Kafka Connect commits before it stops the task", after)
	}
	if got, _ := e.cs.SourceOffset(context.Background(), name, commitPart); fmt.Sprint(got["seq"]) != strconv.Itoa(max-1) {
		t.Errorf("stored offset %v, want seq %d", got, max-1)
	}
}

// A source connector reads its stored offsets through its context, as
// Kafka Connect's SourceConnectorContext.offsetStorageReader: nothing on
// the first start, the last stored offset after a restart.
func TestWorkerConnectorReadsOffsets(t *testing.T) {
	t.Parallel()
	e := fakeEnv(t)
	const max = 50
	topic, name := e.name("connoff"), e.name("connoff")
	h := &commitHook{}
	commitHooks.Store(name, h)
	e.createTopic(topic, 1)
	e.create(name, map[string]string{"connector.class": committingClass, "hook": name, "topic": topic,
		"max": strconv.Itoa(max), "value.converter": StringConverter})
	w := e.start(nil)
	waitFor(t, 30*time.Second, "the last offset stored", func() (bool, string) {
		seen, _, _, _ := h.snapshot()
		return len(seen) > 0 && seen[len(seen)-1] == max-1, fmt.Sprintf("Commits saw %v", seen)
	})
	w.stop()
	e.start(nil)
	waitFor(t, 30*time.Second, "a second connector start", func() (bool, string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.started) >= 2, fmt.Sprintf("starts read %v", h.started)
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.errs) > 0 {
		t.Fatalf("reading offsets: %v", h.errs)
	}
	if h.started[0] != -1 || h.started[len(h.started)-1] != max-1 {
		t.Fatalf("connector starts read %v, want -1 first (nothing stored) and %d last", h.started, max-1)
	}
}

func TestWorkerSkippedRecordsCommitted(t *testing.T) {
	t.Parallel()
	for _, eos := range []string{ExactlyOnceEnabled, ExactlyOnceDisabled} {
		t.Run(eos, func(t *testing.T) {
			scenarioSkippedCommitted(fakeEnv(t), func(c *Config) { c.ExactlyOnceSource = eos })
		})
	}
}

// With errors.tolerance=all, a record that cannot be converted and one
// Kafka refuses are skipped and committed with empty metadata (Kafka
// Connect's commitRecord(record, null)): a task that keeps its records
// until they are committed, as the Java host does (up to its limit of
// records not yet committed, then it polls no more), never keeps them.
func scenarioSkippedCommitted(e *env, mod func(*Config)) {
	t := e.t
	topic, name := e.name("skipc"), e.name("skipc")
	part := map[string]any{"file": "s"}
	off := func(n int) map[string]any { return map[string]any{"pos": float64(n)} }
	h := &rawSourceHook{recs: []*connect.SourceRecord{
		{SourcePartition: part, SourceOffset: off(0), Topic: topic, Value: []byte("v0")},
		{SourcePartition: part, SourceOffset: off(1), Topic: topic, Value: "not bytes"},
		{SourcePartition: part, SourceOffset: off(2), Topic: topic, Value: make([]byte, 2_000_000)},
		{SourcePartition: part, SourceOffset: off(3), Topic: topic, Value: []byte("v3")},
	}}
	h.commits = make([]connect.RecordMetadata, len(h.recs))
	rawHooks.Store(name, h)
	e.createTopic(topic, 1)
	e.create(name, map[string]string{"connector.class": rawSourceClass, "hook": name, "errors.tolerance": "all",
		"key.converter": noConverter, "value.converter": noConverter})
	e.start(mod)

	waitFor(t, 20*time.Second, "every record committed", func() (bool, string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.order) == len(h.recs), fmt.Sprintf("committed %v", h.order)
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, md := range h.commits {
		if skipped := i == 1 || i == 2; skipped != (md.Topic == "") {
			t.Errorf("record %d committed with %+v; want empty metadata only for the skipped ones (1 and 2)", i, md)
		}
	}
}
