package worker

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connectstore"
)

// Exactly-once source support: the broker fences a stale run of a source
// task, transaction boundaries commit, sinks read committed records.

func TestWorkerZombieSourceTaskFenced(t *testing.T) {
	t.Parallel()
	scenarioZombieFenced(fakeEnv(t))
}
func TestIntegrationZombieSourceTaskFenced(t *testing.T) {
	t.Parallel()
	scenarioZombieFenced(kafkaEnv(t))
}

func TestWorkerTransactionBoundaries(t *testing.T) {
	t.Parallel()
	scenarioTransactionBoundaries(fakeEnv(t))
}
func TestIntegrationTransactionBoundaries(t *testing.T) {
	t.Parallel()
	scenarioTransactionBoundaries(kafkaEnv(t))
}

func TestWorkerIntervalTransactionStoresOffsets(t *testing.T) {
	t.Parallel()
	scenarioIntervalStoresOffsets(fakeEnv(t))
}
func TestIntegrationIntervalTransactionStoresOffsets(t *testing.T) {
	t.Parallel()
	scenarioIntervalStoresOffsets(kafkaEnv(t))
}

func TestIntegrationSinkReadsCommitted(t *testing.T) {
	t.Parallel()
	scenarioSinkReadsCommitted(kafkaEnv(t))
}

// believes is an Assignment a test sets: whether this worker runs the
// connector instance, and whether it believes it owns every task.
type believes struct {
	conn bool
	task atomic.Bool
}

func newBelieves(conn, task bool) *believes {
	b := &believes{conn: conn}
	b.task.Store(task)
	return b
}

func (b *believes) Connector(string) bool                { return b.conn }
func (b *believes) Task(string, int) bool                { return b.task.Load() }
func (b *believes) Changed() <-chan struct{}             { return nil }
func (b *believes) Fence(string, int) connectstore.Fence { return nil }

// producers notes the producer ids and epochs a worker's records were
// written with (a kgo hook).
type producers struct {
	mu   sync.Mutex
	seen map[[2]int64]bool
}

func newProducers() *producers { return &producers{seen: map[[2]int64]bool{}} }

func (p *producers) OnProduceRecordUnbuffered(r *kgo.Record, err error) {
	if err == nil {
		p.mu.Lock()
		p.seen[[2]int64{r.ProducerID, int64(r.ProducerEpoch)}] = true
		p.mu.Unlock()
	}
}

func (p *producers) wrote(r *kgo.Record) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[[2]int64{r.ProducerID, int64(r.ProducerEpoch)}]
}

func (w *Worker) runs(name string, task int) bool {
	return slices.Contains(w.Running(), TaskID{name, task})
}

// A worker that wrongly believes it still owns a source task (its lease
// misjudged) keeps running it while a second worker starts the same task:
// the second run's producer fences the first at the broker. The first
// run's next produce or commit fails, it stops quietly (no FAILED status,
// the connector stays RUNNING), and from the second run's first record
// on, a read_committed consumer sees records of the second run only. The
// fenced worker does not start the task again once it no longer owns it.
// With transaction.boundary=interval the first run is nearly always in
// the middle of a transaction when it is fenced: the broker aborts it.
func scenarioZombieFenced(e *env) {
	for _, boundary := range []map[string]string{
		{"transaction.boundary": "poll"},
		{"transaction.boundary": "interval", "transaction.boundary.interval.ms": "500"},
	} {
		e.t.(*testing.T).Run(boundary["transaction.boundary"], func(t *testing.T) {
			e := &env{t: t, cs: openStore(t), seeds: e.seeds, fake: e.fake}
			t.Cleanup(e.deleteTopics)
			zombieFenced(e, boundary)
		})
	}
}

