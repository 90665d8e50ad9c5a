package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/coordinator"
	_ "github.com/kcd-project/kcd/daemon/store/sqlstore" // the "mysql" and "postgres" backends
	"github.com/kcd-project/kcd/internal/testenv"
	"github.com/kcd-project/kcd/raft/raftstore"
	"github.com/kcd-project/kcd/store"

	_ "github.com/go-sql-driver/mysql" // durability: the settings of MariaDB/MySQL
	_ "github.com/jackc/pgx/v5/stdlib" // durability: the settings of PostgreSQL
)

// sqlBackends are the SQL backends the store benchmarks compare with raft,
// and the test environment's variable holding each one's DSN.
var sqlBackends = []sqlBackend{
	{"mysql", testenv.MySQLDSN},
	{"postgres", testenv.PostgreDSN},
}

type sqlBackend struct{ name, dsnVar string }

// benchTablePrefix keeps the benchmarks' tables apart from the tests'.
const benchTablePrefix = "kcdbench_"

// serviceDSN returns the test environment's DSN in variable name, or skips
// b with a message (fails it under CI=true) when the service is absent.
func serviceDSN(b *testing.B, name string) string {
	b.Helper()
	if v := testenv.Lookup(name); v != "" {
		return v
	}
	msg := name + " is not set: the database is not running; start the test environment (make testenv-up) to measure this backend"
	if os.Getenv("CI") == "true" {
		b.Fatal(msg + "; under CI=true a missing service is a failure")
	}
	progress("%s: skipped: %s", b.Name(), msg)
	b.Skip(msg)
	return ""
}

// openSQL opens backend on the test environment's database, with the
// benchmark's table prefix and every key of an earlier run removed.
func openSQL(b *testing.B, backend, dsnVar string) store.Store {
	b.Helper()
	dsn := serviceDSN(b, dsnVar)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := store.Open(ctx, backend, map[string]string{"dsn": dsn, "table_prefix": benchTablePrefix})
	if err != nil {
		b.Fatalf("open %s: %v (is the backend linked in? registered: %v)", backend, err, store.Backends())
	}
	l, ok := s.(store.Loader)
	if !ok {
		s.Close()
		b.Fatalf("%s: not a store.Loader, cannot clear it", backend)
	}
	if err := l.Clear(ctx); err != nil {
		s.Close()
		b.Fatalf("clear %s: %v", backend, err)
	}
	progress("%s: %s", backend, durability(backend, dsn))
	return s
}

