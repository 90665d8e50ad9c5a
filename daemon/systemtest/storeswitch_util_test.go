package systemtest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/kcd-project/kcd/api"
)

// The helpers of the store switch tests (storeswitch_test.go): the test
// databases, the switch and status endpoints, a writer that records what
// was acknowledged, and snapshots of the connectors' metadata.

// sqlDB is a test database a cluster switches to: tables of its own
// (a fresh table_prefix), dropped when the test ends.
type sqlDB struct {
	backend string // "mysql" or "postgres"
	dsn     string // the test environment's DSN
	prefix  string
}

// newSQLDB picks a fresh table prefix on the database of dsn. Call it
// before starting the cluster, so that the cluster's processes are gone
// when its cleanup drops the tables.
func newSQLDB(t *testing.T, backend, dsn string) *sqlDB {
	t.Helper()
	d := &sqlDB{backend: backend, dsn: dsn, prefix: fmt.Sprintf("kst%08x_", rand.Uint32())}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		var tables []string
		for _, s := range []string{"kv", "meta", "history", "schema"} {
			tables = append(tables, d.prefix+s)
		}
		if err := d.exec(ctx, "DROP TABLE IF EXISTS "+strings.Join(tables, ", ")); err != nil {
			t.Logf("drop the test tables %s* on %s: %v", d.prefix, backend, err)
		}
	})
	return d
}

// settings are the switch settings of the database, reached at dsn.
func (d *sqlDB) settings(dsn string) map[string]string {
	return map[string]string{"dsn": dsn, "table_prefix": d.prefix}
}

// via returns the DSN with the database's host:port replaced by addr.
func (d *sqlDB) via(addr string) string { return dsnWithAddr(d.backend, d.dsn, addr) }

func dsnWithAddr(backend, dsn, addr string) string {
	var old string
	switch backend {
	case "mysql":
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			panic(fmt.Sprintf("the test environment's MySQL DSN does not parse: %v", err))
		}
		old = cfg.Addr
	default:
		u, err := url.Parse(dsn)
		if err != nil {
			panic(fmt.Sprintf("the test environment's PostgreSQL DSN does not parse: %v", err))
		}
		old = u.Host
	}
	return strings.Replace(dsn, old, addr, 1)
}

// addr is the database's host:port.
func (d *sqlDB) addr() string {
	if d.backend == "mysql" {
		cfg, _ := mysql.ParseDSN(d.dsn)
		return cfg.Addr
	}
	u, _ := url.Parse(d.dsn)
	return u.Host
}

func (d *sqlDB) exec(ctx context.Context, q string) error {
	if d.backend == "mysql" {
		db, err := sql.Open("mysql", d.dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		_, err = db.ExecContext(ctx, q)
		return err
	}
	conn, err := pgx.Connect(ctx, d.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, q)
	return err
}

// keys reads the kv table directly: every key under prefix and its
// mod revision, as a DBA's query sees them.
func (d *sqlDB) keys(ctx context.Context, prefix string) (map[string]int64, error) {
	q := "SELECT k, mod_rev FROM " + d.prefix + "kv"
	out := map[string]int64{}
	add := func(k []byte, rev int64) {
		if strings.HasPrefix(string(k), prefix) {
			out[string(k)] = rev
		}
	}
	if d.backend == "mysql" {
		db, err := sql.Open("mysql", d.dsn)
		if err != nil {
			return nil, err
		}
		defer db.Close()
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var k []byte
			var rev int64
			if err := rows.Scan(&k, &rev); err != nil {
				return nil, err
			}
			add(k, rev)
		}
		return out, rows.Err()
	}
	conn, err := pgx.Connect(ctx, d.dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var k []byte
		var rev int64
		if err := rows.Scan(&k, &rev); err != nil {
			return nil, err
		}
		add(k, rev)
	}
	return out, rows.Err()
}

// storeStatus is GET /kcd/v1/store/status (any node forwards it to the
// leader).
func storeStatus(ctx context.Context, n *Node) (api.StoreStatus, error) {
	var st api.StoreStatus
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := n.GetJSON(rctx, "/kcd/v1/store/status", &st)
	return st, err
}