func zombieFenced(e *env, boundary map[string]string) {
	t := e.t
	topic, src := e.name("zombie"), e.name("zombie")
	e.createTopic(topic, 1)
	cfg := map[string]string{"connector.class": "Datagen", "topic": topic, "rate.per.task": "2000", "batch.size": "20",
		"value.converter": StringConverter}
	for k, v := range boundary {
		cfg[k] = v
	}
	e.create(src, cfg)
	zombie := newBelieves(true, true)
	p1, p2 := newProducers(), newProducers()
	w1 := e.start(func(c *Config) {
		c.WorkerID, c.Assignment = "w1:8083", zombie
		c.KafkaOpts = []kgo.Opt{kgo.WithHooks(p1)}
		// Long enough that the test sees the fenced run stay stopped.
		c.RestartBackoff = Backoff{Initial: 3 * time.Second, Max: 3 * time.Second}
	})
	e.waitState(src, 0, connectstore.StateRunning)
	waitFor(t, 20*time.Second, "the first worker producing", func() (bool, string) {
		n := e.sumRecords(w1, src)
		return n >= 200, fmt.Sprint(n, " records")
	})

	w2 := e.start(func(c *Config) {
		c.WorkerID, c.Assignment = "w2:8083", newBelieves(false, true)
		c.KafkaOpts = []kgo.Opt{kgo.WithHooks(p2)}
	})
	waitFor(t, 20*time.Second, "the second worker producing", func() (bool, string) {
		n := e.sumRecords(w2, src)
		return n >= 200, fmt.Sprint(n, " records")
	})
	// Not fatal: without fencing the records below show what it wrote.
	for deadline := time.Now().Add(10 * time.Second); w1.runs(src, 0); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("the first worker still runs the task 10s after the second started it (%d records)", e.sumRecords(w1, src))
			break
		}
	}
	// It learns that the task is not its own before its retry is due.
	zombie.task.Store(false)
	stoppedAt := time.Now()

	// Let the second run produce on for a while, then read everything
	// committed so far.
	base := e.sumRecords(w2, src)
	waitFor(t, 20*time.Second, "the second worker producing on", func() (bool, string) {
		n := e.sumRecords(w2, src)
		return n >= base+400 && time.Since(stoppedAt) > 4*time.Second, fmt.Sprint(n, " records")
	})
	if w1.runs(src, 0) && !t.Failed() {
		t.Error("the fenced worker started the task again although it no longer owns it")
	}
	// Fencing is no failure: the connector and the task run, reported by
	// the worker that runs them.
	st, err := e.cs.Statuses(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if st.Connector == nil || st.Connector.State != connectstore.StateRunning {
		t.Errorf("connector status %+v, want RUNNING", st.Connector)
	}
	if ts := st.Tasks[0]; ts.State != connectstore.StateRunning || ts.WorkerID != "w2:8083" {
		t.Errorf("task status %+v, want RUNNING on w2:8083", ts)
	}

	// Nothing more is written: read what is in the topic.
	w2.stop()
	w1.stop()
	recs := e.consumeToEnd(topic, kgo.ReadCommitted())
	first := -1
	for i, r := range recs {
		switch {
		case p2.wrote(r):
			if first < 0 {
				first = i
			}
		case !p1.wrote(r):
			t.Fatalf("offset %d: producer %d epoch %d is neither worker's", r.Offset, r.ProducerID, r.ProducerEpoch)
		case first >= 0:
			t.Fatalf("offset %d (%s) was written by the first worker (producer %d epoch %d) after the second began at offset %d: the first still wrote",
				r.Offset, r.Value, r.ProducerID, r.ProducerEpoch, recs[first].Offset)
		}
	}
	if first < 0 {
		t.Fatalf("%d committed records, none of the second worker", len(recs))
	}
	all := e.consumeToEnd(topic, kgo.ReadUncommitted())
	aborted := len(all) - len(recs)
	t.Logf("%d committed records, the second run's from offset %d; %d records aborted", len(recs), recs[first].Offset, aborted)
	if len(recs) > 0 && !recs[0].Attrs.IsTransactional() {
		t.Fatal("records are not transactional")
	}
}

// consumeToEnd reads topic from the start at an isolation level until no
// record came for a second; control records are skipped.
func (e *env) consumeToEnd(topic string, level kgo.IsolationLevel) []*kgo.Record {
	return e.consumeRaw(topic, level, false)
}

// consumeRaw reads topic from the start until no record came for a
// second, keeping control records if asked.
func (e *env) consumeRaw(topic string, level kgo.IsolationLevel, control bool) []*kgo.Record {
	e.t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(e.seeds...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond)}
	if control {
		opts = append(opts, kgo.KeepControlRecords())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	quiet := time.Now()
	for time.Since(quiet) < time.Second && ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := cl.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			quiet = time.Now()
		})
	}
	return out
}

// transactions splits a partition's records, control records kept, into
// the data records of each committed transaction, and counts aborts.
func transactions(recs []*kgo.Record) (committed [][]*kgo.Record, aborts int) {
	var cur []*kgo.Record
	for _, r := range recs {
		if !r.Attrs.IsControl() {
			cur = append(cur, r)
			continue
		}
		// A control record's key: version (int16), type (int16: 0 abort, 1 commit).
		if len(r.Key) >= 4 && r.Key[3] == 1 {
			committed = append(committed, cur)
		} else {
			aborts++
		}
		cur = nil
	}
	return committed, aborts
}

