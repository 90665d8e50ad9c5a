package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon"
	"github.com/kcd-project/kcd/daemon/client"
	"github.com/kcd-project/kcd/daemon/config"
	"github.com/kcd-project/kcd/daemon/systemtest"
	"github.com/kcd-project/kcd/internal/testenv"
	"github.com/kcd-project/kcd/migrate"
)

var (
	migConnectors = flag.Int("bench.migrate.connectors", 1000, "BenchmarkMigrateImport: connectors")
	migPartitions = flag.Int("bench.migrate.partitions", 90, "BenchmarkMigrateImport: source partitions per connector")
	migRewritten  = flag.Int("bench.migrate.rewritten", 5, "BenchmarkMigrateImport: partitions per connector written three times (two stale records, then the latest)")
)

// BenchmarkMigrateImport measures kcctl migrate from-kafka's work on a
// Kafka Connect cluster of 1,000 connectors and 100,000 offset records.
// It writes, into fresh topics on the test environment's Kafka, the
// internal topics such a cluster has: per FileStream source connector a
// config, a task config, a commit, a target state (PAUSED, so that kcd
// runs no 1,000 tasks afterwards), a connector and a task status, and 90
// source partitions of which 5 are written three times (the latest record
// wins): 90,000 offsets from 100,000 records. Then it runs, as kcctl
// does, Read (the three topics), the plan (kcd's plugins, BuildPlan, the
// dry-run import that fills in the actions) and Apply (open the import,
// stage the offsets in chunks, commit) into a one-node kcd in this
// process on the same Kafka, and checks that kcd holds every connector
// and the latest offsets. node=worker is a node that also runs a worker
// (which starts on the connectors as they appear), node=raft-only one
// without.
//
// Metrics, per phase (read, plan, apply): -s wall time; -heap-MB the
// largest Go heap in use (live and unswept objects, sampled every 2 ms);
// -alloc-MB everything allocated; -rss-MB the growth of the process's peak
// RSS (VmHWM, reset before the phase) over its RSS when the phase began.
// Apply's time is stage-s (opening the import and staging the offsets)
// plus commit-s; done-s is the wait after the commit answered for the
// import's done state; settled-s (node=worker) the time from the
// commit's answer until every connector and its task report PAUSED (or
// unsettled: how many do not, when that stays so for a minute).
// cluster-MB is the live heap the read Cluster holds. The kcd node runs
// in this process: apply's memory is kcctl's and the node's together.
// Needs the test environment's Kafka (KCD_TEST_KAFKA or .testenv/env);
// run it with -benchtime=1x.
func BenchmarkMigrateImport(b *testing.B) {
	brokers := testenv.Lookup(testenv.Kafka)
	if brokers == "" {
		b.Skip("needs KCD_TEST_KAFKA (or .testenv/env): make testenv-up")
	}
	for _, node := range []struct {
		name   string
		worker bool
	}{{"node=worker", true}, {"node=raft-only", false}} {
		b.Run(node.name, func(b *testing.B) {
			for b.Loop() {
				measureMigrateImport(b, strings.Split(brokers, ","), node.worker)
			}
		})
	}
}

