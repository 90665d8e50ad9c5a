package systemtest

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/config"
	"github.com/kcd-project/kcd/internal/testenv"
)

var (
	chaosDuration = flag.Duration("chaos.duration", 2*time.Minute, "TestIntegrationChaos: how long faults are injected")
	chaosSeed     = flag.Uint64("chaos.seed", 0, "TestIntegrationChaos: seed of the fault schedule (0: from the clock; the report names it)")
	chaosReport   = flag.String("chaos.report", "", "TestIntegrationChaos: file to write the report to (it also goes to stdout)")
	chaosLogs     = flag.String("chaos.logs", "", "TestIntegrationChaos: directory to copy the nodes' logs into at the end")
	chaosRate     = flag.Float64("chaos.rate", 100, "TestIntegrationChaos: records per second of each Datagen task")
	chaosFaults   = flag.String("chaos.faults", "kill,kill-leader,sigstop,sigstop-leader,transfer-leader", "TestIntegrationChaos: the kinds of fault to inject, comma-separated")
	chaosMemLimit = flag.String("chaos.memory-limit", "80MiB", "TestIntegrationChaos: --memory-limit of every node, and the bar for its peak RSS")
)

// The run's shape and its bars.
const (
	chaosTasks       = 4
	chaosPartitions  = 4
	chaosPollEvery   = 200 * time.Millisecond
	chaosPollTimeout = time.Second
	// chaosStall: a pause in a task's progress longer than this, after it
	// ran again, counts as a new stop (a leader that refuses every worker
	// a few seconds after a fault, say). Tasks at 100 records/s make
	// progress every 10–200 ms.
	chaosStall = 1500 * time.Millisecond
	// chaosFresh: a task counts as running, during the run, when its
	// highest number grew within this long (what the tail consumer sees,
	// a moment after the worker produced it).
	chaosFresh = 2 * time.Second
	// chaosSteady: how long every task must keep running before the next
	// fault; chaosRecoverWait: how long the schedule waits for that.
	chaosSteady      = 5 * time.Second
	chaosRecoverWait = 30 * time.Second
	chaosReadBar     = 99.95 // % of status reads answered within 1 s, per live node
	chaosGapBar      = 5 * time.Second
	// chaosSelfStall: a 20 ms ticker of the test process that fires this
	// late means the process itself was stalled.
	chaosSelfStall = 300 * time.Millisecond
	chaosEndKey    = "chaos-end"
)