// postSwitch is POST /kcd/v1/store/switch: the status code, the switch
// answered and, for a refusal, its error_code and message.
func postSwitch(ctx context.Context, n *Node, req api.StoreSwitchRequest) (int, api.StoreSwitch, error) {
	body, _ := json.Marshal(req)
	var sw api.StoreSwitch
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	status, err := n.do(rctx, http.MethodPost, "/kcd/v1/store/switch", body, &sw)
	return status, sw, err
}

// refusal decodes Kafka Connect's error shape from err; ok is false when
// err is not an HTTP answer in that shape.
func refusal(err error) (code int, message string, ok bool) {
	var se *StatusError
	if !errors.As(err, &se) {
		return 0, "", false
	}
	var e struct {
		ErrorCode int    `json:"error_code"`
		Message   string `json:"message"`
	}
	if json.Unmarshal([]byte(se.Body), &e) != nil || e.ErrorCode == 0 || e.Message == "" {
		return 0, "", false
	}
	return e.ErrorCode, e.Message, true
}

// postSwitchRetry is postSwitch, retrying for up to 10 s the 409 of a
// new leader that has not yet taken charge of the store or is still
// tidying up after an earlier switch.
func postSwitchRetry(ctx context.Context, n *Node, req api.StoreSwitchRequest) (status int, sw api.StoreSwitch, err error) {
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = WaitFor(wctx, 50*time.Millisecond, func() (bool, error) {
		status, sw, err = postSwitch(ctx, n, req)
		_, msg, _ := refusal(err)
		transient := strings.Contains(msg, "not the Raft leader") || strings.Contains(msg, "still tidying up")
		return status != http.StatusConflict || !transient, nil
	})
	return status, sw, err
}

// startSwitch posts a switch through n (postSwitchRetry) and fails the
// test unless it is accepted (202).
func startSwitch(t *testing.T, ctx context.Context, n *Node, req api.StoreSwitchRequest) api.StoreSwitch {
	t.Helper()
	status, sw, err := postSwitchRetry(ctx, n, req)
	if err != nil || status != http.StatusAccepted {
		t.Fatalf("switch to %s through node %d: HTTP %d, %v; want 202", req.Backend, n.ID, status, err)
	}
	if sw.ID == "" || sw.To != req.Backend {
		t.Fatalf("switch to %s: the answer %+v has no id or another target", req.Backend, sw)
	}
	return sw
}

// waitSwitchEnd polls the status through the running nodes of c until
// switch id is no longer running, and returns that status. phases
// collects the phases seen on the way.
func waitSwitchEnd(t *testing.T, ctx context.Context, c *Cluster, id string, limit time.Duration) (api.StoreStatus, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var st api.StoreStatus
	var phases []string
	i := 0
	err := WaitFor(ctx, 20*time.Millisecond, func() (bool, error) {
		nodes := raftNodes(c)
		i++
		s, err := storeStatus(ctx, nodes[i%len(nodes)])
		if err != nil {
			return false, err
		}
		st = s
		if s.LastSwitch == nil || s.LastSwitch.ID != id {
			return false, fmt.Errorf("last switch is %+v, not %s", s.LastSwitch, id)
		}
		if p := s.LastSwitch.Phase; len(phases) == 0 || phases[len(phases)-1] != p {
			phases = append(phases, p)
		}
		return s.LastSwitch.State != api.SwitchRunning, nil
	})
	if err != nil {
		t.Fatalf("switch %s did not end within %v: %v (last status %s)", id, limit, err, jsonOf(st))
	}
	return st, phases
}

