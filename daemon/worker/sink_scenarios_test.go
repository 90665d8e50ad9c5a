package worker

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connectstore"
)

func TestWorkerSinkOffsetsInGroup(t *testing.T) { t.Parallel(); scenarioSinkOffsetsInGroup(fakeEnv(t)) }
func TestIntegrationSinkOffsetsInGroup(t *testing.T) {
	t.Parallel()
	scenarioSinkOffsetsInGroup(kafkaEnv(t))
}

func TestWorkerSlowSinkBounded(t *testing.T)      { scenarioSlowSink(fakeEnv(t)) }
func TestIntegrationSlowSinkBounded(t *testing.T) { scenarioSlowSink(kafkaEnv(t)) }

// After a commit, the sink offsets in the store and in the connector's
// consumer group agree (the group has no members: kcd assigns partitions
// itself).
func scenarioSinkOffsetsInGroup(e *env) {
	t := e.t
	const n = 600
	topic, src, sink := e.name("grp"), e.name("gen"), e.name("sink")
	out := filepath.Join(t.TempDir(), "out.txt")
	e.createTopic(topic, 3)
	str := map[string]string{"key.converter": StringConverter, "value.converter": StringConverter}
	srcCfg := map[string]string{"connector.class": "Datagen", "topic": topic, "max.records": fmt.Sprint(n), "key": "sequence"}
	sinkCfg := map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": topic, "tasks.max": "2"}
	for k, v := range str {
		srcCfg[k], sinkCfg[k] = v, v
	}
	e.create(src, srcCfg)
	e.create(sink, sinkCfg)
	e.start(nil)
	waitFor(t, 60*time.Second, "all records in the sink file", func() (bool, string) {
		got := readLines(t, out)
		return len(got) >= n, fmt.Sprintf("%d lines", len(got))
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// A sink commits the offset after the last record it took, as Kafka
	// Connect does: before the commit marker of a transaction that ends
	// the partition.
	want := map[int32]int64{}
	for _, r := range e.consumeN(topic, n, 0) {
		want[r.Partition] = max(want[r.Partition], r.Offset+1)
	}
	var stored map[int32]int64
	waitFor(t, 30*time.Second, "stored sink offsets at the end of every partition", func() (bool, string) {
		offs, err := e.cs.SinkOffsets(context.Background(), sink)
		if err != nil {
			return false, err.Error()
		}
		stored = map[int32]int64{}
		for _, o := range offs {
			stored[o.Partition] = o.Offset
		}
		return fmt.Sprint(stored) == fmt.Sprint(want), fmt.Sprintf("stored %v, want %v", stored, want)
	})
	group := "connect-" + sink
	waitFor(t, 10*time.Second, "the consumer group's offsets equal the stored ones", func() (bool, string) {
		resp, err := adm.FetchOffsets(context.Background(), group)
		if err != nil {
			return false, err.Error()
		}
		got := map[int32]int64{}
		resp.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic && o.Err == nil {
				got[o.Partition] = o.At
			}
		})
		return fmt.Sprint(got) == fmt.Sprint(stored), fmt.Sprintf("group %v store %v", got, stored)
	})
	if got := readLines(t, out); len(got) != n {
		t.Errorf("sink file has %d lines, want %d", len(got), n)
	}
}

