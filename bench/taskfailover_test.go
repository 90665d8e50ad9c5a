package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/systemtest"
	"github.com/kcd-project/kcd/internal/testenv"
)

var leaderKills = flag.Int("bench.leader-kills", 3, "BenchmarkTaskFailover: how many times it kills the Raft leader after the worker trials")

// BenchmarkTaskFailover measures how fast the coordinator moves the tasks
// of a dead worker, with default settings (session timeout 3 s, fence
// margin 500 ms, heartbeat 500 ms): three raft+worker kcd processes and one
// worker-only process run a data generator with 12 tasks; one trial kills
// the worker-only process with SIGKILL and times until every task reports
// RUNNING on a live worker (polled every 20 ms), then restarts it and waits
// until it runs tasks again (a join). Kafka is the test environment's
// broker when KCD_TEST_KAFKA is set, else an embedded dev broker in node 1,
// which is never killed. Run with -benchtime=20x for 20 trials.
//
// Metrics: p50-ms, p99-ms, max-ms of kill → all tasks RUNNING elsewhere;
// restarted-leave and restarted-join count tasks on workers that were not
// killed and did not have to give a task up that were stopped and started
// again while a worker left or joined (the target is 0); leader-restarted
// counts the same over three kills of the Raft leader after the trials.
func BenchmarkTaskFailover(b *testing.B) {
	bin := kcdBinary(b)
	opts := systemtest.Options{Kafka: systemtest.DevKafkaFirst}
	if k := os.Getenv(testenv.Kafka); k != "" {
		opts = systemtest.Options{Bootstrap: k}
	}
	c := systemtest.StartCluster(b, bin, opts)
	ctx := context.Background()
	w := c.NewWorker(4)
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	all := c.Nodes()
	const tasks = 12
	topic := fmt.Sprintf("kcd-bench-taskfailover-%d", time.Now().UnixNano())
	body := fmt.Sprintf(`{"name":"gen","config":{"connector.class":"Datagen","topic":%q,"tasks.max":"%d","rate.per.task":"100"}}`, topic, tasks)
	if err := postConnector(ctx, c.Node(2), body); err != nil {
		b.Fatal(err)
	}
	if _, err := systemtest.WaitPlacement(ctx, c.Node(2), all, tasks, func(p systemtest.Placement) bool { return p.Count(w) > 0 }); err != nil {
		b.Fatal(err)
	}

	var took []time.Duration
	leave, join := 0, 0
	for b.Loop() {
		b.StopTimer()
		before, err := systemtest.WaitPlacement(ctx, c.Node(2), all, tasks, func(p systemtest.Placement) bool { return p.Count(w) > 0 })
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		w.Kill()
		killed := time.Now()
		survivors := c.Nodes()[:3]
		after, err := systemtest.WaitPlacement(ctx, c.Node(2), survivors, tasks, nil)
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(killed))
		b.StopTimer()
		leave += systemtest.Restarted(before, after, w)
		<-w.Exited()
		if err := w.Start(); err != nil {
			b.Fatal(err)
		}
		joined, err := systemtest.WaitPlacement(ctx, c.Node(2), all, tasks, func(p systemtest.Placement) bool { return p.Count(w) > 0 && p.Balanced })
		if err != nil {
			b.Fatal(err)
		}
		join += systemtest.Restarted(after, joined, w)
		progress("task failover trial %d: %d tasks of the killed worker RUNNING elsewhere after %v", len(took), before.Count(w), took[len(took)-1].Round(time.Millisecond))
		b.StartTimer()
	}
	b.StopTimer()

	// Leader changes: kill -9 the Raft leader (never node 1, which may
	// hold the dev broker), wait until the tasks settle, restart it.
	leaderRestarts, kills := 0, 0
	for attempt := 0; kills < *leaderKills && attempt < 3**leaderKills; attempt++ {
		before, err := systemtest.WaitPlacement(ctx, c.Node(2), all, tasks, func(p systemtest.Placement) bool { return p.Balanced })
		if err != nil {
			b.Fatal(err)
		}
		lead, err := systemtest.WaitLeader(ctx, c.Nodes()[:3]...)
		if err != nil {
			b.Fatal(err)
		}
		if lead == 1 {
			if _, err := c.Node(1).Post(ctx, "/kcd/v1/cluster/leader", []byte(`{"to":2}`)); err != nil {
				b.Fatal(err)
			}
			continue
		}
		old := c.Node(lead)
		old.Kill()
		kills++
		var rest []*systemtest.Node
		for _, n := range all {
			if n != old {
				rest = append(rest, n)
			}
		}
		after, err := systemtest.WaitPlacement(ctx, rest[0], rest, tasks, nil)
		if err != nil {
			b.Fatal(err)
		}
		if r := systemtest.Restarted(before, after, old); r > 0 {
			leaderRestarts += r
			// Say why: what the coordinators and members logged since.
			for _, n := range rest {
				for _, line := range strings.Split(n.RunLog(), "\n") {
					if strings.Contains(line, "no heartbeat answered") || strings.Contains(line, "msg=move") ||
						strings.Contains(line, "rebalanced") || strings.Contains(line, "session expired") {
						progress("node %d: %s", n.ID, line)
					}
				}
			}
		}
		<-old.Exited()
		if err := old.Start(); err != nil {
			b.Fatal(err)
		}
	}

	sortDurations(took)
	b.ReportMetric(ms(percentile(took, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(took, 99)), "p99-ms")
	b.ReportMetric(ms(took[len(took)-1]), "max-ms")
	b.ReportMetric(float64(leave), "restarted-leave")
	b.ReportMetric(float64(join), "restarted-join")
	b.ReportMetric(float64(leaderRestarts), "leader-restarted")
	b.ReportMetric(float64(kills), "leader-kills")
}
