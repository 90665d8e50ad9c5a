package systemtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/internal/testenv"
)

// Failover of the metadata store: the Raft leader killed (SIGKILL) while a
// SQL backend is active, in the hold of a switch, and just after a switch
// recorded its new backend.

// TestIntegrationStoreLeaderKilledSQLActive: a cluster bootstrapped on
// MySQL (its DSN a ${env:} reference each node resolves) runs a Datagen
// source and a FileStreamSink that commit offsets every 200 ms while a
// writer makes acknowledged writes through every Raft node. The leader is
// killed: the new leader opens the same database from the settings in
// Raft (the status shows mysql, healthy, the same reference), writes and
// offset commits go on, every acknowledged write is there (through every
// node and in the table), and no unit on a live worker restarted (the
// killed node's units run elsewhere).
func TestIntegrationStoreLeaderKilledSQLActive(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	my := newSQLDB(t, "mysql", testenv.Require(t, testenv.MySQLDSN))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	const env = "KCD_SYSTEMTEST_STORE_DSN"
	t.Setenv(env, my.dsn) // the nodes inherit it
	c := StartCluster(t, bin, Options{Bootstrap: brokers, ExtraArgs: []string{
		"--offset-flush-interval", "200ms",
		// The new leader keeps its full share: what moves is the killed
		// node's units only (a reduced share sheds some by design).
		"--leader-weight-factor", "1",
		"--store", "mysql", "--store-dsn", "${env:" + env + "}", "--store-setting", "table_prefix=" + my.prefix,
	}})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	p := startPipeline(t, ctx, c, c.Except(lead)[0], "kcd-systemtest-sqlfailover", 3)
	w := startWriter(ctx, c, "test/ack/", 3, 30*time.Millisecond, switchWriteTimeout)
	defer w.Stop()
	if err := w.WaitAcked(ctx, time.Time{}, 20, 20*time.Second); err != nil {
		t.Fatalf("the writer made no progress: %v", err)
	}
	before, err := storeStatus(ctx, c.Node(lead))
	if err != nil || before.Backend != "mysql" || !before.Healthy {
		t.Fatalf("before the kill: status %s, %v; want mysql, healthy", jsonOf(before), err)
	}
	units, err := workerUnits(ctx, c.Nodes())
	if err != nil {
		t.Fatal(err)
	}
	offsets, err := connectorOffsets(ctx, c.Except(lead)[0], "gen")
	if err != nil {
		t.Fatal(err)
	}

	old := c.Node(lead)
	old.Kill()
	killed := time.Now()
	newLead, err := WaitLeader(ctx, c.Except(lead)...)
	if err != nil {
		t.Fatal(err)
	}
	nl := c.Node(newLead)
	var st api.StoreStatus
	if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
		st, err = storeStatus(ctx, nl)
		return err == nil && st.Healthy, nil
	}); err != nil {
		t.Fatalf("the new leader %d serves no healthy store: %s, %v", newLead, jsonOf(st), err)
	}
	t.Logf("new leader %d healthy on %s %v after the kill", newLead, st.Backend, time.Since(killed).Round(time.Millisecond))
	if st.Backend != "mysql" || st.Settings["dsn"] != "${env:"+env+"}" || st.Settings["table_prefix"] != my.prefix {
		t.Errorf("the new leader's status: %s; want backend mysql with the settings recorded in Raft", jsonOf(st))
	}
	// The new leader opened the database itself, from the record.
	opened := regexp.MustCompile(`metadata store.*backend=mysql.*via=direct`)
	if !opened.MatchString(nl.Log()) {
		t.Errorf("the new leader %d did not log opening mysql directly", newLead)
	}
	for _, n := range c.Running() {
		if s, err := storeStatus(ctx, n); err != nil || s.Backend != "mysql" {
			t.Errorf("node %d: status %s, %v; want mysql", n.ID, jsonOf(s), err)
		}
	}

	if err := w.WaitAcked(ctx, time.Now(), 30, 20*time.Second); err != nil {
		t.Fatalf("writes are not acknowledged after the kill: %v", err)
	}
	// The source tasks commit past what they had committed before the
	// kill, each partition (those of the killed node's tasks too).
	octx, ocancel := context.WithTimeout(ctx, 30*time.Second)
	err = WaitFor(octx, 100*time.Millisecond, func() (bool, error) {
		now, err := connectorOffsets(octx, nl, "gen")
		if err != nil {
			return false, nil
		}
		for part, o := range offsets {
			if seqOf(now[part]) <= seqOf(o) {
				return false, nil
			}
		}
		return true, nil
	})
	ocancel()
	if err != nil {
		t.Errorf("the source tasks commit no new offsets after the kill: %v", err)
	}
	p.waitRunning(t, ctx, c, nl, 60*time.Second)
	unitsAfter, err := workerUnits(ctx, c.Running())
	if err != nil {
		t.Fatal(err)
	}
	checkKeptRunning(t, "after the leader was killed", units, unitsAfter)

	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		_, err := old.Put(ctx, "test/restarted", []byte("1"))
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the restarted old leader %d takes no write: %v", lead, err)
	}
	w.Stop()
	acked := checkAckedEverywhere(t, ctx, c, w, "after the leader was killed")
	checkAckedInDB(t, ctx, my, acked, w.prefix)
	t.Logf("%d writes acknowledged, %d failed (around the kill: unknown outcome); the sink wrote %d lines",
		len(acked), len(w.Failures(time.Time{})), countLines(p.out))
}

