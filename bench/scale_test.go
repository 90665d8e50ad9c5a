package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	_ "net/http/pprof" // -bench.scale.pprof
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon"
	"github.com/kcd-project/kcd/daemon/config"
	"github.com/kcd-project/kcd/daemon/systemtest"
	"github.com/kcd-project/kcd/internal/testenv"
)

var (
	scaleConnectors = flag.Int("bench.scale.connectors", 1000, "BenchmarkScale: connectors created")
	scaleTasks      = flag.Int("bench.scale.tasks", 10, "BenchmarkScale: tasks of each connector")
	scaleWorkers    = flag.Int("bench.scale.workers", 100, "BenchmarkScale: worker-only nodes (besides the three raft-only nodes)")
	scaleCreators   = flag.Int("bench.scale.creators", 8, "BenchmarkScale: POST /connectors in flight at once")
	scaleRESTConns  = flag.Int("bench.scale.rest-max-connections", 0, "BenchmarkScale: the Raft nodes' rest-max-connections (0: the default, 512, or 12 per worker when more, as docs/cluster.md sizes it)")
	scaleWait       = flag.Duration("bench.scale.wait", 30*time.Minute, "BenchmarkScale: how long it waits for every unit to run, after the last create")
	scalePprof      = flag.String("bench.scale.pprof", "", "BenchmarkScale: serve net/http/pprof on this address while it runs (e.g. 127.0.0.1:6060)")
	scaleLog        = flag.String("bench.scale.log", "error", "BenchmarkScale: the nodes' log level on stderr (debug, info, warn, error)")
)

// BenchmarkScale is kcd alone at scale: in this process, a Raft group of
// three raft-only nodes and -bench.scale.workers worker-only nodes, each
// with its own data dir, REST port (and peer port) on 127.0.0.1 and its
// own clients of the test environment's Kafka. It creates
// -bench.scale.connectors Datagen connectors of -bench.scale.tasks tasks,
// each task emitting one record and then idling (max.records=1: a poll
// every 5 s), so that the process's CPU goes to the coordination, and
// measures:
//
//   - assignment: from the first POST, and from the 201 of the last one,
//     until every connector and task reports RUNNING (GET
//     /connectors?expand=status) on the worker the assignment names, with
//     nothing left to revoke (GET /kcd/v1/assignments);
//   - the Raft log: entries and command bytes the leader applied over the
//     creation (and the snapshots taken), in all and per connector, and
//     the leader's store image at the end, by key prefix;
//   - memory: Go heap in use and RSS of the whole process (all nodes
//     share it) before and after, and its peak;
//   - a leader kill (daemon.Node.Kill: no leadership transfer, no
//     graceful stop): until a survivor leads, and until the coordinator
//     holds every worker's session again with every unit running once
//     where it ran, counting the tasks that moved or restarted (none
//     has to: the killed node runs none).
//
// Source tasks share each worker's producer (exactly-once source support
// disabled; enabled, every task would open a transactional producer of its
// own) and commit offsets every hour, so that neither the broker nor the
// offsets' writes weigh on what is measured. It prints a table and writes
// it to $BENCH_OUT/scale.md. Run with -benchtime=1x.
func BenchmarkScale(b *testing.B) {
	for b.Loop() {
		runScale(b)
	}
}

// scaleNode is one node of the scale cluster.
type scaleNode struct {
	*daemon.Node
	raft   bool
	url    string
	killed bool
}

