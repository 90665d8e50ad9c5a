#!/usr/bin/env bash
# make bench: the metadata cluster's benchmarks, described in docs/benchmarks.md.
#
#   writes    BenchmarkWrites: acknowledged ~100-byte writes/s and p50/p99 latency, 1/64/128
#             writers, three nodes in one process (WAL with fsync, bbolt applied without; HTTP/2 over
#             loopback)
#   writes-3sched  the 64-writer run again with GOMAXPROCS = 3 x CPUs, the schedulers three processes
#             would have
#   fsyncs    the same with 64 writers under `perf stat`: fdatasync/fsync/pwrite calls per write
#             (skipped when perf cannot count syscalls here)
#   failover  BenchmarkFailover: kill -9 of the leader process -> first acknowledged PUT through a
#             survivor, $BENCH_FAILOVER_TRIALS trials (default 30)
#   taskfailover BenchmarkTaskFailover: kill -9 of a worker -> all its tasks RUNNING elsewhere,
#             $BENCH_TASK_FAILOVER_TRIALS trials (default 20); tasks restarted on unaffected workers
#   assign    BenchmarkAssign: the assignor, 10,000 tasks over 100 workers
#   stores    BenchmarkStoreBackends: fenced offset commits/s (1 and 16 committers) and single-write
#             latency on raft (3 nodes in one process), mysql and postgres (the test environment's
#             MariaDB and PostgreSQL), as ratios to raft; a database that is not running is skipped
#   storeswitch BenchmarkStoreSwitch: online switches raft -> mysql -> raft -> postgres -> raft of
#             a 3-process cluster holding 1,000 connectors and 100,000 offsets: hold_ms, switch
#             time, and the longest pause a committing client sees
#   migrate   BenchmarkMigrateImport (node=worker; migrate-raftonly: node=raft-only, a node without a
#             worker): kcctl migrate from-kafka's read, plan and import of a Kafka Connect
#             cluster of 1,000 connectors and 100,000 offset records (internal topics written fresh on the
#             test environment's Kafka) into a kcd node in the process: seconds, peak heap, allocations
#             and peak RSS growth per phase (skipped without the test environment's Kafka)
#   memory    BenchmarkIdleRSS: VmRSS of idle kcd processes, and of the test environment's Kafka
#             Connect worker when it runs
#   filestream BenchmarkFileStreamSideBySide: FileStreamSource (1 and 4 connectors) and FileStreamSink
#             (1 and 4 tasks) on kcd and on a fresh real Kafka Connect worker (started with Kafka's
#             own JVM options), same Kafka, converters, compression and exactly-once setting,
#             $BENCH_ROUNDS alternating rounds (default 3): records/s, CPU per record, memory,
#             start-up, first sink write; a raw franz-go producer on the same lines as the ceiling
#   filestream-defaults the same with each side's defaults (kcd: exactly-once source support
#             enabled; Kafka Connect: disabled; neither compresses), without the restart
#   javahost-hop bench/javahost-hop.sh: a source poll and a sink put of 1, 100 and 1,000 records
#             through the Java host's socket against the same calls in one JVM (Kafka Connect's way)
#   javahost  BenchmarkJavaHostSideBySide: Kafka Connect's MirrorSourceConnector and Debezium's
#             PostgresConnector on kcd (its Java connector host) and on a fresh real Kafka Connect
#             worker, same plugins, Kafka and PostgreSQL, $BENCH_ROUNDS alternating rounds
#             (default 3), with exactly-once source support enabled (kcd's default) and disabled
#             (Kafka Connect's): records/s, CPU per record, POST -> RUNNING, memory; a table each
#             (needs the test environment and a built Java host: make testenv-up, make javahost)
#   rebalance-sbs BenchmarkRebalanceSideBySide: two workers each side run 30 sink tasks under a
#             steady producer, a third joins: tasks moved, longest output stall, exec -> its share
#   scale     BenchmarkScale, kcd alone: 3 raft-only nodes and $BENCH_SCALE_WORKERS worker-only nodes
#             (default 100) in one process create $BENCH_SCALE_CONNECTORS (1000) Datagen connectors of
#             $BENCH_SCALE_TASKS (10) tasks: time until all are RUNNING where assigned, Raft log growth,
#             the leader's store, the process's memory, and a kill of the Raft leader (until every unit
#             runs again; units moved or restarted)
#   failover-sbs BenchmarkFailoverSideBySide: three workers each side, kill -9 of one, until its
#             FileStreamSink tasks run elsewhere; Kafka Connect with scheduled.rebalance.max.delay.ms
#             0 and its default 300000 (that trial alone takes about five minutes)
#
# QUICK=1 (make bench QUICK=1) runs only the side-by-side benchmarks, one round each at small
# sizes, Kafka Connect's failover with a delay of 0 only, and the scale benchmark at 50
# connectors x 10 tasks over 10 workers: about 5 minutes.
#
# At the end bench/report writes the run's figures as one document: docs/benchmarks.md, or in
# QUICK mode $BENCH_OUT/benchmarks.md only. It reads the raw output, runs.tsv (each benchmark's
# arguments and exit code, written here) and run-start.txt (the machine and versions, recorded
# before the first benchmark).
#
# About 30-40 minutes on 2 cores (the switch benchmark waits up to 90 s for the cluster to settle before each switch). Everything it starts it stops; raw output goes to $BENCH_OUT
# (default .data/bench). Data dirs are under $TMPDIR (default /tmp), which must be a disk, not tmpfs.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${BENCH_OUT:-.data/bench}
TRIALS=${BENCH_FAILOVER_TRIALS:-30}
TASK_TRIALS=${BENCH_TASK_FAILOVER_TRIALS:-20}
WRITES_TIME=${BENCH_WRITES_TIME:-5s}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export BENCH_OUT=$OUT

