package systemtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/internal/testenv"
)

const postgresConnector = "io.debezium.connector.postgresql.PostgresConnector"

// systemJavaHost returns the directory of a built Java connector host
// (KCD_TEST_JAVA_HOST_DIR, else javahost/target/javahost of this checkout);
// without one the test is skipped, or failed under CI=true.
func systemJavaHost(t *testing.T) string {
	t.Helper()
	return testenv.JavaHostDir(t)
}

// dbzTarget is what Debezium needs to reach the test PostgreSQL, and the
// names one connector's run owns there.
type dbzTarget struct {
	dsn                      string
	host, port, user, pass   string
	db                       string
	table, slot, pub, prefix string
}

func newDBZTarget(t *testing.T, dsn, tag string) dbzTarget {
	t.Helper()
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprintf("%s_%d", tag, time.Now().UnixNano())
	return dbzTarget{
		dsn: dsn, host: cfg.Host, port: strconv.Itoa(int(cfg.Port)), user: cfg.User, pass: cfg.Password, db: cfg.Database,
		table: "dbz_t_" + suffix, slot: "kcd_dbz_" + suffix, pub: "kcd_dbz_p_" + suffix, prefix: "kcddbz_" + suffix,
	}
}

// topic is the topic Debezium writes the table's changes to.
func (p dbzTarget) topic() string { return p.prefix + ".public." + p.table }

func (p dbzTarget) config() map[string]string {
	return map[string]string{
		"connector.class":                postgresConnector,
		"tasks.max":                      "1",
		"database.hostname":              p.host,
		"database.port":                  p.port,
		"database.user":                  p.user,
		"database.password":              p.pass,
		"database.dbname":                p.db,
		"topic.prefix":                   p.prefix,
		"plugin.name":                    "pgoutput",
		"slot.name":                      p.slot,
		"publication.name":               p.pub,
		"publication.autocreate.mode":    "filtered",
		"table.include.list":             "public." + p.table,
		"key.converter":                  "org.apache.kafka.connect.json.JsonConverter",
		"key.converter.schemas.enable":   "false",
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable": "false",
	}
}

// createTable creates the run's table (REPLICA IDENTITY FULL: a delete
// event carries the deleted version) and registers the cleanup that drops
// the table, the publication and the replication slot, even on failure.
// Cleanups run last-in first-out: call it before starting the cluster, so
// the nodes are gone (and the slot inactive) when it runs.
func (p dbzTarget) createTable(t *testing.T, ctx context.Context) {
	t.Helper()
	conn, err := pgx.Connect(ctx, p.dsn)
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	defer conn.Close(context.Background())
	t.Cleanup(func() { p.drop(t) })
	for _, q := range []string{
		"CREATE TABLE " + p.table + " (id int PRIMARY KEY, seq bigint NOT NULL, v text NOT NULL)",
		"ALTER TABLE " + p.table + " REPLICA IDENTITY FULL",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// drop removes the slot (ending whatever still streams from it: the kcd
// role may end its own backends), the publication and the table.
func (p dbzTarget) drop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.dsn)
	if err != nil {
		t.Errorf("cleanup: connect to PostgreSQL: %v", err)
		return
	}
	defer conn.Close(context.Background())
	err = WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1 AND active_pid IS NOT NULL", p.slot); err != nil {
			return false, err
		}
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", p.slot).Scan(&n); err != nil {
			return false, err
		}
		if n == 0 {
			return true, nil
		}
		_, err := conn.Exec(ctx, "SELECT pg_drop_replication_slot($1)", p.slot)
		return err == nil, err
	})
	if err != nil {
		t.Errorf("cleanup: drop replication slot %s: %v", p.slot, err)
	}
	for _, q := range []string{"DROP PUBLICATION IF EXISTS " + p.pub, "DROP TABLE IF EXISTS " + p.table} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Errorf("cleanup: %s: %v", q, err)
		}
	}
}

// dbzChange is one committed change of a row: op c (insert), u (update) or d
// (delete); seq identifies the row version written (c, u) or deleted (d).
type dbzChange struct {
	op  string
	seq int64
}

// dbzWriter inserts, updates and deletes rows of keys 1..keys (keys are
// reused after a delete) and logs every change once its commit returned.
type dbzWriter struct {
	mu   sync.Mutex
	log  map[int][]dbzChange
	ops  int
	live map[int]int64 // id → seq of its current version
}

