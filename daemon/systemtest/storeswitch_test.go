package systemtest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/internal/testenv"
)

// The online switch of the metadata store (POST /kcd/v1/store/switch) and
// its faults, on kcd processes, the real Kafka broker, MariaDB and
// PostgreSQL of the test environment.

// switchWriteTimeout bounds one acknowledged write of the tests' writers:
// a switch holds writes for milliseconds, so a write that waits this long
// hangs.
const switchWriteTimeout = 10 * time.Second

// TestIntegrationStoreSwitchUnderLoad: three Raft nodes and a worker-only
// node run a Datagen source and a FileStreamSink that commit offsets every
// 200 ms while a writer makes acknowledged writes through every Raft node
// (back to back during each switch); the store switches
// raft → mysql → postgres → raft. After each switch: the status names the
// new backend and the switch's figures; every connector, config, task
// config, status and partition offset is there (offsets as far as or
// further than before); every key under connect/ keeps its revisions;
// every acknowledged write, including those made during the switch, is
// there with the revision it was acknowledged at, through every node and
// in the database's own table; no connector or task was restarted.
func TestIntegrationStoreSwitchUnderLoad(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	my := newSQLDB(t, "mysql", testenv.Require(t, testenv.MySQLDSN))
	pg := newSQLDB(t, "postgres", testenv.Require(t, testenv.PostgreDSN))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	c := StartCluster(t, bin, Options{Bootstrap: brokers, ExtraArgs: []string{"--offset-flush-interval", "200ms"}})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	// A worker-only node reaches the store through the Raft nodes.
	if err := c.NewWorker(4).Start(); err != nil {
		t.Fatal(err)
	}
	p := startPipeline(t, ctx, c, c.Node(lead), "kcd-systemtest-switch", 3)
	// Keys enough that each copy takes a moment while writes go on.
	const loaded = 5000
	loadKeys(t, ctx, c.Node(lead), "load/", loaded, 100)
	w := startWriter(ctx, c, "test/ack/", 4, 30*time.Millisecond, switchWriteTimeout)
	defer w.Stop()
	if err := w.WaitAcked(ctx, time.Time{}, 20, 20*time.Second); err != nil {
		t.Fatalf("the writer made no progress: %v", err)
	}

	from := "raft"
	for i, step := range []struct {
		backend string
		db      *sqlDB
	}{{"mysql", my}, {"postgres", pg}, {"raft", nil}} {
		where := fmt.Sprintf("after the switch %s → %s", from, step.backend)
		nodes := raftNodes(c)
		via := nodes[i%len(nodes)] // through a follower too: it forwards
		req := api.StoreSwitchRequest{Backend: step.backend}
		if step.db != nil {
			req.Settings = step.db.settings(step.db.dsn)
		}
		units, err := workerUnits(ctx, c.Nodes())
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			t.Logf("units by node (unit → running, starts): %v", units)
		}
		before, err := readConnectMeta(ctx, via, waitLeaderNode(t, ctx, c))
		if err != nil {
			t.Fatal(err)
		}
		w.burst.Store(true)
		started := time.Now()
		sw := startSwitch(t, ctx, via, req)
		st, phases := waitSwitchEnd(t, ctx, c, sw.ID, 30*time.Second)
		ended := time.Now()
		w.burst.Store(false)
		last := st.LastSwitch
		t.Logf("switch %s → %s: %s in %v, phases seen %v, %d of %d keys copied, writes held %.1f ms, revision %d, checksum %s; %d acknowledged writes in flight during it",
			from, step.backend, last.State, ended.Sub(started).Round(time.Millisecond), phases, last.Copied, last.Total, last.HoldMillis, last.Revision, last.Checksum, w.AckedBetween(started, ended))
		if last.State != api.SwitchDone {
			t.Fatalf("switch %s → %s ended %s: %s", from, step.backend, last.State, last.Error)
		}
		if st.Backend != step.backend || last.From != from || last.To != step.backend {
			t.Errorf("%s: the status says backend %q, last switch %s → %s", where, st.Backend, last.From, last.To)
		}
		if last.Total <= 0 || last.Copied < last.Total || last.Checksum == "" || last.HoldMillis <= 0 || last.Revision < before.rev || last.Error != "" {
			t.Errorf("%s: the figures of the switch are incomplete: %s", where, jsonOf(last))
		}
		if !st.Healthy {
			t.Errorf("%s: the new backend is not healthy: %s", where, st.Error)
		}
		if n := w.AckedBetween(started, ended); n == 0 {
			t.Errorf("%s: no acknowledged write was in flight during the switch: the test did not write while it ran", where)
		}
		if step.db != nil {
			checkNoSecret(t, "the store status", jsonOf(st), step.db.dsn, ":kcd@")
		}

		after, err := readConnectMeta(ctx, c.Except(via.ID)[0], waitLeaderNode(t, ctx, c))
		if err != nil {
			t.Fatal(err)
		}
		if after.rev < last.Revision {
			t.Errorf("%s: the store is at revision %d, before the switch's %d", where, after.rev, last.Revision)
		}
		checkConnectMeta(t, where, before, after)
		// Writes go on after the switch, through every node.
		if err := w.WaitAcked(ctx, ended, 30, 20*time.Second); err != nil {
			t.Fatalf("%s: writes are not acknowledged: %v (failures: %v)", where, err, w.Failures(ended))
		}
		acked := checkAckedEverywhere(t, ctx, c, w, where)
		if step.db != nil {
			checkAckedInDB(t, ctx, step.db, acked, w.prefix)
		}
		if kv, _, err := scanKV(ctx, waitLeaderNode(t, ctx, c), "load/"); err != nil || len(kv) != loaded {
			t.Errorf("%s: %d of %d loaded keys are there (%v)", where, len(kv), loaded, err)
		}
		octx, ocancel := context.WithTimeout(ctx, 20*time.Second)
		err = WaitFor(octx, 100*time.Millisecond, func() (bool, error) {
			now, err := connectorOffsets(octx, via, "gen")
			if err != nil {
				return false, err
			}
			for part, o := range now {
				if seqOf(o) <= seqOf(after.offsets["gen"][part]) {
					return false, nil
				}
			}
			return true, nil
		})
		ocancel()
		if err != nil {
			t.Errorf("%s: the source tasks commit no new offsets: %v", where, err)
		}
		unitsAfter, err := workerUnits(ctx, c.Nodes())
		if err != nil {
			t.Fatal(err)
		}
		checkNoRestart(t, where, units, unitsAfter)
		for _, n := range nodes {
			if ws, err := Workers(ctx, n); err != nil || len(ws) != len(c.Nodes()) {
				t.Errorf("%s: GET /kcd/v1/workers on node %d: %d workers, %v", where, n.ID, len(ws), err)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		from = step.backend
	}
	w.Stop()
	acked := checkAckedEverywhere(t, ctx, c, w, "at the end")
	failed := w.Failures(time.Time{})
	t.Logf("%d writes acknowledged, %d failed; the sink wrote %d lines", len(acked), len(failed), countLines(p.out))
	if len(failed) > 0 {
		t.Errorf("%d writes failed (a switch must only hold writes, never fail them): %v", len(failed), failed[:min(5, len(failed))])
	}
}

// TestIntegrationStoreSwitchDatabaseDown: a switch to a database that does
// not answer (a DSN to a closed port) is refused at once with 400 and a
// message that names the backend and shows no password, through a
// follower as through the leader; raft stays the active backend and
// every acknowledged write is there.
func TestIntegrationStoreSwitchDatabaseDown(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	c := StartCluster(t, bin, Options{Bootstrap: brokers})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	w := startWriter(ctx, c, "test/ack/", 2, 30*time.Millisecond, switchWriteTimeout)
	defer w.Stop()
	closed := mustFreeAddr(t) // reserved, and nothing listens on it
	password := fmt.Sprintf("pw-switchtest-%x", time.Now().UnixNano())
	for i, down := range []struct{ backend, dsn string }{
		{"mysql", fmt.Sprintf("kcd:%s@tcp(%s)/kcd_test", password, closed)},
		{"postgres", fmt.Sprintf("postgres://kcd:%s@%s/kcd_test?sslmode=disable", password, closed)},
	} {
		via := c.Node(lead)
		if i == 0 {
			via = c.Except(lead)[0]
		}
		start := time.Now()
		status, sw, err := postSwitchRetry(ctx, via, api.StoreSwitchRequest{Backend: down.backend, Settings: map[string]string{"dsn": down.dsn}})
		took := time.Since(start)
		code, msg, ok := refusal(err)
		t.Logf("switch to %s on a closed port through node %d: HTTP %d after %v: %q", down.backend, via.ID, status, took.Round(time.Millisecond), msg)
		switch {
		case err == nil:
			t.Errorf("switch to %s on a closed port: accepted (HTTP %d, %s), want 400", down.backend, status, jsonOf(sw))
		case !ok || status != http.StatusBadRequest || code != http.StatusBadRequest:
			t.Errorf("switch to %s on a closed port: %v, want 400 in Kafka Connect's error shape", down.backend, err)
		case !strings.Contains(msg, down.backend):
			t.Errorf("switch to %s on a closed port: the message %q does not name the backend", down.backend, msg)
		}
		checkNoSecret(t, "the refusal", fmt.Sprint(err), password)
		if took > 20*time.Second {
			t.Errorf("switch to %s on a closed port: answered after %v", down.backend, took)
		}
		st, err := storeStatus(ctx, via)
		if err != nil {
			t.Fatal(err)
		}
		if st.Backend != "raft" || !st.Healthy {
			t.Errorf("after the refused switch to %s: the status says backend %q, healthy %v (%s), want raft, healthy", down.backend, st.Backend, st.Healthy, st.Error)
		}
		if st.LastSwitch != nil && st.LastSwitch.State == api.SwitchRunning {
			t.Errorf("after the refused switch to %s: a switch runs: %s", down.backend, jsonOf(st.LastSwitch))
		}
		checkNoSecret(t, "the store status", jsonOf(st), password)
	}
	if err := w.WaitAcked(ctx, time.Now(), 20, 20*time.Second); err != nil {
		t.Fatalf("writes are not acknowledged after the refused switches: %v", err)
	}
	w.Stop()
	checkAckedEverywhere(t, ctx, c, w, "after the refused switches")
	if f := w.Failures(time.Time{}); len(f) > 0 {
		t.Errorf("%d writes failed around the refused switches: %v", len(f), f[:min(5, len(f))])
	}
	for id, log := range logsOf(c) {
		checkNoSecret(t, fmt.Sprintf("the log of node %d", id), log, password)
	}
}

// TestIntegrationStoreSwitchDatabaseKilledMidCopy: the database of a
// switch's target goes away (its connections reset, new ones refused)
// while the switch copies 30,000 keys to it. The switch fails and says
// why; raft stays the active backend; writes go on through the switch and
// after it, and every acknowledged write and every loaded key is there.
// Once the database is back, a switch refuses the partial copy without
// force and succeeds with it, and the database's table then holds
// everything.
func TestIntegrationStoreSwitchDatabaseKilledMidCopy(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	my := newSQLDB(t, "mysql", testenv.Require(t, testenv.MySQLDSN))
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	c := StartCluster(t, bin, Options{Bootstrap: brokers})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	const loaded = 30000
	loadKeys(t, ctx, c.Node(lead), "load/", loaded, 100)
	proxy := startProxy(t, my.addr())
	proxy.SetRate(1 << 20) // the copy of ~4 MB takes seconds
	w := startWriter(ctx, c, "test/ack/", 3, 30*time.Millisecond, switchWriteTimeout)
	defer w.Stop()

	via := c.Except(lead)[0]
	sw := startSwitch(t, ctx, via, api.StoreSwitchRequest{Backend: "mysql", Settings: my.settings(my.via(proxy.Addr()))})
	mid := waitPhase(t, ctx, via, sw.ID, api.PhaseCopy)
	proxy.Cut()
	cut := time.Now()
	t.Logf("database cut in phase %s with %d of %d keys copied", mid.LastSwitch.Phase, mid.LastSwitch.Copied, mid.LastSwitch.Total)
	st, phases := waitSwitchEnd(t, ctx, c, sw.ID, 30*time.Second)
	t.Logf("the switch ended %s %v after the cut (phases seen %v): %q", st.LastSwitch.State, time.Since(cut).Round(time.Millisecond), phases, st.LastSwitch.Error)
	if st.LastSwitch.State != api.SwitchFailed || st.LastSwitch.Error == "" {
		t.Errorf("the switch whose database went away mid-copy ended %s with error %q; want failed with the reason", st.LastSwitch.State, st.LastSwitch.Error)
	}
	if st.Backend != "raft" || !st.Healthy {
		t.Errorf("after the failed switch the status says backend %q, healthy %v (%s); want raft, healthy", st.Backend, st.Healthy, st.Error)
	}
	if err := w.WaitAcked(ctx, time.Now(), 30, 20*time.Second); err != nil {
		t.Fatalf("writes are not acknowledged after the failed switch: %v", err)
	}
	checkAckedEverywhere(t, ctx, c, w, "after the failed switch")
	if kv, _, err := scanKV(ctx, via, "load/"); err != nil || len(kv) != loaded {
		t.Errorf("after the failed switch %d of %d loaded keys are there (%v)", len(kv), loaded, err)
	}

	// The database is back: the partial copy is refused without force,
	// and replaced with it.
	proxy.SetRate(0)
	proxy.Restore()
	req := api.StoreSwitchRequest{Backend: "mysql", Settings: my.settings(my.via(proxy.Addr()))}
	status, _, err := postSwitchRetry(ctx, c.Node(lead), req)
	if code, msg, _ := refusal(err); status != http.StatusBadRequest || code != http.StatusBadRequest || !strings.Contains(msg, "force") {
		t.Errorf("a switch to the target holding a partial copy, without force: HTTP %d, %v; want 400 that says to force", status, err)
	}
	req.Force = true
	sw = startSwitch(t, ctx, c.Node(lead), req)
	st, _ = waitSwitchEnd(t, ctx, c, sw.ID, 60*time.Second)
	if st.LastSwitch.State != api.SwitchDone || st.Backend != "mysql" {
		t.Fatalf("the forced switch after the database came back ended %s (%s), backend %s", st.LastSwitch.State, st.LastSwitch.Error, st.Backend)
	}
	w.Stop()
	acked := checkAckedEverywhere(t, ctx, c, w, "after the forced switch")
	checkAckedInDB(t, ctx, my, acked, w.prefix)
	if keys, err := my.keys(ctx, "load/"); err != nil || len(keys) != loaded {
		t.Errorf("the table holds %d of %d loaded keys after the forced switch (%v)", len(keys), loaded, err)
	}
	if f := w.Failures(time.Time{}); len(f) > 0 {
		t.Errorf("%d writes failed around the switches (they go to raft throughout the failed one): %v", len(f), f[:min(5, len(f))])
	}
}

// TestIntegrationStoreSwitchLeaderKilled: the Raft leader is killed
// (SIGKILL) while it copies 20,000 keys to PostgreSQL. A new leader is
// elected; the status says raft, with no switch running; writes made
// after the kill go to raft and none of them to the database; every
// acknowledged write is there, through the restarted old leader too. A
// new switch, forced over the partial copy, then succeeds and the
// database holds everything.
func TestIntegrationStoreSwitchLeaderKilled(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	pg := newSQLDB(t, "postgres", testenv.Require(t, testenv.PostgreDSN))
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	c := StartCluster(t, bin, Options{Bootstrap: brokers})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	const loaded = 20000
	loadKeys(t, ctx, c.Node(lead), "load/", loaded, 100)
	proxy := startProxy(t, pg.addr())
	proxy.SetRate(1 << 20)
	w := startWriter(ctx, c, "test/ack/", 3, 30*time.Millisecond, switchWriteTimeout)
	defer w.Stop()

	old := c.Node(lead)
	sw := startSwitch(t, ctx, old, api.StoreSwitchRequest{Backend: "postgres", Settings: pg.settings(pg.via(proxy.Addr()))})
	mid := waitPhase(t, ctx, old, sw.ID, api.PhaseCopy)
	old.Kill()
	killed := time.Now()
	t.Logf("leader %d killed in phase %s with %d of %d keys copied", lead, mid.LastSwitch.Phase, mid.LastSwitch.Copied, mid.LastSwitch.Total)
	newLead, err := WaitLeader(ctx, c.Except(lead)...)
	if err != nil {
		t.Fatal(err)
	}
	// The partial copy stays where the old leader left it: nothing writes
	// there now.
	proxy.SetRate(0)

	var st api.StoreStatus
	if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
		st, err = storeStatus(ctx, c.Node(newLead))
		return err == nil && (st.LastSwitch == nil || st.LastSwitch.State != api.SwitchRunning), err
	}); err != nil {
		t.Fatalf("no status without a running switch from the new leader %d: %v (%s)", newLead, err, jsonOf(st))
	}
	t.Logf("new leader %d %v after the kill: backend %s, last switch %s", newLead, time.Since(killed).Round(time.Millisecond), st.Backend, jsonOf(st.LastSwitch))
	if st.Backend != "raft" || !st.Healthy {
		t.Fatalf("after the leader was killed mid-copy the status says backend %q, healthy %v (%s); want raft", st.Backend, st.Healthy, st.Error)
	}
	for _, n := range c.Running() {
		s, err := storeStatus(ctx, n)
		if err != nil || s.Backend != "raft" {
			t.Errorf("node %d: status %s, %v; want backend raft", n.ID, jsonOf(s), err)
		}
	}
	afterKill := time.Now()
	if err := w.WaitAcked(ctx, afterKill, 30, 20*time.Second); err != nil {
		t.Fatalf("writes are not acknowledged after the kill: %v", err)
	}
	checkAckedEverywhere(t, ctx, c, w, "after the leader was killed")
	// One active backend: what was written after the kill is in raft only.
	inDB, err := pg.keys(ctx, w.prefix)
	if err != nil {
		t.Fatal(err)
	}
	for k, a := range w.Acked() {
		if _, ok := inDB[k]; ok && a.start.After(afterKill) {
			t.Errorf("%s, written after the kill with raft active, is in the database's table too", k)
			break
		}
	}

	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		_, err := old.Put(ctx, "test/restarted", []byte("1"))
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the restarted old leader %d takes no write: %v", lead, err)
	}

	// A new switch: through the restarted node, forced over the partial copy.
	sw = startSwitch(t, ctx, old, api.StoreSwitchRequest{Backend: "postgres", Settings: pg.settings(pg.via(proxy.Addr())), Force: true})
	st, _ = waitSwitchEnd(t, ctx, c, sw.ID, 60*time.Second)
	if st.LastSwitch.State != api.SwitchDone || st.Backend != "postgres" {
		t.Fatalf("the switch after the kill ended %s (%s), backend %s", st.LastSwitch.State, st.LastSwitch.Error, st.Backend)
	}
	if err := w.WaitAcked(ctx, time.Now(), 30, 20*time.Second); err != nil {
		t.Fatalf("writes are not acknowledged on postgres: %v", err)
	}
	w.Stop()
	acked := checkAckedEverywhere(t, ctx, c, w, "after the second switch")
	checkAckedInDB(t, ctx, pg, acked, w.prefix)
	if keys, err := pg.keys(ctx, "load/"); err != nil || len(keys) != loaded {
		t.Errorf("the table holds %d of %d loaded keys after the second switch (%v)", len(keys), loaded, err)
	}
	t.Logf("%d writes acknowledged, %d failed (around the kill: unknown outcome)", len(acked), len(w.Failures(time.Time{})))
}

