package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connectors/datagen"
	"github.com/kcd-project/kcd/daemon/connectors/file"
	"github.com/kcd-project/kcd/daemon/connectstore"
)

// Each scenario runs against kfake (TestWorker…: fast, under -short) and
// against the real broker of the test environment (TestIntegration…).
// Those that use the test plugins' global counters, or measure time, run
// alone; the others in parallel.

func TestWorkerFileRoundTrip(t *testing.T)      { t.Parallel(); scenarioFileRoundTrip(fakeEnv(t)) }
func TestIntegrationFileRoundTrip(t *testing.T) { t.Parallel(); scenarioFileRoundTrip(kafkaEnv(t)) }

func TestWorkerHaltAndResume(t *testing.T)      { scenarioHaltAndResume(fakeEnv(t)) }
func TestIntegrationHaltAndResume(t *testing.T) { scenarioHaltAndResume(kafkaEnv(t)) }

func TestWorkerDatagenExactlyOnceCount(t *testing.T) { t.Parallel(); scenarioDatagenCount(fakeEnv(t)) }
func TestIntegrationDatagenExactlyOnceCount(t *testing.T) {
	t.Parallel()
	scenarioDatagenCount(kafkaEnv(t))
}

// A FileStream source reads a file into Kafka (JsonConverter, the worker's
// default), a FileStream sink writes it out again: every line arrives once
// and in order, also lines appended while the connectors run.
func scenarioFileRoundTrip(e *env) {
	t := e.t
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	var lines []string
	var content strings.Builder
	for i := range 3000 {
		l := fmt.Sprintf("line %04d ünïcode 😀 %s", i, strings.Repeat("x", i%50))
		lines = append(lines, l)
		content.WriteString(l)
		term := []string{"\n", "\r\n", "\r"}[i%3]
		if i == 2999 {
			term = "\n" // a final \r would wait for the next char, as in Kafka Connect
		}
		content.WriteString(term)
	}
	if err := os.WriteFile(in, []byte(content.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	topic, src, sink := e.name("lines"), e.name("src"), e.name("sink")
	e.create(src, map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": topic,
		"topic.creation.default.partitions": "1", "topic.creation.default.replication.factor": "-1"})
	e.create(sink, map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": topic})
	e.start(nil)

	waitFor(t, 60*time.Second, "all lines in the sink file", func() (bool, string) {
		got := readLines(t, out)
		return len(got) >= len(lines), fmt.Sprintf("%d lines", len(got))
	})
	more := []string{"appended one", "appended two"}
	f, _ := os.OpenFile(in, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(strings.Join(more, "\n") + "\n")
	f.Close()
	lines = append(lines, more...)
	waitFor(t, 30*time.Second, "appended lines in the sink file", func() (bool, string) {
		got := readLines(t, out)
		return len(got) >= len(lines), fmt.Sprintf("%d lines", len(got))
	})
	time.Sleep(500 * time.Millisecond) // room for duplicates to show
	if got := readLines(t, out); !slices.Equal(got, lines) {
		t.Fatalf("sink file differs: %d lines, want %d; first difference at %d", len(got), len(lines), firstDiff(got, lines))
	}
	for _, c := range []string{src, sink} {
		e.waitState(c, -1, connectstore.StateRunning)
		e.waitState(c, 0, connectstore.StateRunning)
	}
	// The stored position is the whole file, in Java chars.
	total := int64(0)
	for _, r := range content.String() + "appended one\nappended two\n" {
		total += map[bool]int64{true: 2, false: 1}[r >= 0x10000]
	}
	waitFor(t, 10*time.Second, "source offset at the end of the file", func() (bool, string) {
		off, err := e.cs.SourceOffset(context.Background(), src, map[string]any{"filename": in})
		return err == nil && off["position"] == json.Number(fmt.Sprint(total)), fmt.Sprintf("%v %v", off, err)
	})
	recs := e.consumeN(topic, len(lines), 0)
	for i, r := range recs[:len(lines)] {
		if got := jsonString(t, r.Value); got != lines[i] || r.Key != nil {
			t.Fatalf("record %d: %q key %q, want %q", i, got, r.Key, lines[i])
		}
	}
}

// The worker is halted mid-stream (no clean stop: no offset commit, as
// under kill -9) and a new one resumes: no line is lost, and the lines
// sent twice are exactly those after the last committed offsets, all
// produced (source) or put (sink) within one commit interval before the
// halt.
func scenarioHaltAndResume(e *env) {
	t := e.t
	const total, flush = 30000, time.Second
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	lines := make([]string, total)
	for i := range lines {
		lines[i] = fmt.Sprintf("event %06d", i)
	}
	// A writer appends the lines over about three seconds, regardless of
	// the workers.
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		defer f.Close()
		for i := 0; i < total; i += 250 {
			for _, l := range lines[i : i+250] {
				f.WriteString(l + "\n")
			}
			time.Sleep(25 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { <-writerDone })

	topic, src, sink := e.name("halt"), e.name("src"), e.name("sink")
	e.createTopic(topic, 1)
	e.create(src, map[string]string{"connector.class": file.SourceClass, "file": in, "topic": topic, "batch.size": "100"})
	e.create(sink, map[string]string{"connector.class": file.SinkClass, "file": out, "topics": topic})
	setFlush := func(c *Config) { c.OffsetFlushInterval = flush }
	w1 := e.start(setFlush)
	var sinkStats *taskStats
	waitFor(t, 30*time.Second, "the sink task", func() (bool, string) {
		sinkStats = w1.taskStats(sink, 0)
		return sinkStats != nil, ""
	})
	samples := sampleRecords(t, sinkStats)

	// Halt in the middle of a commit interval, once both sides committed
	// something and the stream is well under way.
	waitFor(t, 30*time.Second, "commits on both sides", func() (bool, string) {
		so, _ := e.cs.SourceOffsets(context.Background(), src)
		ko, _ := e.cs.SinkOffsets(context.Background(), sink)
		n := len(readLines(t, out))
		return len(so) > 0 && len(ko) > 0 && n > 3000, fmt.Sprintf("source %v sink %v lines %d", so, ko, n)
	})
	time.Sleep(flush / 2)
	haltAt := time.Now()
	w1.halt()
	putAfter := sinkStats.records.Load()
	putBefore, ok := samples.at(haltAt.Add(-flush - 300*time.Millisecond))
	if !ok {
		t.Fatal("no sample of the sink's progress a commit interval before the halt")
	}
	select {
	case <-writerDone:
		t.Fatal("the file was complete before the halt: not mid-stream")
	default:
	}
	srcOff, _ := e.cs.SourceOffset(context.Background(), src, map[string]any{"filename": in})
	pos, _ := srcOff["position"].(json.Number).Int64()
	committedLines := int(pos / int64(len(lines[0])+1))
	sinkOffs, _ := e.cs.SinkOffsets(context.Background(), sink)
	committedSink := sinkOffs[0].Offset
	t.Logf("halted: source committed %d lines, sink committed offset %d, sink put %d", committedLines, committedSink, putAfter)

	e.start(setFlush)
	<-writerDone
	recs := e.consume(topic, 60*time.Second, func(rs []*kgo.Record) bool {
		return len(rs) >= total && jsonString(t, rs[len(rs)-1].Value) == lines[total-1]
	})
	// Kafka holds lines[0:k] then lines[c:], c being the committed count.
	vals := make([]string, len(recs))
	for i, r := range recs {
		vals[i] = jsonString(t, r.Value)
	}
	dups := len(vals) - total
	if dups < 0 || !slices.Equal(vals[:committedLines+dups], lines[:committedLines+dups]) || !slices.Equal(vals[committedLines+dups:], lines[committedLines:]) {
		t.Fatalf("topic is not lines[0:k]+lines[%d:]: %d records, first difference at %d", committedLines, len(vals), firstDiff(vals, lines))
	}
	window := haltAt.Add(-flush - 300*time.Millisecond)
	for i := committedLines; i < committedLines+dups; i++ {
		if recs[i].Timestamp.Before(window) {
			t.Fatalf("line %d was resent but produced at %v, more than one commit interval before the halt at %v", i, recs[i].Timestamp, haltAt)
		}
	}
	t.Logf("source: %d lines sent twice, all produced within %v before the halt", dups, haltAt.Sub(window))

	// The sink file holds vals[0:k] then vals[c:], c being the index of
	// the first record at or after the committed offset (transaction
	// markers take offsets too).
	waitFor(t, 60*time.Second, "all records in the sink file", func() (bool, string) {
		got := readLines(t, out)
		return len(got) >= len(vals) && got[len(got)-1] == lines[total-1], fmt.Sprintf("%d lines", len(got))
	})
	time.Sleep(300 * time.Millisecond)
	got := readLines(t, out)
	sinkDups := len(got) - len(vals)
	c := 0
	for c < len(recs) && recs[c].Offset < committedSink {
		c++
	}
	k := c + sinkDups
	if sinkDups < 0 || !slices.Equal(got[:k], vals[:k]) || !slices.Equal(got[k:], vals[c:]) {
		t.Fatalf("sink file is not records[0:k]+records[%d:] (offset %d on): %d lines for %d records, first difference at %d", c, committedSink, len(got), len(vals), firstDiff(got, vals))
	}
	if limit := putAfter - putBefore; int64(sinkDups) > limit {
		t.Fatalf("sink wrote %d records twice, more than the %d it put in the last commit interval", sinkDups, limit)
	}
	t.Logf("sink: %d records written twice (≤ %d put in the last interval)", sinkDups, putAfter-putBefore)
}

type sample struct {
	at time.Time
	n  int64
}

type samples struct{ ch chan []sample }

// sampleRecords samples a task's record count every 10 ms until the test
// ends.
func sampleRecords(t testing.TB, ts *taskStats) samples {
	s := samples{ch: make(chan []sample, 1)}
	s.ch <- nil
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			l := <-s.ch
			s.ch <- append(l, sample{time.Now(), ts.records.Load()})
			select {
			case <-tick.C:
			case <-done:
				return
			}
		}
	}()
	return s
}

// at returns the count of the last sample taken at or before t.
func (s samples) at(t time.Time) (n int64, ok bool) {
	l := <-s.ch
	s.ch <- l
	for _, x := range l {
		if !x.at.After(t) {
			n, ok = x.n, true
		}
	}
	return n, ok
}

// Datagen with 4 tasks and max.records: exactly 4×N distinct (task, seq)
// records; none more after a clean restart; raising max.records continues
// after the stored offsets without a duplicate.
func scenarioDatagenCount(e *env) {
	t := e.t
	const n, tasks = 2500, 4
	topic, src := e.name("gen"), e.name("gen")
	e.createTopic(topic, 4)
	cfg := map[string]string{"connector.class": "DatagenConnector", "topic": topic, "tasks.max": fmt.Sprint(tasks),
		"max.records": fmt.Sprint(n), "key": "task", "key.converter": StringConverter, "value.converter": StringConverter}
	e.create(src, cfg)
	w := e.start(nil)
	check := func(want int) {
		t.Helper()
		recs := e.consumeN(topic, tasks*want, time.Second)
		seen := map[string]bool{}
		for _, r := range recs {
			var tk, seq string
			for _, h := range r.Headers {
				switch h.Key {
				case datagen.TaskHeader:
					tk = string(h.Value)
				case datagen.SeqHeader:
					seq = string(h.Value)
				}
			}
			id := tk + "/" + seq
			if seen[id] {
				t.Fatalf("duplicate record task %s seq %s", tk, seq)
			}
			seen[id] = true
			if string(r.Value) != "task-"+tk+"-"+seq || string(r.Key) != tk {
				t.Fatalf("record %s: key %q value %q", id, r.Key, r.Value)
			}
		}
		for tk := range tasks {
			for s := range want {
				if !seen[fmt.Sprintf("%d/%d", tk, s)] {
					t.Fatalf("missing task %d seq %d", tk, s)
				}
			}
		}
		if len(recs) != tasks*want {
			t.Fatalf("%d records, want %d", len(recs), tasks*want)
		}
	}
	check(n)
	w.stop() // clean: the last offsets are committed, the tasks UNASSIGNED
	if st, _ := e.cs.Statuses(context.Background(), src); st.Connector.State != connectstore.StateUnassigned || st.Tasks[0].State != connectstore.StateUnassigned {
		t.Errorf("statuses after a clean stop: %+v", st)
	}
	for tk := range tasks {
		off, err := e.cs.SourceOffset(context.Background(), src, map[string]any{"task": tk})
		if err != nil || off["seq"] != json.Number(fmt.Sprint(n-1)) {
			t.Fatalf("task %d offset after a clean stop: %v %v", tk, off, err)
		}
	}
	e.start(nil)
	for tk := range tasks {
		e.waitState(src, tk, connectstore.StateRunning)
	}
	check(n)
	// More records: the tasks restart with the new config and go on.
	cur, rev, _ := e.cs.Config(context.Background(), src)
	cur["max.records"] = fmt.Sprint(2 * n)
	if ok, err := e.cs.UpdateConfig(context.Background(), src, cur, rev); !ok || err != nil {
		t.Fatalf("update: %v %v", ok, err)
	}
	check(2 * n)
}

func TestWorkerProduceErrors(t *testing.T) { t.Parallel(); scenarioProduceErrors(fakeEnv(t)) }

// A record Kafka refuses (larger than a batch may be) fails the task,
// unless errors.tolerance=all, which skips it and goes on.
func scenarioProduceErrors(e *env) {
	t := e.t
	strict, tolerant := e.name("strict"), e.name("tolerant")
	for _, n := range []string{strict, tolerant} {
		cfg := map[string]string{"connector.class": "Datagen", "topic": e.name("big"), "shape": "bytes", "record.size": "2000000",
			"max.records": "3", "value.converter": ByteArrayConverter}
		if n == tolerant {
			cfg["errors.tolerance"] = "all"
		}
		e.create(n, cfg)
	}
	w := e.start(nil)
	st := e.waitState(strict, 0, connectstore.StateFailed)
	if !strings.Contains(st.Trace, "MESSAGE_TOO_LARGE") {
		t.Errorf("trace %q", st.Trace)
	}
	waitFor(t, 10*time.Second, "three records skipped", func() (bool, string) {
		ts, _ := w.Stats().Task(tolerant, 0)
		return ts.Skipped == 3, fmt.Sprintf("%+v", ts)
	})
	if st := e.waitState(tolerant, 0, connectstore.StateRunning); st.Restarts != 0 {
		t.Errorf("tolerant task restarted: %+v", st)
	}
}