// TestIntegrationStoreSwitchLeaderKilledInHold: the Raft leader is killed
// while a switch raft → mysql holds writes (the Raft store frozen): the
// database answers each query 100 ms late, so the hold lasts long enough
// to be seen in the status and killed in. The new leader thaws the Raft
// store: raft stays the one active backend, the status says so and names
// the switch as interrupted in the hold, writes go on (to raft only), and
// every acknowledged write is there.
func TestIntegrationStoreSwitchLeaderKilledInHold(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	my := newSQLDB(t, "mysql", testenv.Require(t, testenv.MySQLDSN))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	c := StartCluster(t, bin, Options{Bootstrap: brokers})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	const loaded = 1000
	loadKeys(t, ctx, c.Node(lead), "load/", loaded, 100)
	proxy := startProxy(t, my.addr())
	proxy.SetDelay(100 * time.Millisecond)
	// Few writes: each round of catching up takes seconds at this delay.
	w := startWriter(ctx, c, "test/ack/", 2, 100*time.Millisecond, switchWriteTimeout)
	defer w.Stop()

	old := c.Node(lead)
	sw := startSwitch(t, ctx, old, api.StoreSwitchRequest{Backend: "mysql", Settings: my.settings(my.via(proxy.Addr()))})
	mid := waitPhase(t, ctx, old, sw.ID, api.PhaseHold)
	old.Kill()
	killed := time.Now()
	t.Logf("leader %d killed in phase %s", lead, mid.LastSwitch.Phase)
	newLead, err := WaitLeader(ctx, c.Except(lead)...)
	if err != nil {
		t.Fatal(err)
	}
	proxy.SetDelay(0)

	st := waitInterrupted(t, ctx, c.Node(newLead), sw.ID)
	t.Logf("new leader %d %v after the kill: backend %s, last switch %s", newLead, time.Since(killed).Round(time.Millisecond), st.Backend, jsonOf(st.LastSwitch))
	if st.Backend != "raft" || !st.Healthy {
		t.Errorf("after the leader was killed in the hold the status says backend %q, healthy %v (%s); want raft", st.Backend, st.Healthy, st.Error)
	}
	if e := st.LastSwitch.Error; !strings.Contains(e, "interrupted in phase hold") || !strings.Contains(e, "backend raft stays active") {
		t.Errorf("the interrupted switch's error %q does not say it was interrupted in the hold and raft stays", e)
	}
	afterKill := time.Now()
	if err := w.WaitAcked(ctx, afterKill, 30, 20*time.Second); err != nil {
		t.Fatalf("writes are not acknowledged after the kill (is the Raft store still frozen?): %v (failures: %v)", err, w.Failures(afterKill))
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
	w.Stop()
	checkAckedEverywhere(t, ctx, c, w, "after the leader was killed in the hold")
	// One active backend: what was written after the kill is in raft only.
	inDB, err := my.keys(ctx, w.prefix)
	if err != nil {
		t.Fatal(err)
	}
	for k, a := range w.Acked() {
		if _, ok := inDB[k]; ok && a.start.After(afterKill) {
			t.Errorf("%s, written after the kill with raft active, is in the database's table too", k)
			break
		}
	}
	if kv, _, err := scanKV(ctx, old, "load/"); err != nil || len(kv) != loaded {
		t.Errorf("%d of %d loaded keys are there (%v)", len(kv), loaded, err)
	}
	t.Logf("%d writes acknowledged, %d failed (around the kill: unknown outcome)", len(w.Acked()), len(w.Failures(time.Time{})))
}

// TestIntegrationStoreSwitchLeaderKilledAfterRecord: the Raft leader is
// killed after a switch raft → mysql recorded its new backend in Raft and
// before it moved to it (a test hook pauses it there, writes held). The
// new leader opens mysql from the record: mysql is the one active backend,
// the status says the switch is done, writes go on there, and every
// acknowledged write and loaded key is in the table. The new leader drops
// the Raft copy the old leader did not live to drop, so switching back to
// raft needs no --force, and everything is there after it.
func TestIntegrationStoreSwitchLeaderKilledAfterRecord(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	my := newSQLDB(t, "mysql", testenv.Require(t, testenv.MySQLDSN))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	pause := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(pause, []byte("60s"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KCD_TEST_SWITCH_PAUSE_AFTER_RECORD", pause) // the nodes inherit it
	c := StartCluster(t, bin, Options{Bootstrap: brokers})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	const loaded = 2000
	loadKeys(t, ctx, c.Node(lead), "load/", loaded, 100)
	w := startWriter(ctx, c, "test/ack/", 3, 30*time.Millisecond, switchWriteTimeout)
	defer w.Stop()
	if err := w.WaitAcked(ctx, time.Time{}, 20, 20*time.Second); err != nil {
		t.Fatalf("the writer made no progress: %v", err)
	}

	old := c.Node(lead)
	sw := startSwitch(t, ctx, old, api.StoreSwitchRequest{Backend: "mysql", Settings: my.settings(my.dsn)})
	if err := WaitFor(ctx, 5*time.Millisecond, func() (bool, error) {
		return strings.Contains(old.RunLog(), "paused after the record"), nil
	}); err != nil {
		t.Fatalf("the switch did not pause after its record: %v", err)
	}
	old.Kill()
	killed := time.Now()
	if err := os.Remove(pause); err != nil { // later switches do not pause
		t.Fatal(err)
	}
	newLead, err := WaitLeader(ctx, c.Except(lead)...)
	if err != nil {
		t.Fatal(err)
	}
	nl := c.Node(newLead)
	var st api.StoreStatus
	if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
		st, err = storeStatus(ctx, nl)
		return err == nil && st.Healthy, nil
	}); err != nil {
		t.Fatalf("the new leader %d serves no healthy store: %s, %v", newLead, jsonOf(st), err)
	}
	t.Logf("new leader %d %v after the kill: backend %s, last switch %s", newLead, time.Since(killed).Round(time.Millisecond), st.Backend, jsonOf(st.LastSwitch))
	if st.Backend != "mysql" || st.LastSwitch == nil || st.LastSwitch.ID != sw.ID || st.LastSwitch.State != api.SwitchDone {
		t.Errorf("after the leader was killed past the record the status is %s; want backend mysql, switch %s done", jsonOf(st), sw.ID)
	}
	if err := w.WaitAcked(ctx, time.Now(), 30, 20*time.Second); err != nil {
		t.Fatalf("writes are not acknowledged after the kill: %v (failures: %v)", err, w.Failures(killed))
	}
	if keys, err := my.keys(ctx, "load/"); err != nil || len(keys) != loaded {
		t.Errorf("the table holds %d of %d loaded keys (%v)", len(keys), loaded, err)
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
	acked := checkAckedEverywhere(t, ctx, c, w, "after the leader was killed past the record")
	checkAckedInDB(t, ctx, my, acked, w.prefix)

	// Back to raft, without force: the stale Raft copy is gone.
	back := time.Now()
	status, sw2, err := postSwitchRetry(ctx, nl, api.StoreSwitchRequest{Backend: "raft"})
	if err != nil {
		t.Fatalf("the switch back to raft without --force: HTTP %d, %v (the stale Raft copy was not dropped?)", status, err)
	}
	st, _ = waitSwitchEnd(t, ctx, c, sw2.ID, 60*time.Second)
	if st.LastSwitch.State != api.SwitchDone || st.Backend != "raft" {
		t.Fatalf("the switch back to raft ended %s (%s), backend %s", st.LastSwitch.State, st.LastSwitch.Error, st.Backend)
	}
	if err := w.WaitAcked(ctx, back, 30, 20*time.Second); err != nil {
		t.Fatalf("writes are not acknowledged on raft: %v", err)
	}
	w.Stop()
	checkAckedEverywhere(t, ctx, c, w, "after the switch back to raft")
	if kv, _, err := scanKV(ctx, old, "load/"); err != nil || len(kv) != loaded {
		t.Errorf("after the switch back %d of %d loaded keys are there (%v)", len(kv), loaded, err)
	}
	t.Logf("%d writes acknowledged, %d failed (around the kill: unknown outcome)", len(w.Acked()), len(w.Failures(time.Time{})))
}

// waitInterrupted waits until n's status shows switch id ended (a new
// leader notes an interrupted switch as failed) and returns that status.
func waitInterrupted(t *testing.T, ctx context.Context, n *Node, id string) api.StoreStatus {
	t.Helper()
	var st api.StoreStatus
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
		var err error
		st, err = storeStatus(ctx, n)
		return err == nil && st.LastSwitch != nil && st.LastSwitch.ID == id && st.LastSwitch.State == api.SwitchFailed, nil
	}); err != nil {
		t.Fatalf("node %d's status never showed switch %s failed: %v (%s)", n.ID, id, err, jsonOf(st))
	}
	return st
}

