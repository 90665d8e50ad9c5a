package metrics

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kcd-project/kcd/daemon/coordinator"
	"github.com/kcd-project/kcd/daemon/worker"
)

// fakeWorker reports n tasks, half sources, half sinks, of n/10 connectors.
type fakeWorker struct {
	tasks  []worker.TaskStats
	states []worker.UnitState
	// busy: every task moves records between two reads, as on a worker
	// whose tasks all run under load (the worst case for a scrape).
	busy bool
}

func newFakeWorker(n int) *fakeWorker {
	f := &fakeWorker{}
	for i := range n {
		c := fmt.Sprintf("conn-%d", i/10)
		f.tasks = append(f.tasks, worker.TaskStats{
			ID: worker.TaskID{Connector: c, Task: i % 10}, Sink: i%2 == 1,
			Records: int64(1000 * i), Polled: int64(1000*i + 5), Read: int64(2000 * i), Batches: 10, BatchRecords: 1000,
			PeakBatch: 500, BatchTime: 1500 * time.Millisecond, PeakBatchTime: 40 * time.Millisecond,
			Commits: 7, CommitFailures: 1, CommitTime: 70 * time.Millisecond, Lag: int64(i),
			Errors: worker.ErrorStats{Failures: 3, Errors: 2, DLQRequests: 2, LastErrorUTC: 1_700_000_000_123},
		})
		if i%10 == 0 {
			f.states = append(f.states, worker.UnitState{ID: worker.TaskID{Connector: c, Task: -1}, State: "RUNNING"})
		}
		st := "RUNNING"
		if i%7 == 0 {
			st = "FAILED"
		}
		f.states = append(f.states, worker.UnitState{ID: worker.TaskID{Connector: c, Task: i % 10}, State: st})
	}
	return f
}

func (f *fakeWorker) StatsInto(s *worker.Stats) {
	if f.busy {
		for i := range f.tasks {
			t := &f.tasks[i]
			t.Records += 100
			t.Batches++
			t.BatchRecords += 100
			t.BatchTime += 3 * time.Millisecond
			if t.Sink {
				t.Read += 100
			} else {
				t.Polled += 100
				t.InFlightRecords = int64(i%7) * 10
			}
		}
	}
	s.Tasks = append(s.Tasks[:0], f.tasks...)
}

func (f *fakeWorker) States(dst []worker.UnitState) []worker.UnitState {
	return append(dst, f.states...)
}

func (f *fakeWorker) Startups() worker.Startups {
	return worker.Startups{ConnectorAttempts: 3, ConnectorSuccesses: 2, ConnectorFailures: 1, TaskAttempts: 9, TaskSuccesses: 9}
}

type fakeMember struct{}

func (fakeMember) Rebalances() (coordinator.Epoch, uint64, int64, time.Time) {
	return coordinator.Epoch{Term: 2, Generation: 17}, 1, 4, time.Now().Add(-time.Minute)
}

type fakeRaft struct{}

func (fakeRaft) ID() uint64                  { return 1 }
func (fakeRaft) Term() uint64                { return 3 }
func (fakeRaft) Leader() uint64              { return 1 }
func (fakeRaft) CommitIndex() uint64         { return 99 }
func (fakeRaft) AppliedIndex() uint64        { return 98 }
func (fakeRaft) Proposals() (uint64, uint64) { return 50, 1 }

type fakeCoord struct{}

func (fakeCoord) Stats() coordinator.Stats {
	return coordinator.Stats{Leading: true, Rebalances: 4, Moves: 12, RebalanceTime: 20 * time.Millisecond, MaxRebalanceTime: 9 * time.Millisecond}
}

type fakeBackend struct{}

func (fakeBackend) Backend() (string, string) { return "raft", "" }

func fakeSources(n int) Sources {
	return Sources{Worker: newFakeWorker(n), Member: fakeMember{}, Raft: fakeRaft{}, Coordinator: fakeCoord{}, Backend: fakeBackend{}, Store: NewStoreTimer()}
}

// Parse reads a scrape as Prometheus does.
func Parse(t testing.TB, body io.Reader) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(body)
	if err != nil {
		t.Fatalf("the scrape does not parse: %v", err)
	}
	return mfs
}

