package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/systemtest"
	"github.com/kcd-project/kcd/internal/testenv"
)

var (
	jhRounds        = flag.Int("bench.javahost.rounds", 3, "BenchmarkJavaHostSideBySide: rounds, each running every scenario on both sides")
	jhMirrorRecords = flag.Int("bench.javahost.mirror-records", 1_000_000, "BenchmarkJavaHostSideBySide: records in the topic MirrorSource copies")
	jhMirrorTasks   = flag.Int("bench.javahost.mirror-tasks", 1, "BenchmarkJavaHostSideBySide: MirrorSource tasks.max (the topic has 4 partitions)")
	jhDBZRows       = flag.Int("bench.javahost.dbz-rows", 100_000, "BenchmarkJavaHostSideBySide: rows of the table Debezium snapshots")
	jhDBZStream     = flag.Int("bench.javahost.dbz-stream", 20_000, "BenchmarkJavaHostSideBySide: rows inserted in one transaction while Debezium streams")
	jhHeap          = flag.String("bench.javahost.heap", "512m", "BenchmarkJavaHostSideBySide: the Java host's heap (--java-host-heap); the Kafka Connect worker runs with -Xmx512m")
	jhJVMOptions    = flag.String("bench.javahost.jvm-options", "-Xms256m -XX:+UseSerialGC", "BenchmarkJavaHostSideBySide: the Java host's --java-host-jvm-options (default: the test environment's Kafka Connect worker's)")
	jhExactlyOnce   = flag.String("bench.javahost.exactly-once", "enabled", "BenchmarkJavaHostSideBySide: exactly-once source support of both sides (kcd's --exactly-once-source-support, the worker's exactly.once.source.support): enabled (kcd's default: a transaction per poll batch) or disabled (Kafka Connect's default)")
	jhDiscovery     = flag.String("bench.javahost.plugin-discovery", "service_load", "BenchmarkJavaHostSideBySide: plugin.discovery of both sides")
)

const (
	mirrorClass   = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
	postgresClass = "io.debezium.connector.postgresql.PostgresConnector"
	mirrorPayload = 100 // bytes per mirrored record value
)

// BenchmarkJavaHostSideBySide runs Kafka Connect's own Java plugins on kcd
// (a fresh single node with its Java connector host, --java-host-heap
// -bench.javahost.heap) and on a fresh real Kafka Connect 4.3.1 worker
// (-Xmx512m), both with the test environment's plugin.path, Kafka and
// PostgreSQL, in alternating rounds:
//
//   - MirrorSourceConnector copying a pre-filled 4-partition topic of
//     -bench.javahost.mirror-records 100-byte records (ByteArrayConverter);
//   - Debezium's PostgresConnector: a snapshot of a table of
//     -bench.javahost.dbz-rows rows, then -bench.javahost.dbz-stream rows
//     inserted in one transaction and streamed (JsonConverter, no schemas).
//
// Both sides compress with snappy (kcd gets --producer
// compression.type=snappy, the worker producer.compression.type=snappy), run their plugins' JVM with the same
// heap, collector and plugin discovery, and have exactly-once source
// support as -bench.javahost.exactly-once says (enabled, kcd's default:
// a transaction per poll batch; disabled, Kafka Connect's default). It prints a table of each side's best
// and median: time from POST /connectors to RUNNING, records/s, CPU per
// record and peak resident memory (kcd: node + Java host), and the start-up
// and idle figures of the fresh processes. Run with -benchtime=1x; it needs
// the test environment (Kafka, Kafka Connect's worker script, PostgreSQL
// with wal_level=logical, the plugin path) and a built Java host.
func BenchmarkJavaHostSideBySide(b *testing.B) {
	for b.Loop() {
		runJavaHostSideBySide(b)
	}
}

