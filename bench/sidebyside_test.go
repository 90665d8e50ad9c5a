package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/systemtest"
)

// The side-by-side benchmarks run one scenario on kcd and on a real Kafka
// Connect worker, in alternating rounds on the same machine, broker and
// database, and print one table of both sides' figures.

// Side names.
const (
	sideKcd     = "kcd"
	sideConnect = "Kafka Connect"
)

// peer is one runtime under test, reached through Kafka Connect's REST API,
// which both speak.
type peer struct {
	name string
	url  string
	// pids lists the processes whose memory and CPU count for this side
	// (kcd: the node and its Java host).
	pids func() []int
	hc   *http.Client
}

func newPeer(name, url string, pids func() []int) *peer {
	return &peer{name: name, url: strings.TrimRight(url, "/"), pids: pids, hc: &http.Client{Timeout: 30 * time.Second}}
}

// do sends a request with a JSON body (nil for none) and returns the code
// and body of the answer.
func (p *peer) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.url+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, b, err
}

// create POSTs a connector, retrying while the runtime answers 409 or 5xx
// (a rebalance or election in progress).
func (p *peer) create(ctx context.Context, limit time.Duration, name string, cfg map[string]string) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		code, body, err := p.do(ctx, http.MethodPost, "/connectors", map[string]any{"name": name, "config": cfg})
		if err == nil && code == http.StatusCreated {
			return nil
		}
		if err == nil && code/100 == 4 && code != http.StatusConflict {
			return fmt.Errorf("%s: create %s: %d %s", p.name, name, code, body)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: create %s: %d %s %v", p.name, name, code, body, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// remove DELETEs a connector and waits until it is gone from the list.
func (p *peer) remove(ctx context.Context, limit time.Duration, name string) error {
	return waitUntil(ctx, limit, 200*time.Millisecond, func() (bool, error) {
		code, _, err := p.do(ctx, http.MethodDelete, "/connectors/"+name, nil)
		if err != nil {
			return false, nil
		}
		return code == http.StatusNotFound, nil
	})
}

// running reports whether the connector and tasks tasks of it are RUNNING;
// a FAILED connector or task is an error, with its trace.
func (p *peer) running(ctx context.Context, name string, tasks int) (bool, error) {
	code, body, err := p.do(ctx, http.MethodGet, "/connectors/"+name+"/status", nil)
	if err != nil || code != http.StatusOK {
		return false, nil
	}
	var st struct {
		Connector struct{ State, Trace string }
		Tasks     []struct {
			ID           int
			State, Trace string
		}
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return false, fmt.Errorf("%s: status of %s: %w", p.name, name, err)
	}
	if st.Connector.State == "FAILED" {
		return false, fmt.Errorf("%s: connector %s FAILED: %s", p.name, name, firstLine(st.Connector.Trace))
	}
	n := 0
	for _, t := range st.Tasks {
		switch t.State {
		case "FAILED":
			return false, fmt.Errorf("%s: task %s-%d FAILED: %s", p.name, name, t.ID, firstLine(t.Trace))
		case "RUNNING":
			n++
		}
	}
	return st.Connector.State == "RUNNING" && n >= tasks, nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// waitUntil polls cond every interval until it holds, fails, or limit
// passes.
func waitUntil(ctx context.Context, limit, interval time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// usage is what a side's processes have used: resident memory now and CPU
// time since they started.
type usage struct {
	rss int64         // bytes, summed over the processes
	cpu time.Duration // user + system
}

func usageOf(pids []int) (usage, error) {
	var u usage
	for _, pid := range pids {
		rss, err := systemtest.ProcStatusBytes(pid, "VmRSS")
		if err != nil {
			return u, err
		}
		cpu, err := procCPU(pid)
		if err != nil {
			return u, err
		}
		u.rss += rss
		u.cpu += cpu
	}
	return u, nil
}

// procCPU is the user and system time of a process (/proc/<pid>/stat),
// assuming USER_HZ = 100, as on every Linux this runs on.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, may hold spaces: fields after it follow the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// children lists the child processes of pid (from every thread's children
// file: a child belongs to the thread that forked it).
func children(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// peakSampler samples a side's summed RSS every interval until stopped.
type peakSampler struct {
	stop chan struct{}
	done chan struct{}
	peak int64
}

func samplePeak(pids func() []int, interval time.Duration) *peakSampler {
	s := &peakSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if u, err := usageOf(pids()); err == nil {
				s.peak = max(s.peak, u.rss)
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Peak stops sampling and returns the largest sum seen.
func (s *peakSampler) Peak() int64 {
	close(s.stop)
	<-s.done
	return s.peak
}

// sheet collects the samples of a side-by-side run: per metric, per side.
type sheet struct {
	mu      sync.Mutex
	order   []string
	rows    map[string]*row
	loadavg []string
}

type row struct {
	metric string
	unit   string
	higher bool // higher is better (a rate), else lower (a time, a size)
	kcd    []float64
	peer   []float64
}

func newSheet() *sheet { return &sheet{rows: map[string]*row{}} }

// add records one sample of metric on side.
func (s *sheet) add(metric, unit string, higherBetter bool, side string, v float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[metric]
	if !ok {
		r = &row{metric: metric, unit: unit, higher: higherBetter}
		s.rows[metric] = r
		s.order = append(s.order, metric)
	}
	if side == sideKcd {
		r.kcd = append(r.kcd, v)
	} else {
		r.peer = append(r.peer, v)
	}
	progress("%s: %s = %.4g %s", side, metric, v, unit)
}

// minRateSpan is the shortest span a records/s figure is taken over: the
// counts are polled every 20-50 ms, so a shorter copy says nothing.
const minRateSpan = 200 * time.Millisecond

// addRate records n records over d as records/s, unless d is too short to
// measure (more records make it measurable).
func (s *sheet) addRate(metric, side string, n int64, d time.Duration) {
	if d < minRateSpan {
		progress("%s: %s: %d records in %v, too short to measure; give it more records", side, metric, n, d)
		return
	}
	s.add(metric, "rec/s", true, side, float64(n)/d.Seconds())
}

// noteLoad records the load average, once per round.
func (s *sheet) noteLoad() {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return
	}
	f := strings.Fields(string(b))
	if len(f) >= 3 {
		s.mu.Lock()
		s.loadavg = append(s.loadavg, strings.Join(f[:3], " "))
		s.mu.Unlock()
	}
}

// best and median of samples, by what better means for the row.
func (r *row) stats(v []float64) (best, med float64, ok bool) {
	if len(v) == 0 {
		return 0, 0, false
	}
	v = slices.Clone(v)
	slices.Sort(v)
	best = v[0]
	if r.higher {
		best = v[len(v)-1]
	}
	med = v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return best, med, true
}

// markdown renders the table: best and median of each side, and how many
// times better kcd's median is (above 1: kcd is better, whichever way
// better points for the metric).
func (s *sheet) markdown() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "| metric | unit | kcd best | kcd median | Kafka Connect best | Kafka Connect median | kcd better by (medians) | samples |\n")
	fmt.Fprintf(&b, "|---|---|--:|--:|--:|--:|--:|--:|\n")
	for _, m := range s.order {
		r := s.rows[m]
		kb, km, kok := r.stats(r.kcd)
		pb, pm, pok := r.stats(r.peer)
		cell := func(v float64, ok bool) string {
			if !ok {
				return "–"
			}
			return num(v)
		}
		ratio := "–"
		if kok && pok && km > 0 && pm > 0 {
			x := pm / km
			if r.higher {
				x = km / pm
			}
			ratio = fmt.Sprintf("%.2f×", x)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %d / %d |\n", r.metric, r.unit,
			cell(kb, kok), cell(km, kok), cell(pb, pok), cell(pm, pok), ratio, len(r.kcd), len(r.peer))
	}
	if len(s.loadavg) > 0 {
		fmt.Fprintf(&b, "\nLoad average at the start of each round: %s\n", strings.Join(s.loadavg, "; "))
	}
	return b.String()
}

// num prints a figure with three significant digits, thousands separated.
func num(v float64) string {
	switch {
	case v >= 1000:
		s := strconv.FormatInt(int64(v+0.5), 10)
		var out []byte
		for i, c := range []byte(s) {
			if i > 0 && (len(s)-i)%3 == 0 {
				out = append(out, ',')
			}
			out = append(out, c)
		}
		return string(out)
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// kafkaClients returns a client of the test environment's Kafka that
// lingers 5 ms, and its admin client; closed when b ends.
func kafkaClients(b *testing.B, brokers string) (*kgo.Client, *kadm.Client) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}
