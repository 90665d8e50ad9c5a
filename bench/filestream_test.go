package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/clientcfg"
	"github.com/kcd-project/kcd/daemon/systemtest"
	"github.com/kcd-project/kcd/internal/testenv"
)

var (
	fsRounds  = flag.Int("bench.filestream.rounds", 3, "BenchmarkFileStreamSideBySide: rounds, each running every scenario on both sides")
	fsRecords = flag.Int("bench.filestream.records", 1_000_000, "BenchmarkFileStreamSideBySide: lines of 100 bytes per scenario")
	fsRestart = flag.Int("bench.filestream.restart-connectors", 100, "BenchmarkFileStreamSideBySide: connectors running when each side restarts")
	fsCompr   = flag.String("bench.filestream.compression", "snappy", "BenchmarkFileStreamSideBySide: both sides' producer compression.type (kcd --producer, the worker producer.compression.type; empty: each side's default, none)")
	fsJVM     = flag.String("bench.filestream.connect-jvm", "kafka", "BenchmarkFileStreamSideBySide: the Kafka Connect worker's JVM options: kafka (what bin/connect-distributed.sh starts it with: -Xms256M -Xmx2G, G1) or testenv (the test environment's worker script as it is)")
	fsDefault = flag.Bool("bench.filestream.defaults", false, "BenchmarkFileStreamSideBySide: each side with its defaults (kcd: exactly-once source support enabled; Kafka Connect: disabled; both without compression) instead of identical settings; -bench.filestream.compression is ignored")
)

const (
	fileSourceClass = "org.apache.kafka.connect.file.FileStreamSourceConnector"
	fileSinkClass   = "org.apache.kafka.connect.file.FileStreamSinkConnector"
	stringConverter = "org.apache.kafka.connect.storage.StringConverter"
	lineBytes       = 100 // a line without its newline
)

// BenchmarkFileStreamSideBySide runs Kafka Connect's FileStream connectors
// on kcd (its built-in Go ones, a fresh single node) and on a fresh real
// Kafka Connect 4.3.1 worker (its Java ones), on the test environment's
// Kafka, in alternating rounds:
//
//   - source, 1 and 4 connectors: lines of a file (4 files of a quarter
//     each) into a 1-partition topic each, until all are in Kafka;
//   - sink, 1 and 4 tasks: a pre-filled topic of 1 and 4 partitions into a
//     file, until every line is written, and the time to the first write;
//   - after the rounds, in as many rounds, each side stopped and started
//     again: exec → first 200, and a sink's first write (latency_test.go);
//   - then -bench.filestream.restart-connectors sinks on each side, the
//     process killed and started again: exec → all RUNNING.
//
// Both sides use StringConverter, exactly-once source support disabled
// (Kafka Connect's default), and the producer compression.type
// -bench.filestream.compression (kcd --producer, the worker
// producer.compression.type); their other producer settings are Kafka
// Connect's defaults on both. With -bench.filestream.defaults each side
// runs with its defaults instead: kcd with no settings (exactly-once
// source support enabled: a transactional producer per task), Kafka
// Connect with none (disabled); neither compresses. Every round also runs
// a raw franz-go producer with the settings of kcd's shared producer on
// the same lines, 1 and 4 topics: the ceiling of the sources, in kcd's
// column (its CPU per record is the benchmark process's). It prints a
// table of each side's best
// and median: records/s, CPU per record, peak resident memory, time from
// POST /connectors, and the fresh processes' start-up and idle memory.
// Run with -benchtime=1x; it needs the test environment.
func BenchmarkFileStreamSideBySide(b *testing.B) {
	for b.Loop() {
		runFileStreamSideBySide(b)
	}
}