// TestIntegrationChaos runs the fault schedule of `make chaos`: three
// raft+worker nodes and one worker-only node on the real Kafka run a
// Datagen source (numbered records, four tasks) and a FileStreamSink of its
// topic. Faults come one at a time, chosen by a seeded RNG: kill -9 of a
// random node and of the leader (each restarted from its data dir),
// SIGSTOP of a random node for 5–8 s, three leader transfers within 60 ms.
// Meanwhile status is read from every node that is not down on purpose.
// Afterwards the topic is read back (read_committed) and the bars checked:
// no number lost in Kafka or the sink, no task written by two producers at
// once, reads answered, every fault recovered in time, RSS within the
// memory limit. The report goes to stdout and -chaos.report.
func TestIntegrationChaos(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	memLimit, err := config.ParseByteSize(*chaosMemLimit)
	if err != nil {
		t.Fatalf("-chaos.memory-limit: %v", err)
	}
	budget := *chaosDuration + 5*time.Minute // set-up, the last recovery, settling, read-back
	if dl, ok := t.Deadline(); ok && time.Until(dl) < budget {
		t.Fatalf("-chaos.duration %v needs about %v; go test's -timeout leaves %v", *chaosDuration, budget, time.Until(dl).Round(time.Second))
	}
	ctx, cancel := context.WithTimeout(t.Context(), budget)
	defer cancel()
	seed := *chaosSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for _, k := range strings.Split(*chaosFaults, ",") {
		if !slices.Contains([]string{"kill", "kill-leader", "sigstop", "sigstop-leader", "transfer-leader"}, k) {
			t.Fatalf("-chaos.faults: unknown kind %q (kill, kill-leader, sigstop, sigstop-leader, transfer-leader)", k)
		}
	}
	t.Logf("chaos: seed %d (rerun this schedule with -chaos.seed=%d), %v of faults", seed, seed, *chaosDuration)

	// The topic, fresh per run, created here so that its partitions are
	// known; every task's records go to one partition (the key is the task).
	topic := fmt.Sprintf("kcd-chaos-%d", time.Now().UnixNano())
	admCl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(admCl)
	t.Cleanup(func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer dcancel()
		if _, err := adm.DeleteTopic(dctx, topic); err != nil {
			t.Logf("delete topic %s: %v", topic, err)
		}
		admCl.Close()
	})
	if resp, err := adm.CreateTopic(ctx, chaosPartitions, 1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
	}

	c := StartCluster(t, bin, Options{Bootstrap: brokers, ExtraArgs: []string{
		"--offset-flush-interval", "1s", "--memory-limit", memLimit.String()}})
	if _, err := WaitLeader(ctx, c.Nodes()...); err != nil {
		t.Fatal(err)
	}
	if err := c.NewWorker(4).Start(); err != nil {
		t.Fatal(err)
	}
	run := newChaosRun(t, c, topic, rng)
	run.seed = seed
	if *chaosLogs != "" {
		t.Cleanup(func() { run.copyLogs(*chaosLogs) })
	}
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		var ws []map[string]any
		err := c.Node(1).GetJSON(ctx, "/kcd/v1/workers", &ws)
		return err == nil && len(ws) == 4, err
	}); err != nil {
		t.Fatalf("four workers did not register: %v", err)
	}

	sinkFile := filepath.Join(t.TempDir(), "sink.txt")
	const conv = "org.apache.kafka.connect.storage.StringConverter"
	run.create(ctx, fmt.Sprintf(`{"name":"gen","config":{"connector.class":"Datagen","topic":%q,"tasks.max":"%d","rate.per.task":"%g","shape":"counter","key":"task","key.converter":%q,"value.converter":%q}}`,
		topic, chaosTasks, *chaosRate, conv, conv))
	run.create(ctx, fmt.Sprintf(`{"name":"sink","config":{"connector.class":"FileStreamSink","file":%q,"topics":%q,"tasks.max":"2","key.converter":%q,"value.converter":%q}}`,
		sinkFile, topic, conv, conv))

	run.tail = startTail(t, brokers, topic)
	if ok, _ := run.waitRunning(ctx, time.Now(), 60*time.Second); !ok {
		t.Fatalf("the %d Datagen tasks did not all produce steadily within 60 s of being created", chaosTasks)
	}

	// The schedule.
	pollCtx, stopPolling := context.WithCancel(ctx)
	run.start = time.Now()
	samplers := run.startSamplers(pollCtx)
	kinds := strings.Split(*chaosFaults, ",")
	for ctx.Err() == nil && time.Since(run.start) < *chaosDuration {
		for _, k := range rng.Perm(len(kinds)) {
			if ctx.Err() != nil || time.Since(run.start) >= *chaosDuration {
				break
			}
			run.fault(ctx, kinds[k])
			// A recovery gap between faults.
			select {
			case <-ctx.Done():
			case <-time.After(time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))):
			}
		}
	}
	// Settle, then stop the source and read everything back.
	settled, _ := run.waitRunning(ctx, time.Now(), chaosRecoverWait)
	run.end = time.Now()
	stopPolling()
	samplers.Wait()
	t.Logf("chaos: schedule over after %v (%d faults); settled: %v", run.end.Sub(run.start).Round(time.Second), len(run.faults), settled)
	run.stopSource(ctx)
	run.logf("source stopped; reading %s back", topic)
	if err := run.tail.finish(ctx, brokers, topic); err != nil {
		t.Fatalf("reading %s back: %v", topic, err)
	}
	run.logf("read %d records back; waiting for the sink", len(run.tail.recs))
	run.verify(ctx, sinkFile, memLimit)
}

// chaosState is what the poller knows of a node: up (reads count), down
// on purpose (no reads), or starting (reads count from its first HTTP
// answer).
type chaosState int

const (
	nodeUp chaosState = iota
	nodeDown
	nodeStarting
)

// chaosNode is a node with its poller's and sampler's figures.
type chaosNode struct {
	*Node
	roles  string
	client *http.Client
	tr     *http.Transport

	mu       sync.Mutex
	state    chaosState
	gen      int // bumped on every change of state: reads that span one do not count
	since    time.Time
	ok       int
	total    int
	excluded int
	slowest  time.Duration
	failed   []failedRead
	lag      time.Duration // the poller's own worst delay behind its ticker
	peakHWM  int64
	restarts int
	startups []time.Duration
}

// failedRead is a read that was not answered in time.
type failedRead struct {
	start, end time.Time
	kind       string
}

// setState moves n to st; reads in flight across the change do not count.
func (n *chaosNode) setState(st chaosState) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.state, n.gen, n.since = st, n.gen+1, time.Now()
}

// chaosFault is one fault of the schedule.
type chaosFault struct {
	N          int
	Kind       string
	Node       uint64
	Start, End time.Time
	Note       string
	Steady     bool     // every task ran again, steadily, before the next fault
	Rec        recovery // until every task produced again
	New        recovery // until every task produced numbers it had not produced before
}

type chaosRun struct {
	t     *testing.T
	c     *Cluster
	topic string
	rng   *rand.Rand
	seed  uint64
	nodes []*chaosNode
	tail  *chaosTail

	start, end time.Time
	faults     []*chaosFault

	mu     sync.Mutex
	stalls [][2]time.Time // when the test process itself did not run
}

