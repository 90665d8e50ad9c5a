package worker

import (
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkLoadMemory runs, in the benchmark's process, the load of
// bench.BenchmarkLoadRSS: a Datagen source with 4 tasks at full speed
// (user structs through the JsonConverter with schemas, the worker's
// defaults) and a FileStream sink reading them back into /dev/null, for
// KCD_BENCH_LOAD_SECONDS (default 20). It reports the Go heap (live after
// the last GC, and everything the runtime holds), the process's VmRSS and
// the records/s of both connectors, so that memory and throughput can be
// profiled together. KCD_BENCH_HEAPPROFILE=file writes a heap profile at
// the end of the load, while the connectors still run.
//
//	KCD_TEST_KAFKA=127.0.0.1:39092 go test -run '^$' -bench LoadMemory -benchtime 1x ./daemon/worker/
func BenchmarkLoadMemory(b *testing.B) {
	secs := 20
	if v, _ := strconv.Atoi(os.Getenv("KCD_BENCH_LOAD_SECONDS")); v > 0 {
		secs = v
	}
	for b.Loop() {
		be := newBenchEnv(b)
		w := be.worker(nil)
		topic := be.topic(1)
		gen, sink := be.name("gen"), be.name("sink")
		be.createConnector(gen, map[string]string{"connector.class": "Datagen", "topic": topic, "tasks.max": "4", "shape": "user"})
		be.createConnector(sink, map[string]string{"connector.class": "FileStreamSink", "topics": topic, "file": os.DevNull})

		samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
		var maxRSS, maxTotal, maxLive, maxObjects int64
		start := time.Now()
		var gen0, sink0 int64
		warm := start.Add(3 * time.Second)
		warmed := false
		for time.Since(start) < time.Duration(secs)*time.Second {
			time.Sleep(250 * time.Millisecond)
			if !warmed && time.Now().After(warm) {
				gen0, sink0, warmed = be.sumRecords(w, gen), be.sumRecords(w, sink), true
				warm = time.Now()
			}
			metrics.Read(samples)
			maxTotal = max(maxTotal, int64(samples[0].Value.Uint64()))
			maxObjects = max(maxObjects, int64(samples[1].Value.Uint64()))
			maxLive = max(maxLive, int64(samples[2].Value.Uint64()))
			if r, err := vmRSS(); err == nil {
				maxRSS = max(maxRSS, r)
			}
		}
		el := time.Since(warm).Seconds()
		genRate := float64(be.sumRecords(w, gen)-gen0) / el
		sinkRate := float64(be.sumRecords(w, sink)-sink0) / el
		if f := os.Getenv("KCD_BENCH_HEAPPROFILE"); f != "" {
			out, err := os.Create(f)
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			if err := pprof.Lookup("heap").WriteTo(out, 0); err != nil {
				b.Fatal(err)
			}
			out.Close()
		}
		st := w.Stats()
		const mb = 1 << 20
		b.ReportMetric(float64(maxRSS)/mb, "rss-max-MB")
		b.ReportMetric(float64(maxTotal)/mb, "go-total-max-MB")
		b.ReportMetric(float64(maxObjects)/mb, "heap-objects-max-MB")
		b.ReportMetric(float64(maxLive)/mb, "heap-live-max-MB")
		b.ReportMetric(genRate, "source-records/s")
		b.ReportMetric(sinkRate, "sink-records/s")
		b.ReportMetric(float64(st.PeakInFlightRecords), "peak-inflight")
		b.ReportMetric(float64(st.PeakInFlightBytes)/mb, "peak-inflight-MB")
	}
}

// vmRSS reads this process's VmRSS from /proc/self/status.
func vmRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, os.ErrNotExist
}
