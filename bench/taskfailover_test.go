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
	if _, err := waitPlacement(ctx, c.Node(2), all, tasks, func(p placement) bool { return p.count(w) > 0 }); err != nil {
		b.Fatal(err)
	}

	var took []time.Duration
	leave, join := 0, 0
	for b.Loop() {
		b.StopTimer()
		before, err := waitPlacement(ctx, c.Node(2), all, tasks, func(p placement) bool { return p.count(w) > 0 })
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		w.Kill()
		killed := time.Now()
		survivors := c.Nodes()[:3]
		after, err := waitPlacement(ctx, c.Node(2), survivors, tasks, nil)
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(killed))
		b.StopTimer()
		leave += restarted(before, after, w)
		<-w.Exited()
		if err := w.Start(); err != nil {
			b.Fatal(err)
		}
		joined, err := waitPlacement(ctx, c.Node(2), all, tasks, func(p placement) bool { return p.count(w) > 0 && p.balanced })
		if err != nil {
			b.Fatal(err)
		}
		join += restarted(after, joined, w)
		progress("task failover trial %d: %d tasks of the killed worker RUNNING elsewhere after %v", len(took), before.count(w), took[len(took)-1].Round(time.Millisecond))
		b.StartTimer()
	}
	b.StopTimer()

	// Leader changes: kill -9 the Raft leader (never node 1, which may
	// hold the dev broker), wait until the tasks settle, restart it.
	leaderRestarts, kills := 0, 0
	for attempt := 0; kills < *leaderKills && attempt < 3**leaderKills; attempt++ {
		before, err := waitPlacement(ctx, c.Node(2), all, tasks, func(p placement) bool { return p.balanced })
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
		after, err := waitPlacement(ctx, rest[0], rest, tasks, nil)
		if err != nil {
			b.Fatal(err)
		}
		if r := restarted(before, after, old); r > 0 {
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

// placement is where the tasks run, as the nodes say.
type placement struct {
	where    map[int]*systemtest.Node
	starts   map[*systemtest.Node]map[int]int
	balanced bool // the coordinator has no move left to make
}

func (p placement) count(n *systemtest.Node) int {
	c := 0
	for _, m := range p.where {
		if m == n {
			c++
		}
	}
	return c
}

type localWorker struct {
	Units []struct {
		Task    *int `json:"task"`
		Running bool `json:"running"`
		Starts  int  `json:"starts"`
	} `json:"units"`
}

// waitPlacement waits until every task runs on exactly one of nodes and
// reports RUNNING from it, and cond (if any) holds.
func waitPlacement(ctx context.Context, via *systemtest.Node, nodes []*systemtest.Node, tasks int, cond func(placement) bool) (placement, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var p placement
	err := systemtest.WaitFor(ctx, 20*time.Millisecond, func() (bool, error) {
		p = placement{where: map[int]*systemtest.Node{}, starts: map[*systemtest.Node]map[int]int{}}
		for _, n := range nodes {
			var lw localWorker
			if err := n.GetJSON(ctx, "/kcd/v1/worker", &lw); err != nil {
				return false, nil
			}
			p.starts[n] = map[int]int{}
			for _, u := range lw.Units {
				if u.Task == nil {
					continue
				}
				p.starts[n][*u.Task] = u.Starts
				if u.Running {
					if p.where[*u.Task] != nil {
						return false, nil
					}
					p.where[*u.Task] = n
				}
			}
		}
		if len(p.where) != tasks {
			return false, nil
		}
		var st struct {
			Tasks []struct {
				ID       int    `json:"id"`
				State    string `json:"state"`
				WorkerID string `json:"worker_id"`
			} `json:"tasks"`
		}
		if err := via.GetJSON(ctx, "/connectors/gen/status", &st); err != nil || len(st.Tasks) != tasks {
			return false, nil
		}
		for _, t := range st.Tasks {
			if t.State != "RUNNING" || t.WorkerID != p.where[t.ID].RESTAddr {
				return false, nil
			}
		}
		var plan struct {
			Moves []any `json:"moves"`
		}
		p.balanced = via.GetJSON(ctx, "/kcd/v1/rebalances/plan", &plan) == nil && len(plan.Moves) == 0
		return cond == nil || cond(p), nil
	})
	return p, err
}

// restarted counts tasks that ran on the same worker before and after and
// were started again in between, leaving out the worker skip.
func restarted(before, after placement, skip *systemtest.Node) int {
	n := 0
	for id, w := range before.where {
		if w == skip || after.where[id] != w {
			continue
		}
		if after.starts[w][id] != before.starts[w][id] {
			n++
		}
	}
	return n
}