// waitPhase polls the status until switch id is in phase with at least
// one key copied, and returns that status; it fails the test if the
// switch ends first.
func waitPhase(t *testing.T, ctx context.Context, n *Node, id, phase string) api.StoreStatus {
	t.Helper()
	var st api.StoreStatus
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := WaitFor(ctx, 5*time.Millisecond, func() (bool, error) {
		s, err := storeStatus(ctx, n)
		if err != nil {
			return false, err
		}
		st = s
		sw := s.LastSwitch
		if sw != nil && sw.ID == id && sw.State != api.SwitchRunning {
			return false, fmt.Errorf("switch ended (%s) before phase %s was seen", sw.State, phase)
		}
		return sw != nil && sw.ID == id && sw.Phase == phase && sw.Copied > 0, nil
	}); err != nil {
		t.Fatalf("switch %s was not seen in phase %s with keys copied: %v (last status %s)", id, phase, err, jsonOf(st))
	}
	return st
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// storedKV is a key of the store API with its revisions.
type storedKV struct {
	Value          string `json:"value"`
	CreateRevision int64  `json:"create_revision"`
	ModRevision    int64  `json:"mod_revision"`
}

// scanKV is GET /kcd/v1/store/keys?prefix= with the revisions.
func scanKV(ctx context.Context, n *Node, prefix string) (map[string]storedKV, int64, error) {
	var out struct {
		Revision int64 `json:"revision"`
		Keys     []struct {
			Key string `json:"key"`
			storedKV
		} `json:"keys"`
	}
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := n.GetJSON(rctx, "/kcd/v1/store/keys?prefix="+url.QueryEscape(prefix), &out); err != nil {
		return nil, 0, fmt.Errorf("scan %s through node %d: %w", prefix, n.ID, err)
	}
	kv := make(map[string]storedKV, len(out.Keys))
	for _, k := range out.Keys {
		kv[k.Key] = k.storedKV
	}
	return kv, out.Revision, nil
}

// loadKeys writes count keys prefix%06d with values of size bytes through
// the store API's batch, 2,000 a batch (a few hundred KiB, one proposal).
func loadKeys(t *testing.T, ctx context.Context, n *Node, prefix string, count, size int) {
	t.Helper()
	type op struct {
		Type  string `json:"type"`
		Key   []byte `json:"key"`
		Value []byte `json:"value"`
	}
	value := []byte(strings.Repeat("v", size))
	for from := 0; from < count; from += 2000 {
		var ops []op
		for i := from; i < min(from+2000, count); i++ {
			ops = append(ops, op{Type: "put", Key: fmt.Appendf(nil, "%s%06d", prefix, i), Value: value})
		}
		body, _ := json.Marshal(map[string]any{"ops": ops})
		if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
			rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			_, err := n.do(rctx, http.MethodPost, "/kcd/v1/store/batch", body, nil)
			return err == nil, err
		}); err != nil {
			t.Fatalf("load %s%06d...: %v", prefix, from, err)
		}
	}
}

// ack is an acknowledged write: its value, the revision answered, and when
// it was sent and answered.
type ack struct {
	value      string
	rev        int64
	start, end time.Time
}

// writeFailure is a write that was not acknowledged.
type writeFailure struct {
	key       string
	node      uint64
	start     time.Time
	took      time.Duration
	status    int    // HTTP status; 0: no answer
	errorCode int    // error_code of the answer, if in Kafka Connect's shape
	message   string // its message
	err       error
}

// raftNodes returns the running nodes of c that are Raft members (the
// store API is theirs; a worker-only node has none).
func raftNodes(c *Cluster) []*Node {
	var out []*Node
	for _, n := range c.Running() {
		if i := slices.Index(n.Args, "--roles"); i < 0 || i+1 >= len(n.Args) || strings.Contains(n.Args[i+1], "raft") {
			out = append(out, n)
		}
	}
	return out
}

// leaderNode returns the running node the running nodes of c name as
// leader.
func leaderNode(ctx context.Context, c *Cluster) (*Node, error) {
	for _, n := range raftNodes(c) {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		info, err := n.Info(rctx)
		cancel()
		if err == nil && info.Leader != 0 {
			if l := c.Node(info.Leader); l != nil && l.Running() {
				return l, nil
			}
		}
	}
	return nil, errors.New("no running node knows a running leader")
}

// waitLeaderNode waits up to 20 s for leaderNode.
func waitLeaderNode(t *testing.T, ctx context.Context, c *Cluster) *Node {
	t.Helper()
	var l *Node
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := WaitFor(ctx, 20*time.Millisecond, func() (bool, error) {
		var err error
		l, err = leaderNode(ctx, c)
		return err == nil, err
	}); err != nil {
		t.Fatal(err)
	}
	return l
}

func (f writeFailure) String() string {
	if f.status != 0 {
		return fmt.Sprintf("%s via node %d: HTTP %d after %v: %q", f.key, f.node, f.status, f.took.Round(time.Millisecond), f.message)
	}
	return fmt.Sprintf("%s via node %d: after %v: %v", f.key, f.node, f.took.Round(time.Millisecond), f.err)
}