echo "== make bench, $(date -u +%Y-%m-%dT%H:%MZ): $(nproc) CPUs, $(go version | cut -d' ' -f3-4), kernel $(uname -r)"
REPORT_MODE=()
[ "${QUICK:-}" = 1 ] && REPORT_MODE=(-quick)
rm -f "$OUT/runs.tsv"
go run ./bench/report -in "$OUT" -start "${REPORT_MODE[@]}"
go test -c -o "$OUT/bench.test" ./bench

# record NAME RC LOAD ARGS...: a line of $OUT/runs.tsv, what bench/report shows as a
# benchmark's settings and whether it failed.
record() {
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${*:4}" >>"$OUT/runs.tsv"
}

# run NAME ARGS...: one benchmark binary run, output to $OUT/NAME.txt.
run() {
	local name=$1 load rc=0
	shift
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	echo "== $name (load average before: $load)"
	(cd bench && "$OUT/bench.test" -test.run '^$' -test.timeout 15m "$@") 2>&1 | tee "$OUT/$name.txt" || rc=$?
	record "$name" "$rc" "$load" ${GOMAXPROCS:+GOMAXPROCS=$GOMAXPROCS} "$@"
	return "$rc"
}

# report FILE: the run's figures as one document (bench/report).
report() {
	go run ./bench/report -in "$OUT" -out "$1" && echo "== the figures of this run: $1" ||
		echo "== bench/report FAILED: the raw output is in $OUT"
}

# side_by_side ROUNDS ARGS...: kcd against the real Kafka Connect, one table each.
side_by_side() {
	local rounds=$1
	shift
	run filestream -test.bench '^BenchmarkFileStreamSideBySide$' -test.benchtime 1x -bench.filestream.rounds "$rounds" "$@" ||
		echo "== filestream FAILED: see $OUT/filestream.txt"
	for eos in enabled disabled; do
		run javahost-eos-$eos -test.bench '^BenchmarkJavaHostSideBySide$' -test.benchtime 1x \
			-bench.javahost.rounds "$rounds" -bench.javahost.exactly-once $eos "${JAVAHOST_ARGS[@]}" ||
			echo "== javahost-eos-$eos FAILED: see $OUT/javahost-eos-$eos.txt"
	done
}

# scale CONNECTORS TASKS WORKERS: BenchmarkScale at that size.
scale() {
	run scale -test.bench '^BenchmarkScale$' -test.benchtime 1x -test.timeout 30m \
		-bench.scale.connectors "$1" -bench.scale.tasks "$2" -bench.scale.workers "$3" ||
		echo "== scale FAILED: see $OUT/scale.txt"
}