func runFileStreamSideBySide(b *testing.B) {
	brokers := testenv.Require(b, testenv.Kafka)
	bin := kcdBinary(b)
	ctx := context.Background()
	s := newSheet()
	dir := b.TempDir()
	n := *fsRecords

	cl, adm := kafkaClients(b, brokers)
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)

	// Inputs: a file of n lines and 4 of n/4, a topic of n records in 1
	// partition and one in 4.
	one := filepath.Join(dir, "in-1.txt")
	writeLines(b, one, 0, n)
	var quarters []string
	for q := range 4 {
		f := filepath.Join(dir, fmt.Sprintf("in-4-%d.txt", q))
		writeLines(b, f, q*n/4, n/4)
		quarters = append(quarters, f)
	}
	sinkIn1, sinkIn4 := "kcd-bench-fs-in1-"+stamp, "kcd-bench-fs-in4-"+stamp
	fillTopic(b, ctx, cl, adm, sinkIn1, 1, n)
	fillTopic(b, ctx, cl, adm, sinkIn4, 4, n)
	made := []string{sinkIn1, sinkIn4}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := adm.DeleteTopics(dctx, made...); err != nil {
			progress("delete topics: %v", err)
		}
	}()

	compr := *fsCompr
	var args []string
	if *fsDefault {
		compr = ""
	} else {
		args = []string{"--exactly-once-source-support", "disabled"}
		if compr != "" {
			args = append(args, "--producer", "compression.type="+compr)
		}
	}
	start := time.Now()
	c := systemtest.StartCluster(b, bin, systemtest.Options{Size: 1, Bootstrap: brokers, ExtraArgs: args})
	node := c.Node(1)
	kcd := newPeer(sideKcd, "http://"+node.RESTAddr, func() []int { return []int{node.PID()} })
	if err := waitUntil(ctx, time.Minute, 5*time.Millisecond, func() (bool, error) {
		code, _, err := kcd.do(ctx, "GET", "/connectors", nil)
		return err == nil && code == 200, nil
	}); err != nil {
		b.Fatalf("kcd: no 200 from GET /connectors: %v", err)
	}
	s.add(rowStartFresh, "ms", false, sideKcd, ms(time.Since(start)))
	idle(s, kcd)

	start = time.Now()
	group := "kcd-bench-fs-" + stamp
	kcProps := map[string]string{"group.id": group, "config.storage.topic": group + "-configs",
		"offset.storage.topic": group + "-offsets", "status.storage.topic": group + "-status"}
	if !*fsDefault {
		kcProps["exactly.once.source.support"] = "disabled"
		if compr != "" {
			kcProps["producer.compression.type"] = compr
		}
	}
	if *fsJVM == "kafka" {
		b.Setenv(testenv.ConnectWorker, connectWithKafkaJVM(b))
	} else if *fsJVM != "testenv" {
		b.Fatalf("-bench.filestream.connect-jvm %q: kafka or testenv", *fsJVM)
	}
	url, pid := testenv.StartConnectWorkerPID(b, kcProps)
	peerConnect := newPeer(sideConnect, url, func() []int { return []int{pid} })
	// StartConnectWorkerPID returns once the worker is healthy: its first
	// 200 came at most this late.
	s.add(rowStartFresh, "ms", false, sideConnect, ms(time.Since(start)))
	idle(s, peerConnect)

	for round := range *fsRounds {
		s.noteLoad()
		made = append(made, rawProducer(b, ctx, s, adm, compr, fmt.Sprintf("r%d-%s", round, stamp), []string{one})...)
		made = append(made, rawProducer(b, ctx, s, adm, compr, fmt.Sprintf("r%dx4-%s", round, stamp), quarters)...)
		sides := []*peer{kcd, peerConnect}
		if round%2 == 1 {
			sides = []*peer{peerConnect, kcd}
		}
		for _, p := range sides {
			tag := fmt.Sprintf("r%dkcd", round)
			if p == peerConnect {
				tag = fmt.Sprintf("r%dkc", round)
			}
			made = append(made, runFileSource(b, ctx, s, p, adm, tag, []string{one}, n)...)
			made = append(made, runFileSource(b, ctx, s, p, adm, tag+"x4", quarters, n)...)
			runFileSink(b, ctx, s, p, dir, tag, sinkIn1, 1, n)
			runFileSink(b, ctx, s, p, dir, tag+"x4", sinkIn4, 4, n)
		}
	}
	// Start on an existing data dir, first sink write (latency_test.go).
	pid = latencySideBySide(b, ctx, s, cl, adm, node, kcd, peerConnect, pid, kcProps, dir)
	// Restart with many connectors: exec → every one RUNNING again.
	if k := *fsRestart; k > 0 {
		createSinks(b, ctx, kcd, sinkIn1, dir, "kcd", k)
		createSinks(b, ctx, peerConnect, sinkIn1, dir, "kc", k)
		node.Kill()
		<-node.Exited()
		start := time.Now()
		if err := node.Start(); err != nil {
			b.Fatal(err)
		}
		waitAllRunning(b, ctx, kcd, "kcd", k)
		s.add(fmt.Sprintf("restart with %d connectors → all RUNNING", k), "s", false, sideKcd, time.Since(start).Seconds())
		syscall.Kill(pid, syscall.SIGKILL)
		start = time.Now()
		url, _ := testenv.StartConnectWorkerPID(b, kcProps)
		waitAllRunning(b, ctx, newPeer(sideConnect, url, nil), "kc", k)
		s.add(fmt.Sprintf("restart with %d connectors → all RUNNING", k), "s", false, sideConnect, time.Since(start).Seconds())
	}
	table, file := s.markdown(), "filestream-sidebyside.md"
	if *fsDefault {
		table = "Each side with its defaults: kcd exactly-once source support enabled, Kafka Connect disabled, no compression.\n\n" + table
		file = "filestream-sidebyside-defaults.md"
	} else {
		table = fmt.Sprintf("Identical settings: exactly-once source support disabled, StringConverter, compression.type %s.\n\n", cmp.Or(compr, "none")) + table
	}
	fmt.Println(table)
	if out := os.Getenv("BENCH_OUT"); out != "" {
		if err := os.WriteFile(filepath.Join(out, file), []byte(table), 0o644); err != nil {
			progress("write table: %v", err)
		}
	}
}

