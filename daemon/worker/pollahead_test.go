package worker

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/data"
	"github.com/kcd-project/kcd/daemon/connectstore"
)

// A source task whose Polls the test lets return, one at a time: it knows
// when a Poll began (and at which record) and decides when it returns and
// with how many records, so that a batch can be made to arrive while the
// task is paused, cut off or stopping. Record n has value "v-n" and offset
// {"n": n}; a task starts after the stored offset.
const gatedClass = "kcd.test.GatedSource"

func init() {
	connect.Register(connect.Plugin{Class: gatedClass, Type: connect.PluginSource, Version: "test",
		New: func() connect.Connector { return &gatedSource{} }})
}

type gatedSource struct{ cfg map[string]string }

func (c *gatedSource) Version() string              { return "test" }
func (c *gatedSource) ConfigDef() connect.ConfigDef { return nil }
func (c *gatedSource) Stop() error                  { return nil }
func (c *gatedSource) Start(_ connect.ConnectorContext, cfg map[string]string) error {
	c.cfg = cfg
	return nil
}
func (c *gatedSource) TaskConfigs(int) ([]map[string]string, error) {
	return []map[string]string{c.cfg}, nil
}
func (c *gatedSource) NewTask() connect.SourceTask { return &gatedTask{} }

// gate is one test's control of its gated tasks.
type gate struct {
	began   chan int64 // a Poll began: the number of its first record
	release chan int   // the Poll under way returns that many records
	active  atomic.Int32
}

var gates sync.Map // name -> *gate

func newGate(t testing.TB, name string) *gate {
	g := &gate{began: make(chan int64), release: make(chan int)}
	gates.Store(name, g)
	t.Cleanup(func() { gates.Delete(name) })
	return g
}

// poll waits until a Poll began and returns its first record's number.
func (g *gate) poll(t testing.TB) int64 {
	t.Helper()
	select {
	case n := <-g.began:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no Poll began")
		return 0
	}
}

// noPoll fails if a Poll begins within d.
func (g *gate) noPoll(t testing.TB, d time.Duration, why string) {
	t.Helper()
	select {
	case n := <-g.began:
		t.Fatalf("a Poll began at record %d %s", n, why)
	case <-time.After(d):
	}
}

type gatedTask struct {
	g     *gate
	topic string
	next  int64
}

func (t *gatedTask) Start(ctx connect.SourceTaskContext, cfg map[string]string) error {
	g, _ := gates.Load(cfg["gate"])
	t.g, t.topic = g.(*gate), cfg["topic"]
	off, err := ctx.OffsetReader().Offset(context.Background(), map[string]any{"p": "0"})
	if err != nil {
		return err
	}
	if v, ok := off["n"]; ok {
		n, err := toInt(v)
		if err != nil {
			return err
		}
		t.next = n + 1
	}
	return nil
}

func toInt(v any) (int64, error) {
	return strconv.ParseInt(fmt.Sprint(v), 10, 64)
}

func (t *gatedTask) Poll(ctx context.Context) ([]*connect.SourceRecord, error) {
	t.g.active.Add(1)
	defer t.g.active.Add(-1)
	select {
	case t.g.began <- t.next:
	case <-ctx.Done():
		return nil, nil
	}
	var n int
	select {
	case n = <-t.g.release:
	case <-ctx.Done():
		return nil, nil
	}
	recs := make([]*connect.SourceRecord, n)
	for i := range recs {
		recs[i] = &connect.SourceRecord{Topic: t.topic, ValueSchema: data.StringSchema, Value: "v-" + strconv.FormatInt(t.next, 10),
			SourcePartition: map[string]any{"p": "0"}, SourceOffset: map[string]any{"n": t.next}}
		t.next++
	}
	return recs, nil
}

func (t *gatedTask) Stop() error { return nil }

// checkValues fails unless the topic holds exactly records v-0 … v-(n-1),
// in order, once each.
func (e *env) checkValues(topic string, n int) {
	t := e.t
	t.Helper()
	recs := e.consumeN(topic, n, 300*time.Millisecond)
	if len(recs) != n {
		t.Fatalf("%d records in %s, want %d", len(recs), topic, n)
	}
	for i, r := range recs {
		if want := "v-" + strconv.Itoa(i); string(r.Value) != want {
			t.Fatalf("record %d is %q, want %q", i, r.Value, want)
		}
	}
}

// countWithin counts the records of topic it reads within d.
func (e *env) countWithin(topic string, d time.Duration) int {
	return len(e.consume(topic, d, func([]*kgo.Record) bool { return false }))
}

// waitOffset waits until the stored offset of the gated task is n.
func (e *env) waitOffset(name string, n int64) {
	e.t.Helper()
	waitFor(e.t, 10*time.Second, fmt.Sprintf("offset %d stored", n), func() (bool, string) {
		off, err := e.cs.SourceOffset(context.Background(), name, map[string]any{"p": "0"})
		return err == nil && fmt.Sprint(off["n"]) == strconv.FormatInt(n, 10), fmt.Sprint(off, err)
	})
}

// noEOS disables exactly-once source support, whose tasks poll serially.
func noEOS(c *Config) { c.ExactlyOnceSource = ExactlyOnceDisabled }