// checkKeptRunning fails the test unless every unit that ran on a node of
// after before still runs there with the same start count: units of a
// node that is gone may start elsewhere.
func checkKeptRunning(t *testing.T, where string, before, after map[uint64]map[string]unitState) {
	t.Helper()
	for id, a := range after {
		for k, u := range before[id] {
			if u.Running && (!a[k].Running || a[k].Starts != u.Starts) {
				t.Errorf("%s: unit %s on node %d was stopped or restarted: %+v before, %+v after", where, k, id, u, a[k])
			}
		}
	}
}

// TestIntegrationStoreBootstrapLeaderKilled: the first leader of a new
// cluster started with --store mysql is killed while its switch to MySQL
// copies (the database answers 100 ms late; killed once it holds some of
// the keys), writers writing meanwhile.
// The next leader switches again, replacing the partial copy rather than
// taking it as a kept cluster's: mysql becomes active and every
// acknowledged write, made on raft before and on mysql after, is there.
func TestIntegrationStoreBootstrapLeaderKilled(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	my := newSQLDB(t, "mysql", testenv.Require(t, testenv.MySQLDSN))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	proxy := startProxy(t, my.addr())
	proxy.SetDelay(100 * time.Millisecond)
	const env = "KCD_SYSTEMTEST_STORE_DSN"
	t.Setenv(env, my.via(proxy.Addr())) // the nodes inherit it
	c := StartCluster(t, bin, Options{Bootstrap: brokers, ExtraArgs: []string{
		"--store", "mysql", "--store-dsn", "${env:" + env + "}", "--store-setting", "table_prefix=" + my.prefix,
	}})
	w := startWriter(ctx, c, "test/ack/", 2, 20*time.Millisecond, switchWriteTimeout)
	defer w.Stop()
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	old := c.Node(lead)
	var st api.StoreStatus
	if err := WaitFor(ctx, 5*time.Millisecond, func() (bool, error) {
		st, err = storeStatus(ctx, old)
		sw := st.LastSwitch
		if sw != nil && sw.State != api.SwitchRunning {
			return false, fmt.Errorf("the bootstrap switch ended %s before it was seen copying", sw.State)
		}
		// Keys copied: the target holds a partial copy.
		return err == nil && sw != nil && sw.Copied > 0 && (sw.Phase == api.PhaseCopy || sw.Phase == api.PhaseVerify), nil
	}); err != nil {
		t.Fatalf("the bootstrap switch was not seen copying: %v (%s)", err, jsonOf(st))
	}
	if keys, err := my.keys(ctx, ""); err != nil || len(keys) == 0 {
		t.Fatalf("the database holds no partial copy to test with: %d keys, %v", len(keys), err)
	}
	old.Kill()
	t.Logf("leader %d killed in phase %s of the bootstrap switch, %d writes acknowledged", lead, st.LastSwitch.Phase, len(w.Acked()))
	proxy.SetDelay(0)
	newLead, err := WaitLeader(ctx, c.Except(lead)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
		st, err = storeStatus(ctx, c.Node(newLead))
		return err == nil && st.Backend == "mysql" && st.Healthy, nil
	}); err != nil {
		t.Fatalf("the new leader %d never made mysql active: %v (%s)", newLead, err, jsonOf(st))
	}
	if sw := st.LastSwitch; sw == nil || sw.State != api.SwitchDone || sw.To != "mysql" {
		t.Errorf("the bootstrap after the kill: last switch %s; want a switch to mysql, done (not a kept cluster taken as it is)", jsonOf(sw))
	}
	if err := w.WaitAcked(ctx, time.Now(), 30, 20*time.Second); err != nil {
		t.Fatalf("writes are not acknowledged on mysql: %v", err)
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
	w.Stop()
	acked := checkAckedEverywhere(t, ctx, c, w, "after the bootstrap leader was killed")
	checkAckedInDB(t, ctx, my, acked, w.prefix)
	t.Logf("%d writes acknowledged, %d failed (around the kill: unknown outcome)", len(acked), len(w.Failures(time.Time{})))
}