// rawProducer produces the lines of files (without their newlines), each
// file's into a new 1-partition topic of its own, one goroutine a file,
// through one franz-go client with the settings of kcd's shared producer
// (Kafka Connect's defaults, compression.type compr, idempotent with up to
// five requests in flight: Worker.sharedProducer): the ceiling of the
// FileStreamSources on this broker, in kcd's column. It returns the topics.
func rawProducer(b *testing.B, ctx context.Context, s *sheet, adm *kadm.Client, compr, tag string, files []string) []string {
	var values [][][]byte
	var topics []string
	n := 0
	for i, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSuffix(text, []byte("\n")), []byte("\n"))
		values = append(values, lines)
		n += len(lines)
		t := fmt.Sprintf("kcd-bench-fs-raw-%s-%d", tag, i)
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, t); err != nil {
			b.Fatalf("create %s: %v", t, err)
		}
		topics = append(topics, t)
	}
	settings := map[string]string{}
	if compr != "" {
		settings["compression.type"] = compr
	}
	p, err := clientcfg.DefaultProducer().With(settings, clientcfg.ProducerPrefix)
	if err != nil {
		b.Fatal(err)
	}
	p.Idempotent = true // as kcd's shared producer is unless told otherwise
	cl, err := kgo.NewClient(append(p.Opts(false), kgo.SeedBrokers(strings.Split(brokersOf(b), ",")...),
		kgo.MaxBufferedRecords(100_000))...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	// Connected before the clock starts, as kcd's producer is by the time
	// its first record is counted.
	if err := cl.Ping(ctx); err != nil {
		b.Fatal(err)
	}
	var failed atomic.Value
	var wg sync.WaitGroup
	cpu := processCPU(b)
	start := time.Now()
	for i, lines := range values {
		wg.Go(func() {
			for _, v := range lines {
				cl.Produce(ctx, &kgo.Record{Topic: topics[i], Value: v}, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.Store(err)
					}
				})
			}
		})
	}
	wg.Wait()
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	if err, _ := failed.Load().(error); err != nil {
		b.Fatalf("raw producer: %v", err)
	}
	took := time.Since(start)
	what := fmt.Sprintf("raw franz-go producer ×%d, the same lines", len(files))
	s.addRate(what+": records/s", sideKcd, int64(n), took)
	s.add(what+": CPU per record", "µs", false, sideKcd, float64((processCPU(b)-cpu).Microseconds())/float64(n))
	return topics
}

