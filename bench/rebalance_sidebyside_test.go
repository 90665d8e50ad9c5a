package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/systemtest"
	"github.com/kcd-project/kcd/internal/testenv"
)

var rbTasks = flag.Int("bench.rebalance.tasks", 30, "BenchmarkRebalanceSideBySide: FileStreamSink tasks (and topic partitions)")

// BenchmarkRebalanceSideBySide measures what a joining worker costs the
// ones already running: on kcd and on real Kafka Connect (its default
// incremental cooperative protocol), two workers run a FileStreamSink of
// -bench.rebalance.tasks tasks fed by a steady producer; a third worker
// joins. It reports how many tasks changed worker (at least a third must:
// kcd's leader keeps a smaller share, so kcd moves a few more), the
// longest stall of the sink's output (sampled every 10 ms) from the join
// until the new worker runs a third of the tasks, and how long that took
// from the new worker's exec (a JVM's start included). One trial each; run with -benchtime=1x.
func BenchmarkRebalanceSideBySide(b *testing.B) {
	for b.Loop() {
		runRebalanceSideBySide(b)
	}
}

func runRebalanceSideBySide(b *testing.B) {
	brokers := testenv.Require(b, testenv.Kafka)
	bin := kcdBinary(b)
	ctx := context.Background()
	s := newSheet()
	cl, adm := kafkaClients(b, brokers)
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	dir := b.TempDir()

	// kcd: two raft+worker nodes, then a worker-only node joins.
	kt := "kcd-bench-rebal-kcd-" + stamp
	c := systemtest.StartCluster(b, bin, systemtest.Options{Size: 2, Bootstrap: brokers})
	var km []member
	for _, n := range c.Nodes() {
		km = append(km, member{peer: newPeer(sideKcd, "http://"+n.RESTAddr, nil), id: n.RESTAddr})
	}
	w := c.NewWorker(3)
	rebalanceTrial(b, ctx, s, sideKcd, cl, adm, kt, km, filepath.Join(dir, "kcd.txt"), func() string {
		if err := w.Start(); err != nil {
			b.Fatal(err)
		}
		return w.RESTAddr
	})

	// Kafka Connect: two workers of a group, then a third.
	ct := "kcd-bench-rebal-kc-" + stamp
	group := "kcd-bench-rebal-" + stamp
	props := map[string]string{"group.id": group, "config.storage.topic": group + "-configs",
		"offset.storage.topic": group + "-offsets", "status.storage.topic": group + "-status"}
	var cm []member
	for range 2 {
		url, _ := testenv.StartConnectWorkerPID(b, props)
		cm = append(cm, member{peer: newPeer(sideConnect, url, nil), id: strings.TrimPrefix(url, "http://")})
	}
	rebalanceTrial(b, ctx, s, sideConnect, cl, adm, ct, cm, filepath.Join(dir, "kc.txt"), func() string {
		url, _ := testenv.StartConnectWorkerPID(b, props)
		return strings.TrimPrefix(url, "http://")
	})
	fmt.Println(s.markdown())
}

// rebalanceTrial runs the sink on ms with a steady producer, calls join,
// and records what the join cost.
func rebalanceTrial(b *testing.B, ctx context.Context, s *sheet, side string, cl *kgo.Client, adm *kadm.Client,
	topic string, ms []member, out string, join func() string) {
	tasks := *rbTasks
	if _, err := adm.CreateTopic(ctx, int32(tasks), 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	defer adm.DeleteTopics(context.Background(), topic)
	s.noteLoad()

	// A steady producer: 100 records every 10 ms, over all partitions.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		value := []byte(strings.Repeat("x", lineBytes))
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			for j := range 100 {
				cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32((i*100 + j) % tasks), Value: value}, nil)
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	name := "bench-rebalance"
	cfg := map[string]string{"connector.class": fileSinkClass, "tasks.max": strconv.Itoa(tasks), "topics": topic,
		"file": out, "key.converter": stringConverter, "value.converter": stringConverter}
	if err := ms[0].peer.create(ctx, 2*time.Minute, name, cfg); err != nil {
		b.Fatal(err)
	}
	var before map[int]string
	if err := waitUntil(ctx, 3*time.Minute, 50*time.Millisecond, func() (bool, error) {
		where, ok := taskWorkers(ctx, ms[0].peer, name)
		before = where
		return ok && len(where) == tasks, nil
	}); err != nil {
		b.Fatalf("%s: tasks not RUNNING: %v", side, err)
	}
	// Let the output settle into its pace before the join.
	if err := waitUntil(ctx, time.Minute, 20*time.Millisecond, func() (bool, error) {
		st, err := os.Stat(out)
		return err == nil && st.Size() > 1000*(lineBytes+1), nil
	}); err != nil {
		b.Fatalf("%s: the sink writes nothing: %v", side, err)
	}

	var (
		mu      sync.Mutex
		stall   time.Duration
		sampled = make(chan struct{})
		done    = make(chan struct{})
	)
	go func() {
		defer close(sampled)
		last, lastGrow := int64(-1), time.Now()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			st, err := os.Stat(out)
			if err != nil {
				continue
			}
			now := time.Now()
			if st.Size() != last {
				last, lastGrow = st.Size(), now
			}
			mu.Lock()
			stall = max(stall, now.Sub(lastGrow))
			mu.Unlock()
		}
	}()
	joined := time.Now()
	newID := join()
	var after map[int]string
	err := waitUntil(ctx, 3*time.Minute, 20*time.Millisecond, func() (bool, error) {
		where, ok := taskWorkers(ctx, ms[len(ms)-1].peer, name)
		if !ok || len(where) != tasks {
			return false, nil
		}
		on := 0
		for _, w := range where {
			if w == newID {
				on++
			}
		}
		after = where
		return on >= tasks/3, nil
	})
	took := time.Since(joined)
	// A second more of output after the new worker runs its share.
	<-time.After(time.Second)
	close(done)
	<-sampled
	if err != nil {
		b.Fatalf("%s: the joining worker runs no share of the tasks: %v", side, err)
	}
	moved := 0
	for id, w := range after {
		if before[id] != w {
			moved++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	s.add(fmt.Sprintf("a worker joins 2 running %d sink tasks: tasks that changed worker", tasks), "tasks", false, side, float64(moved))
	s.add("a worker joins: its exec → it runs a third of the tasks", "s", false, side, took.Seconds())
	s.add("a worker joins: longest stall of the sink's output", "s", false, side, stall.Seconds())
}
