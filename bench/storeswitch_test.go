package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	kcdapi "github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/store/remotestore"
	"github.com/kcd-project/kcd/daemon/systemtest"
	"github.com/kcd-project/kcd/internal/testenv"
)

var (
	switchConnectors = flag.Int("bench.switch-connectors", 1000, "BenchmarkStoreSwitch: connectors in the store")
	switchOffsets    = flag.Int("bench.switch-offsets", 100000, "BenchmarkStoreSwitch: offset keys in the store (spread over the connectors)")
	switchWriters    = flag.Int("bench.switch-writers", 4, "BenchmarkStoreSwitch: clients committing offsets through the switch")
)

// switchLeg is one switch of BenchmarkStoreSwitch.
type switchLeg struct {
	from, to string
	settings map[string]string
}

// BenchmarkStoreSwitch measures online switches of the metadata backend
// on a three-node cluster of real kcd processes whose store holds
// -bench.switch-connectors connectors (config and target state, STOPPED so
// that no task runs) and -bench.switch-offsets sink offsets spread over
// them: raft → mysql → raft → postgres → raft, through POST
// /kcd/v1/store/switch. Legs of a database that is not running are
// skipped with a message (a failure under CI=true).
//
// Through each switch -bench.switch-writers clients commit offsets
// continuously, as workers do (connectstore.PutSinkOffsets: 10 Puts under
// a fence, through the nodes' store API, remotestore), one client per
// node in turn. Metrics per leg (FROM-TO-…):
//
//	hold-ms    how long the leader held metadata writes, from
//	           GET /kcd/v1/store/status (last_switch.hold_ms)
//	switch-s   the switch from POST to state done (status started_at to
//	           ended_at: check, copy, verify, hold)
//	pause-ms   the pause a client sees: the longest gap between
//	           consecutive acknowledged commits of all clients together
//	           from the POST to 0.5 s after the switch ended
//	base-ms    the same longest gap in the 2 s before the POST: what
//	           the machine's noise alone gives
//	max-lat-ms the longest single commit in the same window as pause-ms
//
// A commit that fails is counted (failed) and reported; none should.
func BenchmarkStoreSwitch(b *testing.B) {
	var legs []switchLeg
	for _, sb := range sqlBackends {
		dsn := testenv.Lookup(sb.dsnVar)
		if dsn == "" {
			progress("%s is not set: the %s legs are skipped (start the test environment to measure them)", sb.dsnVar, sb.name)
			continue
		}
		settings := map[string]string{"dsn": dsn, "table_prefix": benchTablePrefix + "sw_"}
		legs = append(legs, switchLeg{"raft", sb.name, settings}, switchLeg{sb.name, "raft", nil})
	}
	if len(legs) == 0 {
		serviceDSN(b, sqlBackends[0].dsnVar) // skips, or fails under CI=true
	}

	bin := kcdBinary(b)
	c := systemtest.StartCluster(b, bin, systemtest.Options{Kafka: systemtest.DevKafkaFirst, LogLevel: "info"})
	ctx := context.Background()
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	if _, err := systemtest.WaitLeader(wctx, c.Nodes()...); err != nil {
		cancel()
		b.Fatal(err)
	}
	cancel()
	var urls []string
	for _, n := range c.Nodes() {
		urls = append(urls, n.URL())
	}
	rs, err := remotestore.New(urls, remotestore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer rs.Close()

	t0 := time.Now()
	if err := loadSwitchStore(connectstore.New(rs), *switchConnectors, *switchOffsets); err != nil {
		b.Fatalf("loading the store: %v", err)
	}
	progress("store loaded in %v: %d connectors, %d offset keys", time.Since(t0).Round(time.Millisecond), *switchConnectors, *switchOffsets)

	// One client per node in turn, each its own task and fence.
	// The fences are on keys of the benchmark's own, which the cluster's
	// coordinator leaves alone.
	units := newCommitUnits(b, rs, *switchWriters, func(name string) string { return "bench/owner/" + name + "/0" })
	var clients []*switchClient
	for i, u := range units {
		s, err := remotestore.New([]string{urls[i%len(urls)]}, remotestore.Options{RefreshInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		clients = append(clients, &switchClient{cs: connectstore.New(s), unit: u})
	}

	for b.Loop() {
		for _, leg := range legs {
			runSwitchLeg(b, c.Nodes()[0].URL(), leg, clients)
		}
	}
}

// loadSwitchStore creates connectors connectors and offsets sink offsets
// (as evenly as it can over them), from 16 goroutines.
func loadSwitchStore(cs *connectstore.Store, connectors, offsets int) error {
	ctx := context.Background()
	work := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range work {
				name := fmt.Sprintf("bench-conn-%04d", i)
				config := map[string]string{
					"connector.class": "org.example.BenchSink",
					"tasks.max":       "1",
					"topics":          "bench-" + name,
					"file":            "/tmp/" + name + ".txt",
				}
				if _, err := cs.CreateConnector(ctx, name, config, connectstore.TargetStopped); err != nil {
					errs <- err
					return
				}
				n := offsets / connectors
				if i < offsets%connectors {
					n++
				}
				offs := make([]connectstore.SinkOffset, n)
				for p := range offs {
					offs[p] = connectstore.SinkOffset{Topic: "bench-" + name, Partition: int32(p), Offset: int64(1000 + p)}
				}
				if err := cs.PutSinkOffsets(ctx, name, offs, nil); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var loadErr error
feed:
	for i := range connectors {
		select {
		case work <- i:
		case loadErr = <-errs:
			break feed
		}
	}
	close(work)
	wg.Wait()
	if loadErr == nil && len(errs) > 0 {
		loadErr = <-errs
	}
	return loadErr
}

// switchClient commits one task's offsets over and over and records when
// each commit was acknowledged.
type switchClient struct {
	cs   *connectstore.Store
	unit *commitUnit

	mu     sync.Mutex
	acks   []time.Time     // when each commit returned successfully
	lats   []time.Duration // how long it took
	failed int
	err    error
}

// maxAcks bounds what one client records in one leg.
const maxAcks = 1 << 20

func (sc *switchClient) run(ctx context.Context) {
	for i := int64(0); ctx.Err() == nil; i++ {
		for p := range sc.unit.offs {
			sc.unit.offs[p].Offset = i*100 + int64(p)
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		t0 := time.Now()
		err := sc.cs.PutSinkOffsets(cctx, sc.unit.name, sc.unit.offs, sc.unit.fence)
		done := time.Now()
		cancel()
		sc.mu.Lock()
		switch {
		case err == nil && len(sc.acks) < maxAcks:
			sc.acks = append(sc.acks, done)
			sc.lats = append(sc.lats, done.Sub(t0))
		case err != nil && ctx.Err() == nil:
			sc.failed++
			if sc.err == nil {
				sc.err = err
			}
		}
		sc.mu.Unlock()
	}
}

func (sc *switchClient) reset() {
	sc.mu.Lock()
	sc.acks, sc.lats, sc.failed, sc.err = sc.acks[:0], sc.lats[:0], 0, nil
	sc.mu.Unlock()
}

// runSwitchLeg switches the cluster (through node url, which forwards to
// the leader) while the clients commit, and reports the leg's figures.
func runSwitchLeg(b *testing.B, url string, leg switchLeg, clients []*switchClient) {
	b.Helper()
	name := leg.from + "-" + leg.to
	st := getStoreStatus(b, url)
	if st.Backend != leg.from {
		b.Fatalf("%s: the active backend is %q", name, st.Backend)
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, sc := range clients {
		sc.reset()
		wg.Go(func() { sc.run(ctx) })
	}
	// 2 s of commits before the switch: the baseline gap.
	time.Sleep(2 * time.Second)

	posted := time.Now()
	body, _ := json.Marshal(kcdapi.StoreSwitchRequest{Backend: leg.to, Settings: leg.settings, Force: true})
	var sw kcdapi.StoreSwitch
	code, err := doJSON(http.MethodPost, url+"/kcd/v1/store/switch", body, &sw)
	if err != nil || code != http.StatusAccepted {
		stop()
		wg.Wait()
		b.Fatalf("%s: POST /kcd/v1/store/switch: %d %v", name, code, err)
	}
	// Poll until the switch ends (bounded: 5 minutes).
	var last kcdapi.StoreSwitch
	deadline := time.Now().Add(5 * time.Minute)
	for {
		st = getStoreStatus(b, url)
		if ls := st.LastSwitch; ls != nil && ls.ID == sw.ID && ls.State != kcdapi.SwitchRunning {
			last = *ls
			break
		}
		if time.Now().After(deadline) {
			stop()
			wg.Wait()
			b.Fatalf("%s: switch %s still running after 5 minutes: %+v", name, sw.ID, st.LastSwitch)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ended := time.Now()
	// Commits go on for 0.5 s after the switch ended, so that the first
	// commits on the new backend are in the window.
	time.Sleep(500 * time.Millisecond)
	stop()
	wg.Wait()
	if last.State != kcdapi.SwitchDone {
		b.Fatalf("%s: switch %s %s: %s", name, sw.ID, last.State, last.Error)
	}
	if st.Backend != leg.to {
		b.Fatalf("%s: switch done but the active backend is %q", name, st.Backend)
	}

	var acks []time.Time
	var inWindow []time.Duration
	failed := 0
	for _, sc := range clients {
		sc.mu.Lock()
		acks = append(acks, sc.acks...)
		for i, at := range sc.acks {
			if at.After(posted) && !at.After(ended.Add(500*time.Millisecond)) {
				inWindow = append(inWindow, sc.lats[i])
			}
		}
		failed += sc.failed
		if sc.err != nil {
			progress("%s: a client's commit failed: %v", name, sc.err)
		}
		sc.mu.Unlock()
	}
	slices.SortFunc(acks, func(x, y time.Time) int { return x.Compare(y) })
	pause := longestGap(acks, posted, ended.Add(500*time.Millisecond))
	base := longestGap(acks, posted.Add(-2*time.Second), posted)
	sortDurations(inWindow)
	total := last.EndedAt.Sub(last.StartedAt)

	b.ReportMetric(last.HoldMillis, name+"-hold-ms")
	b.ReportMetric(total.Seconds(), name+"-switch-s")
	b.ReportMetric(ms(pause), name+"-pause-ms")
	b.ReportMetric(ms(base), name+"-base-ms")
	if len(inWindow) > 0 {
		b.ReportMetric(ms(inWindow[len(inWindow)-1]), name+"-max-lat-ms")
	}
	if failed > 0 {
		b.ReportMetric(float64(failed), name+"-failed")
	}
	progress("%s: switch %s done: %d of %d keys copied, revision %d, hold %.1f ms, switch %v (POST to done seen %v); client pause %v (baseline %v), %d commits in the window, %d failed",
		name, last.ID, last.Copied, last.Total, last.Revision, last.HoldMillis, total.Round(time.Millisecond),
		ended.Sub(posted).Round(time.Millisecond), pause.Round(100*time.Microsecond), base.Round(100*time.Microsecond), len(inWindow), failed)
}

// longestGap is the longest time in [from, to] without an element of
// sorted: between from and the first, between consecutive ones, and
// between the last and to.
func longestGap(sorted []time.Time, from, to time.Time) time.Duration {
	var longest time.Duration
	prev := from
	for _, t := range sorted {
		if t.Before(from) {
			continue
		}
		if t.After(to) {
			break
		}
		longest = max(longest, t.Sub(prev))
		prev = t
	}
	return max(longest, to.Sub(prev))
}

func getStoreStatus(b *testing.B, url string) kcdapi.StoreStatus {
	b.Helper()
	var st kcdapi.StoreStatus
	code, err := doJSON(http.MethodGet, url+"/kcd/v1/store/status", nil, &st)
	if err != nil || code != http.StatusOK {
		b.Fatalf("GET /kcd/v1/store/status: %d %v", code, err)
	}
	return st
}

// doJSON sends a request with a JSON body (nil: none) and decodes a 2xx
// answer into out; another answer is returned as an error with its body.
func doJSON(method, url string, body []byte, out any) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return res.StatusCode, err
	}
	if res.StatusCode/100 != 2 {
		return res.StatusCode, errors.New(string(data))
	}
	return res.StatusCode, json.Unmarshal(data, out)
}