func runJavaHostSideBySide(b *testing.B) {
	brokers := testenv.Require(b, testenv.Kafka)
	pgDSN := testenv.Require(b, testenv.PostgreDSN)
	plugins := testenv.PluginPath(b)
	hostDir := testenv.JavaHostDir(b)
	bin := kcdBinary(b)
	ctx := context.Background()
	s := newSheet()

	cl, adm := kafkaClients(b, brokers)
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)

	// The data both sides read: a topic for MirrorSource, a table for Debezium.
	src := "kcd-bench-mirror-" + stamp
	fillTopic(b, ctx, cl, adm, src, 4, *jhMirrorRecords)
	var made []string
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := adm.DeleteTopics(dctx, append(made, src)...); err != nil {
			progress("delete topics: %v", err)
		}
	}()
	db := newBenchTable(b, ctx, pgDSN, "kcd_bench_dbz_"+stamp, *jhDBZRows)

	// Fresh processes, started one after the other so neither start-up is
	// slowed by the other's.
	start := time.Now()
	c := systemtest.StartCluster(b, bin, systemtest.Options{Size: 1, Bootstrap: brokers, ExtraArgs: []string{
		"--plugin-path", plugins, "--java-host-dir", hostDir, "--java-host-heap", *jhHeap,
		"--java-host-jvm-options", *jhJVMOptions, "--plugin-discovery", *jhDiscovery,
		"--exactly-once-source-support", *jhExactlyOnce, "--producer", "compression.type=snappy"}})
	node := c.Node(1)
	kcd := newPeer(sideKcd, "http://"+node.RESTAddr, func() []int { return append([]int{node.PID()}, children(node.PID())...) })
	if err := waitUntil(ctx, 2*time.Minute, 20*time.Millisecond, func() (bool, error) {
		code, body, err := kcd.do(ctx, "GET", "/connector-plugins", nil)
		return err == nil && code == 200 && strings.Contains(string(body), mirrorClass), nil
	}); err != nil {
		b.Fatalf("kcd: the plugin list has no %s: %v", mirrorClass, err)
	}
	s.add("start → REST lists the plugins", "s", false, sideKcd, time.Since(start).Seconds())
	idle(s, kcd)

	start = time.Now()
	url, pid := testenv.StartConnectWorkerPID(b, map[string]string{
		"plugin.path": plugins, "plugin.discovery": *jhDiscovery, "producer.compression.type": "snappy",
		"exactly.once.source.support": *jhExactlyOnce})
	peerConnect := newPeer(sideConnect, url, func() []int { return []int{pid} })
	if err := waitUntil(ctx, 2*time.Minute, 20*time.Millisecond, func() (bool, error) {
		code, body, err := peerConnect.do(ctx, "GET", "/connector-plugins", nil)
		return err == nil && code == 200 && strings.Contains(string(body), mirrorClass), nil
	}); err != nil {
		b.Fatalf("Kafka Connect: the plugin list has no %s: %v", mirrorClass, err)
	}
	s.add("start → REST lists the plugins", "s", false, sideConnect, time.Since(start).Seconds())
	idle(s, peerConnect)

	for round := range *jhRounds {
		s.noteLoad()
		sides := []*peer{kcd, peerConnect}
		if round%2 == 1 {
			sides = []*peer{peerConnect, kcd}
		}
		for _, p := range sides {
			tag := fmt.Sprintf("r%dkcd", round)
			if p == peerConnect {
				tag = fmt.Sprintf("r%dkc", round)
			}
			target := runMirror(b, ctx, s, p, adm, src, tag, round == 0)
			made = append(made, target)
			made = append(made, runDebezium(b, ctx, s, p, adm, db, tag)...)
		}
	}
	for _, p := range []*peer{kcd, peerConnect} {
		if u, err := usageOf(p.pids()); err == nil {
			s.add("resident memory after the rounds", "MB", false, p.name, float64(u.rss)/(1<<20))
		}
	}
	table := fmt.Sprintf("Exactly-once source support %s on both sides.\n\n%s", *jhExactlyOnce, s.markdown())
	fmt.Println(table)
	if out := os.Getenv("BENCH_OUT"); out != "" {
		if err := os.WriteFile(filepath.Join(out, "javahost-sidebyside-eos-"+*jhExactlyOnce+".md"), []byte(table), 0o644); err != nil {
			progress("write table: %v", err)
		}
	}
}