// ackWriter writes keys prefix/w<writer>/<n> through the store API of the
// running Raft nodes of a cluster in turn (a follower passes them to the
// leader when a backend other than raft is active), each key once, and
// records which writes were acknowledged (with the revision the store
// answered) and how the others failed. A failed write's outcome is
// unknown: nothing is asserted about it.
type ackWriter struct {
	c       *Cluster
	prefix  string
	timeout time.Duration

	mu    sync.Mutex
	acked map[string]ack
	fails []writeFailure
	// burst: the writers write back to back, not every interval (around
	// a switch, so that writes land in every phase of it).
	burst atomic.Bool

	stop chan struct{}
	wg   sync.WaitGroup
}

// startWriter starts writers goroutines, each making a write every
// interval (each write waits at most timeout); stop them with Stop.
func startWriter(ctx context.Context, c *Cluster, prefix string, writers int, interval, timeout time.Duration) *ackWriter {
	w := &ackWriter{c: c, prefix: prefix, timeout: timeout, acked: map[string]ack{}, stop: make(chan struct{})}
	for g := range writers {
		w.wg.Go(func() {
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for i := 0; ; i++ {
				if w.burst.Load() {
					select {
					case <-w.stop:
						return
					case <-ctx.Done():
						return
					default:
					}
				} else {
					select {
					case <-w.stop:
						return
					case <-ctx.Done():
						return
					case <-tick.C:
					}
				}
				nodes := raftNodes(c)
				if len(nodes) == 0 {
					continue
				}
				w.write(ctx, nodes[(g+i)%len(nodes)], fmt.Sprintf("%sw%d/%06d", prefix, g, i))
			}
		})
	}
	return w
}

func (w *ackWriter) write(ctx context.Context, n *Node, key string) {
	value := "value of " + key
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, w.timeout)
	rev, err := n.Put(rctx, key, []byte(value))
	cancel()
	end := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		w.acked[key] = ack{value: value, rev: rev, start: start, end: end}
		return
	}
	f := writeFailure{key: key, node: n.ID, start: start, took: end.Sub(start), err: err}
	var se *StatusError
	if errors.As(err, &se) {
		f.status = se.Status
		f.errorCode, f.message, _ = refusal(err)
	}
	w.fails = append(w.fails, f)
}

// Stop stops the writers and waits for their last writes.
func (w *ackWriter) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.wg.Wait()
}

// Acked returns the acknowledged writes so far.
func (w *ackWriter) Acked() map[string]ack {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.acked)
}

// Failures returns the failed writes sent at or after since.
func (w *ackWriter) Failures(since time.Time) []writeFailure {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []writeFailure
	for _, f := range w.fails {
		if !f.start.Before(since) {
			out = append(out, f)
		}
	}
	return out
}

// AckedBetween counts the acknowledged writes in flight at some moment of
// [from, to].
func (w *ackWriter) AckedBetween(from, to time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, a := range w.acked {
		if !a.end.Before(from) && !a.start.After(to) {
			n++
		}
	}
	return n
}

// WaitAcked waits until n writes sent after since were acknowledged.
func (w *ackWriter) WaitAcked(ctx context.Context, since time.Time, n int, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return WaitFor(ctx, 20*time.Millisecond, func() (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		k := 0
		for _, a := range w.acked {
			if a.start.After(since) {
				k++
			}
		}
		return k >= n, nil
	})
}

// checkAckedKV reports every acknowledged write that got lacks, or holds
// with another value or revision than the store answered.
func checkAckedKV(t *testing.T, where string, want map[string]ack, got map[string]storedKV) {
	t.Helper()
	var missing, wrong []string
	for k, a := range want {
		g, ok := got[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case g.Value != a.value || g.ModRevision != a.rev:
			wrong = append(wrong, fmt.Sprintf("%s=%q@%d (acknowledged %q@%d)", k, g.Value, g.ModRevision, a.value, a.rev))
		}
	}
	slices.Sort(missing)
	slices.Sort(wrong)
	if len(missing) > 0 {
		t.Errorf("%s lost %d of %d acknowledged writes: %v", where, len(missing), len(want), missing[:min(10, len(missing))])
	}
	if len(wrong) > 0 {
		t.Errorf("%s holds %d acknowledged keys with another value or revision: %v", where, len(wrong), wrong[:min(10, len(wrong))])
	}
}