tables() {
	echo
	for f in "$OUT"/filestream-sidebyside.md "$OUT"/filestream-sidebyside-defaults.md "$OUT"/javahost-sidebyside-eos-*.md "$OUT"/scale.md; do
		[ -s "$f" ] && { echo "== $(basename "$f" .md)"; cat "$f"; }
	done
	grep -h '^| failover' "$OUT/failover-sbs.txt" 2>/dev/null || true
	grep -h '^| a worker joins' "$OUT/rebalance-sbs.txt" 2>/dev/null || true
}

if [ "${QUICK:-}" = 1 ]; then
	JAVAHOST_ARGS=(-bench.javahost.mirror-records 200000 -bench.javahost.dbz-rows 20000 -bench.javahost.dbz-stream 5000)
	side_by_side 1 -bench.filestream.records 1000000 -bench.filestream.restart-connectors 20
	run failover-sbs -test.bench '^BenchmarkFailoverSideBySide$' -test.benchtime 1x -bench.failover.connect-delays 0 ||
		echo "== failover-sbs FAILED: see $OUT/failover-sbs.txt"
	run rebalance-sbs -test.bench '^BenchmarkRebalanceSideBySide$' -test.benchtime 1x ||
		echo "== rebalance-sbs FAILED: see $OUT/rebalance-sbs.txt"
	scale 50 10 10
	tables
	report "$OUT/benchmarks.md"
	exit 0
fi
JAVAHOST_ARGS=()

run writes -test.bench '^BenchmarkWrites$' -test.benchtime "$WRITES_TIME"
# The three nodes share one Go scheduler here; as three processes they would have three. The same
# 64-writer run with GOMAXPROCS = 3 x CPUs shows what the scheduler's queueing costs (docs/benchmarks.md).
echo "== writes-3sched: GOMAXPROCS=$((3 * $(nproc)))"
GOMAXPROCS=$((3 * $(nproc))) run writes-3sched -test.bench '^BenchmarkWrites/writers=64$' -test.benchtime "$WRITES_TIME"