func newChaosRun(t *testing.T, c *Cluster, topic string, rng *rand.Rand) *chaosRun {
	r := &chaosRun{t: t, c: c, topic: topic, rng: rng}
	for _, n := range c.Nodes() {
		tr := &http.Transport{MaxIdleConnsPerHost: 8, IdleConnTimeout: 30 * time.Second}
		roles := "raft+worker"
		if slices.Contains(n.Args, "--roles") {
			roles = "worker"
		}
		r.nodes = append(r.nodes, &chaosNode{Node: n, roles: roles, tr: tr, client: &http.Client{Transport: tr}})
	}
	t.Cleanup(func() {
		for _, n := range r.nodes {
			n.tr.CloseIdleConnections()
		}
	})
	return r
}

func (r *chaosRun) logf(format string, args ...any) {
	r.t.Helper()
	r.t.Logf("chaos %6.1fs: %s", time.Since(r.start).Seconds(), fmt.Sprintf(format, args...))
}

// create POSTs a connector, retrying while the cluster settles (a 409 after
// a retry: an earlier attempt created it).
func (r *chaosRun) create(ctx context.Context, body string) {
	r.t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	if err := WaitFor(cctx, 200*time.Millisecond, func() (bool, error) {
		status, err := r.nodes[0].do(cctx, http.MethodPost, "/connectors", []byte(body), nil)
		done := (err == nil && status == http.StatusCreated) || (last != nil && status == http.StatusConflict)
		last = err
		return done, nil
	}); err != nil {
		r.t.Fatalf("create connector %s: %v (last answer: %v)", body, err, last)
	}
}

// running tells whether every task's highest number grew within
// chaosFresh, and since since.
func (r *chaosRun) running(since time.Time) bool {
	r.tail.mu.Lock()
	defer r.tail.mu.Unlock()
	for _, at := range r.tail.advanced {
		if at.Before(since) || time.Since(at) > chaosFresh {
			return false
		}
	}
	return true
}

// waitRunning waits up to limit until every task has made progress since
// since and kept making it for chaosSteady; it returns whether that
// happened and when the tasks were last seen all running again.
func (r *chaosRun) waitRunning(ctx context.Context, since time.Time, limit time.Duration) (bool, time.Time) {
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var from time.Time
	err := WaitFor(wctx, 100*time.Millisecond, func() (bool, error) {
		if !r.running(since) {
			from = time.Time{}
			return false, nil
		}
		if from.IsZero() {
			from = time.Now()
		}
		return time.Since(from) >= chaosSteady, nil
	})
	return err == nil, from
}

// advancedSince tells whether every task made progress after since.
func (r *chaosRun) advancedSince(since time.Time) bool {
	r.tail.mu.Lock()
	defer r.tail.mu.Unlock()
	for _, at := range r.tail.advanced {
		if at.Before(since) {
			return false
		}
	}
	return true
}