// kafkaJVM is the heap and garbage collector Kafka's own scripts start a
// Connect worker with (bin/connect-distributed.sh's KAFKA_HEAP_OPTS,
// kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS), where the test
// environment's script keeps its services small (-Xmx512m, serial GC): at
// that size a worker copying 4 files at full speed can run out of heap.
const kafkaJVM = "-Xms256M -Xmx2G -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent"

// connectWithKafkaJVM writes a copy of the test environment's worker
// script that starts the JVM with kafkaJVM instead of its own heap and
// collector options, and returns its path.
func connectWithKafkaJVM(b *testing.B) string {
	script := testenv.Require(b, testenv.ConnectWorker)
	text, err := os.ReadFile(script)
	if err != nil {
		b.Fatal(err)
	}
	opts := regexp.MustCompile(`-Xms\S+ -Xmx\S+ -XX:\+Use\w+GC`)
	if !opts.Match(text) {
		b.Fatalf("%s: no -Xms -Xmx -XX:+Use…GC to replace with Kafka's JVM options; run with -bench.filestream.connect-jvm testenv", script)
	}
	out := filepath.Join(b.TempDir(), "connect-worker")
	if err := os.WriteFile(out, opts.ReplaceAll(text, []byte(kafkaJVM)), 0o755); err != nil {
		b.Fatal(err)
	}
	return out
}

// createSinks creates k FileStreamSinks of topic on p and waits until
// they run.
func createSinks(b *testing.B, ctx context.Context, p *peer, topic, dir, tag string, k int) {
	for i := range k {
		cfg := map[string]string{"connector.class": fileSinkClass, "tasks.max": "1", "topics": topic,
			"file":          filepath.Join(dir, fmt.Sprintf("many-%s-%d.txt", tag, i)),
			"key.converter": stringConverter, "value.converter": stringConverter}
		if err := p.create(ctx, 2*time.Minute, fmt.Sprintf("bench-many-%s-%d", tag, i), cfg); err != nil {
			b.Fatal(err)
		}
	}
	waitAllRunning(b, ctx, p, tag, k)
}

// waitAllRunning waits until the k connectors of createSinks and their
// tasks are RUNNING.
func waitAllRunning(b *testing.B, ctx context.Context, p *peer, tag string, k int) {
	err := waitUntil(ctx, 10*time.Minute, 50*time.Millisecond, func() (bool, error) {
		code, body, err := p.do(ctx, "GET", "/connectors?expand=status", nil)
		if err != nil || code != 200 {
			return false, nil
		}
		var all map[string]struct {
			Status struct {
				Connector struct{ State string }
				Tasks     []struct{ State string }
			}
		}
		if json.Unmarshal(body, &all) != nil {
			return false, nil
		}
		n := 0
		for name, c := range all {
			if !strings.HasPrefix(name, "bench-many-"+tag+"-") || c.Status.Connector.State != "RUNNING" {
				continue
			}
			if len(c.Status.Tasks) == 1 && c.Status.Tasks[0].State == "RUNNING" {
				n++
			}
		}
		return n == k, nil
	})
	if err != nil {
		b.Fatalf("%s: not all %d connectors RUNNING: %v", p.name, k, err)
	}
}

