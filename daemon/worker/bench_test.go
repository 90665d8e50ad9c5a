package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/clientcfg"
	"github.com/kcd-project/kcd/daemon/config"
	"github.com/kcd-project/kcd/daemon/connectors/datagen"
	"github.com/kcd-project/kcd/internal/testenv"
)

// Benchmarks against the real broker named by KCD_TEST_KAFKA (skipped
// without it). Each iteration moves benchRecords records; the figures are
// records/s and MB/s of record values, measured from the first record to
// the last (connector start-up excluded), and the same for a raw franz-go
// client moving the same records through the same broker in the same run.
//
//	KCD_TEST_KAFKA=127.0.0.1:39092 go test -run '^$' -bench . -benchtime 3x ./daemon/worker/

const (
	benchRecords = 1_000_000
	benchSize    = 100 // bytes of a value
)

func benchSeeds(b *testing.B) []string {
	b.Helper()
	v := os.Getenv(testenv.Kafka)
	if v == "" {
		b.Skipf("%s is not set: the benchmarks need the real broker", testenv.Kafka)
	}
	return strings.Split(v, ",")
}

type benchEnv struct {
	*env
	b *testing.B
}

func newBenchEnv(b *testing.B) *benchEnv {
	e := &env{t: b, seeds: benchSeeds(b)}
	b.Cleanup(e.deleteTopics)
	e.cs = openStore(b)
	return &benchEnv{env: e, b: b}
}

func (be *benchEnv) topic(partitions int32) string {
	name := be.name("bench")
	cl, err := kgo.NewClient(kgo.SeedBrokers(be.seeds...))
	if err != nil {
		be.b.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), partitions, -1, nil, name); err != nil {
		be.b.Fatal(err)
	}
	return name
}

func (be *benchEnv) worker(mod func(*Config)) *running {
	cfg := Config{
		WorkerID:            "bench:8083",
		Store:               be.cs,
		Seeds:               be.seeds,
		Converters:          testConverters,
		Logger:              slog.New(slog.NewTextHandler(io.Discard, nil)),
		OffsetFlushInterval: time.Second,
	}
	benchLimits(&cfg)
	if mod != nil {
		mod(&cfg)
	}
	w, err := New(cfg)
	if err != nil {
		be.b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Worker: w, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		w.Run(ctx)
	}()
	be.b.Cleanup(r.stop)
	return r
}

func (be *benchEnv) createConnector(name string, cfg map[string]string) {
	cfg["name"] = name
	if _, err := be.cs.CreateConnector(context.Background(), name, cfg, "STARTED"); err != nil {
		be.b.Fatal(err)
	}
}