// value returns the value of the series of family name whose labels
// include want.
func value(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Summary != nil:
			return m.Summary.GetSampleSum(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

func TestScrapeParsesAndHasKafkaConnectNames(t *testing.T) {
	h := New(fakeSources(20))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}
	body := rec.Body.String()
	mfs := Parse(t, strings.NewReader(body))
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"kcd_source_task_record_write_total", map[string]string{"connector": "conn-0", "task": "2"}, 2000},
		{"kcd_source_task_record_poll_total", map[string]string{"connector": "conn-0", "task": "2"}, 2005},
		{"kcd_sink_task_record_read_total", map[string]string{"connector": "conn-0", "task": "3"}, 6000},
		{"kcd_sink_task_record_send_total", map[string]string{"connector": "conn-0", "task": "3"}, 3000},
		{"kcd_sink_task_record_lag", map[string]string{"connector": "conn-1", "task": "1"}, 11},
		{"kcd_connector_task_offset_commit_seconds", map[string]string{"connector": "conn-0", "task": "0"}, 0.07},
		{"kcd_task_error_deadletterqueue_produce_requests_total", map[string]string{"connector": "conn-1", "task": "5"}, 2},
		{"kcd_task_error_last_error_timestamp_seconds", map[string]string{"connector": "conn-1", "task": "5"}, 1_700_000_000.123},
		{"kcd_connector_status", map[string]string{"connector": "conn-1", "status": "running"}, 1},
		{"kcd_connector_task_status", map[string]string{"connector": "conn-0", "task": "7", "status": "failed"}, 1},
		{"kcd_worker_connector_tasks", map[string]string{"connector": "conn-0", "status": "running"}, 8},
		{"kcd_worker_connector_tasks", map[string]string{"connector": "conn-0", "status": "failed"}, 2},
		{"kcd_worker_connector_tasks", map[string]string{"connector": "conn-0", "status": "paused"}, 0},
		{"kcd_worker_task_count", nil, 20},
		{"kcd_worker_connector_count", nil, 2},
		{"kcd_worker_connector_startup_failure_total", nil, 1},
		{"kcd_worker_rebalance_completed_total", nil, 4},
		{"kcd_worker_rebalance_epoch", nil, 17},
		{"kcd_raft_term", nil, 3},
		{"kcd_raft_is_leader", nil, 1},
		{"kcd_raft_commit_index", nil, 99},
		{"kcd_coordinator_rebalances_total", nil, 4},
		{"kcd_store_backend_info", map[string]string{"backend": "raft"}, 1},
	} {
		got, ok := value(mfs, c.name, c.labels)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	// A sink task has no source series, and the other way round.
	if _, ok := value(mfs, "kcd_source_task_record_poll_total", map[string]string{"connector": "conn-0", "task": "1"}); ok {
		t.Error("a sink task has a source series")
	}
	// Every family's HELP names the Kafka Connect metric it stands for, where
	// Kafka Connect has one.
	for name, mf := range mfs {
		if strings.HasPrefix(name, "kcd_worker_") || strings.HasPrefix(name, "kcd_connector_") || strings.HasPrefix(name, "kcd_source_") ||
			strings.HasPrefix(name, "kcd_sink_") || strings.HasPrefix(name, "kcd_task_error_") {
			if !strings.Contains(mf.GetHelp(), "Kafka Connect: ") {
				t.Errorf("%s: HELP %q names no Kafka Connect metric", name, mf.GetHelp())
			}
		}
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "kcd_store_op_duration_seconds"} {
		if mfs[name] == nil {
			t.Errorf("no %s", name)
		}
	}
}

// A task that goes away takes its series with it; the scrape stays valid
// with odd connector names.
func TestSeriesGoWithTheirTask(t *testing.T) {
	f := newFakeWorker(4)
	f.tasks[0].ID.Connector = "we\"ird\\name\nx"
	f.states[0].ID.Connector = f.tasks[0].ID.Connector
	h := New(Sources{Worker: f})
	scrape := func() map[string]*dto.MetricFamily {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return Parse(t, rec.Body)
	}
	mfs := scrape()
	if _, ok := value(mfs, "kcd_source_task_record_write_total", map[string]string{"connector": "we\"ird\\name\nx", "task": "0"}); !ok {
		t.Fatal("no series of the task with the odd name")
	}
	f.tasks = f.tasks[1:]
	f.states = f.states[2:]
	mfs = scrape()
	if _, ok := value(mfs, "kcd_source_task_record_write_total", map[string]string{"connector": "we\"ird\\name\nx", "task": "0"}); ok {
		t.Error("the series of a task that went away stayed")
	}
	if n := len(mfs["kcd_task_error_record_errors_total"].GetMetric()); n != 3 {
		t.Errorf("%d error series, want 3", n)
	}
}

func TestGzip(t *testing.T) {
	h := New(fakeSources(10))
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Header().Get("Content-Encoding") != "gzip" {
		t.Fatal("not gzipped")
	}
}

// BenchmarkScrape1000Tasks is a scrape of a worker with 1,000 tasks (and
// the node's other metrics), without and with gzip.
func BenchmarkScrape1000Tasks(b *testing.B) {
	for _, gz := range []bool{false, true} {
		b.Run(fmt.Sprintf("gzip=%v", gz), func(b *testing.B) {
			src := fakeSources(1000)
			src.Worker.(*fakeWorker).busy = true
			h := New(src)
			req := httptest.NewRequest("GET", "/metrics", nil)
			if gz {
				req.Header.Set("Accept-Encoding", "gzip")
			}
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				h.ServeHTTP(w, req)
			}
			reportCPU(b, cpu)
			b.ReportMetric(float64(w.n)/float64(b.N), "bytes/scrape")
		})
	}
}