fsyncs=
load=$(cut -d' ' -f1-3 /proc/loadavg)
if command -v perf >/dev/null && perf stat -e syscalls:sys_enter_fdatasync true >/dev/null 2>&1; then
	n=20000
	echo "== fsyncs: BenchmarkWrites/writers=64, $n writes, under perf stat"
	(cd bench && perf stat -x, -o "$OUT/fsyncs.perf" \
		-e syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync,syscalls:sys_enter_pwrite64 -- \
		"$OUT/bench.test" -test.run '^$' -test.timeout 15m -test.bench '^BenchmarkWrites/writers=64$' -test.benchtime ${n}x) 2>&1 |
		tee "$OUT/fsyncs.txt" | grep '^Benchmark' || true
	# 200 warm-up writes and one run of b.N=1 come before the n measured ones.
	fsyncs=$(awk -F, -v w=$((n + 201)) '
		/sys_enter_fdatasync/ {d=$1} /sys_enter_fsync/ {f=$1} /sys_enter_pwrite64/ {p=$1}
		END {printf "per acknowledged write, 3 nodes together: %.2f fdatasync + %.3f fsync (%.2f per node), %.1f pwrite64", d/w, f/w, (d+f)/w/3, p/w}' "$OUT/fsyncs.perf")
	echo "$fsyncs"
	echo "$fsyncs" >"$OUT/fsyncs-per-write.txt"
	record fsyncs 0 "$load" perf stat -test.bench '^BenchmarkWrites/writers=64$' -test.benchtime ${n}x
else
	echo "== fsyncs: skipped (perf cannot count syscalls:sys_enter_fdatasync here)"
	echo "skipped: perf cannot count syscalls:sys_enter_fdatasync here" >"$OUT/fsyncs-per-write.txt"
fi

# The store benchmarks find MariaDB and PostgreSQL in $KCD_TEST_MYSQL_DSN and $KCD_TEST_POSTGRES_DSN, or
# in .testenv/env (make testenv-up); without them only raft is measured (under CI=true they must be there).
if [ -z "${KCD_TEST_MYSQL_DSN:-}${KCD_TEST_POSTGRES_DSN:-}" ] && ! grep -qs 'DSN=' .testenv/env; then
	echo "== stores, storeswitch: no MariaDB/PostgreSQL (make testenv-up starts them): raft only, switches skipped"
fi
run stores -test.bench '^BenchmarkStoreBackends$' -test.benchtime "${BENCH_STORE_TIME:-3s}"
# A switch that fails three times ends this benchmark (its output says why); the others still run.
run storeswitch -test.bench '^BenchmarkStoreSwitch$' -test.benchtime 1x ||
	echo "== storeswitch FAILED: see $OUT/storeswitch.txt"
run failover -test.bench '^BenchmarkFailover$' -test.benchtime "${TRIALS}x"
run memory -test.bench '^BenchmarkIdleRSS$' -test.benchtime 1x
# One process per node kind, so that each starts with the same heap.
run migrate -test.bench '^BenchmarkMigrateImport$/^node=worker$' -test.benchtime 1x ||
	echo "== migrate FAILED: see $OUT/migrate.txt"
run migrate-raftonly -test.bench '^BenchmarkMigrateImport$/^node=raft-only$' -test.benchtime 1x ||
	echo "== migrate-raftonly FAILED: see $OUT/migrate-raftonly.txt"
run taskfailover -test.bench '^BenchmarkTaskFailover$' -test.benchtime "${TASK_TRIALS}x"
# The socket hop per batch against an in-JVM call (bench/javahost-hop.sh: needs Java 17 and Maven).
load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== javahost-hop (load average before: $load)"
rc=0
bench/javahost-hop.sh 2>&1 | tee "$OUT/javahost-hop.txt" || rc=$?
record javahost-hop "$rc" "$load" bench/javahost-hop.sh
[ "$rc" = 0 ] || echo "== javahost-hop FAILED: see $OUT/javahost-hop.txt"
side_by_side "${BENCH_ROUNDS:-3}"
run filestream-defaults -test.bench '^BenchmarkFileStreamSideBySide$' -test.benchtime 1x \
	-bench.filestream.rounds "${BENCH_ROUNDS:-3}" -bench.filestream.defaults -bench.filestream.restart-connectors 0 ||
	echo "== filestream-defaults FAILED: see $OUT/filestream-defaults.txt"
run failover-sbs -test.bench '^BenchmarkFailoverSideBySide$' -test.benchtime 1x ||
	echo "== failover-sbs FAILED: see $OUT/failover-sbs.txt"
run rebalance-sbs -test.bench '^BenchmarkRebalanceSideBySide$' -test.benchtime 1x ||
	echo "== rebalance-sbs FAILED: see $OUT/rebalance-sbs.txt"
scale "${BENCH_SCALE_CONNECTORS:-1000}" "${BENCH_SCALE_TASKS:-10}" "${BENCH_SCALE_WORKERS:-100}"
load=$(cut -d' ' -f1-3 /proc/loadavg)
(cd daemon/coordinator/assignor && go test -run '^$' -bench '^BenchmarkAssign' -benchmem) 2>&1 | tee "$OUT/assign.txt"
record assign 0 "$load" "(cd daemon/coordinator/assignor && go test -run '^\$' -bench '^BenchmarkAssign' -benchmem)"

echo
echo "== summary (raw output in $OUT)"
grep -h '^Benchmark' "$OUT/writes.txt" "$OUT/writes-3sched.txt" "$OUT/stores.txt" "$OUT/storeswitch.txt" "$OUT/failover.txt" "$OUT/memory.txt" "$OUT/migrate.txt" "$OUT/migrate-raftonly.txt" "$OUT/taskfailover.txt" "$OUT/scale.txt" "$OUT/assign.txt"
[ -n "$fsyncs" ] && echo "fsyncs: $fsyncs"
tables
grep -h 'VmRSS\|Kafka Connect worker' "$OUT/memory.txt" | sed 's/^bench: //' || true
grep -h '^bench: migrate: [0-9a-zW]' "$OUT/migrate.txt" "$OUT/migrate-raftonly.txt" | sed 's/^bench: //' || true
grep -h '^bench: .*: \(innodb\|fsync\|switch .* done\)' "$OUT/stores.txt" "$OUT/storeswitch.txt" | sed 's/^bench: //' || true
report docs/benchmarks.md