// waitRecords waits until the connector's tasks moved n records, and
// returns how long that took from the first record on (startup excluded).
func (be *benchEnv) waitRecords(w *running, name string, n int64) time.Duration {
	deadline := time.Now().Add(5 * time.Minute)
	var first time.Time
	for {
		got := be.sumRecords(w, name)
		if got > 0 && first.IsZero() {
			first = time.Now()
		}
		if got >= n {
			return time.Since(first)
		}
		if time.Now().After(deadline) {
			be.b.Fatalf("%s moved %d records of %d", name, got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// rawProduce sends the records datagen would, with a plain franz-go
// producer of the worker's shared producer's settings, and returns how long Kafka took to
// acknowledge them all.
func rawProduce(b *testing.B, seeds []string, topic string, tasks, perTask int) time.Duration {
	p, err := clientcfg.DefaultProducer().With(benchProducer(), clientcfg.ProducerPrefix)
	if err != nil {
		b.Fatal(err)
	}
	opts := append(p.Opts(false), kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.MaxBufferedRecords(100_000),
		// The worker's partitioner for records without a key: with one
		// request in flight, franz-go's default sticky partitioner fills
		// one partition's batch per request.
		kgo.RecordPartitioner(kgo.UniformBytesPartitioner(64<<10, true, true, nil)))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	var failed atomic.Value
	var first atomic.Int64 // unix nanos of the first acknowledgement
	done := make(chan struct{}, tasks)
	for tk := range tasks {
		go func() {
			for seq := range int64(perTask) {
				r := &kgo.Record{
					Value: datagen.Payload(tk, seq, benchSize),
					Headers: []kgo.RecordHeader{
						{Key: datagen.TaskHeader, Value: strconv.AppendInt(nil, int64(tk), 10)},
						{Key: datagen.SeqHeader, Value: strconv.AppendInt(nil, seq, 10)},
					},
				}
				cl.Produce(context.Background(), r, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.Store(err)
					}
					if first.Load() == 0 { // time.Now for every record would slow the raw producer
						first.CompareAndSwap(0, time.Now().UnixNano())
					}
				})
			}
			done <- struct{}{}
		}()
	}
	for range tasks {
		<-done
	}
	if err := cl.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return time.Since(time.Unix(0, first.Load()))
}

func BenchmarkDatagenToKafka(b *testing.B) {
	// producer: the shared one and one per task without
	// exactly-once support; with it, a transactional one per task, with
	// transaction.boundary poll (the default) or interval (the offset
	// flush interval, 1 s here, or 100 ms).
	for _, c := range []struct {
		tasks    int
		producer string
	}{{1, "shared"}, {4, "shared"}, {4, "per-task"}, {1, "txn-poll"}, {4, "txn-poll"}, {1, "txn-interval"}, {4, "txn-interval"}, {1, "txn-interval-100ms"}} {
		b.Run(fmt.Sprintf("tasks=%d/producer=%s", c.tasks, c.producer), func(b *testing.B) {
			be := newBenchEnv(b)
			w := be.worker(func(cfg *Config) {
				cfg.ProducerPerTask = c.producer == "per-task"
				if !strings.HasPrefix(c.producer, "txn-") {
					cfg.ExactlyOnceSource = ExactlyOnceDisabled
				}
			})
			perTask := benchRecords / c.tasks
			// Worker and raw runs alternate, and which goes first too: the
			// broker shares this machine, so conditions drift; the figures
			// are medians over the pairs.
			var workerRuns, rawRuns, ratios []float64
			i := 0
			for b.Loop() {
				runWorker := func() {
					defer withMemoryLimit()()
					topic := be.topic(4)
					name := be.name("bench")
					cfg := map[string]string{"connector.class": "Datagen", "topic": topic,
						"tasks.max": strconv.Itoa(c.tasks), "max.records": strconv.Itoa(perTask), "shape": "bytes",
						"record.size": strconv.Itoa(benchSize), "value.converter": ByteArrayConverter}
					if strings.HasPrefix(c.producer, "txn-interval") {
						cfg["transaction.boundary"] = "interval"
					}
					if c.producer == "txn-interval-100ms" {
						cfg["transaction.boundary.interval.ms"] = "100"
					}
					be.createConnector(name, cfg)
					workerRuns = append(workerRuns, be.waitRecords(w, name, int64(perTask*c.tasks)).Seconds())
				}
				runRaw := func() {
					rawRuns = append(rawRuns, rawProduce(b, be.seeds, be.topic(4), c.tasks, perTask).Seconds())
				}
				if i%2 == 0 {
					runWorker()
					runRaw()
				} else {
					runRaw()
					runWorker()
				}
				ratios = append(ratios, rawRuns[i]/workerRuns[i])
				if os.Getenv("KCD_BENCH_VERBOSE") != "" {
					b.Logf("worker %.3fs raw %.3fs: %.0f %%", workerRuns[i], rawRuns[i], 100*ratios[i])
				}
				i++
			}
			n := float64(perTask * c.tasks)
			b.ReportMetric(n/median(workerRuns), "records/s")
			b.ReportMetric(n*benchSize/median(workerRuns)/1e6, "MB/s")
			b.ReportMetric(n/median(rawRuns), "raw-records/s")
			b.ReportMetric(100*median(ratios), "%-of-raw")
			st := w.Stats()
			b.ReportMetric(float64(st.PeakInFlightRecords), "peak-inflight")
		})
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkKafkaToFileSink reads benchRecords records of 100 bytes into a
// FileStream sink; the raw figure is a franz-go consumer reading the same
// topic and doing nothing with the records.
func BenchmarkKafkaToFileSink(b *testing.B) {
	for _, tasks := range []int{1, 4} {
		b.Run(fmt.Sprintf("tasks=%d", tasks), func(b *testing.B) {
			be := newBenchEnv(b)
			topic := be.topic(4)
			rawProduce(b, be.seeds, topic, 4, benchRecords/4)
			w := be.worker(nil)
			var runs, raws, ratios, cpus, rawCPUs []float64
			i := 0
			// CPU of the whole process per record, as for the source.
			cpuOf := func(run func()) float64 {
				before := processCPU()
				run()
				return float64((processCPU() - before).Nanoseconds()) / 1e3 / benchRecords
			}
			for b.Loop() {
				runWorker := func() {
					defer withMemoryLimit()()
					name := be.name("sink")
					out := filepath.Join(b.TempDir(), "out.txt")
					be.createConnector(name, map[string]string{"connector.class": "FileStreamSink", "topics": topic, "file": out,
						"tasks.max": strconv.Itoa(tasks), "value.converter": ByteArrayConverter, "key.converter": ByteArrayConverter})
					runs = append(runs, be.waitRecords(w, name, benchRecords).Seconds())
					os.Remove(out)
				}
				runRaw := func() { raws = append(raws, rawConsume(b, be.seeds, topic, benchRecords).Seconds()) }
				// Alternating, as for the source.
				if i%2 == 0 {
					cpus = append(cpus, cpuOf(runWorker))
					rawCPUs = append(rawCPUs, cpuOf(runRaw))
				} else {
					rawCPUs = append(rawCPUs, cpuOf(runRaw))
					cpus = append(cpus, cpuOf(runWorker))
				}
				ratios = append(ratios, raws[i]/runs[i])
				if os.Getenv("KCD_BENCH_VERBOSE") != "" {
					b.Logf("worker %.3fs %.2fµs/rec raw %.3fs %.2fµs/rec: %.0f %%", runs[i], cpus[i], raws[i], rawCPUs[i], 100*ratios[i])
				}
				i++
			}
			b.ReportMetric(benchRecords/median(runs), "records/s")
			b.ReportMetric(benchRecords*benchSize/median(runs)/1e6, "MB/s")
			b.ReportMetric(benchRecords/median(raws), "raw-records/s")
			b.ReportMetric(100*median(ratios), "%-of-raw")
			b.ReportMetric(median(cpus), "cpu-µs/record")
			b.ReportMetric(median(rawCPUs), "raw-cpu-µs/record")
			var peak int64
			for _, ts := range w.Stats().Tasks {
				peak = max(peak, ts.PeakBufferedFetchBytes)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-fetch-buffer-MB")
		})
	}
}

// rawConsume reads n records of topic from the start with a plain franz-go
// consumer and returns how long that took.
func rawConsume(b *testing.B, seeds []string, topic string, n int) time.Duration {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	var start time.Time
	for got := 0; got < n; {
		fs := cl.PollFetches(context.Background())
		if err := fs.Err0(); err != nil {
			b.Fatal(err)
		}
		if got == 0 {
			start = time.Now()
		}
		got += fs.NumRecords()
	}
	return time.Since(start)
}

// benchLimits sets the limits named by KCD_BENCH_* variables, to compare
// settings without editing code.
func benchLimits(cfg *Config) {
	envInt := func(k string) int64 { v, _ := strconv.ParseInt(os.Getenv(k), 10, 64); return v }
	if v := envInt("KCD_BENCH_TASK_INFLIGHT"); v > 0 {
		cfg.Limits.TaskInFlightRecords = int(v)
	}
	if v := envInt("KCD_BENCH_TASK_INFLIGHT_KB"); v > 0 {
		cfg.Limits.TaskInFlightBytes = v << 10
	}
	if v := envInt("KCD_BENCH_WORKER_INFLIGHT"); v > 0 {
		cfg.Limits.WorkerInFlightRecords = int(v)
	}
	if v := envInt("KCD_BENCH_WORKER_INFLIGHT_KB"); v > 0 {
		cfg.Limits.WorkerInFlightBytes = v << 10
	}
	if v := envInt("KCD_BENCH_SINK_FETCH_KB"); v > 0 {
		cfg.Limits.SinkFetchMaxBytes = int32(v << 10)
	}
	if v := envInt("KCD_BENCH_SINK_PARTITION_KB"); v > 0 {
		cfg.Limits.SinkFetchMaxPartitionBytes = int32(v << 10)
	}
	if v := envInt("KCD_BENCH_SINK_FETCHES"); v > 0 {
		cfg.Limits.SinkMaxConcurrentFetches = int(v)
	}
	if v := envInt("KCD_BENCH_SINK_MAX_BATCH"); v > 0 {
		cfg.Limits.SinkMaxBatch = int(v)
	}
	cfg.Producer = benchProducer()
}

// benchProducer is the producer settings of the worker and of the raw
// producer: Kafka Connect's defaults, KCD_BENCH_LINGER (a duration) and
// KCD_BENCH_COMPRESSION over them.
func benchProducer() map[string]string {
	out := map[string]string{}
	if v, err := time.ParseDuration(os.Getenv("KCD_BENCH_LINGER")); err == nil {
		out["linger.ms"] = strconv.FormatInt(v.Milliseconds(), 10)
	}
	if v := os.Getenv("KCD_BENCH_COMPRESSION"); v != "" {
		out["compression.type"] = v
	}
	return out
}

// withMemoryLimit sets, for a worker run, the soft memory limit a kcd node
// runs with by default (config.DefaultMemoryLimit; KCD_BENCH_MEMORY_LIMIT
// overrides it, 0 for none), and returns the function that lifts it again:
// the raw runs in between go without, as a plain franz-go program would.
func withMemoryLimit() (restore func()) {
	lim := int64(config.DefaultMemoryLimit)
	if v, ok := os.LookupEnv("KCD_BENCH_MEMORY_LIMIT"); ok {
		b, err := config.ParseByteSize(v)
		if err != nil {
			panic(err)
		}
		lim = int64(b)
	}
	if lim <= 0 {
		return func() {}
	}
	prev := debug.SetMemoryLimit(lim)
	return func() { debug.SetMemoryLimit(prev) }
}

// BenchmarkStatsInto1000Tasks is what a metrics scrape reads of a worker
// running 1,000 tasks, half sources, half sinks.
func BenchmarkStatsInto1000Tasks(b *testing.B) {
	w := &Worker{budget: newBudget(1000, 1<<20, nil), tasks: map[TaskID]*taskStats{}}
	for i := range 1000 {
		t := newTaskStats(TaskID{Connector: fmt.Sprintf("c%d", i/10), Task: i % 10}, i%2 == 1)
		if !t.sink {
			t.budget = newBudget(100, 1<<16, w.budget)
		}
		w.tasks[t.id] = t
	}
	var st Stats
	b.ReportAllocs()
	for b.Loop() {
		w.StatsInto(&st)
	}
}

// BenchmarkFileSourceToKafka is bench's FileStreamSource scenario in the
// process, to profile: benchRecords lines of benchSize bytes through 1 or
// 4 FileStreamSource connectors (a file and a 1-partition topic each) with
// StringConverter and the shared producer, against a raw franz-go
// producer of the shared producer's settings sending the same lines to 1
// or 4 such topics.
func BenchmarkFileSourceToKafka(b *testing.B) {
	for _, tasks := range []int{1, 4} {
		b.Run(fmt.Sprintf("tasks=%d", tasks), func(b *testing.B) {
			be := newBenchEnv(b)
			w := be.worker(func(cfg *Config) { cfg.ExactlyOnceSource = ExactlyOnceDisabled })
			perTask := benchRecords / tasks
			var files []string
			for tk := range tasks {
				f := filepath.Join(b.TempDir(), "in.txt")
				writeBenchLines(b, f, tk*perTask, perTask)
				files = append(files, f)
			}
			var workerRuns, rawRuns, ratios, workerCPU, rawCPU []float64
			i := 0
			for b.Loop() {
				runWorker := func() {
					defer withMemoryLimit()()
					start := time.Now()
					var names []string
					for _, f := range files {
						name := be.name("fsrc")
						be.createConnector(name, map[string]string{"connector.class": "FileStreamSource", "file": f,
							"topic": be.topic(1), "tasks.max": "1", "value.converter": StringConverter, "key.converter": StringConverter})
						names = append(names, name)
					}
					for _, name := range names {
						be.waitRecords(w, name, int64(perTask))
					}
					workerRuns = append(workerRuns, time.Since(start).Seconds())
				}
				runRaw := func() {
					if os.Getenv("KCD_BENCH_WORKER_ONLY") != "" { // to profile the worker alone
						rawRuns = append(rawRuns, 1)
						return
					}
					var topics []string
					for range tasks {
						topics = append(topics, be.topic(1))
					}
					rawRuns = append(rawRuns, rawProduceLines(b, be.seeds, topics, perTask).Seconds())
				}
				// CPU of the whole process per record: what bench's CPU
				// per record is of a kcd node.
				cpuOf := func(run func()) float64 {
					before := processCPU()
					run()
					return float64((processCPU() - before).Nanoseconds()) / 1e3 / float64(perTask*tasks)
				}
				if i%2 == 0 {
					workerCPU = append(workerCPU, cpuOf(runWorker))
					rawCPU = append(rawCPU, cpuOf(runRaw))
				} else {
					rawCPU = append(rawCPU, cpuOf(runRaw))
					workerCPU = append(workerCPU, cpuOf(runWorker))
				}
				ratios = append(ratios, rawRuns[i]/workerRuns[i])
				if os.Getenv("KCD_BENCH_VERBOSE") != "" {
					b.Logf("worker %.3fs %.2fµs/rec raw %.3fs %.2fµs/rec: %.0f %%", workerRuns[i], workerCPU[i], rawRuns[i], rawCPU[i], 100*ratios[i])
				}
				i++
			}
			n := float64(perTask * tasks)
			b.ReportMetric(n/median(workerRuns), "records/s")
			b.ReportMetric(n/median(rawRuns), "raw-records/s")
			b.ReportMetric(100*median(ratios), "%-of-raw")
			b.ReportMetric(median(workerCPU), "cpu-µs/record")
			b.ReportMetric(median(rawCPU), "raw-cpu-µs/record")
		})
	}
}

// writeBenchLines writes lines first..first+n-1 of benchSize bytes, as
// bench's FileStream scenarios do.
func writeBenchLines(b *testing.B, path string, first, n int) {
	var buf []byte
	pad := strings.Repeat("x", benchSize-12)
	for i := first; i < first+n; i++ {
		buf = fmt.Appendf(buf, "%012d%s\n", i, pad)
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		b.Fatal(err)
	}
}

// rawProduceLines sends perTopic lines of writeBenchLines to each topic,
// one goroutine a topic, with one franz-go producer of the worker's
// shared producer's settings, and returns how long Kafka took to
// acknowledge them all from the first Produce.
func rawProduceLines(b *testing.B, seeds []string, topics []string, perTopic int) time.Duration {
	p, err := clientcfg.DefaultProducer().With(benchProducer(), clientcfg.ProducerPrefix)
	if err != nil {
		b.Fatal(err)
	}
	p.Idempotent = true // as Worker.sharedProducer makes it
	cl, err := kgo.NewClient(append(p.Opts(false), kgo.SeedBrokers(seeds...), kgo.MaxBufferedRecords(100_000))...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	var failed atomic.Value
	start := time.Now()
	done := make(chan struct{}, len(topics))
	pad := strings.Repeat("x", benchSize-12)
	for tk, topic := range topics {
		go func() {
			for i := range perTopic {
				v := fmt.Appendf(make([]byte, 0, benchSize), "%012d%s", tk*perTopic+i, pad)
				cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: v}, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.Store(err)
					}
				})
			}
			done <- struct{}{}
		}()
	}
	for range topics {
		<-done
	}
	if err := cl.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// processCPU is the user and system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