// pick returns a random node among those that match.
func (r *chaosRun) pick(match func(*chaosNode) bool) *chaosNode {
	var cands []*chaosNode
	for _, n := range r.nodes {
		if match(n) {
			cands = append(cands, n)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	return cands[r.rng.IntN(len(cands))]
}

func (n *chaosNode) isUp() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state != nodeDown
}

func (n *chaosNode) raftUp() bool { return n.roles != "worker" && n.isUp() }

// leader asks the raft nodes that are up which node leads, for up to 5 s.
func (r *chaosRun) leader(ctx context.Context) *chaosNode {
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var lead *chaosNode
	_ = WaitFor(lctx, 50*time.Millisecond, func() (bool, error) {
		for _, n := range r.nodes {
			if !n.raftUp() {
				continue
			}
			rctx, rcancel := context.WithTimeout(lctx, time.Second)
			info, err := n.Info(rctx)
			rcancel()
			if err != nil || info.Leader == 0 {
				continue
			}
			for _, m := range r.nodes {
				if m.ID == info.Leader && m.isUp() {
					lead = m
					return true, nil
				}
			}
		}
		return false, nil
	})
	return lead
}

// pause waits d unless ctx ends first.
func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// fault injects one fault of kind and waits until the tasks run steadily
// again (at most chaosRecoverWait).
func (r *chaosRun) fault(ctx context.Context, kind string) {
	t := r.t
	f := &chaosFault{N: len(r.faults) + 1, Kind: kind}
	switch kind {
	case "kill", "kill-leader":
		var n *chaosNode
		if kind == "kill" {
			n = r.pick(func(*chaosNode) bool { return true })
		} else if n = r.leader(ctx); n == nil {
			r.logf("fault %d (%s): no leader known for 5 s; skipped", f.N, kind)
			return
		}
		// Down at least this long, and until the tasks run elsewhere.
		down := 2*time.Second + time.Duration(r.rng.Int64N(int64(3*time.Second)))
		r.sampleHWM(n)
		n.setState(nodeDown)
		f.Node, f.Start = n.ID, time.Now()
		n.Kill()
		r.logf("fault %d: kill -9 of node %d (%s)", f.N, n.ID, kind)
		wctx, cancel := context.WithTimeout(ctx, chaosRecoverWait)
		_ = WaitFor(wctx, 50*time.Millisecond, func() (bool, error) {
			return time.Since(f.Start) >= down && r.advancedSince(f.Start), nil
		})
		cancel()
		n.tr.CloseIdleConnections()
		n.setState(nodeStarting)
		if err := n.Start(); err != nil {
			t.Errorf("restart node %d: %v", n.ID, err)
		}
		n.mu.Lock()
		n.restarts++
		n.mu.Unlock()
		f.End = time.Now()
		f.Note = fmt.Sprintf("down %.1fs", f.End.Sub(f.Start).Seconds())
		r.logf("fault %d: node %d restarted from its data dir", f.N, n.ID)
	case "sigstop", "sigstop-leader":
		var n *chaosNode
		if kind == "sigstop" {
			n = r.pick(func(*chaosNode) bool { return true })
		} else if n = r.leader(ctx); n == nil {
			r.logf("fault %d (%s): no leader known for 5 s; skipped", f.N, kind)
			return
		}
		hold := 5*time.Second + time.Duration(r.rng.Int64N(int64(3*time.Second)))
		n.setState(nodeDown)
		f.Node, f.Start = n.ID, time.Now()
		if err := n.Signal(syscall.SIGSTOP); err != nil {
			t.Errorf("SIGSTOP node %d: %v", n.ID, err)
		}
		r.logf("fault %d: SIGSTOP of node %d for %.1fs", f.N, n.ID, hold.Seconds())
		pause(ctx, hold)
		if err := n.Signal(syscall.SIGCONT); err != nil {
			t.Errorf("SIGCONT node %d: %v", n.ID, err)
		}
		n.setState(nodeUp)
		f.End = time.Now()
		f.Note = fmt.Sprintf("stopped %.1fs", f.End.Sub(f.Start).Seconds())
		r.logf("fault %d: SIGCONT of node %d", f.N, n.ID)
	case "transfer-leader":
		before := r.leader(ctx)
		f.Start = time.Now()
		answers := make([]string, 3)
		var wg sync.WaitGroup
		for i := range answers {
			via := r.pick((*chaosNode).raftUp)
			if via == nil {
				answers[i] = "no raft node up"
				continue
			}
			wg.Go(func() {
				pause(ctx, time.Duration(i)*30*time.Millisecond)
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				var out struct {
					Leader uint64 `json:"leader"`
				}
				status, err := via.do(rctx, http.MethodPost, "/kcd/v1/cluster/leader", nil, &out)
				switch {
				case err == nil:
					answers[i] = fmt.Sprintf("via %d: %d → leader %d", via.ID, status, out.Leader)
				case status != 0:
					answers[i] = fmt.Sprintf("via %d: %d", via.ID, status)
				default:
					answers[i] = fmt.Sprintf("via %d: %s", via.ID, shortErr(err))
				}
			})
		}
		wg.Wait()
		f.End = time.Now()
		after := r.leader(ctx)
		f.Note = fmt.Sprintf("leader %s → %s; %s", nodeName(before), nodeName(after), strings.Join(answers, "; "))
		r.logf("fault %d: 3 leader transfers within 60 ms: %s", f.N, f.Note)
	default:
		t.Fatalf("unknown fault %q", kind)
	}
	r.faults = append(r.faults, f)
	var at time.Time
	f.Steady, at = r.waitRunning(ctx, f.Start, chaosRecoverWait)
	if f.Steady {
		r.logf("fault %d: every task ran again %.1fs after the fault, and kept running %v", f.N, at.Sub(f.Start).Seconds(), chaosSteady)
	} else {
		r.logf("fault %d: the tasks did not run steadily again within %v", f.N, chaosRecoverWait)
	}
}

func nodeName(n *chaosNode) string {
	if n == nil {
		return "none"
	}
	return fmt.Sprint(n.ID)
}

// shortErr names a failed read briefly, for the report.
func shortErr(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed"
	}
	// The last part of the message, without the URL and addresses.
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return "error: " + msg[:min(len(msg), 60)]
}

