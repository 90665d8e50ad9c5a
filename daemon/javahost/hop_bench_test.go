package javahost

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/internal/testenv"
)

// Benchmarks of the host's socket hop (issue 17, Measure): one source poll
// or one sink put of the test plugins in mode bench, whose own work is next
// to nothing, through a real host. javahost's HopBaseline times the same
// plugins, converters and batch sizes in one JVM, as Kafka Connect runs
// them; the difference is what the hop costs. bench/javahost-hop.sh runs
// both and prints the table.

const (
	misbehaveSink = "io.kcd.testplugins.MisbehaveSinkConnector"
	hopTopic      = "bench"
	// hopHeap is the host's heap; bench/javahost-hop.sh gives HopBaseline
	// the same.
	hopHeap = "512m"
	// hopWarmup is how long each batch size runs before it is timed, so
	// the host's JIT has compiled the path.
	hopWarmup = 2 * time.Second
)

var hopBatches = []int{1, 100, 1000}

// hopConfig is the connector config of the benchmarks and of HopBaseline:
// mode bench, and StringConverter for keys and values.
func hopConfig(name, class string, batch int) map[string]string {
	return map[string]string{"name": name, "connector.class": class, "tasks.max": "1",
		"topic": hopTopic, "topics": hopTopic, "mode": "bench", "batch": fmt.Sprint(batch),
		"key.converter":   "org.apache.kafka.connect.storage.StringConverter",
		"value.converter": "org.apache.kafka.connect.storage.StringConverter"}
}