// A slow sink holds at most one batch and the consumer's bounded fetch
// buffer; a RetriableError from Put is retried without failing the task.
func scenarioSlowSink(e *env) {
	t := e.t
	const n, size = 3000, 1000
	topic, sink := e.name("slow"), e.name("slow")
	e.createTopic(topic, 2)
	const batch = 16 << 10
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(batch),
		// Fetch limits count compressed bytes: uncompressed data keeps the bound exact.
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		cl.Produce(context.Background(), &kgo.Record{Value: []byte(fmt.Sprintf("%0*d", size, i))}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	sinkPut.Store(0)
	lim := Limits{SinkFetchMaxBytes: 64 << 10, SinkFetchMaxPartitionBytes: 32 << 10, SinkMaxConcurrentFetches: 1, SinkMaxBatch: 50}
	e.create(sink, map[string]string{"connector.class": slowClass, "topics": topic, "delay.ms": "5", "retriable.fails": "3",
		"key.converter": ByteArrayConverter, "value.converter": ByteArrayConverter})
	w := e.start(func(c *Config) { c.Limits = lim })
	waitFor(t, 60*time.Second, "every record put", func() (bool, string) {
		return sinkPut.Load() >= n, fmt.Sprint(sinkPut.Load())
	})
	ts, ok := w.Stats().Task(sink, 0)
	if !ok {
		t.Fatal("no stats")
	}
	t.Logf("slow sink: peak batch %d, peak fetch buffer %d bytes", ts.PeakBatch, ts.PeakBufferedFetchBytes)
	if ts.PeakBatch > int64(lim.SinkMaxBatch) {
		t.Errorf("a Put got %d records, limit %d", ts.PeakBatch, lim.SinkMaxBatch)
	}
	// One fetch in flight or buffered, of at most FetchMaxBytes; a broker
	// exceeds it by up to a batch (it always returns a first whole batch).
	if bound := int64(lim.SinkMaxConcurrentFetches) * (int64(lim.SinkFetchMaxBytes) + batch); ts.PeakBufferedFetchBytes > bound {
		t.Errorf("fetch buffer reached %d bytes, bound %d", ts.PeakBufferedFetchBytes, bound)
	}
	if st := e.waitState(sink, 0, connectstore.StateRunning); st.Restarts != 0 {
		t.Errorf("retriable errors restarted the task: %+v", st)
	}
	if sinkPut.Load() != n {
		t.Errorf("put %d records, want %d", sinkPut.Load(), n)
	}
}

func TestWorkerSinkFollowsNewTopics(t *testing.T) {
	t.Parallel()
	scenarioSinkFollowsNewTopics(fakeEnv(t))
}
func TestIntegrationSinkFollowsNewTopics(t *testing.T) {
	t.Parallel()
	scenarioSinkFollowsNewTopics(kafkaEnv(t))
}

// A sink on topics.regex picks up a topic created while it runs. The new
// topic sorts first, so the old partitions move between the two tasks:
// each is committed by its old owner before the new one takes it, and
// every record reaches the file exactly once.
func scenarioSinkFollowsNewTopics(e *env) {
	t := e.t
	prefix := e.name("re")
	first, second := prefix+"-b", prefix+"-a" // second sorts before first
	e.createTopic(first, 2)
	out := filepath.Join(t.TempDir(), "out.txt")
	sink := e.name("sink")
	e.create(sink, map[string]string{"connector.class": "FileStreamSink", "file": out, "topics.regex": prefix + "-.*", "tasks.max": "2",
		"key.converter": StringConverter, "value.converter": StringConverter})
	w := e.start(nil)
	// A short metadata age: the topic created below is produced to at once.
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var want []string
	produce := func(topic string, from, n int) {
		for i := from; i < from+n; i++ {
			v := fmt.Sprintf("%s %d", topic, i)
			want = append(want, v)
			// Keys spread the records over the partitions.
			cl.Produce(context.Background(), &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: []byte(v)}, nil)
		}
		if err := cl.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	produce(first, 0, 200)
	waitFor(t, 30*time.Second, "the first topic in the file", func() (bool, string) {
		n := len(readLines(t, out))
		return n >= 200, fmt.Sprint(n)
	})
	before := map[int][]connect.TopicPartition{}
	for id := range 2 {
		before[id] = w.assignment(sink, id)
	}
	e.createTopic(second, 1)
	produce(second, 0, 100)
	produce(first, 200, 100)
	waitFor(t, 30*time.Second, "all records in the file", func() (bool, string) {
		n := len(readLines(t, out))
		return n >= len(want), fmt.Sprint(n)
	})
	time.Sleep(300 * time.Millisecond)
	got := readLines(t, out)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("file has %d lines, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
	after := map[int][]connect.TopicPartition{}
	for id := range 2 {
		after[id] = w.assignment(sink, id)
	}
	t.Logf("assignment before %v, after %v", before, after)
	if fmt.Sprint(after[0]) != fmt.Sprintf("[{%s 0} {%s 1}]", second, first) || fmt.Sprint(after[1]) != fmt.Sprintf("[{%s 0}]", first) {
		t.Errorf("assignment after the new topic: %v", after)
	}
}

// assignment returns a sink task's partitions, as its supervisor last
// handed them out.
func (w *Worker) assignment(name string, id int) []connect.TopicPartition {
	for _, ts := range w.Stats().Tasks {
		if ts.ID == (TaskID{name, id}) {
			return ts.Partitions
		}
	}
	return nil
}

func TestWorkerErrorTolerance(t *testing.T)      { t.Parallel(); scenarioErrorTolerance(fakeEnv(t)) }
func TestIntegrationErrorTolerance(t *testing.T) { t.Parallel(); scenarioErrorTolerance(kafkaEnv(t)) }

// Records the value converter cannot read: errors.tolerance=all skips them
// and sends them to the dead letter queue with their context; the default
// (none) fails the task with a clear trace.
func scenarioErrorTolerance(e *env) {
	t := e.t
	topic, dlq := e.name("tol"), e.name("dlq")
	e.createTopic(topic, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var good []string
	for i := range 30 {
		v := fmt.Sprintf(`{"schema":{"type":"string","optional":false},"payload":"ok %d"}`, i)
		if i%10 == 3 {
			v = fmt.Sprintf("not json %d", i)
		} else {
			good = append(good, fmt.Sprintf("ok %d", i))
		}
		cl.Produce(context.Background(), &kgo.Record{Value: []byte(v)}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.txt")
	tolerant, strict := e.name("tolerant"), e.name("strict")
	e.create(tolerant, map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": topic,
		"errors.tolerance": "all", "errors.log.enable": "true", "errors.deadletterqueue.topic.name": dlq,
		"errors.deadletterqueue.topic.replication.factor": "-1", "errors.deadletterqueue.context.headers.enable": "true"})
	e.create(strict, map[string]string{"connector.class": "FileStreamSink", "file": filepath.Join(t.TempDir(), "x"), "topics": topic})
	w := e.start(nil)

	waitFor(t, 30*time.Second, "the good records in the file", func() (bool, string) {
		got := readLines(t, out)
		return slices.Equal(got, good), fmt.Sprint(got)
	})
	dead := e.consumeN(dlq, 3, 300*time.Millisecond)
	for i, r := range dead {
		// Kafka Connect 4.3's DeadLetterQueueReporter: these headers, in
		// this order, after the record's own.
		var keys []string
		hs := map[string]string{}
		for _, h := range r.Headers {
			keys = append(keys, h.Key)
			hs[h.Key] = string(h.Value)
		}
		p := "__connect.errors."
		wantKeys := []string{p + "topic", p + "partition", p + "offset", p + "connector.name", p + "task.id", p + "stage",
			p + "class.name", p + "exception.class.name", p + "exception.message", p + "exception.stacktrace"}
		if !slices.Equal(keys, wantKeys) {
			t.Errorf("dead letter %d: headers %q, want %q", i, keys, wantKeys)
		}
		want := map[string]string{
			p + "topic": topic, p + "partition": "0", p + "offset": fmt.Sprint(10*i + 3),
			p + "connector.name": tolerant, p + "task.id": "0", p + "stage": "VALUE_CONVERTER",
			p + "class.name":           "org.apache.kafka.connect.json.JsonConverter",
			p + "exception.class.name": "org.apache.kafka.connect.errors.DataException",
		}
		for k, v := range want {
			if hs[k] != v {
				t.Errorf("dead letter %d: %s = %q, want %q", i, k, hs[k], v)
			}
		}
		if !strings.HasPrefix(hs[p+"exception.message"], "Converting byte[] to Kafka Connect data failed due to serialization error") ||
			!strings.HasPrefix(hs[p+"exception.stacktrace"], "org.apache.kafka.connect.errors.DataException: ") {
			t.Errorf("dead letter %d: message %q, stack trace %q", i, hs[p+"exception.message"], hs[p+"exception.stacktrace"])
		}
		if string(r.Value) != fmt.Sprintf("not json %d", 10*i+3) {
			t.Errorf("dead letter %d: value %q", i, r.Value)
		}
	}
	if len(dead) != 3 {
		t.Errorf("%d dead letters, want 3", len(dead))
	}
	// The tolerant task keeps running, and its error metrics count the
	// three records.
	e.waitState(tolerant, 0, connectstore.StateRunning)
	waitFor(t, 10*time.Second, "the error counters", func() (bool, string) {
		ts, ok := w.Stats().Task(tolerant, 0)
		want := ErrorStats{Failures: 3, Errors: 3, Logged: 3, DLQRequests: 3, LastErrorUTC: ts.Errors.LastErrorUTC}
		return ok && ts.Errors == want && ts.Skipped == 3 && ts.Errors.LastErrorUTC > 0 && ts.Records == 27 && ts.Read == 30, fmt.Sprintf("%+v", ts)
	})
	st := e.waitState(strict, 0, connectstore.StateFailed)
	if !strings.Contains(st.Trace, "tolerance exceeded") || !strings.Contains(st.Trace, topic+"-0@3") {
		t.Errorf("strict task's trace: %q", st.Trace)
	}
	// The tolerant connector committed past the bad records.
	waitFor(t, 10*time.Second, "offsets past the last record", func() (bool, string) {
		offs, _ := e.cs.SinkOffsets(context.Background(), tolerant)
		return len(offs) == 1 && offs[0].Offset == 30, fmt.Sprint(offs)
	})
}

func TestIntegrationSinkLag(t *testing.T) { scenarioSinkLag(kafkaEnv(t)) }

// A sink task reports how far it is behind its partitions: while Put
// blocks, the records fetched and not yet taken count (more than 0, at most
// what was produced); once Put goes on, the lag falls to 0. The records
// come in a transaction, so a commit marker ends each partition: it is no
// record to put, and no lag either.
func scenarioSinkLag(e *env) {
	t := e.t
	const n = 300
	topic, sink := e.name("lag"), e.name("lag")
	e.createTopic(topic, 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...), kgo.DefaultProduceTopic(topic), kgo.TransactionalID(sink))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	sinkGates.Store(sink, gate)
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	e.create(sink, map[string]string{"connector.class": slowClass, "topics": topic, "gate": sink,
		"key.converter": ByteArrayConverter, "value.converter": ByteArrayConverter})
	w := e.start(func(c *Config) { c.Limits.SinkMaxBatch = 10 })
	t.Cleanup(open) // registered after the worker's stop: runs first, so Put returns
	lag := func() (int64, string) {
		ts, ok := w.Stats().Task(sink, 0)
		if !ok {
			return -1, "no stats for the task"
		}
		return ts.Lag, fmt.Sprintf("lag %d, partitions %v, records %d", ts.Lag, ts.Partitions, ts.Records)
	}
	waitFor(t, 30*time.Second, "a known lag while Put blocks", func() (bool, string) {
		l, s := lag()
		return l >= 0, s
	})
	l, s := lag()
	t.Logf("while Put blocks: %s", s)
	if l <= 0 || l > n {
		t.Fatalf("lag while Put blocks: %s; want 1..%d", s, n)
	}
	open()
	waitFor(t, 30*time.Second, "lag 0 once Put takes everything", func() (bool, string) {
		l, s := lag()
		return l == 0, s
	})
	if ts, _ := w.Stats().Task(sink, 0); ts.Records != n {
		t.Errorf("the task put %d records, want %d", ts.Records, n)
	}
}

func TestWorkerSinkLagAtTheEnd(t *testing.T) { scenarioSinkLagAtTheEnd(fakeEnv(t)) }

// A sink task at the end of its partitions, which then come in no fetch,
// and a task with no partition at all (more tasks than partitions) report
// lag 0, not unknown.
func scenarioSinkLagAtTheEnd(e *env) {
	t := e.t
	topic, sink := e.name("idle"), e.name("idle")
	e.createTopic(topic, 2)
	e.create(sink, map[string]string{"connector.class": slowClass, "topics": topic, "tasks.max": "3",
		"key.converter": ByteArrayConverter, "value.converter": ByteArrayConverter})
	w := e.start(nil)
	waitFor(t, 30*time.Second, "lag 0 for every task", func() (bool, string) {
		st := w.Stats()
		var lags []string
		ok := true
		for id := range 3 {
			ts, found := st.Task(sink, id)
			ok = ok && found && ts.Lag == 0
			lags = append(lags, fmt.Sprintf("task %d (%v): %v lag %d", id, found, ts.Partitions, ts.Lag))
		}
		return ok, strings.Join(lags, "; ")
	})
}