func measureMigrateImport(b *testing.B, brokers []string, worker bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b.StopTimer()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	stamp := time.Now().UnixNano()
	topics := migrate.Topics{
		Config: fmt.Sprintf("kcd-bench-mig-%d-configs", stamp),
		Offset: fmt.Sprintf("kcd-bench-mig-%d-offsets", stamp),
		Status: fmt.Sprintf("kcd-bench-mig-%d-status", stamp),
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = kadm.NewClient(cl).DeleteTopics(ctx, topics.Config, topics.Offset, topics.Status)
	}()
	gen := migGen{connectors: *migConnectors, partitions: *migPartitions, rewritten: *migRewritten}
	t0 := time.Now()
	records, err := gen.produce(ctx, cl, topics)
	if err != nil {
		b.Fatal(err)
	}
	progress("migrate: wrote %d config, %d offset and %d status records in %.1f s", records[0], records[1], records[2], time.Since(t0).Seconds())

	url, stop := startMigrateNode(b, brokers, worker)
	defer stop()
	kcd := client.New(url)
	var imp migrate.Importer = kcd

	var m memWatch
	b.StartTimer()

	// Read.
	m.start()
	start := time.Now()
	c, err := migrate.Read(ctx, cl, migrate.ReadOptions{Topics: topics})
	if err != nil {
		b.Fatal(err)
	}
	read := m.stop(b, "read", time.Since(start))
	if n := countOffsets(c); len(c.Connectors) != gen.connectors || n != gen.connectors*gen.partitions {
		b.Fatalf("read %d connectors and %d source offsets, want %d and %d", len(c.Connectors), n, gen.connectors, gen.connectors*gen.partitions)
	}
	runtime.GC()
	b.ReportMetric(float64(liveHeap()-m.live0)/mb, "cluster-MB")

	// Plan.
	m.start()
	start = time.Now()
	plugins, err := kcd.Plugins(ctx, false)
	if err != nil {
		b.Fatal(err)
	}
	cat := make([]migrate.Plugin, len(plugins))
	for i, p := range plugins {
		cat[i] = migrate.Plugin{Class: p.Class, Type: string(p.Type), Version: p.Version}
	}
	plan := migrate.BuildPlan(c, migrate.NewCatalogue(cat))
	dry, err := imp.Import(ctx, plan.ImportRequest(c, false, true))
	if err != nil {
		b.Fatal(err)
	}
	plan.SetActions(dry.Items)
	planned := m.stop(b, "plan", time.Since(start))
	for _, pc := range plan.Connectors {
		if pc.Action != api.ImportCreate || pc.Target != "PAUSED" || pc.Tasks != 1 || len(pc.Missing) > 0 {
			b.Fatalf("plan: %+v", pc)
		}
	}

	// Apply.
	m.start()
	start = time.Now()
	var staged time.Time // when the last chunk of offsets was staged
	im, err := migrate.Apply(ctx, imp, c, plan, false, func(migrate.Progress) { staged = time.Now() })
	if err != nil {
		b.Fatal(err)
	}
	applied := m.stop(b, "apply", time.Since(start))
	committed := time.Now()
	stage := staged.Sub(start)
	b.ReportMetric(stage.Seconds(), "stage-s")
	b.ReportMetric((applied - stage).Seconds(), "commit-s")
	start = time.Now()
	for im.State != api.ImportDone {
		if im.State == api.ImportAborted || ctx.Err() != nil {
			b.Fatalf("import %s: %s %s (%v)", im.ID, im.State, im.Error, ctx.Err())
		}
		time.Sleep(20 * time.Millisecond)
		if im, err = kcd.GetImport(ctx, im.ID); err != nil {
			b.Fatal(err)
		}
	}
	done := time.Since(start)
	b.ReportMetric(done.Seconds(), "done-s")
	progress("migrate: %d connectors, %d offsets: read %.2f s, plan %.2f s, apply %.2f s (staging %.2f s, commit %.2f s), then done after %.2f s",
		len(c.Connectors), countOffsets(c), read.Seconds(), planned.Seconds(), applied.Seconds(),
		stage.Seconds(), (applied - stage).Seconds(), done.Seconds())

	// What kcd now holds: every connector, and the latest offsets.
	var names []string
	if err := getJSON(ctx, url+"/connectors", &names); err != nil {
		b.Fatal(err)
	}
	if len(names) != gen.connectors {
		b.Fatalf("kcd has %d connectors, want %d", len(names), gen.connectors)
	}
	for _, i := range []int{0, gen.connectors / 2, gen.connectors - 1} {
		if err := gen.check(ctx, url, i); err != nil {
			b.Fatal(err)
		}
	}
	if !worker {
		return
	}
	// How long after the commit the worker has them all in their state.
	// States that do not change for a minute are reported, not waited for.
	var (
		prev    string
		changed = time.Now()
		settled time.Duration
	)
	for {
		var st map[string]struct {
			Status api.ConnectorStateInfo `json:"status"`
		}
		states := map[string]int{}
		rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
		err := getJSON(rctx, url+"/connectors?expand=status", &st)
		rcancel()
		for _, s := range st {
			tasks := make([]string, 0, len(s.Status.Tasks))
			for _, t := range s.Status.Tasks {
				tasks = append(tasks, t.State)
			}
			states[strings.TrimSpace(s.Status.Connector.State+" "+strings.Join(tasks, ","))]++
		}
		if states["PAUSED PAUSED"] == gen.connectors {
			settled = time.Since(committed)
			break
		}
		if now := fmt.Sprint(states, err); now != prev {
			prev, changed = now, time.Now()
		}
		if time.Since(changed) > time.Minute || ctx.Err() != nil {
			b.ReportMetric(float64(gen.connectors-states["PAUSED PAUSED"]), "unsettled")
			progress("migrate: WARNING: %.0f s after the commit, %d of %d connectors are not PAUSED with their task, unchanged for a minute: %v (%v)",
				time.Since(committed).Seconds(), gen.connectors-states["PAUSED PAUSED"], gen.connectors, states, err)
			return
		}
		time.Sleep(time.Second) // a status listing of 1,000 connectors is work for the node too
	}
	b.ReportMetric(settled.Seconds(), "settled-s")
	progress("migrate: every connector and task PAUSED in kcd %.2f s after the commit answered", settled.Seconds())
}