// hopProvider starts a host with the test plugins, logging warnings only
// (the host's INFO lines would flood the benchmark's output).
func hopProvider(b *testing.B) (*Provider, *slog.Logger) {
	b.Helper()
	if testing.Short() {
		b.Skip("needs the Java host: skipped with -short")
	}
	dir := testenv.JavaHostDir(b)
	plugins := requireTestPlugins(b, dir)
	log := slog.New(slog.NewTextHandler(tWriter{b}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h := New(Options{Dir: dir, PluginPath: []string{plugins}, Heap: hopHeap,
		HangLimit: time.Minute, StartTimeout: time.Minute, Logger: log})
	b.Cleanup(func() { _ = h.Close() })
	return NewProvider(h), log
}

// warmUp runs f for hopWarmup.
func warmUp(f func() error) error {
	for end := time.Now().Add(hopWarmup); time.Now().Before(end); {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// cpuTimes is the CPU time used so far by this process (kcd's side) and
// by the host's JVM; ok is false where /proc cannot say.
func cpuTimes(hostPid int) (kcd, host time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, false
	}
	kcd = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", hostPid))
	if err != nil {
		return 0, 0, false
	}
	// utime and stime are fields 14 and 15, counted after the command's
	// closing parenthesis, in clock ticks (USER_HZ, 100 on Linux).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return kcd, time.Duration(ut+st) * 10 * time.Millisecond, true
}

// timeBatches runs f b.N times and reports per batch and per record the
// elapsed time (ns/batch, ns/record) and the CPU time kcd's side and the
// host used (kcd-cpu-ns/record, host-cpu-ns/record): on a shared machine
// the CPU times vary less than the elapsed time. The host's CPU time counts
// all its threads, the JIT compiler and GC included.
func timeBatches(b *testing.B, h *Host, batch int, f func() error) {
	kcd0, host0, ok := cpuTimes(h.Pid())
	for b.Loop() {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	kcd1, host1, ok1 := cpuTimes(h.Pid())
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	ns := per(b.Elapsed())
	b.ReportMetric(ns, "ns/batch")
	b.ReportMetric(ns/float64(batch), "ns/record")
	if ok && ok1 {
		b.ReportMetric(per(kcd1-kcd0)/float64(batch), "kcd-cpu-ns/record")
		b.ReportMetric(per(host1-host0)/float64(batch), "host-cpu-ns/record")
	}
}

// BenchmarkHostSourcePoll: one Poll round trip per iteration, as the
// worker makes it: the acks of the previous batch go along, and the
// records come back converted to bytes by the host's converters; each is
// then acknowledged with its metadata (CommitRecord), as after Kafka took it.
func BenchmarkHostSourcePoll(b *testing.B) {
	p, log := hopProvider(b)
	cp, ok := p.Lookup(misbehaveSource)
	if !ok {
		b.Fatalf("the host has no %s", misbehaveSource)
	}
	for _, n := range hopBatches {
		name := fmt.Sprintf("hop-source-%d", n)
		cfg := hopConfig(name, misbehaveSource, n)
		conn := cp.New().(connect.SourceConnector)
		if err := conn.Start(&fakeConnectorContext{log: log}, cfg); err != nil {
			b.Fatal(err)
		}
		tcs, err := conn.TaskConfigs(1)
		if err != nil || len(tcs) != 1 {
			b.Fatalf("task configs: %v %v", tcs, err)
		}
		task := conn.NewTask()
		if err := task.Start(fakeTaskContext{name: name, cfg: cfg, log: log}, tcs[0]); err != nil {
			b.Fatal(err)
		}
		committer := task.(connect.SourceRecordCommitter)
		var offset int64
		poll := func() error {
			recs, err := task.Poll(context.Background())
			if err != nil {
				return err
			}
			if len(recs) != n {
				return fmt.Errorf("a poll gave %d records, want %d", len(recs), n)
			}
			if v, _ := recs[0].Value.([]byte); len(v) != 100 {
				return fmt.Errorf("a record's value is %q, want 100 bytes", v)
			}
			for _, r := range recs {
				if err := committer.CommitRecord(r, connect.RecordMetadata{Topic: hopTopic, Offset: offset}); err != nil {
					return err
				}
				offset++
			}
			return nil
		}
		if err := warmUp(poll); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) { timeBatches(b, p.h, n, poll) })
		if err := task.Stop(); err != nil {
			b.Fatal(err)
		}
		if err := conn.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}

// hopSinkContext is what a runtime offers a sink task: its identity, a
// logger and its one partition.
type hopSinkContext struct{ fakeTaskContext }

func (hopSinkContext) Assignment() []connect.TopicPartition {
	return []connect.TopicPartition{{Topic: hopTopic}}
}

// BenchmarkHostSinkPut: one Put round trip per iteration of pre-built raw
// Kafka records (no key, a value of 100 bytes), each batch with the next
// offsets as a consumer would give them; the host converts them and calls put.
func BenchmarkHostSinkPut(b *testing.B) {
	p, log := hopProvider(b)
	cp, ok := p.Lookup(misbehaveSink)
	if !ok {
		b.Fatalf("the host has no %s", misbehaveSink)
	}
	value := bytes.Repeat([]byte("x"), 100)
	for _, n := range hopBatches {
		name := fmt.Sprintf("hop-sink-%d", n)
		cfg := hopConfig(name, misbehaveSink, n)
		conn := cp.New().(connect.SinkConnector)
		if err := conn.Start(&fakeConnectorContext{log: log}, cfg); err != nil {
			b.Fatal(err)
		}
		tcs, err := conn.TaskConfigs(1)
		if err != nil || len(tcs) != 1 {
			b.Fatalf("task configs: %v %v", tcs, err)
		}
		task := conn.NewTask()
		if err := task.Start(hopSinkContext{fakeTaskContext{name: name, cfg: cfg, log: log}}, tcs[0]); err != nil {
			b.Fatal(err)
		}
		recs := make([]*connect.SinkRecord, n)
		for i := range recs {
			recs[i] = &connect.SinkRecord{Topic: hopTopic, Value: value, Timestamp: time.UnixMilli(1_700_000_000_000)}
		}
		var offset int64
		put := func() error {
			for _, r := range recs {
				r.Offset = offset
				offset++
			}
			return task.Put(recs)
		}
		if err := warmUp(put); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) { timeBatches(b, p.h, n, put) })
		if err := task.Stop(); err != nil {
			b.Fatal(err)
		}
		if err := conn.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}