func runScale(b *testing.B) {
	brokers := testenv.Require(b, testenv.Kafka)
	ctx := context.Background()
	conns, tasks, workers := *scaleConnectors, *scaleTasks, *scaleWorkers
	units := conns * (tasks + 1)
	dir := dataDir(b)
	s := newSheet()
	s.noteLoad()

	if *scalePprof != "" {
		srv := &http.Server{Addr: *scalePprof, Handler: http.DefaultServeMux, ReadHeaderTimeout: 10 * time.Second}
		go srv.ListenAndServe()
		b.Cleanup(func() { srv.Close() })
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*scaleLog)); err != nil {
		b.Fatalf("-bench.scale.log: %v", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	_, adm := kafkaClients(b, brokers)
	topic := "kcd-bench-scale-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		b.Fatalf("create %s: %v", topic, err)
	}
	b.Cleanup(func() { adm.DeleteTopics(context.Background(), topic) })

	// The cluster: three raft-only nodes, then the workers, whose seeds
	// are the Raft nodes' REST URLs.
	started := time.Now()
	var nodes []*scaleNode
	b.Cleanup(func() {
		// The workers first, in parallel (each Close waits for its
		// tasks), while the Raft nodes still take their last writes.
		for _, raft := range []bool{false, true} {
			var wg sync.WaitGroup
			for _, n := range nodes {
				if !n.killed && n.raft == raft {
					wg.Go(func() { n.Close() })
				}
			}
			wg.Wait()
		}
	})
	base := func(name string) config.Config {
		cfg := config.Default()
		cfg.DataDir = filepath.Join(dir, name)
		cfg.RESTAddr = "127.0.0.1:0"
		cfg.BootstrapServers = strings.Split(brokers, ",")
		cfg.JoinToken = "kcd-bench-scale-join-token"
		cfg.ExactlyOnceSourceSupport = "disabled"
		cfg.OffsetFlushInterval = time.Hour
		return cfg
	}
	var peers, members []string
	for i := range 3 {
		a, err := testenv.FreeAddr()
		if err != nil {
			b.Fatal(err)
		}
		peers = append(peers, a)
		members = append(members, fmt.Sprintf("%d=%s", i+1, a))
	}
	var seeds []string
	for i := range 3 {
		cfg := base(fmt.Sprintf("raft-%d", i+1))
		cfg.Roles = []string{config.RoleRaft}
		cfg.NodeID = uint64(i + 1)
		cfg.PeerAddr = peers[i]
		cfg.InitialCluster = strings.Join(members, ",")
		// A worker-only node holds up to about 12 connections to each Raft
		// node (docs/cluster.md): 100 workers fill the default 512.
		cfg.RESTMaxConnections = max(cfg.RESTMaxConnections, 12*workers)
		if *scaleRESTConns > 0 {
			cfg.RESTMaxConnections = *scaleRESTConns
		}
		n := startScaleNode(b, ctx, cfg, log)
		n.raft = true
		nodes = append(nodes, n)
		seeds = append(seeds, n.url)
	}
	for i := range workers {
		cfg := base(fmt.Sprintf("worker-%d", i+1))
		cfg.Roles = []string{config.RoleWorker}
		cfg.Seeds = seeds
		nodes = append(nodes, startScaleNode(b, ctx, cfg, log))
	}
	raftNodes := nodes[:3]
	via := newPeer(sideKcd, raftNodes[0].url, nil)
	via.hc = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	if err := waitUntil(ctx, 5*time.Minute, 200*time.Millisecond, func() (bool, error) {
		alive, err := aliveWorkers(ctx, via)
		return err == nil && alive == workers, nil
	}); err != nil {
		b.Fatalf("%d workers did not all register: %v", workers, err)
	}
	progress("scale: 3 raft-only nodes and %d workers up after %v", workers, time.Since(started).Round(time.Millisecond))

	lead := leaderOf(raftNodes)
	if lead == nil {
		b.Fatal("no leader")
	}
	ops0 := workerStoreOps(ctx, nodes)
	heap0, rss0 := memNow(b)
	idx0, log0 := lead.Raft().AppliedIndex(), lead.Raft().LogStats()
	cpu0 := processCPU(b)
	peak := samplePeak(func() []int { return []int{os.Getpid()} }, 500*time.Millisecond)

	// Create the connectors, -bench.scale.creators at a time, through
	// the three Raft nodes in turn.
	var next atomic.Int64
	var createErr error
	var errOnce sync.Once
	var lastCreated atomic.Int64 // UnixNano of the last 201
	first := time.Now()
	var wg sync.WaitGroup
	stopSay := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopSay:
				return
			case <-t.C:
				progress("scale: creating: %d of %d POSTed after %v", min(next.Load(), int64(conns)), conns, time.Since(first).Round(time.Second))
			}
		}
	}()
	for c := range *scaleCreators {
		p := newPeer(sideKcd, raftNodes[c%3].url, nil)
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(conns) {
					return
				}
				cfg := map[string]string{"connector.class": "Datagen", "topic": topic, "tasks.max": strconv.Itoa(tasks), "max.records": "1"}
				if err := scaleCreate(ctx, p, scaleName(int(i)), cfg); err != nil {
					errOnce.Do(func() { createErr = err })
					return
				}
				now := time.Now().UnixNano()
				for {
					old := lastCreated.Load()
					if now <= old || lastCreated.CompareAndSwap(old, now) {
						break
					}
				}
			}
		})
	}
	wg.Wait()
	close(stopSay)
	if createErr != nil {
		b.Fatal(createErr)
	}
	last := time.Unix(0, lastCreated.Load())
	progress("scale: %d connectors created in %v", conns, last.Sub(first).Round(time.Millisecond))

	// Until every unit runs where the assignment says.
	var done time.Time
	maxFailed := 0
	lastSay := time.Now()
	if err := waitUntil(ctx, *scaleWait, 250*time.Millisecond, func() (bool, error) {
		running, failed := scaleRunning(ctx, via)
		maxFailed = max(maxFailed, failed)
		if time.Since(lastSay) > 10*time.Second {
			progress("scale: %d of %d units RUNNING where assigned (%d FAILED, to be restarted), %v after the last create", running, units, failed, time.Since(last).Round(time.Second))
			lastSay = time.Now()
		}
		if running < units {
			return false, nil
		}
		done = time.Now()
		return true, nil
	}); err != nil {
		b.Fatalf("not every unit RUNNING: %v", err)
	}
	cpu := processCPU(b) - cpu0
	peakRSS := peak.Peak()
	ops1 := workerStoreOps(ctx, nodes)
	idx1, log1 := lead.Raft().AppliedIndex(), lead.Raft().LogStats()
	heap1, rss1 := memNow(b)
	entries := float64(idx1 - idx0)
	entryBytes := float64(log1.EntryBytes - log0.EntryBytes)
	progress("scale: every unit RUNNING %v after the last create, %v after the first", done.Sub(last).Round(time.Millisecond), done.Sub(first).Round(time.Millisecond))

	size := fmt.Sprintf("%d connectors × %d tasks, %d workers", conns, tasks, workers)
	s.add("creating "+size+": first POST → last 201", "s", false, sideKcd, last.Sub(first).Seconds())
	s.add("first POST → every unit RUNNING where assigned", "s", false, sideKcd, done.Sub(first).Seconds())
	s.add("last 201 → every unit RUNNING where assigned", "s", false, sideKcd, done.Sub(last).Seconds())
	s.add("units FAILED at once (most seen in one look; restarted by kcd)", "units", false, sideKcd, float64(maxFailed))
	s.add("CPU of the process, first POST → all RUNNING", "s", false, sideKcd, cpu.Seconds())
	reads := ops1["get"] + ops1["scan"] + ops1["revision"] - ops0["get"] - ops0["scan"] - ops0["revision"]
	writes := ops1["put"] + ops1["batch"] + ops1["compare_and_set"] + ops1["delete"] - ops0["put"] - ops0["batch"] - ops0["compare_and_set"] - ops0["delete"]
	s.add("store reads of the workers (over REST to the Raft nodes), first POST → all RUNNING", "reads", false, sideKcd, reads)
	s.add("store reads of the workers per connector", "reads", false, sideKcd, reads/float64(conns))
	s.add("store writes of the workers per connector", "writes", false, sideKcd, writes/float64(conns))
	s.add("Raft log: entries appended over the creation", "entries", false, sideKcd, entries)
	s.add("Raft log: command bytes appended over the creation", "MB", false, sideKcd, entryBytes/1e6)
	s.add("Raft log: entries per connector", "entries", false, sideKcd, entries/float64(conns))
	s.add("Raft log: command bytes per connector", "KB", false, sideKcd, entryBytes/float64(conns)/1e3)
	s.add("Raft log: snapshots taken over the creation", "snapshots", false, sideKcd, float64(log1.Snapshots-log0.Snapshots))
	if log1.SnapshotBytes > 0 {
		s.add("Raft log: size of the last snapshot", "MB", false, sideKcd, float64(log1.SnapshotBytes)/1e6)
	}
	image, byPrefix := storeImage(b, lead)
	s.add("leader's store: state image (bbolt) at the end", "MB", false, sideKcd, float64(image)/1e6)
	for _, p := range byPrefix {
		s.add("leader's store: keys and values under "+p.prefix, "KB", false, sideKcd, float64(p.bytes)/1e3)
	}
	s.add("process Go heap in use before (all nodes share the process)", "MB", false, sideKcd, float64(heap0)/1e6)
	s.add("process Go heap in use after", "MB", false, sideKcd, float64(heap1)/1e6)
	s.add("process RSS before", "MB", false, sideKcd, float64(rss0)/1e6)
	s.add("process RSS after", "MB", false, sideKcd, float64(rss1)/1e6)
	s.add("process RSS peak during the creation", "MB", false, sideKcd, float64(peakRSS)/1e6)

	b.ReportMetric(done.Sub(last).Seconds(), "assign-after-last-s")
	b.ReportMetric(done.Sub(first).Seconds(), "assign-after-first-s")
	b.ReportMetric(entries, "raft-entries")
	b.ReportMetric(reads/float64(conns), "worker-reads/connector")
	b.ReportMetric(entryBytes/float64(conns), "raft-B/connector")
	b.ReportMetric(float64(heap1)/1e6, "heap-after-MB")
	b.ReportMetric(float64(rss1)/1e6, "rss-after-MB")

	scaleLeaderKill(b, ctx, s, nodes, via, conns, tasks)

	table := s.markdownKcd()
	fmt.Println(table)
	if out := os.Getenv("BENCH_OUT"); out != "" {
		if err := os.WriteFile(filepath.Join(out, "scale.md"), []byte(table), 0o644); err != nil {
			progress("write table: %v", err)
		}
	}
}

