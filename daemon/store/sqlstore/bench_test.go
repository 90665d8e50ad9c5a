package sqlstore

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcd-project/kcd/store"
)

// The benchmarks need the test environment's databases; they take the DSNs
// from the environment (set -a; . .testenv/env; set +a) and skip without.
//
//	go test -run '^$' -bench BenchmarkIntegration -benchtime 5s ./daemon/store/sqlstore/

func benchStore(b *testing.B, name, env string) *Store {
	dsn := os.Getenv(env)
	if dsn == "" {
		b.Skipf("%s is not set: the test environment is not running", env)
	}
	s := openTest(b, name, dsn, nil)
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkIntegrationOffsetCommit writes what a task's offset commit
// writes: a Batch of 10 puts of ~100-byte values under one condition (the
// task's fence), from 1 and from 8 writers (each with its own task).
func BenchmarkIntegrationOffsetCommit(b *testing.B) {
	for _, be := range backends {
		for _, writers := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/writers=%d", be.name, writers), func(b *testing.B) {
				s := benchStore(b, be.name, be.env)
				ctx := b.Context()
				fences := make([]int64, writers)
				for i := range fences {
					rev, err := s.Put(ctx, fmt.Sprintf("kcd/assign/task-%d", i), []byte("worker-1"))
					if err != nil {
						b.Fatal(err)
					}
					fences[i] = rev
				}
				value := []byte(`{"partition":{"file":"/data/in.txt"},"offset":{"position":1234567890123}}` + "0123456789abcdef0123456")
				var left atomic.Int64
				left.Store(int64(b.N))
				b.ResetTimer()
				var wg sync.WaitGroup
				for w := range writers {
					wg.Go(func() {
						cond := []store.Cond{{Key: fmt.Sprintf("kcd/assign/task-%d", w), ModRevision: fences[w]}}
						ops := make([]store.Op, 10)
						for i := range ops {
							ops[i] = store.Put(fmt.Sprintf("kcd/offsets/conn-%d/p%d", w, i), value)
						}
						for left.Add(-1) >= 0 {
							if _, ok, err := s.Batch(ctx, cond, ops); err != nil || !ok {
								b.Errorf("Batch = %v, %v", ok, err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
			})
		}
	}
}

// BenchmarkIntegrationPut measures the latency of one Put, one writer.
func BenchmarkIntegrationPut(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			s := benchStore(b, be.name, be.env)
			ctx := b.Context()
			value := make([]byte, 100)
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.Put(ctx, fmt.Sprintf("k/%d", i%1000), value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkIntegrationSwitchCopy measures what a switch asks of a SQL
// backend with 100,000 offset entries: Load them in chunks as a target,
// and Scan them all as a source (one Scan, under op_timeout).
func BenchmarkIntegrationSwitchCopy(b *testing.B) {
	const entries, chunk = 100000, 2000
	value := []byte(`{"partition":{"file":"/data/in-0000.txt"},"offset":{"position":1234567890123}}` + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789")
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			s := benchStore(b, be.name, be.env)
			ctx := b.Context()
			for range b.N {
				if err := s.Clear(ctx); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				kvs := make([]store.KV, 0, chunk)
				for i := range entries {
					kvs = append(kvs, store.KV{Key: fmt.Sprintf("kcd/offsets/conn-%03d/p%06d", i%1000, i), Value: value, CreateRevision: int64(i + 1), ModRevision: int64(i + 1)})
					if len(kvs) == chunk || i == entries-1 {
						if err := s.Load(ctx, entries, kvs, nil); err != nil {
							b.Fatal(err)
						}
						kvs = kvs[:0]
					}
				}
				load := time.Since(start)
				start = time.Now()
				all, _, err := s.Scan(ctx, "", 0)
				if err != nil {
					b.Fatal(err)
				}
				if len(all) != entries {
					b.Fatalf("Scan found %d entries, want %d", len(all), entries)
				}
				b.ReportMetric(load.Seconds()*1000, "load-ms")
				b.ReportMetric(time.Since(start).Seconds()*1000, "scan-ms")
			}
		})
	}
}
