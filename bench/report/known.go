package main

import "regexp"

// What the report knows about the benchmarks bench/run.sh runs: the order
// they appear in, a line saying what each measures, and the progress lines
// worth keeping. Anything else in the output directory is shown after them
// by what it holds.

// A sideBySide is a table of kcd against Kafka Connect: NAME.md as the
// benchmark wrote it, else the table printed in NAME.txt.
type sideBySide struct {
	table string // file name of the table (in $BENCH_OUT)
	raw   string // NAME of NAME.txt
	title string
	about string
	full  bool // run by the full make bench only, not QUICK=1
}

var sideBySides = []sideBySide{
	{"filestream-sidebyside.md", "filestream", "FileStream source and sink",
		"BenchmarkFileStreamSideBySide: FileStreamSource (1 and 4 connectors) and FileStreamSink (1 and 4 tasks) " +
			"on kcd and on a fresh real Kafka Connect worker, same Kafka, converters, producer compression " +
			"(default snappy) and exactly-once setting, rounds alternating (default 3, 1,000,000 lines of 100 bytes, " +
			"100 connectors for the restart): records/s, CPU per record, memory, start-up, first sink write.", false},
	{"filestream-sidebyside-defaults.md", "filestream-defaults", "FileStream source and sink, each side with its defaults",
		"BenchmarkFileStreamSideBySide -bench.filestream.defaults: the same scenarios with no settings on either side " +
			"(kcd: exactly-once source support enabled, each source task producing in transactions; Kafka Connect: " +
			"disabled; no compression on either).", true},
	{"scale.md", "scale", "Scale, kcd alone (BenchmarkScale)",
		"BenchmarkScale: 3 raft-only nodes and worker-only nodes in one process, against the test environment's Kafka, " +
			"create Datagen connectors (one record a task, then idle): time until every unit runs where assigned, " +
			"Raft log growth, the leader's store, the process's memory, and a kill of the Raft leader (until every unit " +
			"runs again; units moved or restarted on live workers).", false},
	{"javahost-sidebyside-eos-enabled.md", "javahost-eos-enabled", "Kafka Connect's Java plugins, exactly-once source support enabled (kcd's default)",
		"BenchmarkJavaHostSideBySide: Kafka Connect's MirrorSourceConnector and Debezium's PostgresConnector on kcd " +
			"(its Java connector host) and on a fresh real Kafka Connect worker, same plugins, Kafka and PostgreSQL, " +
			"rounds alternating (default 3; 1,000,000 mirrored records, 100,000 rows snapshot, 20,000 streamed): " +
			"records/s, CPU per record, POST → RUNNING, memory.", false},
	{"javahost-sidebyside-eos-disabled.md", "javahost-eos-disabled", "Kafka Connect's Java plugins, exactly-once source support disabled (Kafka Connect's default)",
		"BenchmarkJavaHostSideBySide again, with exactly-once source support disabled on both sides.", false},
	{"failover-sbs-sidebyside.md", "failover-sbs", "Failover of a worker",
		"BenchmarkFailoverSideBySide: three workers each side run FileStreamSink tasks (default 6); kill -9 of one, " +
			"until its tasks run elsewhere. Kafka Connect with scheduled.rebalance.max.delay.ms 0 and with its " +
			"default 300000 (QUICK mode: 0 only).", false},
	{"rebalance-sbs-sidebyside.md", "rebalance-sbs", "A worker joins",
		"BenchmarkRebalanceSideBySide: two workers each side run 30 FileStreamSink tasks under a steady producer; " +
			"a third joins: tasks moved, the longest stall of the sink's output, the new worker's exec → its share.", false},
}

// A single is a benchmark of kcd alone, in NAME.txt.
type single struct {
	raw   string
	title string
	about string
	keep  *regexp.Regexp // progress lines shown under the table; nil for none
	after string         // a line of the output after which everything is shown as is
}

var (
	keepMemory  = regexp.MustCompile(`^bench: .*(VmRSS|Kafka Connect worker)`)
	keepMigrate = regexp.MustCompile(`^bench: migrate: [0-9a-zW]`)
	keepStores  = regexp.MustCompile(`^bench: .*: (innodb|fsync|switch .* done)`)
)