const mb = 1 << 20

// migGen makes the internal topics of a Kafka Connect cluster.
type migGen struct{ connectors, partitions, rewritten int }

func (g migGen) name(i int) string { return fmt.Sprintf("bench-mig-%05d", i) }

func (g migGen) config(i int) map[string]string {
	return map[string]string{
		"name": g.name(i), "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
		"tasks.max": "1", "file": fmt.Sprintf("/var/lib/bench/%05d.txt", i), "topic": "bench-mig-lines",
		"value.converter": "org.apache.kafka.connect.storage.StringConverter",
	}
}

// offset is the latest position of partition p of connector i: stale
// records of a rewritten partition carry smaller positions.
func (g migGen) offset(i, p, version int) int64 { return int64(i*1_000_000 + p*1000 + version) }

func partitionKey(name string, i, p int) []byte {
	k, _ := json.Marshal([]any{name, map[string]string{"filename": fmt.Sprintf("/var/lib/bench/%05d.txt#%03d", i, p)}})
	return k
}

// produce writes the three topics as Kafka Connect's workers would: the
// config topic (one partition) connector by connector, the offsets topic
// (25 partitions, keyed, murmur2 as Java's producer) and the status topic
// (5 partitions). It returns how many records each got.
func (g migGen) produce(ctx context.Context, cl *kgo.Client, t migrate.Topics) ([3]int, error) {
	adm := kadm.NewClient(cl)
	compact := map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	for _, tp := range []struct {
		name  string
		parts int32
	}{{t.Config, 1}, {t.Offset, 25}, {t.Status, 5}} {
		if _, err := adm.CreateTopic(ctx, tp.parts, 1, compact, tp.name); err != nil {
			return [3]int{}, fmt.Errorf("create %s: %w", tp.name, err)
		}
	}
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
		n     [3]int
	)
	send := func(topic string, kind int, key string, value any) {
		v, err := json.Marshal(value)
		if err != nil {
			panic(err)
		}
		n[kind]++
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: v}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				errMu.Lock()
				first = cmpErr(first, err)
				errMu.Unlock()
			}
		})
	}
	for i := range g.connectors {
		name := g.name(i)
		task := g.config(i)
		task["task.class"] = "org.apache.kafka.connect.file.FileStreamSourceTask"
		send(t.Config, 0, "target-state-"+name, map[string]string{"state": "PAUSED", "state.v2": "PAUSED"})
		send(t.Config, 0, "connector-"+name, map[string]any{"properties": g.config(i)})
		send(t.Config, 0, "task-"+name+"-0", map[string]any{"properties": task})
		send(t.Config, 0, "commit-"+name, map[string]int{"tasks": 1})
		send(t.Status, 2, "status-connector-"+name, map[string]any{"state": "PAUSED", "trace": nil, "worker_id": "connect-1:8083", "generation": 7})
		send(t.Status, 2, "status-task-"+name+"-0", map[string]any{"state": "PAUSED", "trace": nil, "worker_id": "connect-1:8083", "generation": 7})
		for p := range g.partitions {
			versions := 1
			if p < g.rewritten {
				versions = 3
			}
			for v := range versions {
				k := partitionKey(name, i, p)
				send(t.Offset, 1, string(k), map[string]int64{"position": g.offset(i, p, v-versions+1)})
			}
		}
	}
	wg.Wait()
	return n, first
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// check compares connector i's offsets in kcd with the latest written.
func (g migGen) check(ctx context.Context, url string, i int) error {
	var got struct {
		Offsets []struct {
			Partition map[string]any `json:"partition"`
			Offset    map[string]any `json:"offset"`
		} `json:"offsets"`
	}
	if err := getJSON(ctx, url+"/connectors/"+g.name(i)+"/offsets", &got); err != nil {
		return err
	}
	if len(got.Offsets) != g.partitions {
		return fmt.Errorf("%s: %d offsets in kcd, want %d", g.name(i), len(got.Offsets), g.partitions)
	}
	for _, o := range got.Offsets {
		f, _ := o.Partition["filename"].(string)
		p, err := strconv.Atoi(f[strings.LastIndexByte(f, '#')+1:])
		if err != nil {
			return fmt.Errorf("%s: partition %v", g.name(i), o.Partition)
		}
		if pos := fmt.Sprint(o.Offset["position"]); pos != strconv.FormatInt(g.offset(i, p, 0), 10) {
			return fmt.Errorf("%s: partition %d at %s in kcd, want %d (the latest record)", g.name(i), p, pos, g.offset(i, p, 0))
		}
	}
	return nil
}