// markdownKcd renders a sheet of kcd's figures alone: best and median of
// each metric.
func (s *sheet) markdownKcd() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "| metric | unit | kcd best | kcd median | samples |\n")
	fmt.Fprintf(&b, "|---|---|--:|--:|--:|\n")
	for _, m := range s.order {
		r := s.rows[m]
		best, med, ok := r.stats(r.kcd)
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d |\n", r.metric, r.unit, num(best), num(med), len(r.kcd))
	}
	if len(s.loadavg) > 0 {
		fmt.Fprintf(&b, "\nLoad average at the start of each round: %s\n", strings.Join(s.loadavg, "; "))
	}
	return b.String()
}

// scaleCreate POSTs a connector until it is created. A 409 that says it
// already exists, after a try that failed without an answer (a timeout
// under load) or with a 5xx, means that try went through.
func scaleCreate(ctx context.Context, p *peer, name string, cfg map[string]string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	unsure := false
	for {
		code, body, err := p.do(ctx, http.MethodPost, "/connectors", map[string]any{"name": name, "config": cfg})
		switch {
		case err == nil && code == http.StatusCreated:
			return nil
		case err == nil && code == http.StatusConflict && unsure && strings.Contains(string(body), "already exists"):
			return nil
		case err == nil && code/100 == 4 && code != http.StatusConflict:
			return fmt.Errorf("create %s: %d %s", name, code, body)
		}
		unsure = unsure || err != nil || code/100 == 5
		select {
		case <-ctx.Done():
			return fmt.Errorf("create %s: %d %s %v", name, code, body, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func scaleName(i int) string { return fmt.Sprintf("scale-%05d", i) }

// startScaleNode starts a node of the scale cluster.
func startScaleNode(b *testing.B, ctx context.Context, cfg config.Config, log *slog.Logger) *scaleNode {
	b.Helper()
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	n := daemon.New(cfg, log)
	if err := n.Start(ctx); err != nil {
		b.Fatal(err)
	}
	return &scaleNode{Node: n, url: n.RESTURL()}
}

// leaderOf returns the Raft node that leads, or nil.
func leaderOf(nodes []*scaleNode) *scaleNode {
	for _, n := range nodes {
		if !n.killed && n.Raft() != nil && n.Raft().IsLeader() {
			return n
		}
	}
	return nil
}

// aliveWorkers counts the workers that hold a session, as p's coordinator
// lists them.
func aliveWorkers(ctx context.Context, p *peer) (int, error) {
	var ws []api.WorkerView
	if err := p.getJSON(ctx, "/kcd/v1/workers", &ws); err != nil {
		return 0, err
	}
	n := 0
	for _, w := range ws {
		if w.State == "alive" {
			n++
		}
	}
	return n, nil
}

func (p *peer) getJSON(ctx context.Context, path string, out any) error {
	code, body, err := p.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, code, firstLine(string(body)))
	}
	return json.Unmarshal(body, out)
}

// scaleRunning counts the units (connectors and tasks) whose status is
// RUNNING on the worker the assignment names, with no revoke pending, and
// those FAILED (kcd starts a failed one again after a backoff: not an end).
func scaleRunning(ctx context.Context, p *peer) (running, failed int) {
	var sts map[string]struct {
		Status struct {
			Connector struct {
				State    string `json:"state"`
				Trace    string `json:"trace"`
				WorkerID string `json:"worker_id"`
			} `json:"connector"`
			Tasks []struct {
				ID       int    `json:"id"`
				State    string `json:"state"`
				Trace    string `json:"trace"`
				WorkerID string `json:"worker_id"`
			} `json:"tasks"`
		} `json:"status"`
	}
	if err := p.getJSON(ctx, "/connectors?expand=status", &sts); err != nil {
		return 0, 0 // an election, a forward in flight: look again
	}
	var as []api.AssignmentView
	if err := p.getJSON(ctx, "/kcd/v1/assignments", &as); err != nil {
		return 0, 0
	}
	owner := make(map[string]string, len(as))
	for _, a := range as {
		if a.RevokingTo != "" {
			continue
		}
		owner[unitName(a.Connector, a.Task)] = a.Worker
	}
	for name, st := range sts {
		c := st.Status.Connector
		if c.State == "FAILED" {
			failed++
		}
		if c.State == "RUNNING" && c.WorkerID != "" && owner[unitName(name, nil)] == c.WorkerID {
			running++
		}
		for _, t := range st.Status.Tasks {
			if t.State == "FAILED" {
				failed++
			}
			if t.State == "RUNNING" && t.WorkerID != "" && owner[unitName(name, &t.ID)] == t.WorkerID {
				running++
			}
		}
	}
	return running, failed
}

func unitName(connector string, task *int) string {
	if task == nil {
		return connector
	}
	return connector + "/" + strconv.Itoa(*task)
}

// memNow is the process's Go heap in use and RSS, after a collection.
func memNow(b *testing.B) (heap, rss int64) {
	b.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, err := systemtest.ProcStatusBytes(os.Getpid(), "VmRSS")
	if err != nil {
		b.Fatal(err)
	}
	return int64(ms.HeapInuse), rss
}

type prefixBytes struct {
	prefix string
	bytes  int64
}

// storeImage is the size of the leader's state image (what a snapshot
// holds) and the bytes of its keys and values by prefix (up to the second
// '/'), largest first.
func storeImage(b *testing.B, n *scaleNode) (int64, []prefixBytes) {
	b.Helper()
	var cw countWriter
	if _, _, err := n.Raft().FSM().WriteSnapshot(&cw); err != nil {
		b.Fatal(err)
	}
	kvs, _, err := n.Raft().FSM().Scan("", 0)
	if err != nil {
		b.Fatal(err)
	}
	sums := map[string]int64{}
	for _, kv := range kvs {
		p := kv.Key
		if i := strings.IndexByte(p, '/'); i >= 0 {
			if j := strings.IndexByte(p[i+1:], '/'); j >= 0 {
				p = p[:i+1+j+1]
			} else {
				p = p[:i+1]
			}
		}
		sums[p] += int64(len(kv.Key) + len(kv.Value))
	}
	var out []prefixBytes
	for p, n := range sums {
		out = append(out, prefixBytes{p, n})
	}
	// Largest first; the small ones are not worth a row.
	slices.SortFunc(out, func(a, b prefixBytes) int { return cmp.Compare(b.bytes, a.bytes) })
	if len(out) > 6 {
		out = out[:6]
	}
	return cw.n, out
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// workerStoreOps sums the store operations the worker-only nodes made
// (their kcd_store_op_duration_seconds_count by op, from GET /metrics).
func workerStoreOps(ctx context.Context, nodes []*scaleNode) map[string]float64 {
	const metric = `kcd_store_op_duration_seconds_count{op="`
	out := map[string]float64{}
	for _, n := range nodes {
		if n.raft || n.killed {
			continue
		}
		_, body, err := newPeer(sideKcd, n.url, nil).do(ctx, http.MethodGet, "/metrics", nil)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(body), "\n") {
			rest, ok := strings.CutPrefix(line, metric)
			if !ok {
				continue
			}
			op, v, ok := strings.Cut(rest, `"} `)
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); ok && err == nil {
				out[op] += f
			}
		}
	}
	return out
}

// unitsByWorker is what each worker runs (GET /kcd/v1/worker of every
// live worker node): worker → unit → starts.
func unitsByWorker(ctx context.Context, nodes []*scaleNode) (map[string]map[string]int, bool, error) {
	out := map[string]map[string]int{}
	held := true
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	sem := make(chan struct{}, 16)
	for _, n := range nodes {
		if n.raft || n.killed {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			var v api.LocalWorkerView
			err := newPeer(sideKcd, n.url, nil).getJSON(ctx, "/kcd/v1/worker", &v)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			held = held && v.SessionHeld
			m := map[string]int{}
			for _, u := range v.Units {
				if u.Running {
					m[unitName(u.Connector, u.Task)] = u.Starts
				}
			}
			out[v.ID] = m
		})
	}
	wg.Wait()
	return out, held, firstErr
}