// BenchmarkRender1000Tasks is the part of a scrape that reads the counters
// and formats them, without the HTTP response.
func BenchmarkRender1000Tasks(b *testing.B) {
	f := newFakeWorker(1000)
	f.busy = true
	h := New(Sources{Worker: f})
	sc := new(scrape)
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		if _, err := h.render(sc, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

type discard struct {
	h http.Header
	n int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// BenchmarkWorkerSeries1000Tasks is the worker's part of a scrape alone.
func BenchmarkWorkerSeries1000Tasks(b *testing.B) {
	f := newFakeWorker(1000)
	f.busy = true
	var w taskWriter
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		w.begin()
		w.write(f, time.Now())
	}
	reportCPU(b, cpu)
}

// cpuTime is the CPU time the process used so far. On a machine shared
// with other work, CPU time per operation says more than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per operation since start, GC included.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// Scrapes at the same time each get their own buffers.
func TestConcurrentScrapes(t *testing.T) {
	h := New(fakeSources(50))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
				p := expfmt.NewTextParser(model.UTF8Validation)
				if _, err := p.TextToMetricFamilies(rec.Body); err != nil {
					t.Errorf("a concurrent scrape does not parse: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestAppendFixedIsExactDecimal(t *testing.T) {
	for _, c := range []struct {
		v     int64
		scale int
		want  string
	}{
		{0, 9, "0"}, {1, 9, "0.000000001"}, {1_500_000_000, 9, "1.5"}, {12_345_678_901, 9, "12.345678901"},
		{3_000_000_000, 9, "3"}, {1733300000123, 3, "1733300000.123"}, {1733300000000, 3, "1733300000"},
		{-250_000_000, 9, "-0.25"}, {7, 0, "7"},
	} {
		if got := string(appendFixed(nil, c.v, c.scale)); got != c.want {
			t.Errorf("appendFixed(%d, %d) = %q, want %q", c.v, c.scale, got, c.want)
		}
		if c.scale > 0 {
			f, err := strconv.ParseFloat(string(appendFixed(nil, c.v, c.scale)), 64)
			if want := float64(c.v) / math.Pow10(c.scale); err != nil || math.Abs(f-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("appendFixed(%d, %d) parses as %v (%v), want %v", c.v, c.scale, f, err, want)
			}
		}
	}
}

// snapshotWorker reports the tasks it is given, as they are.
type snapshotWorker struct{ tasks []worker.TaskStats }

func (s *snapshotWorker) StatsInto(st *worker.Stats) { st.Tasks = append(st.Tasks[:0], s.tasks...) }
func (s *snapshotWorker) States(dst []worker.UnitState) []worker.UnitState {
	return dst
}
func (s *snapshotWorker) Startups() worker.Startups { return worker.Startups{} }

// A writer that copies unchanged series from its previous scrape writes
// exactly what a fresh writer writes, while values change, tasks come and
// go, change order, and a sink's lag becomes known or unknown.
func TestSeriesCopiedFromTheLastScrapeAreCurrent(t *testing.T) {
	base := newFakeWorker(40).tasks
	src := &snapshotWorker{}
	var cached taskWriter
	now := time.Unix(1_700_000_000, 0)
	for step := range 30 {
		tasks := append([]worker.TaskStats(nil), base...)
		switch step % 6 {
		case 1: // some values change
			for i := range tasks {
				if i%3 == step%3 {
					tasks[i].Records += int64(step)
					tasks[i].BatchTime += time.Duration(step) * time.Millisecond
					tasks[i].Errors.Failures += int64(step)
				}
				if i%5 == 0 { // a summary's count alone
					tasks[i].Batches++
					tasks[i].Commits++
				}
			}
		case 2: // a task goes away
			tasks = append(tasks[:5], tasks[6:]...)
		case 3: // a task comes
			tasks = append(tasks, worker.TaskStats{ID: worker.TaskID{Connector: "new", Task: step}, Sink: true, Lag: -1})
		case 4: // the order changes; a task of the same values is another's
			tasks[0], tasks[1] = tasks[1], tasks[0]
			tasks[2].ID.Connector += "-renamed"
		case 5: // a sink's lag becomes unknown, another's known
			for i := range tasks {
				if tasks[i].Sink {
					if tasks[i].Lag >= 0 {
						tasks[i].Lag = -1
					} else {
						tasks[i].Lag = int64(step)
					}
					break
				}
			}
		}
		base = tasks
		src.tasks = tasks
		cached.begin()
		cached.write(src, now)
		var fresh taskWriter
		fresh.begin()
		fresh.write(src, now)
		if string(cached.b) != string(fresh.b) {
			t.Fatalf("step %d: the writer that copies from its last scrape wrote\n%s\nwhere a fresh one wrote\n%s", step, firstDiff(cached.b, fresh.b), firstDiff(fresh.b, cached.b))
		}
	}
}

// firstDiff is a's line where a and b first differ.
func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range la {
		if i >= len(lb) || la[i] != lb[i] {
			return la[i]
		}
	}
	return "(a prefix of the other)"
}