// writeLines writes lines first..first+n-1 of lineBytes each.
func writeLines(b *testing.B, path string, first, n int) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	pad := strings.Repeat("x", lineBytes-12)
	for i := first; i < first+n; i++ {
		fmt.Fprintf(w, "%012d%s\n", i, pad)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// runFileSource runs one FileStreamSource connector per file, each into a
// topic of its own, and times them together; it returns the topics.
func runFileSource(b *testing.B, ctx context.Context, s *sheet, p *peer, adm *kadm.Client, tag string, files []string, n int) []string {
	what := fmt.Sprintf("FileStreamSource ×%d", len(files))
	var topics []string
	for i := range files {
		t := fmt.Sprintf("kcd-bench-fs-%s-%d-%d", tag, i, time.Now().UnixNano())
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, t); err != nil {
			b.Fatalf("create %s: %v", t, err)
		}
		topics = append(topics, t)
	}
	before, err := usageOf(p.pids())
	if err != nil {
		b.Fatal(err)
	}
	sampler := samplePeak(p.pids, 100*time.Millisecond)
	posted := time.Now()
	// All at once, as the raw producer starts its files: one after the
	// other, the first would run alone while the others are created.
	errs := make(chan error, len(files))
	for i, f := range files {
		cfg := map[string]string{"connector.class": fileSourceClass, "tasks.max": "1", "file": f, "topic": topics[i],
			"key.converter": stringConverter, "value.converter": stringConverter}
		go func() { errs <- p.create(ctx, time.Minute, fmt.Sprintf("bench-fs-%s-%d", tag, i), cfg) }()
	}
	for range files {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	var first, all, running time.Time
	err = waitUntil(ctx, 10*time.Minute, 20*time.Millisecond, func() (bool, error) {
		if running.IsZero() {
			ok, err := p.running(ctx, fmt.Sprintf("bench-fs-%s-%d", tag, len(files)-1), 1)
			if err != nil {
				return false, err
			}
			if ok {
				running = time.Now()
			}
		}
		var got int64
		for _, t := range topics {
			got += topicCount(ctx, adm, t)
		}
		if got > 0 && first.IsZero() {
			first = time.Now()
		}
		if got >= int64(n) {
			all = time.Now()
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		b.Fatalf("%s: %s: not all %d records in Kafka: %v", p.name, what, n, err)
	}
	peak := sampler.Peak()
	after, _ := usageOf(p.pids())
	for i := range files {
		if err := p.remove(ctx, time.Minute, fmt.Sprintf("bench-fs-%s-%d", tag, i)); err != nil {
			b.Fatal(err)
		}
	}
	if len(files) == 1 && !running.IsZero() {
		s.add("FileStreamSource: POST → RUNNING", "s", false, p.name, running.Sub(posted).Seconds())
	}
	s.addRate(what+": records/s, first record → last", p.name, int64(n), all.Sub(first))
	s.add(what+": POST → last record", "s", false, p.name, all.Sub(posted).Seconds())
	s.add(what+": CPU per record", "µs", false, p.name, float64((after.cpu-before.cpu).Microseconds())/float64(n))
	s.add(what+": peak resident memory", "MB", false, p.name, float64(peak)/(1<<20))
	return topics
}

// runFileSink runs a FileStreamSink of tasks tasks from topic into a file
// and times it until the file holds all n lines.
func runFileSink(b *testing.B, ctx context.Context, s *sheet, p *peer, dir, tag, topic string, tasks, n int) {
	what := fmt.Sprintf("FileStreamSink, %d task(s)", tasks)
	out := filepath.Join(dir, "out-"+tag+".txt")
	name := "bench-fsink-" + tag
	before, err := usageOf(p.pids())
	if err != nil {
		b.Fatal(err)
	}
	sampler := samplePeak(p.pids, 100*time.Millisecond)
	posted := time.Now()
	cfg := map[string]string{"connector.class": fileSinkClass, "tasks.max": strconv.Itoa(tasks), "file": out, "topics": topic,
		"key.converter": stringConverter, "value.converter": stringConverter}
	if err := p.create(ctx, time.Minute, name, cfg); err != nil {
		b.Fatal(err)
	}
	want := int64(n) * (lineBytes + 1)
	var first, all time.Time
	err = waitUntil(ctx, 10*time.Minute, 5*time.Millisecond, func() (bool, error) {
		st, err := os.Stat(out)
		if err != nil {
			return false, nil
		}
		if st.Size() > 0 && first.IsZero() {
			first = time.Now()
		}
		if st.Size() >= want {
			all = time.Now()
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		b.Fatalf("%s: %s: %s not complete: %v", p.name, what, out, err)
	}
	peak := sampler.Peak()
	after, _ := usageOf(p.pids())
	if err := p.remove(ctx, time.Minute, name); err != nil {
		b.Fatal(err)
	}
	os.Remove(out)
	s.add(what+": POST → first line written", "s", false, p.name, first.Sub(posted).Seconds())
	s.addRate(what+": records/s, first line → last", p.name, int64(n), all.Sub(first))
	s.add(what+": CPU per record", "µs", false, p.name, float64((after.cpu-before.cpu).Microseconds())/float64(n))
	s.add(what+": peak resident memory", "MB", false, p.name, float64(peak)/(1<<20))
}