// startSamplers starts the status poller of every node and the RSS
// sampler; they stop when ctx ends (reads in flight finish within 1 s).
func (r *chaosRun) startSamplers(ctx context.Context) *sync.WaitGroup {
	wg := &sync.WaitGroup{}
	for _, n := range r.nodes {
		wg.Go(func() {
			tick := time.NewTicker(chaosPollEvery)
			defer tick.Stop()
			for {
				var due time.Time
				select {
				case <-ctx.Done():
					return
				case due = <-tick.C:
				}
				n.mu.Lock()
				n.lag = max(n.lag, time.Since(due))
				st, gen := n.state, n.gen
				if st == nodeStarting && time.Since(n.since) > chaosRecoverWait {
					st, n.state = nodeUp, nodeUp // up or not, its reads count now
				}
				n.mu.Unlock()
				if st != nodeDown {
					wg.Go(func() { r.read(n, st, gen) })
				}
			}
		})
	}
	// The test process's own stalls (a starved machine): a read that failed
	// while the poller could not run is not held against the node.
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if now.Sub(last) > chaosSelfStall {
					r.mu.Lock()
					r.stalls = append(r.stalls, [2]time.Time{last, now})
					r.mu.Unlock()
				}
				last = now
			}
		}
	})
	wg.Go(func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, n := range r.nodes {
				r.sampleHWM(n)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	return wg
}

// read is one status read of the poller.
func (r *chaosRun) read(n *chaosNode, st chaosState, gen int) {
	rctx, cancel := context.WithTimeout(context.Background(), chaosPollTimeout)
	defer cancel()
	start := time.Now()
	code := 0
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, n.URL()+"/connectors/gen/status", nil)
	if err == nil {
		var res *http.Response
		if res, err = n.client.Do(req); err == nil {
			_, err = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
			res.Body.Close()
			code = res.StatusCode
		}
	}
	took := time.Since(start)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.gen != gen {
		n.excluded++ // the node was stopped, killed or resumed meanwhile
		return
	}
	if st == nodeStarting {
		if code == 0 {
			return // not listening yet
		}
		if n.state == nodeStarting {
			n.state = nodeUp
			n.startups = append(n.startups, time.Since(n.since))
		}
	}
	n.total++
	n.slowest = max(n.slowest, took)
	var kind string
	switch {
	case err == nil && code/100 == 2 && took <= chaosPollTimeout:
		n.ok++
		return
	case code != 0 && code/100 != 2:
		kind = fmt.Sprintf("HTTP %d", code)
	default:
		kind = shortErr(err)
	}
	n.failed = append(n.failed, failedRead{start, time.Now(), kind})
}

// sampleHWM reads the node's peak RSS so far (VmHWM).
func (r *chaosRun) sampleHWM(n *chaosNode) {
	pid := n.PID()
	if pid == 0 || !n.Running() {
		return
	}
	if hwm, err := ProcStatusBytes(pid, "VmHWM"); err == nil {
		n.mu.Lock()
		n.peakHWM = max(n.peakHWM, hwm)
		n.mu.Unlock()
	}
}

// stopSource stops the Datagen connector and waits until its numbers stop
// growing, so that the topic's end is known.
func (r *chaosRun) stopSource(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	if err := WaitFor(sctx, 200*time.Millisecond, func() (bool, error) {
		n := r.pick(func(n *chaosNode) bool { return n.Running() })
		_, last = n.do(sctx, http.MethodPut, "/connectors/gen/stop", nil, nil)
		return last == nil, nil
	}); err != nil {
		r.logf("could not stop the source connector: %v (last answer: %v); reading what is there", err, last)
	}
	var quietFrom time.Time
	_ = WaitFor(sctx, 100*time.Millisecond, func() (bool, error) {
		r.tail.mu.Lock()
		latest := slices.MaxFunc(r.tail.advanced, time.Time.Compare)
		r.tail.mu.Unlock()
		if quietFrom.Before(latest) {
			quietFrom = latest
		}
		return time.Since(quietFrom) > 3*time.Second, nil
	})
}

// chaosTail reads the topic (read_committed) from the start while the
// run goes on.
type chaosTail struct {
	cl     *kgo.Client
	stop   context.CancelFunc
	done   chan struct{}
	closed sync.Once

	mu       sync.Mutex
	recs     []chaosRecord
	parts    []map[int32]int // task → partition → records
	advanced []time.Time     // task → when its highest number last grew
	maxSeq   []int64
	foreign  int            // records that are not counter values of a task
	ends     map[int32]bool // partitions whose end marker was read
	after    int            // records read after their partition's end marker
	fetchErr map[string]int // fetch errors by kind
}

func startTail(t *testing.T, brokers, topic string) *chaosTail {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	tl := &chaosTail{cl: cl, stop: stop, done: make(chan struct{}), ends: map[int32]bool{}, fetchErr: map[string]int{},
		parts: make([]map[int32]int, chaosTasks), advanced: make([]time.Time, chaosTasks), maxSeq: make([]int64, chaosTasks)}
	for i := range tl.parts {
		tl.parts[i], tl.maxSeq[i] = map[int32]int{}, -1
	}
	t.Cleanup(tl.close)
	go tl.loop(ctx)
	return tl
}

func (tl *chaosTail) close() {
	tl.closed.Do(func() {
		tl.stop()
		<-tl.done
		tl.cl.Close()
	})
}

func (tl *chaosTail) loop(ctx context.Context) {
	defer close(tl.done)
	for ctx.Err() == nil {
		fs := tl.cl.PollFetches(ctx)
		now := time.Now()
		tl.mu.Lock()
		fs.EachError(func(_ string, _ int32, err error) {
			if ctx.Err() == nil && len(tl.fetchErr) < 20 {
				tl.fetchErr[err.Error()]++
			}
		})
		fs.EachRecord(func(rec *kgo.Record) {
			if tl.ends[rec.Partition] {
				tl.after++
				return
			}
			if string(rec.Key) == chaosEndKey {
				tl.ends[rec.Partition] = true
				return
			}
			task, seq, ok := parseCounter(rec.Value)
			if !ok || task >= chaosTasks {
				tl.foreign++
				return
			}
			tl.recs = append(tl.recs, chaosRecord{Task: task, Seq: seq, Part: rec.Partition, Pos: rec.Offset, TS: rec.Timestamp.UnixMilli(),
				Producer: producerKey{ID: rec.ProducerID, Epoch: rec.ProducerEpoch}})
			tl.parts[task][rec.Partition]++
			if seq > tl.maxSeq[task] {
				tl.maxSeq[task], tl.advanced[task] = seq, now
			}
		})
		tl.mu.Unlock()
	}
}