// run writes until stop is closed; a statement is never cancelled, so
// every change's outcome is known.
func (w *dbzWriter) run(ctx context.Context, stop <-chan struct{}, conn *pgx.Conn, table string, keys int, seq int64) error {
	tick := time.NewTicker(2 * time.Millisecond) // pacing: ≤500 changes/s
	defer tick.Stop()
	rng := rand.New(rand.NewPCG(uint64(seq), 17))
	for {
		select {
		case <-stop:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		id := 1 + rng.IntN(keys)
		seq++
		w.mu.Lock()
		cur, live := w.live[id]
		w.mu.Unlock()
		var c dbzChange
		var err error
		v := fmt.Sprintf("v%d", seq)
		switch {
		case !live:
			c = dbzChange{"c", seq}
			_, err = conn.Exec(ctx, "INSERT INTO "+table+" (id, seq, v) VALUES ($1, $2, $3)", id, seq, v)
		case rng.IntN(4) == 0:
			c = dbzChange{"d", cur}
			_, err = conn.Exec(ctx, "DELETE FROM "+table+" WHERE id = $1", id)
		default:
			c = dbzChange{"u", seq}
			_, err = conn.Exec(ctx, "UPDATE "+table+" SET seq = $2, v = $3 WHERE id = $1", id, seq, v)
		}
		if err != nil {
			return fmt.Errorf("writer: %s of id %d: %w", c.op, id, err)
		}
		w.mu.Lock()
		w.log[id] = append(w.log[id], c)
		w.ops++
		if c.op == "d" {
			delete(w.live, id)
		} else {
			w.live[id] = c.seq
		}
		w.mu.Unlock()
	}
}

func (w *dbzWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ops
}

// dbzEvents collects the change events read from Debezium's topic, by key.
type dbzEvents struct {
	byKey      map[int][]dbzChange // in topic order, snapshot reads (op r) included
	reads      int
	tombstones int
	total      int
}

func (e *dbzEvents) add(r *kgo.Record) error {
	e.total++
	if r.Value == nil {
		e.tombstones++ // the tombstone after a delete
		return nil
	}
	var key struct {
		ID *int `json:"id"`
	}
	if err := json.Unmarshal(r.Key, &key); err != nil || key.ID == nil {
		return fmt.Errorf("record key %q is not Debezium's {\"id\":N} (%v)", r.Key, err)
	}
	var val struct {
		Op     string `json:"op"`
		Before *struct {
			Seq int64 `json:"seq"`
		} `json:"before"`
		After *struct {
			Seq int64 `json:"seq"`
		} `json:"after"`
	}
	if err := json.Unmarshal(r.Value, &val); err != nil {
		return fmt.Errorf("record value %q is not a Debezium dbzChange event: %v", r.Value, err)
	}
	c := dbzChange{op: val.Op}
	switch {
	case val.Op == "d" && val.Before != nil:
		c.seq = val.Before.Seq
	case val.Op != "d" && val.After != nil:
		c.seq = val.After.Seq
	default:
		return fmt.Errorf("dbzChange event without its row: %s", r.Value)
	}
	if c.op == "r" {
		e.reads++
	}
	e.byKey[*key.ID] = append(e.byKey[*key.ID], c)
	return nil
}

// dbzCheckKey compares what Kafka holds for one key (snapshot reads left out)
// with the writer's committed changes: every change at least once, first
// copies in commit order; a copy of an earlier change (a replay after the
// kill) is allowed, anything else is not. It returns how many of want
// were seen, and an error at the first event that breaks the order.
func dbzCheckKey(got, want []dbzChange) (int, error) {
	next := 0
	for i, c := range got {
		if c.op == "r" {
			continue
		}
		switch {
		case next < len(want) && c == want[next]:
			next++
		case slices.Contains(want[:next], c):
			// replayed
		default:
			exp := "nothing more"
			if next < len(want) {
				exp = fmt.Sprintf("%v", want[next])
			}
			return next, fmt.Errorf("event %d is %v, want %s (committed: %v)", i, c, exp, want)
		}
	}
	return next, nil
}

// TestIntegrationJavaHostDebeziumPostgres is the first acceptance of issue
// 17: Debezium's PostgreSQL connector, run by the Java host of a 3-node kcd
// cluster on the real Kafka, snapshots a table and then streams inserts,
// updates and deletes while the node running its task is killed with
// SIGKILL; the task resumes on another node, and every committed change is
// in Kafka at least once, in commit order per key. Its offsets in kcd are
// Debezium's, shaped as the real Kafka Connect worker's are.
func TestIntegrationJavaHostDebeziumPostgres(t *testing.T) {
	bin := binary(t)
	hostDir := systemJavaHost(t)
	brokers := testenv.Require(t, testenv.Kafka)
	dsn := testenv.Require(t, testenv.PostgreDSN)
	plugins := testenv.PluginPath(t)
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()

	pg := newDBZTarget(t, dsn, "kcd")
	pg.createTable(t, ctx)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	const initial, keys = 200, 300
	for id := 1; id <= initial; id++ {
		if _, err := conn.Exec(ctx, "INSERT INTO "+pg.table+" (id, seq, v) VALUES ($1, $2, $3)", id, id, fmt.Sprintf("init%d", id)); err != nil {
			t.Fatal(err)
		}
	}

	dbzCreateTopic(t, ctx, brokers, pg.topic())

	c := StartCluster(t, bin, Options{Bootstrap: brokers, ExtraArgs: []string{
		"--plugin-path", plugins, "--java-host-dir", hostDir, "--offset-flush-interval", "500ms"}})
	if _, err := WaitLeader(ctx, c.Nodes()...); err != nil {
		t.Fatal(err)
	}

	body, _ := json.Marshal(map[string]any{"name": "dbz", "config": pg.config()})
	posted := time.Now()
	via := c.Node(1)
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		st, err := via.Post(ctx, "/connectors", body)
		return err == nil && st == http.StatusCreated, err
	}); err != nil {
		t.Fatalf("POST /connectors: %v", err)
	}
	worker, err := dbzTaskRunning(ctx, via, "dbz", "")
	if err != nil {
		t.Fatal(err)
	}
	toRunning := time.Since(posted)

	// The snapshot: every initial row once, as a read (op r).
	cons, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(pg.topic()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ev := &dbzEvents{byKey: map[int][]dbzChange{}}
	pending := "" // what the streaming check still misses, for a timeout's message
	consume := func(what string, done func() bool) {
		t.Helper()
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Minute)
		defer ccancel()
		for !done() {
			fs := cons.PollFetches(cctx)
			if cctx.Err() != nil {
				t.Fatalf("%s: %d records read, not done: %v %s", what, ev.total, cctx.Err(), pending)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
			var bad error
			fs.EachRecord(func(r *kgo.Record) {
				if err := ev.add(r); err != nil && bad == nil {
					bad = err
				}
			})
			if bad != nil {
				t.Fatal(bad)
			}
		}
	}
	consume("snapshot", func() bool { return ev.reads >= initial })
	snapDone := time.Since(posted)
	for id := 1; id <= initial; id++ {
		if got := ev.byKey[id]; len(got) != 1 || got[0] != (dbzChange{"r", int64(id)}) {
			t.Fatalf("snapshot of id %d: %v, want one read of version %d", id, got, id)
		}
	}
	t.Logf("POST /connectors → task RUNNING on %s in %v; snapshot of %d rows in Kafka %v after the POST",
		worker, toRunning.Round(time.Millisecond), initial, snapDone.Round(time.Millisecond))

	// Streaming, with a writer running throughout the kill.
	w := &dbzWriter{log: map[int][]dbzChange{}, live: map[int]int64{}}
	for id := 1; id <= initial; id++ {
		w.live[id] = int64(id)
	}
	wconn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer wconn.Close(context.Background())
	stop := make(chan struct{})
	var stopOnce sync.Once
	stopWriter := func() { stopOnce.Do(func() { close(stop) }) }
	defer stopWriter()
	writerDone := make(chan error, 1)
	writeStart := time.Now()
	go func() { writerDone <- w.run(ctx, stop, wconn, pg.table, keys, 1_000_000) }()

	// Kill only once the streaming position is committed in kcd, so that
	// the task resumes streaming (a second snapshot would show as reads).
	var before map[string]any
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		off, err := dbzOffset(ctx, via, "dbz", pg.prefix)
		before = off
		_, streaming := off["lsn_proc"]
		return err == nil && streaming && w.count() > 1000, err
	}); err != nil {
		t.Fatalf("no streaming offset committed in kcd: %v (last %v)", err, before)
	}
	var victim *Node
	for _, n := range c.Nodes() {
		if n.RESTAddr == worker {
			victim = n
		}
	}
	if victim == nil {
		t.Fatalf("worker_id %q is none of the nodes", worker)
	}
	if rss, err := dbzHostRSS(victim.PID()); err == nil {
		t.Logf("Java host of node %d: RSS %d MiB while streaming", victim.ID, rss>>20)
	} else {
		t.Logf("Java host RSS: %v", err)
	}
	victim.Kill()
	killed := time.Now()
	via = c.Except(victim.ID)[0]
	t.Logf("killed node %d (ran the task) after %d changes; offset then: %v", victim.ID, w.count(), before)
	newWorker, err := dbzTaskRunning(ctx, via, "dbz", worker)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("task RUNNING on %s %v after the kill", newWorker, time.Since(killed).Round(time.Millisecond))
	atResume := w.count()
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		select {
		case err := <-writerDone:
			return false, fmt.Errorf("writer stopped early: %w", err)
		default:
		}
		return w.count() >= atResume+1000, nil
	}); err != nil {
		t.Fatal(err)
	}
	stopWriter()
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	writeTime := time.Since(writeStart)
	w.mu.Lock()
	want, ops := w.log, w.ops
	w.mu.Unlock()
	stopped := time.Now()

	// Read to the end: done when every key has all its changes, or at the
	// first event out of order.
	var orderErr error
	consume("streaming", func() bool {
		for id, cs := range want {
			n, err := dbzCheckKey(ev.byKey[id], cs)
			if err != nil {
				orderErr = fmt.Errorf("id %d: %w", id, err)
				return true
			}
			if n < len(cs) {
				pending = fmt.Sprintf("(lost or late: id %d's change %v, %d of its %d changes seen)", id, cs[n], n, len(cs))
				return false
			}
		}
		return true
	})
	if orderErr != nil {
		t.Fatal(orderErr)
	}
	if ev.reads != initial {
		t.Errorf("%d snapshot reads in Kafka, want %d: the task snapshotted again instead of resuming from its offset", ev.reads, initial)
	}
	t.Logf("%d changes committed in %v (%.0f/s); all in Kafka, in order per key, %v after the writer stopped; %d records read: %d snapshot reads, %d tombstones, %d replayed after the kill",
		ops, writeTime.Round(time.Millisecond), float64(ops)/writeTime.Seconds(), time.Since(stopped).Round(time.Millisecond),
		ev.total, ev.reads, ev.tombstones, ev.total-ev.reads-ev.tombstones-ops)

	// Throughput: one statement inserts a burst of rows; every one reaches
	// Kafka.
	const burst = 20000
	first := int64(10_000_000)
	burstStart := time.Now()
	if _, err := conn.Exec(ctx, "INSERT INTO "+pg.table+" (id, seq, v) SELECT g, g, 'burst' FROM generate_series($1::int, $2::int) AS g", first, first+burst-1); err != nil {
		t.Fatal(err)
	}
	consume("burst", func() bool {
		for id := first; id < first+burst; id++ {
			if len(ev.byKey[int(id)]) == 0 {
				return false
			}
		}
		return true
	})
	burstTime := time.Since(burstStart)
	for id := first; id < first+burst; id++ {
		if got := ev.byKey[int(id)]; got[0] != (dbzChange{"c", id}) {
			t.Fatalf("burst row %d: %v, want its insert", id, got)
		}
	}
	t.Logf("a burst of %d inserts in one transaction in Kafka %v after its commit started: %.0f records/s",
		burst, burstTime.Round(time.Millisecond), burst/burstTime.Seconds())

	// The offsets in kcd are Debezium's own.
	var offs dbzOffsets
	if err := via.GetJSON(ctx, "/connectors/dbz/offsets", &offs); err != nil {
		t.Fatal(err)
	}
	if len(offs.Offsets) != 1 || len(offs.Offsets[0].Partition) != 1 || offs.Offsets[0].Partition["server"] != pg.prefix {
		t.Fatalf("GET /connectors/dbz/offsets: %+v, want one partition {\"server\": %q}", offs, pg.prefix)
	}
	kcdOff := offs.Offsets[0].Offset
	for _, k := range []string{"lsn", "txId", "ts_usec"} {
		if _, ok := kcdOff[k].(float64); !ok {
			t.Errorf("kcd's offset %v: %s is not a number", kcdOff, k)
		}
	}
	if lsn, _ := kcdOff["lsn"].(float64); lsn <= dbzFloat(before["lsn"]) {
		t.Errorf("offset lsn %v did not move past %v (the one before the kill)", kcdOff["lsn"], before["lsn"])
	}
	// The task's commit() reached Debezium: it confirmed to PostgreSQL an
	// LSN at least as far as the one kcd had stored before the kill, so
	// the slot does not hold WAL forever.
	var confirmed float64
	lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
	defer lcancel()
	if err := WaitFor(lctx, 200*time.Millisecond, func() (bool, error) {
		err := conn.QueryRow(lctx, "SELECT COALESCE((confirmed_flush_lsn - '0/0'::pg_lsn)::float8, 0) FROM pg_replication_slots WHERE slot_name = $1", pg.slot).Scan(&confirmed)
		return err == nil && confirmed >= dbzFloat(before["lsn"]), err
	}); err != nil {
		t.Errorf("slot %s confirmed LSN %.0f, want at least %.0f (the offset stored before the kill): Debezium's commit() is not called: %v", pg.slot, confirmed, dbzFloat(before["lsn"]), err)
	}

	if url := testenv.Lookup(testenv.ConnectURL); url != "" {
		real := dbzRealOffset(t, ctx, url, dsn)
		if a, b := dbzOffsetShape(kcdOff), dbzOffsetShape(real); a != b {
			t.Errorf("offset shapes differ:\nkcd:           %s (%v)\nKafka Connect: %s (%v)", a, kcdOff, b, real)
		} else {
			t.Logf("kcd's offset has the real Kafka Connect worker's shape: %s", a)
		}
	} else {
		t.Logf("%s not set: offsets not compared with the real Kafka Connect worker", testenv.ConnectURL)
	}
}

