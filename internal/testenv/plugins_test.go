package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestIntegrationPluginPath checks the plugin folders scripts/testenv
// fills: each is there, holds its plugin's jars, and none of the jars the
// Connect runtime provides (two copies of an API class break isolation).
func TestIntegrationPluginPath(t *testing.T) {
	path := PluginPath(t)
	folders := map[string][]string{} // plugin folder name -> its jars
	for _, dir := range strings.Split(path, ",") {
		dir = strings.TrimSpace(dir)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("%s lists %q: %v", PluginPathVar, dir, err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			jars, err := filepath.Glob(filepath.Join(dir, e.Name(), "*.jar"))
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jars {
				folders[e.Name()] = append(folders[e.Name()], filepath.Base(j))
			}
		}
	}
	// want: a jar name prefix each folder must hold; banned: prefixes of
	// the runtime's jars it must not.
	want := map[string][]string{
		"connect-file":                {"connect-file-"},
		"connect-mirror":              {"connect-mirror-4", "connect-mirror-client-"},
		"debezium-connector-postgres": {"debezium-connector-postgres-", "debezium-api-", "postgresql-"},
	}
	banned := []string{"kafka-clients-", "connect-api-", "connect-runtime-", "connect-json-", "slf4j-api-", "jackson-databind-"}
	for _, name := range Plugins {
		jars := folders[name]
		if len(jars) == 0 {
			t.Errorf("plugin folder %s: missing or without jars under %s", name, path)
			continue
		}
		for _, prefix := range want[name] {
			if !hasPrefix(jars, prefix) {
				t.Errorf("plugin folder %s: no %s*.jar among %v", name, prefix, jars)
			}
		}
		for _, prefix := range banned {
			if hasPrefix(jars, prefix) {
				t.Errorf("plugin folder %s holds %s*.jar, which the Connect runtime provides", name, prefix)
			}
		}
	}
}

func hasPrefix(names []string, prefix string) bool {
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

// TestIntegrationPostgresLogicalReplication checks what Debezium's
// PostgreSQL connector needs of the server and of the kcd role:
// wal_level=logical, a pgoutput replication slot, a publication for its
// own table, and a replication-protocol connection.
func TestIntegrationPostgresLogicalReplication(t *testing.T) {
	dsn := Require(t, PostgreDSN)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	defer conn.Close(context.Background())

	var walLevel string
	if err := conn.QueryRow(ctx, "SHOW wal_level").Scan(&walLevel); err != nil {
		t.Fatal(err)
	}
	if walLevel != "logical" {
		t.Fatalf("wal_level = %s, want logical (scripts/testenv up restarts a server without it)", walLevel)
	}

	suffix := fmt.Sprintf("%d", time.Now().UnixNano())
	slot := "kcd_probe_" + suffix
	if _, err := conn.Exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slot); err != nil {
		t.Fatalf("create logical replication slot as kcd: %v", err)
	}
	dropped := false
	defer func() {
		if !dropped {
			conn.Exec(context.Background(), "SELECT pg_drop_replication_slot($1)", slot)
		}
	}()
	var plugin, kind string
	if err := conn.QueryRow(ctx, "SELECT plugin, slot_type FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&plugin, &kind); err != nil {
		t.Fatalf("slot %s not in pg_replication_slots: %v", slot, err)
	}
	if plugin != "pgoutput" || kind != "logical" {
		t.Fatalf("slot %s: plugin %s, type %s; want pgoutput, logical", slot, plugin, kind)
	}

	// Debezium's publication.autocreate.mode=filtered: a publication for
	// the captured tables, which their owner may create.
	table, pub := "kcd_probe_t_"+suffix, "kcd_probe_p_"+suffix
	if _, err := conn.Exec(ctx, "CREATE TABLE "+table+" (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+table)
	if _, err := conn.Exec(ctx, "CREATE PUBLICATION "+pub+" FOR TABLE "+table); err != nil {
		t.Fatalf("create publication as kcd: %v", err)
	}
	defer conn.Exec(context.Background(), "DROP PUBLICATION IF EXISTS "+pub)

	// The connection Debezium streams changes on: the replication protocol
	// (pg_hba's "replication" lines and the REPLICATION attribute).
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["replication"] = "database"
	rc, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("replication connection as kcd: %v", err)
	}
	defer rc.Close(context.Background())
	res, err := rc.Exec(ctx, "IDENTIFY_SYSTEM").ReadAll()
	if err != nil {
		t.Fatalf("IDENTIFY_SYSTEM: %v", err)
	}
	if len(res) != 1 || len(res[0].Rows) != 1 {
		t.Fatalf("IDENTIFY_SYSTEM: %d results, want one row", len(res))
	}

	if _, err := conn.Exec(ctx, "SELECT pg_drop_replication_slot($1)", slot); err != nil {
		t.Fatalf("drop replication slot %s: %v", slot, err)
	}
	dropped = true
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&n); err != nil || n != 0 {
		t.Fatalf("slot %s still there after drop (%d, %v)", slot, n, err)
	}
}