// durability says how the database commits: the SQL backends' figures
// depend on whether a commit waits for a flush to disk, which the test
// environment turns off (its data is disposable) while raft always
// fsyncs its WAL.
func durability(backend, dsn string) string {
	driver, query := "mysql", "SELECT CONCAT('innodb_flush_log_at_trx_commit=', @@innodb_flush_log_at_trx_commit, ', sync_binlog=', @@sync_binlog, ', version ', VERSION())"
	if backend == "postgres" {
		driver, query = "pgx", "SELECT 'fsync=' || current_setting('fsync') || ', synchronous_commit=' || current_setting('synchronous_commit') || ', ' || version()"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return "durability settings unknown: " + err.Error()
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var s string
	if err := db.QueryRowContext(ctx, query).Scan(&s); err != nil {
		return "durability settings unknown: " + err.Error()
	}
	return s
}

// benchBackend is one store under measurement.
type benchBackend struct {
	name string
	open func(b *testing.B) store.Store
}

// storeBackends are raft (three nodes in this process, as in
// BenchmarkWrites: fsynced WAL, bbolt, HTTP/2 over loopback; writes
// through raftstore on the leader) and the SQL backends, in that order so
// that the SQL figures can be given as ratios to raft's of the same run.
func storeBackends() []benchBackend {
	bs := []benchBackend{{name: "raft", open: func(b *testing.B) store.Store {
		c := startCluster(b, 3)
		return raftstore.New(c.leader(b, 10*time.Second))
	}}}
	for _, sb := range sqlBackends {
		bs = append(bs, benchBackend{name: sb.name, open: func(b *testing.B) store.Store {
			return openSQL(b, sb.name, sb.dsnVar)
		}})
	}
	return bs
}

// commitUnit is one connector's task as the worker commits its offsets:
// the fence of its assignment (the owner key at the revision that gave it
// the task, coordinator.Member.Fence) and its partitions.
type commitUnit struct {
	name  string
	fence connectstore.Fence
	offs  []connectstore.SinkOffset
}

// partitionsPerCommit is the offsets of one commit: a sink task's
// partitions, one Put each, in one Batch under the fence.
const partitionsPerCommit = 10

// newCommitUnits writes the owner keys of n tasks and returns their
// units. ownerKey names a task's owner key: the coordinator's own
// (coordinator.OwnerKey) where no coordinator runs, another where one
// does and would take its keys for its own.
func newCommitUnits(b *testing.B, s store.Store, n int, ownerKey func(name string) string) []*commitUnit {
	b.Helper()
	units := make([]*commitUnit, n)
	for i := range units {
		name := fmt.Sprintf("bench-sink-%03d", i)
		owner := ownerKey(name)
		rev, err := s.Put(context.Background(), owner, []byte(`{"worker":"w1"}`))
		if err != nil {
			b.Fatal(err)
		}
		u := &commitUnit{name: name, fence: connectstore.Fence{{Key: owner, ModRevision: rev}}}
		for p := range partitionsPerCommit {
			u.offs = append(u.offs, connectstore.SinkOffset{Topic: "bench-topic", Partition: int32(p)})
		}
		units[i] = u
	}
	return units
}

// raftFigures holds raft's figures of this run, by sub-benchmark, for
// the SQL backends' ratios.
var raftFigures sync.Map

// BenchmarkStoreBackends compares the metadata backends on the same
// machine in the same run: raft (three nodes in this process), mysql
// (the test environment's MariaDB) and postgres. A backend whose database
// is not running is skipped with a message (a failure under CI=true).
//
// commit/…/committers=N: N goroutines each commit a sink task's offsets
// over and over, as the worker does (connectstore.PutSinkOffsets: one
// Batch of 10 Puts under the fence of the task's assignment, a Cond on its
// owner key). commits/s counts acknowledged commits over the wall time;
// p50-ms and p99-ms are single commits; x-raft is commits/s over raft's in
// this run.
//
// load/…: what the copy of a switch costs the target alone: Clear, then
// Loader.Load of -bench.switch-offsets sink offsets (100 per connector) in
// chunks within store.MaxBatchOps and store.MaxLoadBytes, as the switch
// loads them; load-s is the whole, keys/s its rate.
//
// put/…: one writer, one ~100-byte Put at a time: the latency one write
// costs. x-raft-p50 is p50 over raft's.
func BenchmarkStoreBackends(b *testing.B) {
	for _, be := range storeBackends() {
		b.Run("backend="+be.name, func(b *testing.B) {
			s := be.open(b)
			defer s.Close()
			// What a flush to this machine's disk costs now: raft's WAL
			// pays it per write batch, a database that fsyncs its log
			// would too.
			progress("%s: disk flush (1.5 KiB append + fdatasync in %s): %.2f ms", be.name, os.TempDir(), ms(diskFlush(b, b.TempDir(), 100)))
			cs := connectstore.New(s)
			units := newCommitUnits(b, s, 16, func(name string) string {
				return coordinator.OwnerKey(coordinator.Unit{Connector: name, Task: 0})
			})
			// Warm up: connections open, tables and pages cached.
			for i := range 50 {
				if err := cs.PutSinkOffsets(context.Background(), units[i%16].name, units[i%16].offs, units[i%16].fence); err != nil {
					b.Fatal(err)
				}
			}
			for _, committers := range []int{1, 16} {
				b.Run(fmt.Sprintf("commit/committers=%d", committers), func(b *testing.B) {
					lat := runConcurrent(b, committers, func(ctx context.Context, w int, i int64) error {
						u := units[w]
						for p := range u.offs {
							u.offs[p].Offset = i*100 + int64(p)
						}
						return cs.PutSinkOffsets(ctx, u.name, u.offs, u.fence)
					})
					report(b, be.name, fmt.Sprintf("commit/%d", committers), "commits/s", lat)
				})
			}
			b.Run("load", func(b *testing.B) {
				l, ok := s.(store.Loader)
				if !ok {
					b.Skipf("%s is not a store.Loader", be.name)
				}
				for range b.N {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
					took, err := loadOffsets(ctx, l, *switchOffsets)
					cancel()
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(took.Seconds(), "load-s")
					b.ReportMetric(float64(*switchOffsets)/took.Seconds(), "keys/s")
					progress("%s: loaded %d offset keys in %v", be.name, *switchOffsets, took.Round(time.Millisecond))
				}
			})
			b.Run("put", func(b *testing.B) {
				key := "bench/put/" + strings.Repeat("k", 14) // 24 bytes
				value := make([]byte, 76)
				lat := runConcurrent(b, 1, func(ctx context.Context, _ int, _ int64) error {
					_, err := s.Put(ctx, key, value)
					return err
				})
				report(b, be.name, "put", "writes/s", lat)
			})
		})
	}
}

// runConcurrent runs b.N calls of op from n goroutines (op gets the
// goroutine's number and the call's) and returns each call's latency
// with the wall time of the whole; a failed call fails b.
func runConcurrent(b *testing.B, n int, op func(ctx context.Context, w int, i int64) error) opRun {
	lat := make([]time.Duration, b.N)
	var next, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := range n {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				t0 := time.Now()
				err := op(ctx, w, i)
				lat[i] = time.Since(t0)
				cancel()
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d calls failed, first: %v", n, b.N, firstErr.Load())
	}
	sortDurations(lat)
	return opRun{lat: lat, elapsed: elapsed}
}

type opRun struct {
	lat     []time.Duration // sorted
	elapsed time.Duration
}

// report reports a run's rate, p50 and p99 and, for a SQL backend, the
// ratios to raft's figures of the same case in this run.
func report(b *testing.B, backend, kase, unit string, r opRun) {
	rate := float64(len(r.lat)) / r.elapsed.Seconds()
	p50, p99 := ms(percentile(r.lat, 50)), ms(percentile(r.lat, 99))
	b.ReportMetric(rate, unit)
	b.ReportMetric(p50, "p50-ms")
	b.ReportMetric(p99, "p99-ms")
	if backend == "raft" {
		raftFigures.Store(kase, [3]float64{rate, p50, p99})
		return
	}
	v, ok := raftFigures.Load(kase)
	if !ok {
		return
	}
	raft := v.([3]float64)
	if kase == "put" {
		b.ReportMetric(p50/raft[1], "x-raft-p50")
		b.ReportMetric(p99/raft[2], "x-raft-p99")
		return
	}
	b.ReportMetric(rate/raft[0], "x-raft")
}

// loadOffsets clears l and loads n sink offsets into it, 100 per
// connector, in chunks as a switch's copy makes them, and returns how long
// it took.
func loadOffsets(ctx context.Context, l store.Loader, n int) (time.Duration, error) {
	kvs := make([]store.KV, n)
	for i := range kvs {
		name := fmt.Sprintf("bench-conn-%04d", i/100)
		value := fmt.Sprintf(`{"topic":"bench-%s","partition":%d,"offset":%d}`, name, i%100, 1000+i)
		kvs[i] = store.KV{
			Key:            fmt.Sprintf("connect/sinkoffset/%s/bench-%s/%d", name, name, i%100),
			Value:          []byte(value),
			CreateRevision: int64(i + 1),
			ModRevision:    int64(i + 1),
		}
	}
	slices.SortFunc(kvs, func(a, b store.KV) int { return strings.Compare(a.Key, b.Key) })
	start := time.Now()
	if err := l.Clear(ctx); err != nil {
		return 0, fmt.Errorf("clear: %w", err)
	}
	for len(kvs) > 0 {
		k, size := 0, 0
		for k < len(kvs) && k < store.MaxBatchOps && size+len(kvs[k].Key)+len(kvs[k].Value) <= store.MaxLoadBytes {
			size += len(kvs[k].Key) + len(kvs[k].Value)
			k++
		}
		if err := l.Load(ctx, int64(n), kvs[:k], nil); err != nil {
			return 0, fmt.Errorf("load: %w", err)
		}
		kvs = kvs[k:]
	}
	return time.Since(start), nil
}