// dbzCreateTopic creates topic with three partitions (per-key order is what
// Kafka keeps, and what the test checks) and deletes it when t ends.
func dbzCreateTopic(t *testing.T, ctx context.Context, brokers, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		cl.Close()
		t.Fatalf("create topic %s: %v", topic, err)
	}
	t.Cleanup(func() {
		adm.DeleteTopics(context.Background(), topic)
		cl.Close()
	})
}

// dbzTaskRunning waits until connector name's task 0 is RUNNING on a
// worker other than not, and returns its worker_id.
func dbzTaskRunning(ctx context.Context, via *Node, name, not string) (string, error) {
	var st struct {
		Connector struct {
			State string `json:"state"`
		} `json:"connector"`
		Tasks []struct {
			State    string `json:"state"`
			WorkerID string `json:"worker_id"`
			Trace    string `json:"trace"`
		} `json:"tasks"`
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err := WaitFor(wctx, 50*time.Millisecond, func() (bool, error) {
		if err := via.GetJSON(wctx, "/connectors/"+name+"/status", &st); err != nil {
			return false, err
		}
		if len(st.Tasks) == 1 && st.Tasks[0].State == "FAILED" {
			return false, errors.New("task FAILED: " + st.Tasks[0].Trace)
		}
		return st.Connector.State == "RUNNING" && len(st.Tasks) == 1 && st.Tasks[0].State == "RUNNING" && st.Tasks[0].WorkerID != not, nil
	})
	if err != nil {
		return "", fmt.Errorf("connector %s's task not RUNNING (on a worker other than %q): %w; last status %+v", name, not, err, st)
	}
	return st.Tasks[0].WorkerID, nil
}

type dbzOffsets struct {
	Offsets []struct {
		Partition map[string]any `json:"partition"`
		Offset    map[string]any `json:"offset"`
	} `json:"offsets"`
}

// dbzOffset returns the offset of partition {"server": server}, nil
// while there is none.
func dbzOffset(ctx context.Context, via *Node, name, server string) (map[string]any, error) {
	var offs dbzOffsets
	if err := via.GetJSON(ctx, "/connectors/"+name+"/offsets", &offs); err != nil {
		return nil, err
	}
	for _, o := range offs.Offsets {
		if o.Partition["server"] == server {
			return o.Offset, nil
		}
	}
	return nil, nil
}

func dbzFloat(v any) float64 {
	f, _ := v.(float64)
	return f
}

// dbzOffsetShape is an offset's keys with their JSON types, sorted.
func dbzOffsetShape(off map[string]any) string {
	var out []string
	for k, v := range off {
		if k == "lsn_commit" {
			// Debezium writes it only once the offset's transaction
			// committed: present or not by timing, on both runtimes.
			continue
		}
		out = append(out, fmt.Sprintf("%s:%T", k, v))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// dbzHostRSS is the resident set size of the java process that kcd
// process pid started (its Java connector host).
func dbzHostRSS(pid int) (int64, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) && strings.Contains(s[:i], "java") {
			return ProcStatusBytes(child, "VmRSS")
		}
	}
	return 0, fmt.Errorf("no java child of pid %d", pid)
}

// dbzRealOffset runs the same connector on the real Kafka Connect
// worker at url, against a table, slot and topic prefix of its own, until
// it has committed a streaming offset, and returns that offset.
func dbzRealOffset(t *testing.T, ctx context.Context, url, dsn string) map[string]any {
	t.Helper()
	pg := newDBZTarget(t, dsn, "real")
	pg.createTable(t, ctx)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	name := "kcd-systemtest-" + pg.prefix
	dbzCreateTopic(t, ctx, testenv.Require(t, testenv.Kafka), pg.topic())
	body, _ := json.Marshal(map[string]any{"name": name, "config": pg.config()})
	if err := dbzConnectDo(ctx, "POST", url+"/connectors", body, nil); err != nil {
		t.Fatalf("create %s on Kafka Connect: %v", name, err)
	}
	// Registered after createTable's cleanup, so it runs first: the
	// connector goes before its slot is dropped.
	t.Cleanup(func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := dbzConnectDo(dctx, "DELETE", url+"/connectors/"+name, nil, nil); err != nil {
			t.Errorf("delete %s on Kafka Connect: %v", name, err)
		}
	})
	var off map[string]any
	seq := int64(0)
	if err := WaitFor(ctx, 300*time.Millisecond, func() (bool, error) {
		seq++
		if _, err := conn.Exec(ctx, "INSERT INTO "+pg.table+" (id, seq, v) VALUES ($1, $2, 'x')", seq, seq); err != nil {
			return false, err
		}
		var offs dbzOffsets
		if err := dbzConnectDo(ctx, "GET", url+"/connectors/"+name+"/offsets", nil, &offs); err != nil {
			return false, err
		}
		for _, o := range offs.Offsets {
			if o.Partition["server"] == pg.prefix {
				off = o.Offset
			}
		}
		_, streaming := off["lsn_proc"]
		return streaming, nil
	}); err != nil {
		t.Fatalf("Kafka Connect committed no streaming offset for %s: %v (last %v)", name, err, off)
	}
	return off
}