// checkAckedEverywhere checks the acknowledged writes through the store
// API of every running Raft node of c.
func checkAckedEverywhere(t *testing.T, ctx context.Context, c *Cluster, w *ackWriter, where string) map[string]ack {
	t.Helper()
	want := w.Acked()
	for _, n := range raftNodes(c) {
		got, _, err := scanKV(ctx, n, w.prefix)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		checkAckedKV(t, fmt.Sprintf("%s, read through node %d,", where, n.ID), want, got)
	}
	return want
}

// checkAckedInDB checks that the database's own table holds every
// acknowledged write with the revision answered.
func checkAckedInDB(t *testing.T, ctx context.Context, d *sqlDB, want map[string]ack, prefix string) {
	t.Helper()
	got, err := d.keys(ctx, prefix)
	if err != nil {
		t.Errorf("read %skv on %s: %v", d.prefix, d.backend, err)
		return
	}
	var missing []string
	for k, a := range want {
		if rev, ok := got[k]; !ok || rev != a.rev {
			missing = append(missing, fmt.Sprintf("%s@%d (table: %d)", k, a.rev, rev))
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("%s table %skv lacks %d of %d acknowledged writes (or holds another revision): %v", d.backend, d.prefix, len(missing), len(want), missing[:min(10, len(missing))])
	}
}

// unitState is one connector instance or task on a node's worker.
type unitState struct {
	Running bool
	Starts  int
}

// workerUnits is GET /kcd/v1/worker of every node: node → "conn/task" (or
// "conn" for the connector instance) → its state there.
func workerUnits(ctx context.Context, nodes []*Node) (map[uint64]map[string]unitState, error) {
	out := map[uint64]map[string]unitState{}
	for _, n := range nodes {
		var v struct {
			Units []struct {
				Connector string `json:"connector"`
				Task      *int   `json:"task"`
				Running   bool   `json:"running"`
				Starts    int    `json:"starts"`
			} `json:"units"`
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := n.GetJSON(rctx, "/kcd/v1/worker", &v)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("worker of node %d: %w", n.ID, err)
		}
		m := map[string]unitState{}
		for _, u := range v.Units {
			k := u.Connector
			if u.Task != nil {
				k = fmt.Sprintf("%s/%d", u.Connector, *u.Task)
			}
			m[k] = unitState{Running: u.Running, Starts: u.Starts}
		}
		out[n.ID] = m
	}
	return out, nil
}

// checkNoRestart fails the test unless every unit that ran on a node
// before still runs there with the same start count, and nothing else
// started running (units that had stopped before do not count).
func checkNoRestart(t *testing.T, where string, before, after map[uint64]map[string]unitState) {
	t.Helper()
	running := func(m map[string]unitState) map[string]int {
		out := map[string]int{}
		for k, u := range m {
			if u.Running {
				out[k] = u.Starts
			}
		}
		return out
	}
	for id, b := range before {
		if rb, ra := running(b), running(after[id]); !maps.Equal(rb, ra) {
			t.Errorf("%s: the running units of node %d changed (a task or connector was stopped, moved or restarted): unit → starts before %v, after %v", where, id, rb, ra)
		}
	}
}

// pipeline is a counter Datagen source "gen" and a FileStreamSink "sink"
// that writes gen's topic to a file.
type pipeline struct {
	topic, out string
	tasks      map[string]int // connector → tasks
}

// startPipeline creates the pipeline through via and waits until it runs,
// balanced, with offsets committed for every source task and the sink.
func startPipeline(t *testing.T, ctx context.Context, c *Cluster, via *Node, prefix string, genTasks int) pipeline {
	t.Helper()
	p := pipeline{
		topic: fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()),
		out:   filepath.Join(t.TempDir(), "sink.txt"),
		tasks: map[string]int{"gen": genTasks, "sink": 1},
	}
	for _, body := range []string{
		fmt.Sprintf(`{"name":"gen","config":{"connector.class":"Datagen","topic":%q,"tasks.max":"%d","rate.per.task":"100","key":"none","shape":"counter","value.converter":"org.apache.kafka.connect.storage.StringConverter"}}`, p.topic, genTasks),
		fmt.Sprintf(`{"name":"sink","config":{"connector.class":"FileStreamSink","file":%q,"topics":%q,"tasks.max":"1","value.converter":"org.apache.kafka.connect.storage.StringConverter"}}`, p.out, p.topic),
	} {
		if err := WaitFor(ctx, 200*time.Millisecond, func() (bool, error) {
			_, err := via.do(ctx, http.MethodPost, "/connectors", []byte(body), nil)
			return err == nil, err
		}); err != nil {
			t.Fatalf("create connector: %v", err)
		}
	}
	p.waitRunning(t, ctx, c, via, 60*time.Second)
	return p
}