// scaleLeaderKill kills the Raft leader and times the way back.
func scaleLeaderKill(b *testing.B, ctx context.Context, s *sheet, nodes []*scaleNode, via *peer, conns, tasks int) {
	units := conns * (tasks + 1)
	raftNodes := nodes[:3]
	// A settled start: nothing left to move, every unit running once.
	var before map[string]map[string]int
	if err := waitUntil(ctx, 2*time.Minute, 500*time.Millisecond, func() (bool, error) {
		var plan api.PlanResult
		if err := via.getJSON(ctx, "/kcd/v1/rebalances/plan", &plan); err != nil || len(plan.Moves) > 0 {
			return false, nil
		}
		m, held, err := unitsByWorker(ctx, nodes)
		before = m
		return err == nil && held && countUnits(m) == units, nil
	}); err != nil {
		b.Fatalf("the cluster did not settle before the leader kill: %v", err)
	}
	old := leaderOf(raftNodes)
	if old == nil {
		b.Fatal("no leader to kill")
	}
	oldTerm := old.Raft().Term()
	killed := time.Now()
	old.killed = true
	old.Kill()
	var next *scaleNode
	if err := waitUntil(ctx, time.Minute, 5*time.Millisecond, func() (bool, error) {
		next = leaderOf(raftNodes)
		return next != nil && next.Raft().Term() > oldTerm, nil
	}); err != nil {
		b.Fatalf("no new leader after the kill: %v", err)
	}
	elected := time.Since(killed)
	progress("scale: leader %d killed; %d leads after %v", old.Raft().ID(), next.Raft().ID(), elected.Round(time.Millisecond))
	// Back: the new coordinator holds every worker's session, and every
	// unit runs once, with a RUNNING status on the worker assigned.
	np := newPeer(sideKcd, next.url, nil)
	np.hc = via.hc
	var after map[string]map[string]int
	if err := waitUntil(ctx, 5*time.Minute, 100*time.Millisecond, func() (bool, error) {
		alive, err := aliveWorkers(ctx, np)
		if err != nil || alive != len(nodes)-3 {
			return false, nil
		}
		var plan api.PlanResult
		if err := np.getJSON(ctx, "/kcd/v1/rebalances/plan", &plan); err != nil || len(plan.Moves) > 0 || plan.Epoch.Term <= oldTerm {
			return false, nil
		}
		m, held, err := unitsByWorker(ctx, nodes)
		if err != nil || !held || countUnits(m) != units {
			return false, nil
		}
		running, _ := scaleRunning(ctx, np)
		after = m
		return running == units, nil
	}); err != nil {
		b.Fatalf("not settled after the leader kill: %v", err)
	}
	stable := time.Since(killed)
	moved, restarted := 0, 0
	for w, us := range before {
		for u, starts := range us {
			now, ok := after[w][u]
			switch {
			case !ok:
				moved++
			case now != starts:
				restarted++
			}
		}
	}
	progress("scale: settled %v after the kill; %d units moved, %d restarted", stable.Round(time.Millisecond), moved, restarted)
	s.add("leader kill → a survivor leads (a later term)", "s", false, sideKcd, elected.Seconds())
	s.add("leader kill → every session held, every unit RUNNING once, nothing to move", "s", false, sideKcd, stable.Seconds())
	s.add("leader kill: units moved off a live worker (target 0)", "units", false, sideKcd, float64(moved))
	s.add("leader kill: units restarted on a live worker (target 0)", "units", false, sideKcd, float64(restarted))
	b.ReportMetric(ms(elected), "kill-elected-ms")
	b.ReportMetric(stable.Seconds(), "kill-settled-s")
	b.ReportMetric(float64(moved), "kill-moved")
	b.ReportMetric(float64(restarted), "kill-restarted")
}

// countUnits counts the units that run on exactly one worker.
func countUnits(m map[string]map[string]int) int {
	on := map[string]int{}
	for _, us := range m {
		for u := range us {
			on[u]++
		}
	}
	n := 0
	for _, c := range on {
		if c == 1 {
			n++
		}
	}
	return n
}