func countOffsets(c *migrate.Cluster) int {
	n := 0
	for _, conn := range c.Connectors {
		n += len(conn.SourceOffsets)
	}
	return n
}

// startMigrateNode starts a one-node kcd in this process on brokers, with
// a worker or as a Raft member only.
func startMigrateNode(b *testing.B, brokers []string, worker bool) (string, func()) {
	cfg := config.Default()
	cfg.DataDir = dataDir(b)
	cfg.RESTAddr = "127.0.0.1:0"
	cfg.PeerAddr = "127.0.0.1:0"
	cfg.BootstrapServers = brokers
	if !worker {
		cfg.Roles = []string{"raft"}
	}
	n := daemon.New(cfg, slog.New(slog.DiscardHandler))
	if err := n.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		var names []string
		if err := getJSON(ctx, n.RESTURL()+"/connectors", &names); err == nil {
			break
		}
		if ctx.Err() != nil {
			n.Close()
			b.Fatal("kcd never served /connectors")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return n.RESTURL(), func() { n.Close() }
}

// memWatch measures one phase: the largest heap in use, what was
// allocated, and the growth of the peak RSS.
type memWatch struct {
	stopc            chan struct{}
	done             chan int64
	allocs0, rss0    int64
	live0            int64
	clearRefsFailed  bool
	clearRefsWarning sync.Once
}

var memSamples = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/live:bytes"}}

func readMem() (objects, allocs, live int64) {
	s := make([]metrics.Sample, len(memSamples))
	copy(s, memSamples)
	metrics.Read(s)
	return int64(s[0].Value.Uint64()), int64(s[1].Value.Uint64()), int64(s[2].Value.Uint64())
}

func liveHeap() int64 { _, _, l := readMem(); return l }

func (m *memWatch) start() {
	// A GC, and the freed pages back to the OS: the RSS the phase starts
	// from, and its growth, do not depend on what ran before.
	debug.FreeOSMemory()
	_, m.allocs0, m.live0 = readMem()
	// Writing 5 to clear_refs resets VmHWM to the current RSS.
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		m.clearRefsFailed = true
	}
	m.rss0, _ = procStatus("VmRSS")
	m.stopc, m.done = make(chan struct{}), make(chan int64, 1)
	go func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		var peak int64
		for {
			o, _, _ := readMem()
			peak = max(peak, o)
			select {
			case <-m.stopc:
				m.done <- peak
				return
			case <-tick.C:
			}
		}
	}()
}

func (m *memWatch) stop(b *testing.B, phase string, took time.Duration) time.Duration {
	close(m.stopc)
	peak := <-m.done
	_, allocs, _ := readMem()
	hwm, _ := procStatus("VmHWM")
	b.ReportMetric(took.Seconds(), phase+"-s")
	b.ReportMetric(float64(peak)/mb, phase+"-heap-MB")
	b.ReportMetric(float64(allocs-m.allocs0)/mb, phase+"-alloc-MB")
	if m.clearRefsFailed {
		m.clearRefsWarning.Do(func() {
			progress("migrate: /proc/self/clear_refs not writable: -rss-MB is the growth of the process's lifetime peak")
		})
	}
	b.ReportMetric(float64(max(0, hwm-m.rss0))/mb, phase+"-rss-MB")
	progress("migrate: %s: %.2f s, heap in use at most %.1f MB, %.1f MB allocated, peak RSS +%.1f MB",
		phase, took.Seconds(), float64(peak)/mb, float64(allocs-m.allocs0)/mb, float64(max(0, hwm-m.rss0))/mb)
	return took
}

// procStatus reads a kB field of this process's /proc status, in bytes.
func procStatus(field string) (int64, error) { return systemtest.ProcStatusBytes(os.Getpid(), field) }

// getJSON GETs url and decodes its 200 answer into out.
func getJSON(ctx context.Context, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // offsets compare exactly
	return dec.Decode(out)
}