// finish appends an end marker to every partition (the source is
// stopped) and waits until the tail has read up to each, then stops it.
func (tl *chaosTail) finish(ctx context.Context, brokers, topic string) error {
	defer tl.close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	for p := range int32(chaosPartitions) {
		rec := &kgo.Record{Topic: topic, Partition: p, Key: []byte(chaosEndKey), Value: fmt.Appendf(nil, "%s-%d", chaosEndKey, p)}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			return fmt.Errorf("end marker of partition %d: %w", p, err)
		}
	}
	// A transaction left open ahead of a marker hides it until the broker
	// aborts it (the producer's transaction timeout).
	fctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	return WaitFor(fctx, 100*time.Millisecond, func() (bool, error) {
		tl.mu.Lock()
		defer tl.mu.Unlock()
		if len(tl.ends) == chaosPartitions {
			return true, nil
		}
		return false, fmt.Errorf("end markers read in %d of %d partitions", len(tl.ends), chaosPartitions)
	})
}

// copyLogs copies every node's log into dir.
func (r *chaosRun) copyLogs(dir string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.t.Logf("chaos logs: %v", err)
		return
	}
	for _, n := range r.nodes {
		b, err := os.ReadFile(n.LogPath)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, filepath.Base(n.LogPath)), b, 0o644)
		}
		if err != nil {
			r.t.Logf("chaos logs: node %d: %v", n.ID, err)
		}
	}
}

