#!/usr/bin/env bash
# The per-batch cost of the Java host's socket hop against an in-JVM call (issue 17, Measure).
#
#   through the host  BenchmarkHostSourcePoll / BenchmarkHostSinkPut (daemon/javahost): one Poll or
#                     Put round trip from Go through a real host, the test plugins in mode bench
#   in one JVM        io.kcd.javahost.HopBaseline (javahost's test sources): the same plugins,
#                     converters (StringConverter) and batches as Kafka Connect's worker runs them
#
# Batches of 1, 100 and 1,000 records of 100 bytes; neither side touches Kafka. Prints one table:
# per batch size, ns/batch through the host and in one JVM, their difference per batch and per
# record, and the CPU time per record of kcd's process, the host's JVM and the in-JVM baseline
# (steadier than elapsed time on a shared machine). Needs Java 17 and Maven; about 3 minutes on
# 2 cores. Raw output goes to $BENCH_OUT
# (default .data/bench): javahost-hop-go.txt, javahost-hop-jvm.txt.
#   BENCH_HOP_TIME      go test -benchtime of each batch size (default 3s)
#   BENCH_HOP_SECONDS   HopBaseline's timed seconds per batch size, after half as long warming up (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${BENCH_OUT:-.data/bench}
TIME=${BENCH_HOP_TIME:-3s}
SECONDS_PER_SIZE=${BENCH_HOP_SECONDS:-3}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# The host (its build compiles the test classes too, HopBaseline among them) and the test plugins.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! mvn -B -ntp -q -f javahost/testplugins/pom.xml package -DskipTests >"$log" 2>&1; then
	echo "javahost-hop: building the test plugins failed:" >&2
	tail -n 30 "$log" >&2
	exit 1
fi
scripts/javahost.sh build "$OUT/javahost" --required
host=$OUT/javahost
plugins=$PWD/javahost/testplugins/target/plugin

echo "== javahost-hop, $(date -u +%Y-%m-%dT%H:%MZ): $(nproc) CPUs, $(java -version 2>&1 | head -1), $(go version | cut -d' ' -f3)"
echo "== through the host (load average before: $(cut -d' ' -f1-3 /proc/loadavg))"
KCD_TEST_JAVA_HOST_DIR=$host KCD_TEST_JAVA_TEST_PLUGINS=$plugins \
	go test -count=1 -run '^$' -bench '^BenchmarkHost(SourcePoll|SinkPut)$' -benchtime "$TIME" -timeout 15m \
	./daemon/javahost 2>&1 | tee "$OUT/javahost-hop-go.txt"
echo "== in one JVM (load average before: $(cut -d' ' -f1-3 /proc/loadavg))"
# The host's heap (hopHeap in hop_bench_test.go); the host's log lines go to stderr, dropped.
java -Xmx512m -cp "javahost/target/test-classes:javahost/target/classes:$host/lib/*" \
	io.kcd.javahost.HopBaseline "$plugins" "$SECONDS_PER_SIZE" 2>/dev/null | tee "$OUT/javahost-hop-jvm.txt"
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

awk '
FNR == NR && /^BenchmarkHost(SourcePoll|SinkPut)\/batch=/ {
	kind = ($1 ~ /SourcePoll/) ? "source poll" : "sink put"
	b = $1; sub(/.*batch=/, "", b); sub(/-[0-9]+$/, "", b)
	for (i = 2; i < NF; i++) {
		if ($(i + 1) == "ns/batch") host[kind, b] = $i
		if ($(i + 1) == "kcd-cpu-ns/record") kcdcpu[kind, b] = $i
		if ($(i + 1) == "host-cpu-ns/record") hostcpu[kind, b] = $i
	}
	next
}
FNR != NR && /^hop-baseline / {
	kind = ($2 == "source") ? "source poll" : "sink put"
	for (i = 3; i <= NF; i++) {
		split($i, kv, "=")
		if (kv[1] == "batch") b = kv[2]
		if (kv[1] == "ns/batch") v = kv[2]
		if (kv[1] == "cpu-ns/record") c = kv[2]
	}
	jvm[kind, b] = v
	jvmcpu[kind, b] = c
}
END {
	printf "\nns/batch: elapsed; hop = through the host - in one JVM. cpu: ns per record of the kcd process,\n"
	printf "of the host JVM (all threads, GC and JIT included) and of the in-JVM baseline thread.\n\n"
	printf "%-11s %5s %14s %15s %14s %13s %9s %9s %9s\n", "call", "batch", "host ns/batch", "in-JVM ns/batch",
		"hop ns/batch", "hop ns/record", "kcd cpu", "host cpu", "JVM cpu"
	split("source poll,sink put", kinds, ",")
	split("1 100 1000", sizes, " ")
	for (k = 1; k <= 2; k++) for (s = 1; s <= 3; s++) {
		kind = kinds[k]; b = sizes[s]
		if (!((kind, b) in host) || !((kind, b) in jvm)) {
			printf "%-11s %5s %14s\n", kind, b, "missing"
			missing = 1
			continue
		}
		d = host[kind, b] - jvm[kind, b]
		printf "%-11s %5d %14.0f %15.0f %14.0f %13.0f %9.0f %9.0f %9.0f\n", kind, b, host[kind, b], jvm[kind, b],
			d, d / b, kcdcpu[kind, b], hostcpu[kind, b], jvmcpu[kind, b]
	}
	exit missing
}' "$OUT/javahost-hop-go.txt" "$OUT/javahost-hop-jvm.txt"