// idle records a side's resident memory a few seconds after start.
func idle(s *sheet, p *peer) {
	time.Sleep(3 * time.Second)
	if u, err := usageOf(p.pids()); err == nil {
		s.add("resident memory idle, fresh", "MB", false, p.name, float64(u.rss)/(1<<20))
	}
}

// fillTopic creates topic with partitions and writes n 100-byte records
// round-robin over them.
func fillTopic(b *testing.B, ctx context.Context, cl *kgo.Client, adm *kadm.Client, topic string, partitions int32, n int) {
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		b.Fatalf("create %s: %v", topic, err)
	}
	start := time.Now()
	value := []byte(strings.Repeat("x", mirrorPayload))
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: int32(i) % partitions, Key: []byte(strconv.Itoa(i)), Value: value}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				progress("fill %s: %v", topic, err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	if got := topicCount(ctx, adm, topic); got != int64(n) {
		b.Fatalf("%s holds %d records, want %d", topic, got, n)
	}
	progress("%s: %d records in %v", topic, n, time.Since(start).Round(time.Millisecond))
}

// topicCount is the sum of a topic's end offsets (0 while it does not
// exist). The topics here are written once, never truncated.
func topicCount(ctx context.Context, adm *kadm.Client, topic string) int64 {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			n += o.Offset
		}
	})
	return n
}

// copyRun times one connector run from POST /connectors: until RUNNING,
// the first record in topic, and want records in it.
type copyRun struct {
	posted, running, first, all time.Time
	before, after               usage
	hostBefore, hostAfter       usage // kcd's Java host alone
	peak                        int64
}

// waitCopied waits until topic holds want records, noting when the first
// appeared; it polls every 50 ms and fails after limit.
func waitCopied(ctx context.Context, p *peer, adm *kadm.Client, topic string, base, want int64, limit time.Duration, r *copyRun) error {
	return waitUntil(ctx, limit, 50*time.Millisecond, func() (bool, error) {
		n := topicCount(ctx, adm, topic) - base
		if n > 0 && r.first.IsZero() {
			r.first = time.Now()
		}
		if n >= want {
			r.all = time.Now()
			return true, nil
		}
		return false, nil
	})
}

func runMirror(b *testing.B, ctx context.Context, s *sheet, p *peer, adm *kadm.Client, src, alias string, cold bool) string {
	target := alias + "." + src
	name := "bench-mirror-" + alias
	cfg := map[string]string{
		"connector.class":                  mirrorClass,
		"tasks.max":                        strconv.Itoa(*jhMirrorTasks),
		"source.cluster.alias":             alias,
		"target.cluster.alias":             "dst",
		"source.cluster.bootstrap.servers": brokersOf(b),
		"target.cluster.bootstrap.servers": brokersOf(b),
		"topics":                           src,
		"replication.factor":               "1",
		"emit.offset-syncs.enabled":        "false",
		"emit.heartbeats.enabled":          "false",
		"emit.checkpoints.enabled":         "false",
		"sync.topic.configs.enabled":       "false",
		"sync.topic.acls.enabled":          "false",
		"refresh.topics.enabled":           "false",
		"refresh.groups.enabled":           "false",
		"key.converter":                    "org.apache.kafka.connect.converters.ByteArrayConverter",
		"value.converter":                  "org.apache.kafka.connect.converters.ByteArrayConverter",
	}
	// Created beforehand, as the task would: counting a topic that does not
	// exist yet waits on the client's metadata retries.
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, target); err != nil {
		b.Fatalf("create %s: %v", target, err)
	}
	n := int64(*jhMirrorRecords)
	r := measureRun(b, ctx, p, name, cfg, *jhMirrorTasks, func(r *copyRun) error {
		return waitCopied(ctx, p, adm, target, 0, n, 10*time.Minute, r)
	})
	what := "MirrorSource"
	if cold {
		s.add(what+": POST → RUNNING, first connector of a fresh process", "s", false, p.name, r.running.Sub(r.posted).Seconds())
	} else {
		s.add(what+": POST → RUNNING", "s", false, p.name, r.running.Sub(r.posted).Seconds())
	}
	s.addRate(what+": records/s, first record → last", p.name, int64(n), r.all.Sub(r.first))
	s.add(what+": POST → last record", "s", false, p.name, r.all.Sub(r.posted).Seconds())
	s.add(what+": CPU per record", "µs", false, p.name, float64((r.after.cpu-r.before.cpu).Microseconds())/float64(n))
	if p.name == sideKcd {
		s.add(what+": CPU per record, kcd's Java host alone", "µs", false, p.name, float64((r.hostAfter.cpu-r.hostBefore.cpu).Microseconds())/float64(n))
	}
	s.add(what+": peak resident memory", "MB", false, p.name, float64(r.peak)/(1<<20))
	return target
}

