package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/systemtest"
	"github.com/kcd-project/kcd/internal/testenv"
)

var latRounds = flag.Int("bench.latency.rounds", 5, "BenchmarkLatency: samples of each figure")

// Row names of the latency figures, shared with BenchmarkFileStreamSideBySide.
const (
	rowStartFresh    = "start, fresh data dir → first 200 from GET /connectors"
	rowStartExisting = "start, existing data dir (after a clean stop) → first 200 from GET /connectors"
	rowSinkRunning   = "first sink write (1 task, pre-filled topic): POST → RUNNING"
	rowSinkAfterRun  = "first sink write (1 task, pre-filled topic): RUNNING → first line"
	rowSinkAfterPost = "first sink write (1 task, pre-filled topic): POST → first line"
)

// BenchmarkLatency times, on kcd alone (a single node, started as
// BenchmarkFileStreamSideBySide starts it), exec → first 200 from GET
// /connectors on a fresh and on an existing data dir (after a clean stop),
// and a FileStreamSink's first write from a pre-filled topic: POST →
// RUNNING → first line in the file. It prints the figures' best and
// median over -bench.latency.rounds samples. Run with -benchtime=1x; it
// needs the test environment's Kafka.
func BenchmarkLatency(b *testing.B) {
	for b.Loop() {
		brokers := testenv.Require(b, testenv.Kafka)
		bin := kcdBinary(b)
		ctx := context.Background()
		s := newSheet()
		dir := b.TempDir()
		cl, adm := kafkaClients(b, brokers)
		topic := "kcd-bench-latency-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		fillTopic(b, ctx, cl, adm, topic, 1, 1000)
		defer func() {
			dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := adm.DeleteTopics(dctx, topic); err != nil {
				progress("delete topics: %v", err)
			}
		}()
		args := []string{"--exactly-once-source-support", "disabled"}
		var node *systemtest.Node
		var kcd *peer
		for range *latRounds {
			start := time.Now()
			c := systemtest.StartCluster(b, bin, systemtest.Options{Size: 1, Bootstrap: brokers, ExtraArgs: args})
			n := c.Node(1)
			p := newPeer(sideKcd, "http://"+n.RESTAddr, func() []int { return []int{n.PID()} })
			s.add(rowStartFresh, "ms", false, sideKcd, ms(firstOK(b, ctx, p, start)))
			if node != nil {
				node.Kill()
			}
			node, kcd = n, p
		}
		for round := range *latRounds {
			restartKcd(b, ctx, s, node, kcd)
			firstSinkWrite(b, ctx, s, kcd, dir, fmt.Sprintf("lat%d", round), topic)
		}
		fmt.Println(s.markdown())
	}
}

// latencySideBySide adds to BenchmarkFileStreamSideBySide's sheet, in
// -bench.filestream.rounds alternating rounds, each side's start on an
// existing data dir (kcd: node stopped cleanly and started again; Kafka
// Connect: worker pid stopped cleanly and a new one started with props,
// the same internal topics) and a FileStreamSink's first write from a
// pre-filled topic. connect is pointed at each new worker; it returns the
// last worker's pid.
func latencySideBySide(b *testing.B, ctx context.Context, s *sheet, cl *kgo.Client, adm *kadm.Client,
	node *systemtest.Node, kcd, connect *peer, pid int, props map[string]string, dir string) int {
	topic := "kcd-bench-fs-first-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	fillTopic(b, ctx, cl, adm, topic, 1, 1000)
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := adm.DeleteTopics(dctx, topic); err != nil {
			progress("delete topics: %v", err)
		}
	}()
	for round := range *fsRounds {
		s.noteLoad()
		for i := range 2 {
			if (round+i)%2 == 0 {
				restartKcd(b, ctx, s, node, kcd)
				firstSinkWrite(b, ctx, s, kcd, dir, fmt.Sprintf("r%dkcd", round), topic)
			} else {
				pid = restartConnect(b, ctx, s, connect, pid, props)
				firstSinkWrite(b, ctx, s, connect, dir, fmt.Sprintf("r%dkc", round), topic)
			}
		}
	}
	return pid
}