// waitRunning waits until every unit of the pipeline runs, the coordinator
// has no move left, every source task and the sink have committed offsets
// and the sink has written lines.
func (p pipeline) waitRunning(t *testing.T, ctx context.Context, c *Cluster, via *Node, limit time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		for name, tasks := range p.tasks {
			var st connectorStatus
			if err := via.GetJSON(ctx, "/connectors/"+name+"/status", &st); err != nil {
				return false, err
			}
			if st.Connector.State != "RUNNING" || len(st.Tasks) != tasks {
				return false, fmt.Errorf("%s: %s", name, jsonOf(st))
			}
			for _, task := range st.Tasks {
				if task.State != "RUNNING" {
					return false, fmt.Errorf("%s: %s", name, jsonOf(st))
				}
			}
			offs, err := connectorOffsets(ctx, via, name)
			if err != nil {
				return false, err
			}
			if want := map[string]int{"gen": tasks, "sink": 1}[name]; len(offs) < want {
				return false, fmt.Errorf("%s has offsets of %d partitions, want %d", name, len(offs), want)
			}
		}
		var plan struct {
			Moves []any `json:"moves"`
		}
		if err := via.GetJSON(ctx, "/kcd/v1/rebalances/plan", &plan); err != nil || len(plan.Moves) > 0 {
			return false, fmt.Errorf("rebalance plan: %d moves left (%v)", len(plan.Moves), err)
		}
		return countLines(p.out) > 0, nil
	}); err != nil {
		t.Fatalf("the pipeline does not run: %v", err)
	}
}

// connectorOffsets is GET /connectors/{name}/offsets: partition (as
// canonical JSON) → offset.
func connectorOffsets(ctx context.Context, n *Node, name string) (map[string]map[string]any, error) {
	var body struct {
		Offsets []struct {
			Partition map[string]any `json:"partition"`
			Offset    map[string]any `json:"offset"`
		} `json:"offsets"`
	}
	if err := n.GetJSON(ctx, "/connectors/"+name+"/offsets", &body); err != nil {
		return nil, err
	}
	out := map[string]map[string]any{}
	for _, o := range body.Offsets {
		out[jsonOf(o.Partition)] = o.Offset
	}
	return out, nil
}

// connectMeta is what the cluster knows about its connectors: the list,
// each one's config, task configs, status and offsets (REST), and every
// key of the store under connect/ with its revisions.
type connectMeta struct {
	names   []string
	config  map[string]any
	tasks   map[string]any
	status  map[string]connectorStatus
	offsets map[string]map[string]map[string]any
	keys    map[string]storedKV
	rev     int64
}

// readConnectMeta reads the connectors through n's Connect REST API and
// the store through leader's store API.
func readConnectMeta(ctx context.Context, n, leader *Node) (connectMeta, error) {
	m := connectMeta{config: map[string]any{}, tasks: map[string]any{}, status: map[string]connectorStatus{}, offsets: map[string]map[string]map[string]any{}}
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var err error
	// The store first: everything the REST calls show after is at least
	// as new.
	if m.keys, m.rev, err = scanKV(rctx, leader, "connect/"); err != nil {
		return m, err
	}
	if err := n.GetJSON(rctx, "/connectors", &m.names); err != nil {
		return m, err
	}
	slices.Sort(m.names)
	for _, name := range m.names {
		var cfg, tasks any
		var st connectorStatus
		for path, out := range map[string]any{"/config": &cfg, "/tasks": &tasks, "/status": &st} {
			if err := n.GetJSON(rctx, "/connectors/"+name+path, out); err != nil {
				return m, fmt.Errorf("GET /connectors/%s%s: %w", name, path, err)
			}
		}
		m.config[name], m.tasks[name], m.status[name] = cfg, tasks, st
		if m.offsets[name], err = connectorOffsets(rctx, n, name); err != nil {
			return m, err
		}
	}
	return m, nil
}

