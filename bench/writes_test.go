package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/raft/raftstore"
	"github.com/kcd-project/kcd/raft/transport"
)

// processCPU is the CPU time (user and system) this process has used: the
// three nodes and the writers together.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// syncApply runs the nodes with raft.Config.SyncApply: bbolt fsynced on
// every apply, as before 2026-12-02's change, for comparisons.
// commitInterval replaces the node's default state commit interval
// (fsm.Options.CommitInterval), for comparisons.
var commitInterval = flag.Duration("bench.commit-interval", 0, "BenchmarkWrites: how long the state machine's write transaction stays open (0: the node's default)")

var syncApply = flag.Bool("bench.sync-apply", false, "BenchmarkWrites: fsync the state machine (bbolt) on every apply (raft.Config.SyncApply)")

// cluster is a Raft cluster in this process: each node has its own data
// dir (logstore WAL and bbolt, fsync on) and its own peer listener on
// 127.0.0.1 serving the default HTTP/2 transport, as kcd runs it.
type cluster struct {
	dir   string
	nodes []*raft.Node
	srvs  []*http.Server
}

// diskFlush is the mean latency of an append of 1.5 KiB and its fdatasync
// on a file of its own in dir, over n tries: how fast the disk flushes at
// the moment, which moves writes/s on a shared VM more than anything in
// the code. It runs just before a measured run, not during it.
func diskFlush(b *testing.B, dir string, n int) time.Duration {
	b.Helper()
	f, err := os.CreateTemp(dir, "flush-probe-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 1536)
	start := time.Now()
	for i := range n {
		if _, err := f.WriteAt(buf, int64(i*len(buf))); err != nil {
			b.Fatal(err)
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start) / time.Duration(n)
}

func startCluster(b *testing.B, size int) *cluster {
	b.Helper()
	dir := dataDir(b)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	lns := make([]net.Listener, size)
	members := make([]raft.Member, size)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		lns[i] = ln
		members[i] = raft.Member{ID: uint64(i + 1), PeerURL: "http://" + ln.Addr().String()}
	}
	c := &cluster{dir: dir}
	b.Cleanup(c.close)
	for i, ln := range lns {
		n, err := raft.Start(raft.Config{
			ID:             members[i].ID,
			Dir:            filepath.Join(dir, fmt.Sprint(members[i].ID)),
			Self:           members[i],
			InitialCluster: members,
			SyncApply:      *syncApply,
			FSM:            fsm.Options{CommitInterval: *commitInterval},
			Logger:         log,
		})
		if err != nil {
			ln.Close()
			b.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("/raft/", n.Transport().Handler())
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		if t, ok := n.Transport().(*transport.HTTP); ok {
			t.ConfigureServer(srv)
		}
		go srv.Serve(ln)
		c.nodes = append(c.nodes, n)
		c.srvs = append(c.srvs, srv)
	}
	return c
}

func (c *cluster) close() {
	for _, s := range c.srvs {
		s.Close()
	}
	for _, n := range c.nodes {
		n.Halt()
	}
}

// leader waits for a leader that every node agrees on.
func (c *cluster) leader(b *testing.B, timeout time.Duration) *raft.Node {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		lead := c.nodes[0].Leader()
		agreed := lead != 0
		for _, n := range c.nodes {
			agreed = agreed && n.Leader() == lead
		}
		if agreed {
			for _, n := range c.nodes {
				if n.ID() == lead {
					return n
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Fatal("no leader elected")
	return nil
}

// BenchmarkWrites measures acknowledged writes per second: ~100-byte Puts
// (24-byte keys over a working set of 10,000, 76-byte values: the size of
// an offset commit) through raftstore on the leader, from 1, 64 and 128
// concurrent writers. A write is acknowledged when Put returns: the entry
// is fsynced on a quorum (WAL) and applied on the leader (bbolt, committed
// without fsync unless -bench.sync-apply; see raft.Config.SyncApply).
// writes/s counts every write of the run; p50-ms and p99-ms are the
// latencies of single Puts; cpu-µs/write is the CPU time of the whole
// process (all three nodes, the writers) per write, which other work on the
// machine disturbs far less than writes/s; disk-flush-ms is how long an
// append and fdatasync took on the data dir's disk just before the run
// (diskFlush), which writes/s follows.
func BenchmarkWrites(b *testing.B) {
	c := startCluster(b, 3)
	lead := c.leader(b, 10*time.Second)
	st := raftstore.New(lead)
	defer st.Close()

	const keys = 10000
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprintf("offsets/conn-%02d/p-%05d", i%100, i) // 24 bytes
	}
	value := make([]byte, 100-len(names[0]))
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	// Warm up: connections open, first snapshot files exist.
	for i := range 200 {
		if _, err := st.Put(context.Background(), names[i], value); err != nil {
			b.Fatal(err)
		}
	}

	for _, writers := range []int{1, 64, 128} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			flush := diskFlush(b, c.dir, 100)
			lat := make([]time.Duration, b.N)
			var next, failed atomic.Int64
			var firstErr error
			var errOnce sync.Once
			var wg sync.WaitGroup
			b.ResetTimer()
			cpu0 := processCPU(b)
			start := time.Now()
			for range writers {
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						t0 := time.Now()
						_, err := st.Put(ctx, names[i%keys], value)
						lat[i] = time.Since(t0)
						cancel()
						if err != nil {
							failed.Add(1)
							errOnce.Do(func() { firstErr = err })
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			cpu := processCPU(b) - cpu0
			b.StopTimer()
			sortDurations(lat)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
			b.ReportMetric(ms(percentile(lat, 50)), "p50-ms")
			b.ReportMetric(ms(percentile(lat, 99)), "p99-ms")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/write")
			b.ReportMetric(ms(flush), "disk-flush-ms")
			if n := failed.Load(); n > 0 {
				b.ReportMetric(float64(n), "failed")
				progress("writers=%d: %d of %d writes failed, first: %v (leader now %d, was %d)", writers, n, b.N, firstErr, lead.Leader(), lead.ID())
				if errors.Is(firstErr, raft.ErrStopped) {
					b.Fatal(firstErr)
				}
			}
		})
	}
}
