package sqlstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcd-project/kcd/internal/testenv"
	"github.com/kcd-project/kcd/store"
	"github.com/kcd-project/kcd/store/storetest"
)

// backends are the dialects under test and the test environment's
// variable of each one's DSN.
var backends = []struct {
	name, env string
}{
	{"mysql", testenv.MySQLDSN},
	{"postgres", testenv.PostgreDSN},
}

var prefixSeq atomic.Int64

// freshPrefix returns a table prefix no other test of this process uses,
// unlikely to collide with another process's, and drops its tables when
// the test ends.
func freshPrefix(t testing.TB, name, dsn string) string {
	t.Helper()
	prefix := fmt.Sprintf("t%d_%d_", time.Now().UnixNano()%1e9, prefixSeq.Add(1))
	t.Cleanup(func() { dropTables(t, name, dsn, prefix) })
	return prefix
}

func dropTables(t testing.TB, name, dsn, prefix string) {
	d := dialectOf(name)
	db, err := d.openDB(dsn)
	if err != nil {
		t.Errorf("drop tables: %v", err)
		return
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, table := range []string{"kv", "meta", "history", "schema"} {
		if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+prefix+table); err != nil {
			t.Errorf("drop table %s%s: %v", prefix, table, err)
		}
	}
}

func dialectOf(name string) dialect {
	if name == "mysql" {
		return mysqlDialect{}
	}
	return postgresDialect{}
}

// openTest opens a store of backend name on fresh tables.
func openTest(t testing.TB, name, dsn string, extra map[string]string) *Store {
	t.Helper()
	settings := map[string]string{"dsn": dsn, "table_prefix": freshPrefix(t, name, dsn)}
	for k, v := range extra {
		settings[k] = v
	}
	s, err := store.Open(t.Context(), name, settings)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	return s.(*Store)
}

func TestIntegrationConformance(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			dsn := testenv.Require(t, b.env)
			storetest.Run(t, func(t *testing.T) store.Store {
				return openTest(t, b.name, dsn, nil)
			})
		})
	}
}

func TestIntegrationLoaderConformance(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			dsn := testenv.Require(t, b.env)
			storetest.RunLoader(t, func(t *testing.T) store.Loader {
				return openTest(t, b.name, dsn, nil)
			})
		})
	}
}