// checkConnectMeta fails the test unless after holds everything before
// held: the same connectors, configs and task configs; every task RUNNING
// on the same worker; every partition's offset, at least as far; every key
// under connect/ with the same create revision, a mod revision at least
// as new, and the same value when the mod revision is the same.
func checkConnectMeta(t *testing.T, where string, before, after connectMeta) {
	t.Helper()
	if !slices.Equal(before.names, after.names) {
		t.Errorf("%s: connectors %v, before %v", where, after.names, before.names)
	}
	for _, name := range before.names {
		if !reflect.DeepEqual(before.config[name], after.config[name]) {
			t.Errorf("%s: config of %s is %s, was %s", where, name, jsonOf(after.config[name]), jsonOf(before.config[name]))
		}
		if !reflect.DeepEqual(before.tasks[name], after.tasks[name]) {
			t.Errorf("%s: task configs of %s are %s, were %s", where, name, jsonOf(after.tasks[name]), jsonOf(before.tasks[name]))
		}
		b, a := before.status[name], after.status[name]
		if a.Connector.State != "RUNNING" || a.Connector.WorkerID != b.Connector.WorkerID || len(a.Tasks) != len(b.Tasks) {
			t.Errorf("%s: status of %s is %s, was %s", where, name, jsonOf(a), jsonOf(b))
		} else {
			for i := range b.Tasks {
				if a.Tasks[i].ID != b.Tasks[i].ID || a.Tasks[i].State != "RUNNING" || a.Tasks[i].WorkerID != b.Tasks[i].WorkerID {
					t.Errorf("%s: status of %s is %s, was %s", where, name, jsonOf(a), jsonOf(b))
					break
				}
			}
		}
		for part, bo := range before.offsets[name] {
			ao, ok := after.offsets[name][part]
			if !ok {
				t.Errorf("%s: the offset of %s partition %s is gone (was %s)", where, name, part, jsonOf(bo))
				continue
			}
			for f, bv := range bo {
				bn, bnum := bv.(float64)
				an, anum := ao[f].(float64)
				if bnum && anum && an >= bn || !bnum && reflect.DeepEqual(ao[f], bv) {
					continue
				}
				t.Errorf("%s: the offset of %s partition %s went back: %s, was %s", where, name, part, jsonOf(ao), jsonOf(bo))
				break
			}
		}
	}
	var lost, changed []string
	for k, b := range before.keys {
		a, ok := after.keys[k]
		switch {
		case !ok:
			lost = append(lost, k)
		case a.CreateRevision != b.CreateRevision || a.ModRevision < b.ModRevision || a.ModRevision == b.ModRevision && a.Value != b.Value:
			changed = append(changed, fmt.Sprintf("%s: create %d mod %d, was create %d mod %d", k, a.CreateRevision, a.ModRevision, b.CreateRevision, b.ModRevision))
		}
	}
	slices.Sort(lost)
	slices.Sort(changed)
	if len(lost) > 0 {
		t.Errorf("%s: %d of %d keys under connect/ are gone: %v", where, len(lost), len(before.keys), lost[:min(10, len(lost))])
	}
	if len(changed) > 0 {
		t.Errorf("%s: %d keys under connect/ lost their revisions or value: %v", where, len(changed), changed[:min(10, len(changed))])
	}
}

// checkNoSecret fails the test if text holds any of secrets.
func checkNoSecret(t *testing.T, what, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if i := strings.Index(text, s); i >= 0 {
			line := text[strings.LastIndexByte(text[:i], '\n')+1:]
			if j := strings.IndexByte(line, '\n'); j >= 0 {
				line = line[:j]
			}
			t.Errorf("%s shows the secret %q: %.300s", what, s, line)
		}
	}
}

// logsOf is the logs of every node of c.
func logsOf(c *Cluster) map[uint64]string {
	out := map[uint64]string{}
	for _, n := range c.Nodes() {
		b, _ := os.ReadFile(n.LogPath)
		out[n.ID] = string(b)
	}
	return out
}
