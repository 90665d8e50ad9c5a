package worker

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connect"
)

// Sinks that check every record they are given against what was produced
// (its key, value and headers follow from its number): the borrowing one
// also checks that its records stay as they were until Put returns, the
// keeping one that records it kept from earlier Puts stay intact.
const (
	borrowClass = "kcd.test.BorrowSink"
	keepClass   = "kcd.test.KeepSink"
)

func init() {
	connect.Register(connect.Plugin{Class: borrowClass, Type: connect.PluginSink, Version: "test",
		New: func() connect.Connector { return &checkSink{borrow: true} }})
	connect.Register(connect.Plugin{Class: keepClass, Type: connect.PluginSink, Version: "test",
		New: func() connect.Connector { return &checkSink{} }})
}

type checkSink struct {
	cfg    map[string]string
	borrow bool
}

func (c *checkSink) Version() string              { return "test" }
func (c *checkSink) ConfigDef() connect.ConfigDef { return nil }
func (c *checkSink) Stop() error                  { return nil }
func (c *checkSink) Start(_ connect.ConnectorContext, cfg map[string]string) error {
	c.cfg = cfg
	return nil
}
func (c *checkSink) TaskConfigs(int) ([]map[string]string, error) {
	return []map[string]string{maps.Clone(c.cfg)}, nil
}
func (c *checkSink) NewTask() connect.SinkTask {
	if c.borrow {
		return &borrowTask{}
	}
	return &keepTask{}
}

// checked is what the checking sinks saw, over all their tasks.
var checked struct {
	mu       sync.Mutex
	seen     map[int]int // record number: times put
	bad      []string
	reused   int // Puts whose first record is where an earlier Put's was
	kept     []*connect.SinkRecord
	keptWant []string
}

// checkRecord returns what is wrong with r, "" if nothing: record i has
// value "v<i>", key "k<i>" when i is even (null else), and i%3 headers
// h0=<i>, h1=<i+1>.
func checkRecord(r *connect.SinkRecord) (i int, bad string) {
	v, ok := r.Value.(string)
	if !ok || !strings.HasPrefix(v, "v") {
		return -1, fmt.Sprintf("%s-%d@%d: value %#v", r.Topic, r.Partition, r.Offset, r.Value)
	}
	i, err := strconv.Atoi(v[1:])
	if err != nil {
		return -1, fmt.Sprintf("value %q", v)
	}
	if want := "k" + v[1:]; i%2 == 0 && r.Key != want {
		return i, fmt.Sprintf("record %d: key %#v, want %q", i, r.Key, want)
	}
	if i%2 == 1 && r.Key != nil {
		return i, fmt.Sprintf("record %d: key %#v, want null", i, r.Key)
	}
	if len(r.Headers) != i%3 {
		return i, fmt.Sprintf("record %d: headers %v, want %d", i, r.Headers, i%3)
	}
	for j, h := range r.Headers {
		if want := strconv.Itoa(i + j); h.Key != "h"+strconv.Itoa(j) || h.Value != want {
			return i, fmt.Sprintf("record %d: header %d is %s=%#v, want %s", i, j, h.Key, h.Value, want)
		}
	}
	return i, ""
}

func noteBad(s string) {
	checked.mu.Lock()
	defer checked.mu.Unlock()
	if len(checked.bad) < 20 {
		checked.bad = append(checked.bad, s)
	}
}

type checkTask struct{ last *connect.SinkRecord }

func (t *checkTask) Start(connect.SinkTaskContext, map[string]string) error { return nil }
func (t *checkTask) Open([]connect.TopicPartition) error                    { return nil }
func (t *checkTask) Close([]connect.TopicPartition) error                   { return nil }
func (t *checkTask) Flush(map[connect.TopicPartition]int64) error           { return nil }
func (t *checkTask) Stop() error                                            { return nil }

// check checks the records of one Put and counts them.
func (t *checkTask) check(records []*connect.SinkRecord) {
	checked.mu.Lock()
	if len(records) > 0 && records[0] == t.last {
		checked.reused++
	}
	checked.mu.Unlock()
	if len(records) > 0 {
		t.last = records[0]
	}
	for _, r := range records {
		i, bad := checkRecord(r)
		if bad != "" {
			noteBad(bad)
			continue
		}
		checked.mu.Lock()
		checked.seen[i]++
		checked.mu.Unlock()
	}
}