// waitSink waits until the sink file holds every value of recs, for up to
// a minute while the file grows (15 s once it stops growing), and returns
// how many values it lacks and a few of them.
func waitSink(ctx context.Context, file string, recs []chaosRecord) (missing int, examples []string) {
	want := map[string]struct{}{}
	for _, r := range recs {
		want[fmt.Sprintf("task-%d-%d", r.Task, r.Seq)] = struct{}{}
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	size, grew := -1, time.Now()
	_ = WaitFor(wctx, 500*time.Millisecond, func() (bool, error) {
		b, _ := os.ReadFile(file)
		if len(b) != size {
			size, grew = len(b), time.Now()
		} else if time.Since(grew) > 15*time.Second {
			cancel() // the sink has stopped: report what it lacks
		}
		have := make(map[string]struct{}, len(want))
		for line := range strings.SplitSeq(string(b), "\n") {
			have[line] = struct{}{}
		}
		missing, examples = 0, examples[:0]
		for v := range want {
			if _, ok := have[v]; !ok {
				missing++
				if len(examples) < 5 {
					examples = append(examples, v)
				}
			}
		}
		return missing == 0, nil
	})
	slices.Sort(examples)
	return missing, examples
}

// verify reads the run's figures, writes the report and checks the bars.
func (r *chaosRun) verify(ctx context.Context, sinkFile string, memLimit config.ByteSize) {
	t := r.t
	tl := r.tail
	checks := checkTasks(tl.recs, chaosTasks)
	// The instrument's own premises: every task produced, each into one
	// partition (positions are offsets in it).
	for task, parts := range tl.parts {
		if len(parts) != 1 {
			t.Errorf("instrument: task %d's records are in %d partitions (%v), not one: its overlap check is void", task, len(parts), parts)
		}
	}
	produced := progressTimes(tl.recs, chaosTasks, false)
	fresh := progressTimes(tl.recs, chaosTasks, true)
	var gaps, newGaps []int64
	for i, f := range r.faults {
		end := r.end
		if i+1 < len(r.faults) {
			end = r.faults[i+1].Start
		}
		f.Rec = faultRecovery(produced, f.Start.UnixMilli(), end.UnixMilli(), chaosStall.Milliseconds())
		f.New = faultRecovery(fresh, f.Start.UnixMilli(), end.UnixMilli(), chaosStall.Milliseconds())
		if f.Rec.Recovered {
			gaps = append(gaps, f.Rec.Gap)
		}
		if f.New.Recovered {
			newGaps = append(newGaps, f.New.Gap)
		}
	}
	if *chaosLogs != "" {
		r.dumpRecords(filepath.Join(*chaosLogs, "records.tsv"))
	}
	sinkMissing, sinkExamples := waitSink(ctx, sinkFile, tl.recs)
	r.logf("sink checked")

	var lost, dups int64
	var overlaps []overlap
	for _, c := range checks {
		lost += c.Lost
		dups += int64(c.Dups)
		overlaps = append(overlaps, c.Overlaps...)
	}
	unrecovered := 0
	for _, f := range r.faults {
		if !f.Rec.Recovered {
			unrecovered++
		}
	}
	ms := func(v int64) string { return fmt.Sprintf("%.2fs", float64(v)/1000) }
	at := func(ts time.Time) string { return fmt.Sprintf("%.1fs", ts.Sub(r.start).Seconds()) }

	var b strings.Builder
	fmt.Fprintf(&b, "kcd chaos report — %s\n", r.start.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "seed %d (make chaos CHAOS_SEED=%[1]d replays the schedule's choices)\n%v of faults (%d), 3 raft+worker nodes + 1 worker-only node on Kafka, topic %s (%d partitions)\n",
		r.seed, r.end.Sub(r.start).Round(time.Second), len(r.faults), r.topic, chaosPartitions)
	fmt.Fprintf(&b, "Datagen %d tasks × %g records/s, FileStreamSink; --offset-flush-interval 1s, --memory-limit %s\n\n", chaosTasks, *chaosRate, memLimit)

	b.WriteString("Faults (times from the start of the schedule; from Kafka, by record timestamps: gap = fault → every task producing again,\n")
	b.WriteString("new = fault → every task producing numbers beyond any it had produced, i.e. after replaying what followed its last offset commit)\n")
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "#\tkind\tnode\tstart\tend\tgap\tnew\tnote")
	gapOf := func(f *chaosFault, rec recovery) string {
		if !rec.Recovered {
			return fmt.Sprintf("NOT RECOVERED (task %d, %.0fs window)", rec.Slowest, windowOf(r, f).Seconds())
		}
		return ms(rec.Gap)
	}
	for _, f := range r.faults {
		node := "-"
		if f.Node != 0 {
			node = fmt.Sprint(f.Node)
		}
		note := f.Note
		if !f.Steady {
			note += fmt.Sprintf("; the tasks did not run steadily within %v", chaosRecoverWait)
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.N, f.Kind, node, at(f.Start), at(f.End), gapOf(f, f.Rec), gapOf(f, f.New), note)
	}
	w.Flush()
	fmt.Fprintf(&b, "gap p50 %s, p99 %s, max %s over %d recovered faults; %d not recovered\n",
		ms(percentile(gaps, 50)), ms(percentile(gaps, 99)), ms(percentile(gaps, 100)), len(gaps), unrecovered)
	fmt.Fprintf(&b, "new p50 %s, p99 %s, max %s over %d faults\n\n",
		ms(percentile(newGaps, 50)), ms(percentile(newGaps, 99)), ms(percentile(newGaps, 100)), len(newGaps))

	b.WriteString("Nodes (reads: GET /connectors/gen/status every 200 ms, answered = 2xx within 1 s; not sent while the node is down on purpose)\n")
	w = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "node\troles\tanswered\treads\t%\tslowest\tnot counted\tunanswered by kind\trestarts\tfirst answer after restart\tpeak RSS")
	var readFails []string
	var rssFails []string
	selfStalled := func(f failedRead) bool {
		for _, s := range r.stalls {
			if f.start.Before(s[1]) && s[0].Before(f.end) {
				return true
			}
		}
		return false
	}
	failures := map[*chaosNode][]string{}
	for _, n := range r.nodes {
		n.mu.Lock()
		errs := map[string]int{}
		for _, f := range n.failed {
			if selfStalled(f) {
				n.total--
				n.excluded++
				continue
			}
			errs[f.kind]++
			if len(failures[n]) < 8 {
				failures[n] = append(failures[n], fmt.Sprintf("%.1fs %s", f.start.Sub(r.start).Seconds(), f.kind))
			}
		}
		pct := 100.0
		if n.total > 0 {
			pct = 100 * float64(n.ok) / float64(n.total)
		}
		var kinds []string
		for k, v := range errs {
			kinds = append(kinds, fmt.Sprintf("%s ×%d", k, v))
		}
		slices.Sort(kinds)
		var ups []string
		for _, d := range n.startups {
			ups = append(ups, fmt.Sprintf("%.1fs", d.Seconds()))
		}
		fmt.Fprintf(w, "%d\t%s\t%d\t%d\t%.3f\t%.2fs\t%d\t%s\t%d\t%s\t%.1f MiB\n", n.ID, n.roles, n.ok, n.total, pct,
			n.slowest.Seconds(), n.excluded, orDash(strings.Join(kinds, ", ")), n.restarts, orDash(strings.Join(ups, " ")), float64(n.peakHWM)/(1<<20))
		if n.total == 0 || pct < chaosReadBar {
			readFails = append(readFails, fmt.Sprintf("node %d %.3f%% (%d of %d)", n.ID, pct, n.ok, n.total))
		}
		if n.peakHWM > int64(memLimit) {
			rssFails = append(rssFails, fmt.Sprintf("node %d %.1f MiB", n.ID, float64(n.peakHWM)/(1<<20)))
		}
		n.mu.Unlock()
	}
	w.Flush()
	for _, n := range r.nodes {
		if len(failures[n]) > 0 {
			fmt.Fprintf(&b, "  node %d: first unanswered reads sent at %s\n", n.ID, strings.Join(failures[n], ", "))
		}
	}
	var lag, stalled time.Duration
	for _, n := range r.nodes {
		lag = max(lag, n.lag)
	}
	for _, s := range r.stalls {
		stalled = max(stalled, s[1].Sub(s[0]))
	}
	fmt.Fprintf(&b, "  the test process: at most %.0f ms behind the poller's ticks; %d stalls over %v (longest %.0f ms), failed reads during them not counted\n",
		float64(lag.Microseconds())/1000, len(r.stalls), chaosSelfStall, float64(stalled.Microseconds())/1000)

	fmt.Fprintf(&b, "\nData (read back from Kafka, read_committed: %d counter records, %d other, %d after the end markers)\n", len(tl.recs), tl.foreign, tl.after)
	w = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "task\trecords\thighest\tlost\tduplicates\tinstances\toverlaps")
	for _, c := range checks {
		fmt.Fprintf(w, "%d\t%d\t%d\t%d\t%d\t%d\t%d\n", c.Task, c.Records, c.Max, c.Lost, c.Dups, c.Instances, len(c.Overlaps))
	}
	w.Flush()
	for _, c := range checks {
		if c.Lost > 0 {
			fmt.Fprintf(&b, "  task %d lacks %d numbers, first %v\n", c.Task, c.Lost, c.Missing)
		}
	}
	for i, o := range overlaps {
		if i == 10 {
			fmt.Fprintf(&b, "  … %d more overlaps\n", len(overlaps)-10)
			break
		}
		fmt.Fprintf(&b, "  overlap: %s\n", o)
	}
	fmt.Fprintf(&b, "sink file: %d of the topic's values missing a minute after the end %v\n", sinkMissing, sinkExamples)
	if len(tl.fetchErr) > 0 {
		fmt.Fprintf(&b, "tail consumer fetch errors (retried): %v\n", tl.fetchErr)
	}

	var peak int64
	for _, n := range r.nodes {
		peak = max(peak, n.peakHWM)
	}
	bars := []struct {
		name string
		ok   bool
		got  string
	}{
		{"0 records lost (Kafka and sink)", lost == 0 && sinkMissing == 0, fmt.Sprintf("%d lost in Kafka, %d not in the sink file; %d duplicates (allowed)", lost, sinkMissing, dups)},
		{"0 overlaps of a task on two workers", len(overlaps) == 0, fmt.Sprintf("%d", len(overlaps))},
		{fmt.Sprintf("reads answered ≥ %.2f%% per live node", chaosReadBar), len(readFails) == 0, orDash(strings.Join(readFails, ", "))},
		{fmt.Sprintf("every fault recovered, gap p99 < %v", chaosGapBar), unrecovered == 0 && len(r.faults) > 0 && percentile(gaps, 99) < chaosGapBar.Milliseconds(),
			fmt.Sprintf("%d of %d recovered, p99 %s", len(gaps), len(r.faults), ms(percentile(gaps, 99)))},
		{fmt.Sprintf("peak RSS ≤ --memory-limit %s", memLimit), len(rssFails) == 0, fmt.Sprintf("max %.1f MiB %s", float64(peak)/(1<<20), strings.Join(rssFails, ", "))},
	}
	b.WriteString("\nBars\n")
	w = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, bar := range bars {
		verdict := "PASS"
		if !bar.ok {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", verdict, bar.name, bar.got)
	}
	w.Flush()

	report := b.String()
	fmt.Fprint(os.Stdout, "\n"+report)
	if *chaosReport != "" {
		err := os.MkdirAll(filepath.Dir(*chaosReport), 0o755)
		if err == nil {
			err = os.WriteFile(*chaosReport, []byte(report), 0o644)
		}
		if err != nil {
			t.Errorf("write the report: %v", err)
		}
	}
	for _, bar := range bars {
		if !bar.ok {
			t.Errorf("chaos bar failed: %s: %s", bar.name, bar.got)
		}
	}
}

// dumpRecords writes every counter record read back, in log order, for a
// closer look at a run.
func (r *chaosRun) dumpRecords(path string) {
	var b strings.Builder
	b.WriteString("task\tseq\tpartition\toffset\tproducer\ttimestamp_ms\n")
	recs := slices.Clone(r.tail.recs)
	slices.SortStableFunc(recs, func(a, b chaosRecord) int {
		return cmp.Or(cmp.Compare(a.Part, b.Part), cmp.Compare(a.Pos, b.Pos))
	})
	for _, rec := range recs {
		fmt.Fprintf(&b, "%d\t%d\t%d\t%d\t%s\t%d\n", rec.Task, rec.Seq, rec.Part, rec.Pos, rec.Producer, rec.TS)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		r.t.Logf("records: %v", err)
	} else if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		r.t.Logf("records: %v", err)
	}
}

// windowOf is the time from f to the next fault or the end of the schedule.
func windowOf(r *chaosRun, f *chaosFault) time.Duration {
	if f.N < len(r.faults) {
		return r.faults[f.N].Start.Sub(f.Start)
	}
	return r.end.Sub(f.Start)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