// transaction.boundary=poll commits every Poll batch; interval commits
// once the interval passed, several batches at once. Every record becomes
// visible to a read_committed consumer once, in order, and the source
// offset stored is the last record's.
func scenarioTransactionBoundaries(e *env) {
	t := e.t
	const n = 1500
	for _, c := range []struct {
		boundary string
		extra    map[string]string
		// committed transactions of data records, at least and at most
		min, max int
	}{
		// Polls of at most 50 records: at least n/50 transactions.
		{"poll", nil, n / 50, n},
		// 1,000 records/s in polls of at most 50, interval 1 s: about two
		// transactions, each of many polls (ten allow for a slow machine;
		// one per poll would be 30 or more).
		{"interval", map[string]string{"transaction.boundary": "interval", "transaction.boundary.interval.ms": "1000", "rate.per.task": "1000"}, 1, 10},
	} {
		t.(*testing.T).Run(c.boundary, func(t *testing.T) {
			e := &env{t: t, cs: e.cs, seeds: e.seeds, fake: e.fake}
			t.Cleanup(e.deleteTopics)
			topic, src := e.name("txb"), e.name("txb")
			e.createTopic(topic, 1)
			cfg := map[string]string{"connector.class": "Datagen", "topic": topic, "max.records": fmt.Sprint(n), "batch.size": "50",
				"value.converter": StringConverter}
			for k, v := range c.extra {
				cfg[k] = v
			}
			e.create(src, cfg)
			w := e.start(nil)
			recs := e.consumeN(topic, n, 300*time.Millisecond)
			for i, r := range recs {
				if want := fmt.Sprintf("task-0-%d", i); string(r.Value) != want || !r.Attrs.IsTransactional() {
					t.Fatalf("record %d: %q transactional=%v, want %q in a transaction", i, r.Value, r.Attrs.IsTransactional(), want)
				}
			}
			if len(recs) != n {
				t.Fatalf("%d committed records, want %d", len(recs), n)
			}
			waitFor(t, 10*time.Second, "the last offset stored", func() (bool, string) {
				off, err := e.cs.SourceOffset(context.Background(), src, map[string]any{"task": 0})
				return err == nil && fmt.Sprint(off["seq"]) == fmt.Sprint(n-1), fmt.Sprintf("%v %v", off, err)
			})
			w.stop()
			txns, aborts := transactions(e.consumeRaw(topic, kgo.ReadUncommitted(), true))
			got := 0
			for _, tx := range txns {
				got += len(tx)
			}
			t.Logf("%d records in %d committed transactions, %d aborted", got, len(txns), aborts)
			if got != n || aborts != 0 || len(txns) < c.min || len(txns) > c.max {
				t.Fatalf("%d records in %d committed transactions and %d aborted ones, want %d in %d to %d committed",
					got, len(txns), aborts, n, c.min, c.max)
			}
		})
	}
}

// A sink reads committed records only: the records of an aborted
// transaction (a fenced task's last batch) never reach it. A connector
// may read uncommitted ones with consumer.override.isolation.level.
func scenarioSinkReadsCommitted(e *env) {
	t := e.t
	topic := e.name("rc")
	e.createTopic(topic, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...), kgo.DefaultProduceTopic(topic), kgo.TransactionalID(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	var committed, all []string
	for i, commit := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort, kgo.TryCommit} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for j := range 5 {
			v := fmt.Sprintf("txn %d record %d", i, j)
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			all = append(all, v)
			if commit {
				committed = append(committed, v)
			}
		}
		if err := cl.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	for _, c := range []struct {
		level string
		want  []string
	}{{"", committed}, {"read_uncommitted", all}} {
		out := filepath.Join(dir, "out-"+c.level+".txt")
		sink := e.name("rc")
		cfg := map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": topic, "value.converter": StringConverter}
		if c.level != "" {
			cfg["consumer.override.isolation.level"] = c.level
		}
		e.create(sink, cfg)
		if c.level == "" {
			e.start(nil)
		}
		waitFor(t, 30*time.Second, "the sink at the end of the topic", func() (bool, string) {
			offs, _ := e.cs.SinkOffsets(ctx, sink)
			got := readLines(t, out)
			return len(offs) == 1 && len(got) >= len(c.want), fmt.Sprintf("%d lines, offsets %v", len(got), offs)
		})
		time.Sleep(300 * time.Millisecond) // room for more lines to show
		if got := readLines(t, out); !slices.Equal(got, c.want) {
			t.Fatalf("isolation %q: sink file\n%s\nwant\n%s", c.level, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
}

// With transaction.boundary=interval, the offsets of a committed
// transaction are stored right after it (Kafka Connect commits them in
// it), not at the next offset flush: with a flush interval of a minute a
// running task's offsets are stored within a few transaction intervals
// (they took up to two flush intervals, the first of them stored nothing).
func scenarioIntervalStoresOffsets(e *env) {
	t := e.t
	topic, src := e.name("txi"), e.name("txi")
	e.createTopic(topic, 1)
	e.create(src, map[string]string{"connector.class": "Datagen", "topic": topic, "rate.per.task": "2000", "batch.size": "50",
		"transaction.boundary": "interval", "transaction.boundary.interval.ms": "300", "value.converter": StringConverter})
	w := e.start(func(c *Config) { c.OffsetFlushInterval = time.Minute })
	e.waitState(src, 0, connectstore.StateRunning)
	// Stored offsets follow the running task, one interval behind or so.
	var prev int64 = -1
	for range 3 {
		waitFor(t, 10*time.Second, "newer offsets stored while the task runs", func() (bool, string) {
			off, err := e.cs.SourceOffset(context.Background(), src, map[string]any{"task": 0})
			if err != nil || off == nil {
				return false, fmt.Sprintf("%v %v; %d records produced", off, err, e.sumRecords(w, src))
			}
			seq, err := strconv.ParseInt(fmt.Sprint(off["seq"]), 10, 64)
			if err != nil || seq <= prev {
				return false, fmt.Sprintf("%v %v (before: %d)", off, err, prev)
			}
			prev = seq
			return true, ""
		})
	}
}