// measureRun creates a connector on p, waits for tasks RUNNING and for
// wait, samples the side's memory meanwhile, and deletes the connector.
func measureRun(b *testing.B, ctx context.Context, p *peer, name string, cfg map[string]string, tasks int, wait func(*copyRun) error) *copyRun {
	r := &copyRun{}
	var err error
	if r.before, err = usageOf(p.pids()); err != nil {
		b.Fatal(err)
	}
	if p.name == sideKcd {
		r.hostBefore, _ = usageOf(p.pids()[1:])
	}
	sampler := samplePeak(p.pids, 100*time.Millisecond)
	r.posted = time.Now()
	if err := p.create(ctx, time.Minute, name, cfg); err != nil {
		b.Fatal(err)
	}
	// The records are watched from the POST on: a task may copy them
	// before its RUNNING status is visible.
	waited := make(chan error, 1)
	go func() { waited <- wait(r) }()
	if err := waitUntil(ctx, 3*time.Minute, 20*time.Millisecond, func() (bool, error) {
		return p.running(ctx, name, tasks)
	}); err != nil {
		b.Fatalf("%s: %s not RUNNING: %v", p.name, name, err)
	}
	r.running = time.Now()
	if err := <-waited; err != nil {
		b.Fatalf("%s: %s: %v", p.name, name, err)
	}
	r.peak = sampler.Peak()
	if r.after, err = usageOf(p.pids()); err != nil {
		b.Fatal(err)
	}
	if p.name == sideKcd {
		r.hostAfter, _ = usageOf(p.pids()[1:])
	}
	if err := p.remove(ctx, time.Minute, name); err != nil {
		b.Fatalf("%s: delete %s: %v", p.name, name, err)
	}
	return r
}

func brokersOf(b *testing.B) string { return testenv.Require(b, testenv.Kafka) }

// benchTable is a PostgreSQL table of rows rows (ids 1..rows) that each
// Debezium run snapshots, then streams inserts of ids above rows from.
type benchTable struct {
	dsn                    string
	host, port, user, pass string
	db, table              string
	rows                   int
	conn                   *pgx.Conn
}

func newBenchTable(b *testing.B, ctx context.Context, dsn, table string, rows int) *benchTable {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatalf("connect to PostgreSQL: %v", err)
	}
	t := &benchTable{dsn: dsn, host: cfg.Host, port: strconv.Itoa(int(cfg.Port)), user: cfg.User, pass: cfg.Password,
		db: cfg.Database, table: table, rows: rows, conn: conn}
	b.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := conn.Exec(cctx, "DROP TABLE IF EXISTS "+table); err != nil {
			progress("drop %s: %v", table, err)
		}
		conn.Close(cctx)
	})
	for _, q := range []string{
		"CREATE TABLE " + table + " (id bigint PRIMARY KEY, seq bigint NOT NULL, v text NOT NULL)",
		fmt.Sprintf("INSERT INTO %s SELECT g, g, repeat('v', 80) FROM generate_series(1, %d) g", table, rows),
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	return t
}