var singles = []single{
	{raw: "writes", title: "Metadata writes (BenchmarkWrites)",
		about: "Acknowledged ~100-byte writes/s and p50/p99 latency with 1, 64 and 128 writers, three Raft nodes in one " +
			"process (WAL with fsync, bbolt applied without; HTTP/2 over loopback); disk-flush-ms is the disk's " +
			"append + fdatasync just before the run."},
	{raw: "writes-3sched", title: "Metadata writes, GOMAXPROCS = 3 × CPUs",
		about: "The 64-writer run again with the schedulers three processes would have."},
	{raw: "fsyncs", title: "System calls per write (BenchmarkWrites under perf stat)",
		about: "64 writers, 20,000 writes under perf stat: fdatasync, fsync and pwrite64 calls per acknowledged write " +
			"(skipped where perf cannot count system calls)."},
	{raw: "stores", title: "Metadata store backends (BenchmarkStoreBackends)",
		about: "Fenced offset commits/s (1 and 16 committers), the copy of a switch (load) and single-write latency on " +
			"raft (3 nodes in one process), mysql and postgres (the test environment's MariaDB and PostgreSQL, " +
			"which do not flush on commit); x-raft: the ratio to raft. A database that is not running is skipped.",
		keep: keepStores},
	{raw: "storeswitch", title: "Online store switch (BenchmarkStoreSwitch)",
		about: "Switches raft → mysql → raft → postgres → raft of a 3-process cluster holding 1,000 connectors and " +
			"100,000 offsets, four writers committing throughout: hold-ms, switch-s, the longest pause one writer " +
			"saw (pause-ms) and all together (all-ms), the gap before the switch (base-ms).",
		keep: keepStores},
	{raw: "failover", title: "Leader failover (BenchmarkFailover)",
		about: "kill -9 of the Raft leader process of a three-process cluster → the first acknowledged PUT through a " +
			"survivor (p50/p99/max-ms) and the survivors agreeing on a leader (elect-*), one trial per iteration " +
			"(default 30)."},
	{raw: "memory", title: "Idle memory (BenchmarkIdleRSS)",
		about: "VmRSS and VmHWM of idle kcd processes (node 1 with the embedded dev broker: rss-broker-MB), and of the " +
			"test environment's Kafka Connect worker when it runs.",
		keep: keepMemory},
	{raw: "migrate", title: "Migration from Kafka Connect, node=worker (BenchmarkMigrateImport)",
		about: "kcctl migrate from-kafka's read, plan and apply of a Kafka Connect cluster of 1,000 connectors and " +
			"100,000 offset records (internal topics written fresh on the test environment's Kafka) into a " +
			"raft+worker kcd node in the process: seconds, peak heap, allocations and peak RSS growth per phase.",
		keep: keepMigrate},
	{raw: "migrate-raftonly", title: "Migration from Kafka Connect, node=raft-only",
		about: "The same into a node without a worker.", keep: keepMigrate},
	{raw: "taskfailover", title: "Task failover (BenchmarkTaskFailover)",
		about: "Three raft+worker processes and one worker-only process run a data generator of 12 tasks; kill -9 of " +
			"the worker-only one → every task RUNNING on a live worker (p50/p99/max-ms, default 20 trials). " +
			"restarted-leave/-join/leader-restarted count tasks stopped and started again on workers that did not " +
			"have to give them up (target 0), the last over kills of the Raft leader."},
	{raw: "javahost-hop", title: "The Java host's socket hop (bench/javahost-hop.sh)",
		about: "A source poll and a sink put of 1, 100 and 1,000 records of 100 bytes through the Java host's socket " +
			"against the same calls in one JVM (Kafka Connect's way); neither side touches Kafka.",
		after: "ns/batch: elapsed"},
	{raw: "assign", title: "The assignor (BenchmarkAssign)",
		about: "The assignor alone: 500 connectors × 20 tasks (10,500 units) over 100 workers from scratch, unchanged, " +
			"a worker joining, one leaving; and 10,500 units of one connector."},
}

// Files of a run that are not figures: the test binary, the Java host
// javahost-hop.sh builds, raw parts of a file the report reads, and what the
// report itself reads and writes.
var auxiliary = map[string]bool{
	"bench.test":           true,
	"javahost":             true,
	"javahost-hop-go.txt":  true, // copied into javahost-hop.txt
	"javahost-hop-jvm.txt": true, // copied into javahost-hop.txt
	"fsyncs.perf":          true, // summed into fsyncs-per-write.txt
	"fsyncs-per-write.txt": true,
	"benchmarks.md":        true,
	startFile:              true,
	endFile:                true,
	runsFile:               true,
}
