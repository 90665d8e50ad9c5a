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
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	switchTo         = flag.String("bench.switch-to", "mysql,postgres", "BenchmarkStoreSwitch: the backends to switch to from raft and back, in order")
	switchLogs       = flag.String("bench.switch-logs", "", "BenchmarkStoreSwitch: copy the nodes' logs into this directory after each switch")
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
// Through each switch -bench.switch-writers clients write continuously,
// one ~100-byte Put at a time through a node's REST API (PUT
// /kcd/v1/store/keys/…, served from that node's active store, as its
// workers' writes are), one client per node in turn. Metrics per leg
// (FROM-TO-…):
//
//	hold-ms    how long the leader held metadata writes, from
//	           GET /kcd/v1/store/status (last_switch.hold_ms)
//	switch-s   the switch from POST to state done, as polled every 20 ms
//	           (check, copy, verify, hold)
//	pause-ms   the pause a writer sees: the longest gap between two
//	           consecutive acknowledged writes of one client, the
//	           longest over the clients, from the POST to 2 s after
//	           the switch ended
//	base-ms    the same in the 2 s before the POST: what the machine's
//	           noise alone gives
//	all-ms     the longest time in the same window in which no client
//	           at all had a write acknowledged
//	max-lat-ms the longest single write in the window
//
// A write that fails is counted (failed-writes) and reported; none
// should.
func BenchmarkStoreSwitch(b *testing.B) {
	var legs []switchLeg
	for _, to := range strings.Split(*switchTo, ",") {
		var settings map[string]string
		if i := slices.IndexFunc(sqlBackends, func(sb sqlBackend) bool { return sb.name == to }); i >= 0 {
			dsn := testenv.Lookup(sqlBackends[i].dsnVar)
			if dsn == "" {
				msg := fmt.Sprintf("%s is not set: the switches to and from %s are skipped (start the test environment to measure them)", sqlBackends[i].dsnVar, to)
				if os.Getenv("CI") == "true" {
					b.Fatal(msg + "; under CI=true a missing service is a failure")
				}
				progress("%s", msg)
				continue
			}
			settings = map[string]string{"dsn": dsn, "table_prefix": benchTablePrefix + "sw_"}
		}
		legs = append(legs, switchLeg{"raft", to, settings}, switchLeg{to, "raft", nil})
	}
	if len(legs) == 0 {
		b.Skip("no backend to switch to")
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

	// One client per node in turn, each writing its own key.
	var clients []*switchClient
	for i := range *switchWriters {
		n := c.Nodes()[i%len(urls)]
		clients = append(clients, &switchClient{node: n, key: fmt.Sprintf("bench/switch/writer-%d", i), via: n.URL()})
	}

	for b.Loop() {
		for _, leg := range legs {
			runSwitchLeg(b, c, leg, clients)
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

// switchClient writes one key over and over through one node's REST API
// (PUT /kcd/v1/store/keys/{key}: the node's own active store, the path its
// workers' writes take) and records when each write was acknowledged.
type switchClient struct {
	node *systemtest.Node
	key  string
	via  string // the node's URL

	mu     sync.Mutex
	acks   []time.Time     // when each commit returned successfully
	lats   []time.Duration // how long it took
	failed int
	err    error
}

// maxAcks bounds what one client records in one leg.
const maxAcks = 1 << 20

func (sc *switchClient) run(ctx context.Context) {
	value := make([]byte, 76)
	for i := int64(0); ctx.Err() == nil; i++ {
		copy(value, fmt.Sprintf(`{"offset":%d}`, i))
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		t0 := time.Now()
		_, err := sc.node.Put(cctx, sc.key, value)
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

// settleGap is the longest a writer may wait in the 2 s before a switch
// for the cluster to count as settled.
const settleGap = 300 * time.Millisecond

// switchTail is how long commits go on being measured after a switch
// ended: the nodes move to the new backend, and the old copy of the
// metadata is dropped, after the leader reports the switch done.
const switchTail = 2 * time.Second

// runSwitchLeg switches the cluster (through node 1, which forwards to the
// leader) while the clients commit, and reports the leg's figures. A
// switch that fails is reported and tried again, up to 3 times.
func runSwitchLeg(b *testing.B, c *systemtest.Cluster, leg switchLeg, clients []*switchClient) {
	b.Helper()
	name := leg.from + "-" + leg.to
	for attempt := 1; ; attempt++ {
		err := switchOnce(b, c, leg, clients)
		if err == nil {
			return
		}
		progress("%s: attempt %d: %v", name, attempt, err)
		b.ReportMetric(float64(attempt), name+"-failed")
		if attempt == 3 {
			b.Fatalf("%s: %d switches failed, the last: %v", name, attempt, err)
		}
	}
}

func switchOnce(b *testing.B, c *systemtest.Cluster, leg switchLeg, clients []*switchClient) error {
	b.Helper()
	name := leg.from + "-" + leg.to
	url := c.Nodes()[0].URL()
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
	defer func() {
		stop()
		wg.Wait()
	}()
	// The switch starts once the cluster has settled from whatever came
	// before (the last switch, the load): 2 s in which no writer waited
	// longer than settleGap, for up to 90 s. Those 2 s are the baseline.
	settleStart := time.Now()
	for {
		from := time.Now()
		time.Sleep(2 * time.Second)
		worst := time.Duration(0)
		for _, sc := range clients {
			sc.mu.Lock()
			worst = max(worst, longestGap(sc.acks, from, time.Now()))
			sc.mu.Unlock()
		}
		if worst < settleGap {
			break
		}
		if time.Since(settleStart) > 90*time.Second {
			progress("%s: not settled after 90 s (a writer waited %v in the last 2 s); switching anyway", name, worst.Round(time.Millisecond))
			break
		}
	}
	progress("%s: settled after %v", name, time.Since(settleStart).Round(100*time.Millisecond))

	// POST; while the last switch still drops the old copy, the leader
	// answers that one is running: try again (bounded: 60 s).
	body, _ := json.Marshal(kcdapi.StoreSwitchRequest{Backend: leg.to, Settings: leg.settings, Force: true})
	var sw kcdapi.StoreSwitch
	var posted time.Time
	for deadline := time.Now().Add(60 * time.Second); ; {
		posted = time.Now()
		code, err := doJSON(http.MethodPost, url+"/kcd/v1/store/switch", body, &sw)
		if err == nil && code == http.StatusAccepted {
			break
		}
		// 409: a switch runs; 503: no leader; "retry": the leader has not
		// taken charge of the active backend yet.
		retry := code == http.StatusConflict || code == http.StatusServiceUnavailable || (err != nil && strings.Contains(err.Error(), "retry"))
		if !retry || time.Now().After(deadline) {
			b.Fatalf("%s: POST /kcd/v1/store/switch: %d %v", name, code, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	saveLogs := func() {
		if *switchLogs == "" {
			return
		}
		for _, n := range c.Nodes() {
			dst := filepath.Join(*switchLogs, fmt.Sprintf("%s-%s-node%d.log", name, sw.ID, n.ID))
			if err := os.WriteFile(dst, []byte(n.Log()), 0o644); err != nil {
				progress("%s: %v", name, err)
			}
		}
	}
	// Poll until the switch ends (bounded: 5 minutes), noting when each
	// phase was first seen.
	var last kcdapi.StoreSwitch
	var timeline []string
	phase := ""
	for deadline := time.Now().Add(5 * time.Minute); ; {
		st = getStoreStatus(b, url)
		ls := st.LastSwitch
		if ls != nil && ls.ID == sw.ID && ls.Phase != phase {
			phase = ls.Phase
			timeline = append(timeline, fmt.Sprintf("%s %v", phase, time.Since(posted).Round(time.Millisecond)))
		}
		if ls != nil && ls.ID == sw.ID && ls.State != kcdapi.SwitchRunning {
			last = *ls
			break
		}
		if time.Now().After(deadline) {
			saveLogs()
			b.Fatalf("%s: switch %s still running after 5 minutes: %+v", name, sw.ID, st.LastSwitch)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ended := time.Now()
	lctx, lcancel := context.WithTimeout(context.Background(), 10*time.Second)
	lead, _ := systemtest.WaitLeader(lctx, c.Nodes()...)
	lcancel()
	progress("%s: switch %s: phases seen after the POST: %s; leader now: node %d", name, sw.ID, strings.Join(timeline, ", "), lead)
	for _, n := range c.Nodes() {
		for line := range strings.Lines(n.Log()) {
			if strings.Contains(line, sw.ID) {
				progress("%s: node %d: %s", name, n.ID, strings.TrimSpace(line))
			}
		}
	}
	defer saveLogs()
	if last.State != kcdapi.SwitchDone {
		return fmt.Errorf("switch %s %s: %s", sw.ID, last.State, last.Error)
	}
	// Commits go on for switchTail after the switch ended.
	time.Sleep(switchTail)
	stop()
	wg.Wait()
	if st = getStoreStatus(b, url); st.Backend != leg.to {
		b.Fatalf("%s: switch done but the active backend is %q", name, st.Backend)
	}
	windowEnd := ended.Add(switchTail)

	var acks []time.Time
	var inWindow []time.Duration
	failed := 0
	var pause, base time.Duration
	var pauseAt time.Time
	var pauseVia string
	for _, sc := range clients {
		sc.mu.Lock()
		acks = append(acks, sc.acks...)
		for i, at := range sc.acks {
			if at.After(posted) && !at.After(windowEnd) {
				inWindow = append(inWindow, sc.lats[i])
			}
		}
		failed += sc.failed
		base = max(base, longestGap(sc.acks, posted.Add(-2*time.Second), posted))
		if g, at := longestGapAt(sc.acks, posted, windowEnd); g > 0 {
			if g > pause {
				pause, pauseAt, pauseVia = g, at, sc.via
			}
			progress("%s: client via node %d: longest gap %v, from %v after the POST (done seen %v after it)", name, sc.node.ID, g.Round(100*time.Microsecond), at.Sub(posted).Round(time.Millisecond), ended.Sub(posted).Round(time.Millisecond))
		}
		if sc.err != nil {
			progress("%s: a write via %s failed: %v", name, sc.via, sc.err)
		}
		sc.mu.Unlock()
	}
	slices.SortFunc(acks, func(x, y time.Time) int { return x.Compare(y) })
	all := longestGap(acks, posted, windowEnd)
	sortDurations(inWindow)
	// The switch's duration as the client sees it (monotonic clock, within
	// one poll): started_at and ended_at are wall-clock times, which a
	// clock step moves.
	total := ended.Sub(posted)

	b.ReportMetric(last.HoldMillis, name+"-hold-ms")
	b.ReportMetric(total.Seconds(), name+"-switch-s")
	b.ReportMetric(ms(pause), name+"-pause-ms")
	b.ReportMetric(ms(base), name+"-base-ms")
	b.ReportMetric(ms(all), name+"-all-ms")
	if len(inWindow) > 0 {
		b.ReportMetric(ms(inWindow[len(inWindow)-1]), name+"-max-lat-ms")
	}
	if failed > 0 {
		b.ReportMetric(float64(failed), name+"-failed-writes")
	}
	progress("%s: switch %s done: %d of %d keys copied, revision %d, hold %.1f ms, switch %v (POST to done seen; %v from started_at to ended_at); longest pause of a writer %v (via %s, from %v after the POST; baseline %v), of all writers together %v; %d writes in the window, %d failed",
		name, last.ID, last.Copied, last.Total, last.Revision, last.HoldMillis, total.Round(time.Millisecond),
		last.EndedAt.Sub(last.StartedAt).Round(time.Millisecond), pause.Round(100*time.Microsecond), pauseVia, pauseAt.Sub(posted).Round(time.Millisecond),
		base.Round(100*time.Microsecond), all.Round(100*time.Microsecond), len(inWindow), failed)
	return nil
}

// longestGap is the longest time in [from, to] without an element of
// sorted: between from and the first, between consecutive ones, and
// between the last and to.
func longestGap(sorted []time.Time, from, to time.Time) time.Duration {
	g, _ := longestGapAt(sorted, from, to)
	return g
}

// longestGapAt is longestGap and when that gap began.
func longestGapAt(sorted []time.Time, from, to time.Time) (time.Duration, time.Time) {
	var longest time.Duration
	var at time.Time
	prev := from
	for _, t := range sorted {
		if t.Before(from) {
			continue
		}
		if t.After(to) {
			break
		}
		if t.Sub(prev) > longest {
			longest, at = t.Sub(prev), prev
		}
		prev = t
	}
	if to.Sub(prev) > longest {
		longest, at = to.Sub(prev), prev
	}
	return longest, at
}

// getStoreStatus asks for the store's status; while there is no leader
// (503) it asks again, for up to 30 s.
func getStoreStatus(b *testing.B, url string) kcdapi.StoreStatus {
	b.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		var st kcdapi.StoreStatus
		code, err := doJSON(http.MethodGet, url+"/kcd/v1/store/status", nil, &st)
		if err == nil && code == http.StatusOK {
			return st
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			b.Fatalf("GET /kcd/v1/store/status: %d %v", code, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
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