// dbzConnectDo sends a request to the real Kafka Connect worker and decodes
// a 2xx answer into out.
func dbzConnectDo(ctx context.Context, method, url string, body []byte, out any) error {
	var n Node
	n.RESTAddr = strings.TrimPrefix(url, "http://")
	i := strings.Index(n.RESTAddr, "/")
	path := n.RESTAddr[i:]
	n.RESTAddr = n.RESTAddr[:i]
	_, err := n.do(ctx, method, path, body, out)
	return err
}

// TestIntegrationJavaHostDebeziumValidate: validating a bad Debezium
// PostgreSQL config through kcd answers with Debezium's own per-field
// errors, as the real Kafka Connect worker does for the same config.
func TestIntegrationJavaHostDebeziumValidate(t *testing.T) {
	bin := binary(t)
	hostDir := systemJavaHost(t)
	brokers := testenv.Require(t, testenv.Kafka)
	connectURL := testenv.Require(t, testenv.ConnectURL)
	plugins := testenv.PluginPath(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	c := StartCluster(t, bin, Options{Size: 1, Bootstrap: brokers, ExtraArgs: []string{
		"--plugin-path", plugins, "--java-host-dir", hostDir}})
	if _, err := WaitLeader(ctx, c.Nodes()...); err != nil {
		t.Fatal(err)
	}
	// No database.hostname, a snapshot.mode Debezium does not know.
	cfg := map[string]string{
		"connector.class":   postgresConnector,
		"database.port":     "5432",
		"database.user":     "kcd",
		"database.password": SecretCanary + "dbz",
		"database.dbname":   "kcd_test",
		"topic.prefix":      "kcdvalidate",
		"plugin.name":       "pgoutput",
		"snapshot.mode":     "bogus",
		"value.converter":   "org.apache.kafka.connect.storage.StringConverter",
	}
	body, _ := json.Marshal(cfg)
	path := "/connector-plugins/PostgresConnector/config/validate"
	var kcd, real dbzValidateAnswer
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		_, err := c.Node(1).do(ctx, "PUT", path, body, &kcd)
		return err == nil, err
	}); err != nil {
		t.Fatalf("kcd: PUT %s: %v", path, err)
	}
	if err := dbzConnectDo(ctx, "PUT", connectURL+path, body, &real); err != nil {
		t.Fatalf("Kafka Connect: PUT %s: %v", path, err)
	}
	kErrs, rErrs := kcd.errors(), real.errors()
	for _, f := range []string{"database.hostname", "snapshot.mode"} {
		if len(rErrs[f]) == 0 {
			t.Fatalf("Kafka Connect reports no error for %s: %v", f, rErrs)
		}
		if !slices.Equal(kErrs[f], rErrs[f]) {
			t.Errorf("%s: kcd says %q, Kafka Connect %q", f, kErrs[f], rErrs[f])
		}
	}
	if !maps.EqualFunc(kErrs, rErrs, slices.Equal) {
		t.Errorf("per-field errors differ:\nkcd:           %v\nKafka Connect: %v", kErrs, rErrs)
	}
	if kcd.ErrorCount != real.ErrorCount || kcd.Name != real.Name {
		t.Errorf("kcd: %s with %d errors %v; Kafka Connect: %s with %d errors %v", kcd.Name, kcd.ErrorCount, kErrs, real.Name, real.ErrorCount, rErrs)
	}
	if ct := kErrs["value.converter.converter.type"]; len(ct) > 0 {
		t.Errorf("the StringConverter is refused: %v", ct)
	}
	t.Logf("both answer %d errors: %v", kcd.ErrorCount, kErrs)
}

