package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/systemtest"
)

var idleFor = flag.Duration("bench.idle", 10*time.Second, "how long BenchmarkIdleRSS lets the cluster idle before it reads RSS")

// BenchmarkIdleRSS measures the resident memory (VmRSS) of idle kcd
// processes: a three-node cluster of real processes where node 1 runs the
// embedded dev broker (--dev-kafka, franz-go's kfake, in its process) and
// nodes 2 and 3 use it (--bootstrap-servers), so the figures show a node
// with and without the broker. The cluster elects a leader, takes 100
// small writes, then idles for -bench.idle (10 s). When the test
// environment's Kafka Connect worker runs (.testenv/run/connect.pid), its
// RSS is measured in the same run. Run it with -benchtime=1x.
//
// Metrics (MB = 2^20 bytes): rss-MB is the largest node without the
// broker, rss-broker-MB node 1 with it, hwm-MB the largest peak (VmHWM) of
// a node without the broker; connect-rss-MB and connect-ratio (Connect
// worker ÷ rss-MB) when the worker runs.
func BenchmarkIdleRSS(b *testing.B) {
	bin := kcdBinary(b)
	// The timer runs: an iteration takes longer than the default
	// -benchtime, so even without -benchtime=1x there is only one.
	for b.Loop() {
		measureIdleRSS(b, bin)
	}
}

func measureIdleRSS(b *testing.B, bin string) {
	c := systemtest.StartCluster(b, bin, systemtest.Options{Kafka: systemtest.DevKafkaFirst})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := systemtest.WaitLeader(ctx, c.Nodes()...); err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		n := c.Nodes()[i%3]
		if _, err := n.Put(ctx, fmt.Sprintf("bench/rss/%03d", i), make([]byte, 100)); err != nil {
			b.Fatalf("write through node %d: %v", n.ID, err)
		}
	}
	progress("cluster up, 100 writes done; idling %v", *idleFor)
	time.Sleep(*idleFor)

	const mb = 1 << 20
	var rss, hwm int64
	for _, n := range c.Nodes() {
		r, err := n.RSS()
		if err != nil {
			b.Fatal(err)
		}
		h, err := systemtest.ProcStatusBytes(n.PID(), "VmHWM")
		if err != nil {
			b.Fatal(err)
		}
		role := "without broker"
		if n.ID == 1 {
			role = "with the embedded broker"
			b.ReportMetric(float64(r)/mb, "rss-broker-MB")
		} else {
			rss, hwm = max(rss, r), max(hwm, h)
		}
		progress("node %d (%s): VmRSS %.1f MB, VmHWM %.1f MB", n.ID, role, float64(r)/mb, float64(h)/mb)
	}
	b.ReportMetric(float64(rss)/mb, "rss-MB")
	b.ReportMetric(float64(hwm)/mb, "hwm-MB")

	pid, cmd, err := connectWorker()
	if err != nil {
		progress("Kafka Connect worker: not measured (%v)", err)
		return
	}
	r, err := systemtest.ProcStatusBytes(pid, "VmRSS")
	if err != nil {
		progress("Kafka Connect worker (pid %d): %v", pid, err)
		return
	}
	progress("Kafka Connect worker (pid %d, %s): VmRSS %.1f MB, %.1f× a kcd node", pid, cmd, float64(r)/mb, float64(r)/float64(rss))
	b.ReportMetric(float64(r)/mb, "connect-rss-MB")
	b.ReportMetric(float64(r)/float64(rss), "connect-ratio")
}

// connectWorker finds the test environment's running Kafka Connect worker.
func connectWorker() (int, string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return 0, "", err
	}
	root, err := systemtest.ModuleRoot(wd)
	if err != nil {
		return 0, "", err
	}
	path := filepath.Join(root, ".testenv", "run", "connect.pid")
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, "", fmt.Errorf("no %s: start it with scripts/testenv up connect", path)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w", path, err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0, "", fmt.Errorf("pid %d from %s is not running", pid, path)
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	main := filepath.Base(args[0])
	for _, a := range args {
		if strings.Contains(a, "ConnectDistributed") || strings.Contains(a, "ConnectStandalone") {
			main += " " + a
		}
	}
	return pid, main, nil
}