// runDebezium snapshots the table on p, then streams one transaction of
// inserts, and returns the topics the run made.
func runDebezium(b *testing.B, ctx context.Context, s *sheet, p *peer, adm *kadm.Client, t *benchTable, tag string) []string {
	prefix := "kcd_bench_" + tag + "_" + t.table
	slot, pub := "kb_"+tag+"_"+t.table, "kbp_"+tag+"_"+t.table
	topic := prefix + ".public." + t.table
	name := "bench-dbz-" + tag
	defer t.dropSlot(b, ctx, slot, pub)
	cfg := map[string]string{
		"connector.class":                postgresClass,
		"tasks.max":                      "1",
		"database.hostname":              t.host,
		"database.port":                  t.port,
		"database.user":                  t.user,
		"database.password":              t.pass,
		"database.dbname":                t.db,
		"topic.prefix":                   prefix,
		"plugin.name":                    "pgoutput",
		"slot.name":                      slot,
		"publication.name":               pub,
		"publication.autocreate.mode":    "filtered",
		"table.include.list":             "public." + t.table,
		"key.converter":                  "org.apache.kafka.connect.json.JsonConverter",
		"key.converter.schemas.enable":   "false",
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable": "false",
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		b.Fatalf("create %s: %v", topic, err)
	}
	rows, stream := int64(t.rows), int64(*jhDBZStream)
	var committed time.Time
	r := measureRun(b, ctx, p, name, cfg, 1, func(r *copyRun) error {
		if err := waitCopied(ctx, p, adm, topic, 0, rows, 10*time.Minute, r); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		snap := *r
		s.addRate("Debezium: snapshot records/s, first record → last", p.name, int64(rows), snap.all.Sub(snap.first))
		q := fmt.Sprintf("INSERT INTO %s SELECT g, g, repeat('w', 80) FROM generate_series(%d, %d) g", t.table, rows+1, rows+stream)
		if _, err := t.conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("insert: %w", err)
		}
		committed = time.Now()
		var streamed copyRun
		if err := waitCopied(ctx, p, adm, topic, rows, stream, 10*time.Minute, &streamed); err != nil {
			return fmt.Errorf("streaming: %w", err)
		}
		s.addRate("Debezium: streaming records/s, commit → last record", p.name, int64(stream), streamed.all.Sub(committed))
		r.all = streamed.all
		return nil
	})
	s.add("Debezium: POST → RUNNING", "s", false, p.name, r.running.Sub(r.posted).Seconds())
	s.add("Debezium: CPU per record", "µs", false, p.name, float64((r.after.cpu-r.before.cpu).Microseconds())/float64(rows+stream))
	s.add("Debezium: peak resident memory", "MB", false, p.name, float64(r.peak)/(1<<20))
	if _, err := t.conn.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE id > %d", t.table, rows)); err != nil {
		b.Fatal(err)
	}
	return []string{topic, prefix}
}

// dropSlot ends whatever still streams from slot, then drops it and the
// publication.
func (t *benchTable) dropSlot(b *testing.B, ctx context.Context, slot, pub string) {
	err := waitUntil(ctx, 30*time.Second, 100*time.Millisecond, func() (bool, error) {
		if _, err := t.conn.Exec(ctx, "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1 AND active_pid IS NOT NULL", slot); err != nil {
			return false, err
		}
		var n int
		if err := t.conn.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&n); err != nil {
			return false, err
		}
		if n == 0 {
			return true, nil
		}
		_, err := t.conn.Exec(ctx, "SELECT pg_drop_replication_slot($1)", slot)
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return false, nil // still active: try again
		}
		return err == nil, err
	})
	if err != nil {
		progress("drop replication slot %s: %v", slot, err)
	}
	if _, err := t.conn.Exec(ctx, "DROP PUBLICATION IF EXISTS "+pub); err != nil {
		progress("drop publication %s: %v", pub, err)
	}
}