type dbzValidateAnswer struct {
	Name       string `json:"name"`
	ErrorCount int    `json:"error_count"`
	Configs    []struct {
		Definition struct {
			Name string `json:"name"`
		} `json:"definition"`
		Value *struct {
			Errors []string `json:"errors"`
		} `json:"value"`
	} `json:"configs"`
}

// errors maps each field with errors to them.
func (v dbzValidateAnswer) errors() map[string][]string {
	out := map[string][]string{}
	for _, c := range v.Configs {
		if c.Value != nil && len(c.Value.Errors) > 0 {
			out[c.Definition.Name] = c.Value.Errors
		}
	}
	return out
}

// TestDebeziumCheckKey: the per-key check accepts replays of earlier
// changes and snapshot reads, and catches a lost, a reordered and an
// unknown change.
func TestDebeziumCheckKey(t *testing.T) {
	want := []dbzChange{{"c", 1}, {"u", 2}, {"d", 2}, {"c", 3}}
	for _, tc := range []struct {
		name string
		got  []dbzChange
		seen int
		bad  bool
	}{
		{"exact", want, 4, false},
		{"replay after a restart", []dbzChange{{"r", 0}, {"c", 1}, {"u", 2}, {"c", 1}, {"u", 2}, {"d", 2}, {"c", 3}}, 4, false},
		{"lost", []dbzChange{{"c", 1}, {"d", 2}, {"c", 3}}, 1, true},
		{"reordered", []dbzChange{{"c", 1}, {"d", 2}, {"u", 2}, {"c", 3}}, 1, true},
		{"tail missing", []dbzChange{{"c", 1}, {"u", 2}}, 2, false},
		{"unknown", []dbzChange{{"c", 1}, {"u", 2}, {"d", 2}, {"c", 3}, {"u", 9}}, 4, true},
	} {
		seen, err := dbzCheckKey(tc.got, want)
		if seen != tc.seen || (err != nil) != tc.bad {
			t.Errorf("%s: seen %d, err %v; want seen %d, error %v", tc.name, seen, err, tc.seen, tc.bad)
		}
	}
}