// borrowTask keeps nothing after Put; within Put it waits a little and
// checks the records again: the runtime must not touch them meanwhile.
type borrowTask struct{ checkTask }

func (t *borrowTask) BorrowedSinkRecords() {}

func (t *borrowTask) Put(records []*connect.SinkRecord) error {
	t.check(records)
	before := make([]string, len(records))
	for i, r := range records {
		before[i] = fmt.Sprint(*r)
	}
	time.Sleep(time.Millisecond) // a slow write: the next fetch arrives meanwhile
	for i, r := range records {
		if after := fmt.Sprint(*r); after != before[i] {
			noteBad(fmt.Sprintf("a record changed during Put: %s, then %s", before[i], after))
		}
	}
	return nil
}

// keepTask keeps every record it is given, as Kafka Connect lets a task
// do, and checks them all again at the end.
type keepTask struct{ checkTask }

func (t *keepTask) Put(records []*connect.SinkRecord) error {
	t.check(records)
	checked.mu.Lock()
	defer checked.mu.Unlock()
	for _, r := range records {
		checked.kept = append(checked.kept, r)
		checked.keptWant = append(checked.keptWant, fmt.Sprint(*r))
	}
	return nil
}

func TestWorkerBorrowedSinkRecords(t *testing.T) { scenarioSinkRecords(fakeEnv(t), borrowClass) }
func TestWorkerKeptSinkRecords(t *testing.T)     { scenarioSinkRecords(fakeEnv(t), keepClass) }
func TestIntegrationBorrowedSinkRecords(t *testing.T) {
	scenarioSinkRecords(kafkaEnv(t), borrowClass)
}

// A sink task gets every record once and as produced, in batches of
// varying sizes over records of varying shapes (keys, no keys, zero to two
// headers), so that a reused slot that kept anything of the record it held
// before shows; a borrowing task gets its records in reused memory.
func scenarioSinkRecords(e *env, class string) {
	t := e.t
	const n = 3000
	checked.mu.Lock()
	checked.seen, checked.bad, checked.reused, checked.kept, checked.keptWant = map[int]int{}, nil, 0, nil, nil
	checked.mu.Unlock()
	topic, sink := e.name("borrow"), e.name("borrow")
	e.createTopic(topic, 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		r := &kgo.Record{Value: []byte("v" + strconv.Itoa(i))}
		if i%2 == 0 {
			r.Key = []byte("k" + strconv.Itoa(i))
		}
		for j := range i % 3 {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: "h" + strconv.Itoa(j), Value: []byte(strconv.Itoa(i + j))})
		}
		cl.Produce(context.Background(), r, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.create(sink, map[string]string{"connector.class": class, "topics": topic,
		"key.converter": StringConverter, "value.converter": StringConverter})
	// Batches of at most 7 records, so that slots take records of every shape.
	e.start(func(c *Config) { c.Limits.SinkMaxBatch = 7 })
	waitFor(t, 60*time.Second, "every record put", func() (bool, string) {
		checked.mu.Lock()
		defer checked.mu.Unlock()
		return len(checked.seen) >= n || len(checked.bad) > 0, fmt.Sprintf("%d records", len(checked.seen))
	})
	checked.mu.Lock()
	defer checked.mu.Unlock()
	for _, b := range checked.bad {
		t.Error(b)
	}
	for i, c := range checked.seen {
		if c != 1 {
			t.Errorf("record %d put %d times", i, c)
		}
	}
	for i, r := range checked.kept {
		if got := fmt.Sprint(*r); got != checked.keptWant[i] {
			t.Fatalf("a kept record changed: %s, was %s", got, checked.keptWant[i])
		}
	}
	if class == borrowClass && checked.reused == 0 {
		t.Error("no Put got its records in the memory of an earlier one")
	}
	if class == keepClass && checked.reused != 0 {
		t.Errorf("%d Puts got records in the memory of an earlier one, kept by the task", checked.reused)
	}
}
