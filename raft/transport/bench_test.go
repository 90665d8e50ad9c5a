package transport

import (
	"context"
	"crypto/tls"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// counter is a Receiver that only counts, so the benchmark measures the
// transport; the sender waits on it without polling (timer granularity here
// is about a millisecond, which would dominate).
type counter struct {
	mu     sync.Mutex
	n      uint64
	target uint64
	reach  chan struct{} // closed when n reaches target
}

func (c *counter) Process(context.Context, *raftpb.Message) error {
	c.mu.Lock()
	c.n++
	if c.reach != nil && c.n >= c.target {
		close(c.reach)
		c.reach = nil
	}
	c.mu.Unlock()
	return nil
}

func (c *counter) count() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// await returns once n ≥ target.
func (c *counter) await(target uint64) {
	c.mu.Lock()
	if c.n >= target {
		c.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	c.target, c.reach = target, ch
	c.mu.Unlock()
	<-ch
}

func (c *counter) ReportUnreachable(uint64)                   {}
func (c *counter) ReportSnapshot(uint64, raft.SnapshotStatus) {}
func (c *counter) IsIDRemoved(uint64) bool                    { return false }

// BenchmarkHTTPMsgApp measures messages per second from one transport to
// another over loopback: small MsgApp (one 64-byte entry, like a coalesced
// offset commit), sent in Ready-sized batches, with at most window messages
// in flight so that nothing is dropped. With window=1 every message waits
// for the previous one's delivery: ns/op is then the one-way latency.
func BenchmarkHTTPMsgApp(b *testing.B) {
	cert, pool := selfSigned(b)
	for _, bc := range []struct {
		name          string
		tls           bool
		batch, window int
	}{
		{"h2c/batch=1/window=1", false, 1, 1},
		{"h2c/batch=1/window=2048", false, 1, 2048},
		{"h2c/batch=16/window=2048", false, 16, 2048},
		{"tls/batch=1/window=1", true, 1, 1},
		{"tls/batch=16/window=2048", true, 16, 2048},
	} {
		b.Run(bc.name, func(b *testing.B) {
			recv := new(counter)
			opt := func(c *Config) {
				if bc.tls {
					c.ServerTLS = &tls.Config{Certificates: []tls.Certificate{cert}}
					c.ClientTLS = &tls.Config{RootCAs: pool}
				}
			}
			a := newNode(b, 1, "bench", opt)
			dst := newNode(b, 2, "bench", opt, func(c *Config) { c.Receiver = recv })
			a.tr.AddPeer(2, dst.url())
			batch := make([]*raftpb.Message, bc.batch)
			for i := range batch {
				batch[i] = appMsg(1, 2, uint64(i), make([]byte, 64))
			}
			window := uint64(bc.window)
			var sent uint64
			start := time.Now()
			for b.Loop() {
				a.tr.Send(batch)
				sent += uint64(len(batch))
				if sent >= window {
					recv.await(sent - window + 1)
				}
			}
			if st := a.tr.Stats()[2]; st.Dropped > 0 {
				b.Fatalf("%d messages dropped: %s", st.Dropped, st.LastError)
			}
			recv.await(sent)
			elapsed := time.Since(start)
			b.ReportMetric(float64(sent)/elapsed.Seconds(), "msgs/s")
		})
	}
}
