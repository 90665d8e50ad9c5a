package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/systemtest"
	"github.com/kcd-project/kcd/internal/testenv"
)

// mysqlDatabase creates a database of its own for the test on the test
// environment's MariaDB (the kcd user may create kcd_test_*), drops it at
// the end, and returns its DSN.
func mysqlDatabase(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("parse %s: %v", testenv.MySQLDSN, err)
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	name := fmt.Sprintf("kcd_test_kcctl_%x", rand.Uint32())
	if _, err := db.ExecContext(t.Context(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := db.ExecContext(context.Background(), "DROP DATABASE "+name); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}

// storeStatus runs kcctl store status -o json against url.
func storeStatus(t *testing.T, url string) api.StoreStatus {
	t.Helper()
	var st api.StoreStatus
	decode(t, ok(t, url, "store", "status", "-o", "json"), &st)
	return st
}

// TestIntegrationKcctlStoreSwitch runs kcctl against a real three-node kcd
// (processes) through a follower: store status, dry runs, a switch from
// raft to MariaDB and back that keeps every key, and a switch to a
// database that is not there, which fails with the server's reason and
// leaves the active backend as it was. No DSN is ever printed.
func TestIntegrationKcctlStoreSwitch(t *testing.T) {
	brokers := testenv.Require(t, testenv.Kafka)
	dsn := mysqlDatabase(t, testenv.Require(t, testenv.MySQLDSN))
	// The nodes inherit the environment: the switch names the DSN by
	// reference, as an operator would.
	t.Setenv("KCCTL_IT_MYSQL_DSN", dsn)
	bin, err := systemtest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c := systemtest.StartCluster(t, bin, systemtest.Options{Bootstrap: brokers})
	lead, err := systemtest.WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	// kcctl asks a follower (it forwards to the leader); keys are written
	// and read through the leader, which serves the store API whatever the
	// backend.
	node, leader := c.Except(lead)[0], c.Node(lead)
	url := node.URL()
	for deadline := time.Now().Add(30 * time.Second); ; {
		code, _, errOut := kcctl(t, "--server", url, "store", "status")
		if code == 0 {
			break
		}
		if code == exitUsage || time.Now().After(deadline) {
			t.Fatalf("store status never answered: %s", errOut)
		}
		time.Sleep(100 * time.Millisecond)
	}
	noDSN := func(outs ...string) {
		t.Helper()
		for _, out := range outs {
			if strings.Contains(out, dsn) || strings.Contains(out, "kcctl-it-pw") {
				t.Errorf("kcctl printed a DSN:\n%s", out)
			}
		}
	}

	// status: raft, healthy, and the backends this kcd can open.
	st := storeStatus(t, url)
	if st.Backend != "raft" || !st.Healthy || !contains(st.Backends, "mysql") || st.LastSwitch != nil {
		t.Fatalf("status before any switch: %+v", st)
	}
	out := ok(t, url, "store", "status")
	if !strings.Contains(out, "Backend:") || !strings.Contains(out, "raft") || !strings.Contains(out, "healthy") {
		t.Errorf("status table:\n%s", out)
	}

	const keys = 100
	want := map[string]string{}
	for i := range keys {
		k, v := fmt.Sprintf("kcctl-it/k%03d", i), fmt.Sprintf("v%d", i)
		if _, err := leader.Put(ctx, k, []byte(v)); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
		want[k] = v
	}
	check := func(stage string) {
		t.Helper()
		got, _, err := leader.Scan(ctx, "kcctl-it/")
		if err != nil {
			t.Fatalf("%s: scan: %v", stage, err)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", stage, k, got[k], v)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d keys, want %d", stage, len(got), len(want))
		}
	}

	// Dry runs change nothing and say what would be copied.
	var dry api.StoreSwitch
	decode(t, ok(t, url, "store", "switch", "--to", "mysql", "--dsn", "${env:KCCTL_IT_MYSQL_DSN}", "--dry-run", "-o", "json"), &dry)
	if dry.State != api.SwitchDryRun || dry.From != "raft" || dry.To != "mysql" || dry.Total < keys {
		t.Errorf("dry run to mysql: %+v", dry)
	}
	if st := storeStatus(t, url); st.Backend != "raft" || st.LastSwitch != nil {
		t.Errorf("a dry run changed the store: %+v", st)
	}
	// A switch to the active backend is refused: a usage of the API, exit 1.
	code, out, errOut := kcctl(t, "--server", url, "store", "switch", "--to", "raft", "--dry-run")
	if code != exitError || !strings.Contains(errOut, "already the active backend") {
		t.Errorf("dry run to raft, the active backend: exit %d\n%s%s", code, out, errOut)
	}

	// raft → mysql, followed to the end with plain lines.
	start := time.Now()
	code, out, errOut = kcctl(t, "--server", url, "store", "switch", "--to", "mysql", "--dsn", "${env:KCCTL_IT_MYSQL_DSN}")
	if code != 0 {
		t.Fatalf("switch to mysql: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("switch to mysql in %v:\n%s%s", time.Since(start).Round(time.Millisecond), errOut, out)
	if !strings.HasPrefix(out, "store switched from raft to mysql") || !strings.Contains(errOut, "done ") {
		t.Errorf("switch to mysql printed:\n%s%s", out, errOut)
	}
	noDSN(out, errOut)
	st = storeStatus(t, url)
	if sw := st.LastSwitch; st.Backend != "mysql" || !st.Healthy || sw == nil || sw.State != api.SwitchDone || sw.Copied < keys || sw.Checksum == "" {
		t.Fatalf("status after the switch to mysql: %+v %+v", st, st.LastSwitch)
	}
	out = ok(t, url, "store", "status")
	if !strings.Contains(out, "raft → mysql, done") {
		t.Errorf("status table after the switch:\n%s", out)
	}
	noDSN(out)
	check("on mysql")
	want["kcctl-it/on-mysql"] = "written while mysql was active"
	if _, err := leader.Put(ctx, "kcctl-it/on-mysql", []byte(want["kcctl-it/on-mysql"])); err != nil {
		t.Fatalf("put on mysql: %v", err)
	}

	// mysql → raft: a dry run, then switching back is the same command.
	decode(t, ok(t, url, "store", "switch", "--to", "raft", "--dry-run", "-o", "json"), &dry)
	if dry.State != api.SwitchDryRun || dry.From != "mysql" || dry.To != "raft" || dry.Total < keys+1 {
		t.Errorf("dry run to raft: %+v", dry)
	}
	code, out, errOut = kcctl(t, "--server", url, "store", "switch", "--to", "raft")
	if code != 0 || !strings.HasPrefix(out, "store switched from mysql to raft") {
		t.Fatalf("switch back to raft: exit %d\n%s%s", code, out, errOut)
	}
	if st := storeStatus(t, url); st.Backend != "raft" || st.LastSwitch == nil || st.LastSwitch.State != api.SwitchDone {
		t.Fatalf("status after the switch back: %+v", st)
	}
	check("back on raft")

	// The database still holds the old copy: a switch without --force is
	// refused and says to pass it; a dry run with --force warns that the
	// copy will be removed.
	code, out, errOut = kcctl(t, "--server", url, "store", "switch", "--to", "mysql", "--dsn", "${env:KCCTL_IT_MYSQL_DSN}", "--dry-run")
	if code != 0 || !strings.Contains(errOut, "Warning:") || !strings.Contains(errOut, "--force") {
		t.Errorf("dry run to a held target without --force: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = kcctl(t, "--server", url, "store", "switch", "--to", "mysql", "--dsn", "${env:KCCTL_IT_MYSQL_DSN}", "--dry-run", "--force")
	if code != 0 || !strings.Contains(errOut, "Warning:") || !strings.Contains(out, "dry run") {
		t.Errorf("dry run to a held target: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = kcctl(t, "--server", url, "store", "switch", "--to", "mysql", "--dsn", "${env:KCCTL_IT_MYSQL_DSN}")
	if code != exitError || !strings.Contains(errOut, "--force") {
		t.Errorf("switch to a held target without --force: exit %d\n%s%s", code, out, errOut)
	}

	// A database that is not there: exit 1 with the server's reason, and
	// raft stays active.
	code, out, errOut = kcctl(t, "--server", url, "store", "switch", "--to", "mysql", "--dsn", "kcd:kcctl-it-pw@tcp(127.0.0.1:1)/kcd_test_absent?timeout=2s")
	if code != exitError || !strings.Contains(errOut, "Error:") {
		t.Errorf("switch to an absent database: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("switch to an absent database: %s", errOut)
	noDSN(out, errOut)
	if st := storeStatus(t, url); st.Backend != "raft" || !st.Healthy {
		t.Errorf("after a failed switch: %+v", st)
	}
	check("after a failed switch")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
