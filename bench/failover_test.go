package bench

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/systemtest"
)

var restartAfter = flag.Duration("bench.restart-after", 0,
	"BenchmarkFailover restarts the killed node this long after the kill (0: as soon as the trial is measured)")

// BenchmarkFailover measures how long a three-node cluster of real kcd
// processes (default flags: --raft-election-timeout 500ms) cannot take
// writes after its leader is killed with SIGKILL: from the kill until a
// PUT through a surviving node is acknowledged (HTTP 200). One iteration is
// one trial; then the killed node is restarted from its data dir at once
// (or -bench.restart-after after the kill), as a supervisor would, and the
// cluster waits until all three agree on a leader and have the same commit
// index. Run it with -benchtime=30x for 30 trials.
//
// A client that sends one PUT and waits may wait longer: its write can be
// forwarded to the dead leader and lost, and is then proposed again only
// after an election timeout. To measure the cluster rather than one
// client's luck, the benchmark starts a new PUT attempt every 20 ms,
// alternating between the two survivors, each with a 5 s timeout, and takes
// the first acknowledgement.
//
// Metrics: p50-ms, p99-ms, max-ms of kill → acknowledged write;
// elect-p50-ms, elect-p99-ms of kill → both survivors name the same new
// leader (polled every 10 ms); trials that completed; stuck counts the
// times the cluster took no write within 30 s of a kill, or did not settle
// within 20 s of the restart (each then restarts every node and is left
// out of the percentiles).
func BenchmarkFailover(b *testing.B) {
	bin := kcdBinary(b)
	c := systemtest.StartCluster(b, bin, systemtest.Options{})
	ctx := context.Background()

	var ack, elect []time.Duration
	trial, stuck := 0, 0
	for b.Loop() {
		trial++
		b.StopTimer()
		lead, wasStuck := waitSettled(b, c, trial-1)
		if wasStuck {
			stuck++
		}
		// Spread the kills over the heartbeat period and the election
		// timers' phases.
		time.Sleep(time.Duration(rand.Int64N(int64(300 * time.Millisecond))))
		old := c.Node(lead)
		survivors := c.Except(lead)
		b.StartTimer()

		if err := old.Signal(syscall.SIGKILL); err != nil {
			b.Fatal(err)
		}
		killed := time.Now()
		electCh := make(chan time.Duration, 1)
		go func() {
			ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if _, err := systemtest.WaitLeader(ectx, survivors...); err != nil {
				electCh <- -1
				return
			}
			electCh <- time.Since(killed)
		}()
		took, attempts, err := firstAck(ctx, survivors, fmt.Sprintf("bench/failover/%d", trial), killed)
		e := <-electCh
		b.StopTimer()
		if err != nil {
			stuck++
			progress("failover trial %d: killed leader %d; %v", trial, lead, err)
			<-old.Exited()
			unstick(b, c, trial)
			b.StartTimer()
			continue
		}
		ack = append(ack, took)
		elect = append(elect, e)
		progress("failover trial %d: killed leader %d; survivors agreed on a leader after %v, first PUT acknowledged after %v (%d attempts)",
			trial, lead, e.Round(time.Millisecond), took.Round(time.Millisecond), attempts)
		<-old.Exited()
		time.Sleep(time.Until(killed.Add(*restartAfter)))
		if err := old.Start(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	if len(ack) == 0 {
		b.Fatalf("no trial out of %d completed", trial)
	}
	sortDurations(ack)
	sortDurations(elect)
	b.ReportMetric(ms(percentile(ack, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(ack, 99)), "p99-ms")
	b.ReportMetric(ms(ack[len(ack)-1]), "max-ms")
	b.ReportMetric(ms(percentile(elect, 50)), "elect-p50-ms")
	b.ReportMetric(ms(percentile(elect, 99)), "elect-p99-ms")
	b.ReportMetric(float64(len(ack)), "trials")
	b.ReportMetric(float64(stuck), "stuck")
}

// waitSettled waits until every node runs, all agree on a leader and all
// report the same commit index, and returns the leader. A cluster that has
// not settled after 20 s is stuck (see docs/notes/benchmarks-lab-notebook-2026-12.md); waitSettled
// then saves every node's goroutines and log, restarts all of them, and
// reports stuck=true.
func waitSettled(b *testing.B, c *systemtest.Cluster, trial int) (lead uint64, stuck bool) {
	b.Helper()
	lead, err := settle(c, 20*time.Second)
	if err == nil {
		return lead, false
	}
	progress("failover trial %d: cluster stuck: %v", trial, err)
	unstick(b, c, trial)
	if lead, err = settle(c, 30*time.Second); err != nil {
		b.Fatalf("trial %d: cluster did not settle after restarting every node: %v", trial, err)
	}
	return lead, true
}

func settle(c *systemtest.Cluster, timeout time.Duration) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var lead uint64
	err := systemtest.WaitFor(ctx, 20*time.Millisecond, func() (bool, error) {
		nodes := c.Running()
		if len(nodes) != len(c.Nodes()) {
			return false, fmt.Errorf("%d of %d nodes run", len(nodes), len(c.Nodes()))
		}
		l, err := systemtest.WaitLeader(ctx, nodes...)
		if err != nil {
			return false, err
		}
		var commit uint64
		for i, n := range nodes {
			info, err := n.Info(ctx)
			if err != nil {
				return false, err
			}
			if i > 0 && info.CommitIndex != commit {
				return false, fmt.Errorf("commit indexes differ")
			}
			commit = info.CommitIndex
		}
		lead = l
		return true, nil
	})
	return lead, err
}

// unstick records what every node is doing (its cluster view, and its
// goroutines: SIGQUIT makes a Go program print them and exit) in a
// directory that outlives the benchmark, then starts every node again.
func unstick(b *testing.B, c *systemtest.Cluster, trial int) {
	b.Helper()
	dir, err := os.MkdirTemp("", fmt.Sprintf("kcd-bench-stuck-trial%d-", trial))
	if err != nil {
		b.Fatal(err)
	}
	// Nodes that name no leader first: the others' exit would close the
	// streams a stuck node's goroutines wait on.
	type view struct {
		n    *systemtest.Node
		info systemtest.ClusterInfo
		err  error
	}
	var views []view
	for _, n := range c.Nodes() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		info, err := n.Info(ctx)
		cancel()
		views = append(views, view{n, info, err})
	}
	sort.SliceStable(views, func(i, j int) bool {
		return (views[i].err != nil || views[i].info.Leader == 0) && !(views[j].err != nil || views[j].info.Leader == 0)
	})
	for _, v := range views {
		n := v.n
		if n.Signal(syscall.SIGQUIT) == nil && !n.WaitExit(5*time.Second) {
			n.Kill()
		}
		out := fmt.Sprintf("cluster view: %+v (err %v)\n\n%s", v.info, v.err, n.RunLog())
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("node%d.log", n.ID)), []byte(out), 0o644); err != nil {
			b.Fatal(err)
		}
		progress("  node %d: leader %d, term %d, commit %d (err %v)", n.ID, v.info.Leader, v.info.Term, v.info.CommitIndex, v.err)
	}
	progress("  goroutine dumps and logs saved in %s; restarting every node", dir)
	for _, n := range c.Nodes() {
		if err := n.Start(); err != nil {
			b.Fatal(err)
		}
	}
}

// firstAck starts a PUT attempt every 20 ms, alternating between nodes, and
// returns the time from since to the first acknowledged one.
func firstAck(ctx context.Context, nodes []*systemtest.Node, key string, since time.Time) (time.Duration, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	type result struct {
		at  time.Time
		err error
	}
	results := make(chan result, 4096)
	var inflight atomic.Int64
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	attempts := 0
	var lastErr error
	launch := func() {
		n := nodes[attempts%len(nodes)]
		attempts++
		inflight.Add(1)
		go func() {
			defer inflight.Add(-1)
			actx, acancel := context.WithTimeout(ctx, 5*time.Second)
			defer acancel()
			_, err := n.Put(actx, key, []byte("x"))
			results <- result{time.Now(), err}
		}()
	}
	launch()
	for {
		select {
		case r := <-results:
			if r.err == nil {
				return r.at.Sub(since), attempts, nil
			}
			lastErr = r.err
		case <-tick.C:
			launch()
		case <-ctx.Done():
			return 0, attempts, fmt.Errorf("no PUT acknowledged within 30 s of the kill (%d attempts, %d still open; last error: %v)", attempts, inflight.Load(), lastErr)
		}
	}
}
