// Package bench holds kcd's benchmarks of the metadata cluster; the code is
// in the _test files, the figures and how to read them in
// docs/benchmarks.md. make bench (bench/run.sh) runs all of them:
//
//   - BenchmarkWrites: acknowledged ~100-byte Puts per second, and their
//     latency, on a three-node cluster in this process: real WAL and bbolt
//     with fsync, the real HTTP/2 peer transport over 127.0.0.1.
//   - BenchmarkFailover: kill -9 of the leader process of a three-node
//     cluster of real kcd processes, until a PUT through a survivor is
//     acknowledged. One iteration is one trial: run it with
//     -benchtime=30x (30 trials).
//   - BenchmarkIdleRSS: resident memory of idle kcd processes, and of the
//     test environment's Kafka Connect worker when it runs. Run it with
//     -benchtime=1x.
//   - BenchmarkMigrateImport: kcctl migrate from-kafka's read, plan and
//     import of a Kafka Connect cluster of 1,000 connectors and 100,000
//     offset records, written fresh into internal topics on the test
//     environment's Kafka, into a kcd node in this process: time, peak
//     heap, allocations and peak RSS growth of each phase. Run it with
//     -benchtime=1x.
//   - BenchmarkScale: kcd alone at scale: three raft-only nodes and
//     -bench.scale.workers worker-only nodes in this process create
//     -bench.scale.connectors connectors of -bench.scale.tasks idle Datagen
//     tasks on the test environment's Kafka: time until every unit runs
//     where assigned, Raft log growth, the leader's store, the process's
//     memory, and a kill of the Raft leader (until every unit runs again;
//     units moved or restarted). Run it with -benchtime=1x.
//
// None of them runs under go test's default -run: they are benchmarks
// only, and the process benchmarks build cmd/kcd when they start.
package bench