// TestIntegrationStoreDatabaseRestart: with MySQL the active backend, the
// database goes away for a few seconds (connections reset, new ones
// refused) and comes back. Meanwhile writes fail with a 5xx answer and a
// message within their timeout (none hangs) and the status says the
// backend is unhealthy; then writes succeed again, every acknowledged
// write is there, and the connectors ran throughout: no task restarted,
// and the source tasks commit offsets again.
func TestIntegrationStoreDatabaseRestart(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	my := newSQLDB(t, "mysql", testenv.Require(t, testenv.MySQLDSN))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	c := StartCluster(t, bin, Options{Bootstrap: brokers, ExtraArgs: []string{"--offset-flush-interval", "200ms"}})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startProxy(t, my.addr())
	sw := startSwitch(t, ctx, c.Node(lead), api.StoreSwitchRequest{Backend: "mysql", Settings: my.settings(my.via(proxy.Addr()))})
	if st, _ := waitSwitchEnd(t, ctx, c, sw.ID, 30*time.Second); st.LastSwitch.State != api.SwitchDone {
		t.Fatalf("switch to mysql: %s", jsonOf(st.LastSwitch))
	}
	p := startPipeline(t, ctx, c, c.Node(lead), "kcd-systemtest-dbrestart", 2)
	w := startWriter(ctx, c, "test/ack/", 3, 50*time.Millisecond, switchWriteTimeout)
	defer w.Stop()
	if err := w.WaitAcked(ctx, time.Time{}, 20, 20*time.Second); err != nil {
		t.Fatalf("the writer made no progress: %v", err)
	}
	units, err := workerUnits(ctx, c.Nodes())
	if err != nil {
		t.Fatal(err)
	}

	proxy.Cut()
	cut := time.Now()
	// Down until writes have been seen failing for 3 s.
	if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
		f := w.Failures(cut)
		return len(f) >= 3 && time.Since(f[0].start) >= 3*time.Second, nil
	}); err != nil {
		t.Fatalf("writes did not fail while the database was down: %v", err)
	}
	var down api.StoreStatus
	if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
		down, err = storeStatus(ctx, c.Node(lead))
		return err == nil && !down.Healthy, err
	}); err != nil {
		t.Errorf("the status never said the database was unhealthy while it was down: %v (%s)", err, jsonOf(down))
	} else if down.Backend != "mysql" || down.Error == "" {
		t.Errorf("the status while the database is down: %s; want backend mysql, unhealthy with the reason", jsonOf(down))
	}
	proxy.Restore()
	back := time.Now()
	t.Logf("database down for %v; status meanwhile: healthy %v, %q", back.Sub(cut).Round(time.Millisecond), down.Healthy, down.Error)

	if err := w.WaitAcked(ctx, back, 30, 30*time.Second); err != nil {
		t.Fatalf("writes are not acknowledged after the database came back: %v", err)
	}
	outage := w.Failures(cut)
	var longest time.Duration
	for _, f := range outage {
		if f.start.After(back) {
			break
		}
		longest = max(longest, f.took)
		if f.status < 500 || f.message == "" {
			t.Errorf("a write while the database was down failed without a 5xx answer and a message: node %d, %v", f.node, f.err)
		} else if f.took >= switchWriteTimeout {
			t.Errorf("a write while the database was down hung for %v: %v", f.took, f.err)
		}
	}
	t.Logf("%d writes failed around the outage, the slowest after %v, e.g. %v", len(outage), longest.Round(time.Millisecond), outage[:min(3, len(outage))])
	// The pipeline runs on: offsets are committed again, nothing restarted.
	restored, err := connectorOffsets(ctx, c.Node(lead), "gen")
	if err != nil {
		t.Fatal(err)
	}
	octx, ocancel := context.WithTimeout(ctx, 20*time.Second)
	defer ocancel()
	if err := WaitFor(octx, 100*time.Millisecond, func() (bool, error) {
		now, err := connectorOffsets(octx, c.Node(lead), "gen")
		if err != nil || len(now) < len(restored) {
			return false, err
		}
		for part, o := range now {
			if r, ok := restored[part]; ok && seqOf(o) <= seqOf(r) {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Errorf("the source tasks commit no offsets after the database came back: %v", err)
	}
	p.waitRunning(t, ctx, c, c.Node(lead), 30*time.Second)
	unitsAfter, err := workerUnits(ctx, c.Nodes())
	if err != nil {
		t.Fatal(err)
	}
	checkNoRestart(t, "after the database restart", units, unitsAfter)
	w.Stop()
	acked := checkAckedEverywhere(t, ctx, c, w, "after the database restart")
	checkAckedInDB(t, ctx, my, acked, w.prefix)
	if st, err := storeStatus(ctx, c.Node(lead)); err != nil || st.Backend != "mysql" || !st.Healthy {
		t.Errorf("after the database came back the status is %s, %v; want mysql, healthy", jsonOf(st), err)
	}
}

// TestIntegrationStoreBootstrapPostgres: a new cluster started with
// --store postgres and --store-dsn '${env:NAME}' (resolved from each
// node's environment) keeps its connectors' metadata in PostgreSQL — a
// query of the kv table finds the connector's config, task configs,
// statuses and offsets — and neither the DSN nor its password appears in
// a log line or a REST answer.
func TestIntegrationStoreBootstrapPostgres(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	pg := newSQLDB(t, "postgres", testenv.Require(t, testenv.PostgreDSN))
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	const env = "KCD_SYSTEMTEST_STORE_DSN"
	t.Setenv(env, pg.dsn) // the nodes inherit it
	c := StartCluster(t, bin, Options{Bootstrap: brokers, ExtraArgs: []string{
		"--offset-flush-interval", "200ms",
		"--store", "postgres", "--store-dsn", "${env:" + env + "}", "--store-setting", "table_prefix=" + pg.prefix,
	}})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	p := startPipeline(t, ctx, c, c.Except(lead)[0], "kcd-systemtest-bootpg", 2)
	st, err := storeStatus(ctx, c.Node(lead))
	if err != nil {
		t.Fatal(err)
	}
	if st.Backend != "postgres" || !st.Healthy {
		t.Errorf("the status of a cluster started with --store postgres: %s", jsonOf(st))
	}
	if dsn := st.Settings["dsn"]; dsn != "${env:"+env+"}" {
		t.Errorf("the status shows the DSN setting as %q, want the reference", dsn)
	}

	keys, err := pg.keys(ctx, "connect/")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"connect/config/gen", "connect/tasks/gen", "connect/config/sink", "connect/status/gen/task/0", "connect/status/sink/task/0"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("the table %skv has no %s (it holds %d keys under connect/)", pg.prefix, k, len(keys))
		}
	}
	offsets := 0
	for k := range keys {
		if strings.HasPrefix(k, "connect/offset/gen/") || strings.HasPrefix(k, "connect/sinkoffset/sink/") {
			offsets++
		}
	}
	if offsets < 3 {
		t.Errorf("the table %skv holds %d offsets of gen and sink, want at least 3", pg.prefix, offsets)
	}
	t.Logf("%skv holds %d keys under connect/, %d of them offsets; the sink wrote %d lines", pg.prefix, len(keys), offsets, countLines(p.out))

	// The secret: the DSN, and its password as it appears in one.
	secrets := []string{pg.dsn, ":kcd@", "password=kcd"}
	for _, n := range c.Nodes() {
		for _, path := range []string{"/", "/kcd/v1/store/status", "/kcd/v1/cluster", "/kcd/v1/worker", "/kcd/v1/workers",
			"/connectors?expand=info&expand=status", "/kcd/v1/store/keys?prefix=kcd/"} {
			var body any
			if err := n.GetJSON(ctx, path, &body); err != nil {
				t.Errorf("GET %s on node %d: %v", path, n.ID, err)
				continue
			}
			checkNoSecret(t, fmt.Sprintf("GET %s on node %d", path, n.ID), jsonOf(body), secrets...)
		}
	}
	for id, log := range logsOf(c) {
		checkNoSecret(t, fmt.Sprintf("the log of node %d", id), log, secrets...)
	}
}

// seqOf is a Datagen offset's sequence number (-1: none).
func seqOf(offset map[string]any) float64 {
	if n, ok := offset["seq"].(float64); ok {
		return n
	}
	return -1
}