// firstOK polls p's GET /connectors every 2 ms until it answers 200, and
// returns the time since start.
func firstOK(b *testing.B, ctx context.Context, p *peer, start time.Time) time.Duration {
	if err := waitUntil(ctx, time.Minute, 2*time.Millisecond, func() (bool, error) {
		code, _, err := p.do(ctx, "GET", "/connectors", nil)
		return err == nil && code == 200, nil
	}); err != nil {
		b.Fatalf("%s: no 200 from GET /connectors: %v", p.name, err)
	}
	return time.Since(start)
}

// restartKcd stops node cleanly and times exec → first 200 from GET
// /connectors on its data dir.
func restartKcd(b *testing.B, ctx context.Context, s *sheet, node *systemtest.Node, p *peer) {
	if err := node.Stop(30 * time.Second); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := node.Start(); err != nil {
		b.Fatal(err)
	}
	s.add(rowStartExisting, "ms", false, sideKcd, ms(firstOK(b, ctx, p, start)))
}

// restartConnect stops the Kafka Connect worker pid (SIGTERM, as kcd's
// restart) and times the start of a new one with the same props, so with
// the same internal topics, until its first 200; p then points at it. It
// returns the new worker's pid.
func restartConnect(b *testing.B, ctx context.Context, s *sheet, p *peer, pid int, props map[string]string) int {
	_ = syscall.Kill(pid, syscall.SIGTERM)
	if err := waitUntil(ctx, time.Minute, 50*time.Millisecond, func() (bool, error) {
		return syscall.Kill(pid, 0) != nil, nil
	}); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	start := time.Now()
	url, npid := testenv.StartConnectWorkerPID(b, props)
	// It returns once the worker is healthy: its first 200 came at most
	// this late.
	s.add(rowStartExisting, "ms", false, sideConnect, ms(time.Since(start)))
	p.url = url
	return npid
}

// firstSinkWrite creates a FileStreamSink of one task on topic (which
// holds records already) and times POST → connector and task RUNNING →
// first line in its file; then it deletes the connector.
func firstSinkWrite(b *testing.B, ctx context.Context, s *sheet, p *peer, dir, tag, topic string) {
	out := filepath.Join(dir, "first-"+tag+".txt")
	name := "bench-first-" + tag
	cfg := map[string]string{"connector.class": fileSinkClass, "tasks.max": "1", "file": out, "topics": topic,
		"key.converter": stringConverter, "value.converter": stringConverter}
	// The file is watched in its own loop, so that status requests do not
	// delay noticing the first line.
	written := make(chan time.Time, 1)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		_ = waitUntil(wctx, time.Minute, time.Millisecond, func() (bool, error) {
			if st, err := os.Stat(out); err == nil && st.Size() > 0 {
				written <- time.Now()
				return true, nil
			}
			return false, nil
		})
	}()
	posted := time.Now()
	if err := p.create(ctx, time.Minute, name, cfg); err != nil {
		b.Fatal(err)
	}
	if err := waitUntil(ctx, time.Minute, 2*time.Millisecond, func() (bool, error) {
		ok, err := p.running(ctx, name, 1)
		return ok, err
	}); err != nil {
		b.Fatalf("%s: %s not RUNNING: %v", p.name, name, err)
	}
	running := time.Now()
	var first time.Time
	select {
	case first = <-written:
	case <-time.After(time.Minute):
		b.Fatalf("%s: %s: nothing written to %s", p.name, name, out)
	}
	if err := p.remove(ctx, time.Minute, name); err != nil {
		b.Fatal(err)
	}
	os.Remove(out)
	s.add(rowSinkRunning, "ms", false, p.name, ms(running.Sub(posted)))
	// A line may come before the status says RUNNING (the status is
	// polled): then RUNNING → first line counts as 0.
	s.add(rowSinkAfterRun, "ms", false, p.name, ms(max(0, first.Sub(running))))
	s.add(rowSinkAfterPost, "ms", false, p.name, ms(first.Sub(posted)))
}
