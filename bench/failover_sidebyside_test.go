package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/systemtest"
	"github.com/kcd-project/kcd/internal/testenv"
)

var (
	foTasks  = flag.Int("bench.failover.tasks", 6, "BenchmarkFailoverSideBySide: FileStreamSink tasks (and topic partitions)")
	foDelays = flag.String("bench.failover.connect-delays", "0,300000", "BenchmarkFailoverSideBySide: the Kafka Connect clusters' scheduled.rebalance.max.delay.ms, one cluster each (300000 is its default)")
)

// member is one worker of a side's three: where to ask, its worker id
// in statuses, and how to kill it.
type member struct {
	peer *peer
	id   string
	kill func()
}

// BenchmarkFailoverSideBySide measures, on kcd and on real Kafka Connect,
// three workers each on the test environment's Kafka, how long after a
// kill -9 of a worker every task it ran is RUNNING on another: a
// FileStreamSink of -bench.failover.tasks tasks, the worker of task 0
// killed, the statuses polled every 50 ms through a survivor. kcd runs
// with its defaults; Kafka Connect once per -bench.failover.connect-delays
// value (its default, 300000 ms, keeps a dead worker's tasks unassigned
// for up to five minutes). One trial per cluster, kcd's standing in both
// rows of the table; run with -benchtime=1x.
func BenchmarkFailoverSideBySide(b *testing.B) {
	for b.Loop() {
		runFailoverSideBySide(b)
	}
}

func runFailoverSideBySide(b *testing.B) {
	brokers := testenv.Require(b, testenv.Kafka)
	bin := kcdBinary(b)
	ctx := context.Background()
	s := newSheet()
	_, adm := kafkaClients(b, brokers)
	topic := "kcd-bench-failover-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := adm.CreateTopic(ctx, int32(*foTasks), 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	defer adm.DeleteTopics(context.Background(), topic)
	dir := b.TempDir()

	// kcd: three raft+worker nodes.
	c := systemtest.StartCluster(b, bin, systemtest.Options{Bootstrap: brokers})
	var kcdMembers []member
	for _, n := range c.Nodes() {
		kcdMembers = append(kcdMembers, member{peer: newPeer(sideKcd, "http://"+n.RESTAddr, nil), id: n.RESTAddr, kill: n.Kill})
	}
	s.noteLoad()
	if d, err := failoverTrial(ctx, kcdMembers, topic, filepath.Join(dir, "kcd.txt")); err != nil {
		b.Fatalf("kcd: %v", err)
	} else {
		s.add("failover: kill -9 of a worker → all its tasks RUNNING elsewhere (Kafka Connect: scheduled.rebalance.max.delay.ms 0)", "s", false, sideKcd, d.Seconds())
		s.add("failover: kill -9 of a worker → all its tasks RUNNING elsewhere (Kafka Connect: its default, 300000)", "s", false, sideKcd, d.Seconds())
	}

	for _, delay := range strings.Split(*foDelays, ",") {
		delay = strings.TrimSpace(delay)
		unique := fmt.Sprintf("kcd-bench-failover-%s-%d", delay, time.Now().UnixNano())
		props := map[string]string{"group.id": unique, "config.storage.topic": unique + "-configs",
			"offset.storage.topic": unique + "-offsets", "status.storage.topic": unique + "-status",
			"scheduled.rebalance.max.delay.ms": delay}
		var ms []member
		for range 3 {
			url, pid := testenv.StartConnectWorkerPID(b, props)
			ms = append(ms, member{peer: newPeer(sideConnect, url, nil), id: strings.TrimPrefix(url, "http://"),
				kill: func() { syscall.Kill(pid, syscall.SIGKILL) }})
		}
		s.noteLoad()
		d, err := failoverTrial(ctx, ms, topic, filepath.Join(dir, "connect-"+delay+".txt"))
		if err != nil {
			b.Fatalf("Kafka Connect (delay %s): %v", delay, err)
		}
		what := "failover: kill -9 of a worker → all its tasks RUNNING elsewhere (Kafka Connect: scheduled.rebalance.max.delay.ms 0)"
		if delay != "0" {
			what = "failover: kill -9 of a worker → all its tasks RUNNING elsewhere (Kafka Connect: its default, 300000)"
		}
		s.add(what, "s", false, sideConnect, d.Seconds())
	}
	fmt.Println(s.markdown())
}

// failoverTrial creates the sink on members, waits until its tasks run,
// kills the worker of task 0 and times until every task is RUNNING on
// another worker.
func failoverTrial(ctx context.Context, ms []member, topic, file string) (time.Duration, error) {
	name := "bench-failover"
	cfg := map[string]string{"connector.class": fileSinkClass, "tasks.max": strconv.Itoa(*foTasks), "topics": topic,
		"file": file, "key.converter": stringConverter, "value.converter": stringConverter}
	if err := ms[0].peer.create(ctx, 2*time.Minute, name, cfg); err != nil {
		return 0, err
	}
	var victim int = -1
	if err := waitUntil(ctx, 3*time.Minute, 50*time.Millisecond, func() (bool, error) {
		where, ok := taskWorkers(ctx, ms[0].peer, name)
		if !ok || len(where) != *foTasks {
			return false, nil
		}
		for i, m := range ms {
			if m.id == where[0] {
				victim = i
			}
		}
		return victim >= 0, nil
	}); err != nil {
		return 0, fmt.Errorf("tasks not RUNNING: %w", err)
	}
	via := ms[(victim+1)%len(ms)].peer
	ms[victim].kill()
	killed := time.Now()
	dead := ms[victim].id
	if err := waitUntil(ctx, 10*time.Minute, 50*time.Millisecond, func() (bool, error) {
		where, ok := taskWorkers(ctx, via, name)
		if !ok || len(where) != *foTasks {
			return false, nil
		}
		for _, w := range where {
			if w == dead {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return 0, fmt.Errorf("the dead worker's tasks do not run elsewhere: %w", err)
	}
	return time.Since(killed), nil
}

// taskWorkers maps each RUNNING task of name to the worker it runs on; ok
// is false unless the status could be read.
func taskWorkers(ctx context.Context, p *peer, name string) (map[int]string, bool) {
	code, body, err := p.do(ctx, "GET", "/connectors/"+name+"/status", nil)
	if err != nil || code != 200 {
		return nil, false
	}
	var st api.ConnectorStateInfo
	if json.Unmarshal(body, &st) != nil {
		return nil, false
	}
	out := map[int]string{}
	for _, t := range st.Tasks {
		if t.State == "RUNNING" {
			out[t.ID] = t.WorkerID
		}
	}
	return out, true
}
