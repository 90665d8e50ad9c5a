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
			h := New(fakeSources(1000))
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
	h := New(Sources{Worker: newFakeWorker(1000)})
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
	var w taskWriter
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		w.b = w.b[:0]
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
