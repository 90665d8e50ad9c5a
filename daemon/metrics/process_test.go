package metrics

import (
	"bytes"
	"errors"
	"math"
	"net/http/httptest"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// The hand-parsed process metrics agree with procfs (the parser
// Prometheus's own process collector uses) read around the same scrape.
func TestProcessMetricsAgreeWithProcfs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	self, err := procfs.Self()
	if err != nil {
		t.Fatal(err)
	}
	// Hold a few descriptors open so that the count is not trivially small.
	for range 5 {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	before, err := self.Stat()
	if err != nil {
		t.Fatal(err)
	}
	fdsBefore, err := self.FileDescriptorsLen()
	if err != nil {
		t.Fatal(err)
	}
	h := New(Sources{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	after, err := self.Stat()
	if err != nil {
		t.Fatal(err)
	}
	mfs := Parse(t, bytes.NewReader(rec.Body.Bytes()))
	get := func(name string) float64 {
		t.Helper()
		v, ok := value(mfs, name, nil)
		if !ok {
			t.Fatalf("no %s in the scrape", name)
		}
		return v
	}
	if cpu := get("process_cpu_seconds_total"); cpu < before.CPUTime() || cpu > after.CPUTime() {
		t.Errorf("process_cpu_seconds_total %v, procfs %v..%v", cpu, before.CPUTime(), after.CPUTime())
	}
	if rss, want := get("process_resident_memory_bytes"), float64(after.ResidentMemory()); math.Abs(rss-want) > 16<<20 {
		t.Errorf("process_resident_memory_bytes %v, procfs %v", rss, want)
	}
	if vs, want := get("process_virtual_memory_bytes"), float64(after.VirtualMemory()); math.Abs(vs-want) > 256<<20 {
		t.Errorf("process_virtual_memory_bytes %v, procfs %v", vs, want)
	}
	start, err := before.StartTime()
	if err != nil {
		t.Fatal(err)
	}
	if got := get("process_start_time_seconds"); math.Abs(got-start) > 0.011 {
		t.Errorf("process_start_time_seconds %v, procfs %v", got, start)
	}
	// procfs's count includes the descriptor it reads the directory with,
	// as ours does not.
	if fds := get("process_open_fds"); fds != float64(fdsBefore-1) && fds != float64(fdsBefore) {
		t.Errorf("process_open_fds %v, procfs %d", fds, fdsBefore)
	}
}

// The store histogram counts each operation in its bucket, cumulatively,
// with its sum, and errors apart.
func TestStoreHistogram(t *testing.T) {
	st := NewStoreTimer()
	now := time.Now()
	st.done(opGet, now.Add(-300*time.Microsecond), nil) // ≤ 0.0005
	st.done(opGet, now.Add(-3*time.Millisecond), nil)   // ≤ 0.005
	st.done(opGet, now.Add(-20*time.Second), errors.New("x"))
	st.done(opPut, now.Add(-700*time.Millisecond), nil) // ≤ 1
	h := New(Sources{Store: st})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	mfs := Parse(t, bytes.NewReader(rec.Body.Bytes()))
	mf := mfs["kcd_store_op_duration_seconds"]
	if mf == nil {
		t.Fatal("no kcd_store_op_duration_seconds")
	}
	cum := map[string]map[float64]uint64{}
	counts, sums := map[string]uint64{}, map[string]float64{}
	for _, m := range mf.GetMetric() {
		o := m.GetLabel()[0].GetValue()
		cum[o] = map[float64]uint64{}
		for _, b := range m.GetHistogram().GetBucket() {
			cum[o][b.GetUpperBound()] = b.GetCumulativeCount()
		}
		counts[o] = m.GetHistogram().GetSampleCount()
		sums[o] = m.GetHistogram().GetSampleSum()
	}
	for _, c := range []struct {
		op    string
		le    float64
		want  uint64
		count uint64
		sumGE float64
	}{
		{"get", 0.0005, 1, 3, 20.003}, {"get", 0.0025, 1, 3, 0}, {"get", 0.005, 2, 3, 0}, {"get", 10, 2, 3, 0},
		{"put", 0.5, 0, 1, 0.7}, {"put", 1, 1, 1, 0}, {"scan", 10, 0, 0, 0},
	} {
		if got := cum[c.op][c.le]; got != c.want {
			t.Errorf("%s le=%v: %d, want %d", c.op, c.le, got, c.want)
		}
		if counts[c.op] != c.count {
			t.Errorf("%s count %d, want %d", c.op, counts[c.op], c.count)
		}
		if (c.sumGE > 0 || c.count == 0) && (sums[c.op] < c.sumGE || sums[c.op] > c.sumGE+1) {
			t.Errorf("%s sum %v, want about %v", c.op, sums[c.op], c.sumGE)
		}
	}
	if v, _ := value(mfs, "kcd_store_op_errors_total", map[string]string{"op": "get"}); v != 1 {
		t.Errorf("get errors %v, want 1", v)
	}
	if v, ok := value(mfs, "kcd_store_op_errors_total", map[string]string{"op": "put"}); !ok || v != 0 {
		t.Errorf("put errors %v (%v), want 0", v, ok)
	}
}