// A batch whose Poll returns while the task is paused (the Poll polled
// ahead while the last batch was sent) is produced only after the resume,
// in order, with no offset skipped; while it waits it counts in the bytes
// in flight, and the task polls nothing more. A stop while a Poll is under
// way ends the Poll and the run at once, and leaves nothing in the budget.
func TestWorkerSourcePollAheadPauseAndStop(t *testing.T) {
	t.Parallel()
	e := fakeEnv(t)
	ctx := context.Background()
	topic, name := e.name("ahead"), e.name("ahead")
	e.createTopic(topic, 1)
	g := newGate(t, name)
	e.create(name, map[string]string{"connector.class": gatedClass, "topic": topic, "gate": name, "value.converter": StringConverter})
	w := e.start(noEOS)

	if n := g.poll(t); n != 0 {
		t.Fatalf("first Poll at record %d", n)
	}
	g.release <- 100
	// The next Poll begins (ahead of the send, or after it).
	if n := g.poll(t); n != 100 {
		t.Fatalf("second Poll at record %d, want 100", n)
	}
	e.checkValues(topic, 100)
	e.waitOffset(name, 99)

	if err := e.cs.SetTarget(ctx, name, connectstore.TargetPaused); err != nil {
		t.Fatal(err)
	}
	e.waitState(name, 0, connectstore.StatePaused)
	g.release <- 100 // the batch arrives while the task is paused
	g.noPoll(t, 500*time.Millisecond, "while paused")
	if n := e.countWithin(topic, 500*time.Millisecond); n != 100 {
		t.Fatalf("%d records while paused, want the 100 before the pause", n)
	}
	waitFor(t, 5*time.Second, "the paused batch counted in flight", func() (bool, string) {
		s := w.Stats()
		return s.InFlightBytes >= 100*recordOverhead, fmt.Sprint(s.InFlightBytes, " bytes in flight")
	})
	if s := w.Stats(); s.InFlightRecords != 0 {
		t.Fatalf("%d records in flight while paused", s.InFlightRecords)
	}

	if err := e.cs.SetTarget(ctx, name, connectstore.TargetStarted); err != nil {
		t.Fatal(err)
	}
	if n := g.poll(t); n != 200 {
		t.Fatalf("Poll after the resume at record %d, want 200", n)
	}
	e.checkValues(topic, 200)
	e.waitOffset(name, 199)

	// A Poll is under way: the worker stops promptly, the Poll returns,
	// and nothing stays counted in flight.
	start := time.Now()
	w.stop()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the worker took %v to stop while a Poll was under way", d)
	}
	if n := g.active.Load(); n != 0 {
		t.Errorf("%d Polls still under way after the worker stopped", n)
	}
	if s := w.Stats(); s.InFlightBytes != 0 || s.InFlightRecords != 0 {
		t.Errorf("%d records, %d bytes in flight after the stop", s.InFlightRecords, s.InFlightBytes)
	}
	e.checkValues(topic, 200)
}

// A batch whose Poll returns once the worker is cut off from the task
// (its session lapsed; the supervisor not told yet) is not produced. When
// the task comes back under a new claim, the run gives way to a new one,
// which polls again from the last stored offset: every record reaches
// Kafka once, none is skipped.
func TestWorkerSourcePollAheadFencedByClaim(t *testing.T) {
	t.Parallel()
	e := fakeEnv(t)
	topic, name := e.name("cutoff"), e.name("cutoff")
	e.createTopic(topic, 1)
	g := newGate(t, name)
	owner := "kcd-test/owner/" + name
	a := newClaims(true, owner)
	a.set(e.claimTask(owner))
	e.create(name, map[string]string{"connector.class": gatedClass, "topic": topic, "gate": name, "value.converter": StringConverter})
	e.start(func(c *Config) { noEOS(c); c.Assignment = a })

	g.poll(t)
	g.release <- 100
	if n := g.poll(t); n != 100 {
		t.Fatalf("second Poll at record %d, want 100", n)
	}
	e.checkValues(topic, 100)
	e.waitOffset(name, 99)

	a.rev.Store(0) // cut off, the supervisor not told
	g.release <- 100
	g.noPoll(t, 500*time.Millisecond, "while cut off")
	if n := e.countWithin(topic, 500*time.Millisecond); n != 100 {
		t.Fatalf("%d records while cut off, want the 100 before", n)
	}

	a.set(e.claimTask(owner)) // back, under a new claim
	if n := g.poll(t); n != 100 {
		t.Fatalf("the new run polls at record %d, want 100 (after the stored offset)", n)
	}
	g.release <- 100
	e.checkValues(topic, 200)
	e.waitOffset(name, 199)
}

// The source scenarios that run with exactly-once support elsewhere (on
// the serial path), again without it: on the poll-ahead path. Alone, as
// some use the test plugins' global counters.
var pollAheadScenarios = []struct {
	name string
	run  func(*env)
}{
	{"FileRoundTrip", scenarioFileRoundTrip},
	{"HaltAndResume", scenarioHaltAndResume},
	{"Recycled", scenarioRecycled},
	{"Lifecycle", scenarioLifecycle},
	{"Failures", scenarioFailures},
	{"ProduceErrors", scenarioProduceErrors},
	{"SourceTransforms", scenarioSourceTransforms},
	{"RetryTimeout", scenarioRetryTimeout},
}

func TestWorkerSourceScenariosPollAhead(t *testing.T) {
	for _, sc := range pollAheadScenarios {
		t.Run(sc.name, func(t *testing.T) {
			e := fakeEnv(t)
			e.mod = noEOS
			sc.run(e)
		})
	}
}

func TestIntegrationSourceScenariosPollAhead(t *testing.T) {
	for _, sc := range pollAheadScenarios {
		t.Run(sc.name, func(t *testing.T) {
			e := kafkaEnv(t)
			e.mod = noEOS
			sc.run(e)
		})
	}
}
