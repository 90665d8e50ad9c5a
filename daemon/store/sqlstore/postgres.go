package sqlstore

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// postgresDialect is PostgreSQL 13+ through pgx. Keys are BYTEA, which
// compares byte by byte.
type postgresDialect struct{}

func (postgresDialect) name() string { return "postgres" }

func (postgresDialect) openDB(dsn string) (*sql.DB, error) { return sql.Open("pgx", dsn) }

func (postgresDialect) secrets(dsn string) []string {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil || cfg.Password == "" {
		return nil
	}
	return []string{cfg.Password}
}

func (postgresDialect) createTables(p string) []string {
	return []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %[1]sschema (
  id INT NOT NULL PRIMARY KEY,
  version INT NOT NULL
)`, p),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %[1]smeta (
  id INT NOT NULL PRIMARY KEY,
  rev BIGINT NOT NULL,
  compacted BIGINT NOT NULL
)`, p),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %[1]skv (
  k BYTEA NOT NULL PRIMARY KEY CHECK (length(k) <= %[2]d),
  val BYTEA NOT NULL,
  create_rev BIGINT NOT NULL,
  mod_rev BIGINT NOT NULL
)`, p, maxKeyColumn),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %[1]shistory (
  rev BIGINT NOT NULL,
  seq INT NOT NULL,
  op VARCHAR(6) NOT NULL,
  k BYTEA NOT NULL,
  val BYTEA NOT NULL,
  create_rev BIGINT NOT NULL,
  PRIMARY KEY (rev, seq)
)`, p),
	}
}

func (postgresDialect) insertIgnore(table string, cols []string) string {
	return insertSQL("INSERT INTO", table, cols, 1) + " ON CONFLICT DO NOTHING"
}

func (postgresDialect) upsertKV(table string, n int) string {
	return fmt.Sprintf("INSERT INTO %s (k, val, create_rev, mod_rev) VALUES %s"+
		" ON CONFLICT (k) DO UPDATE SET val = EXCLUDED.val, create_rev = EXCLUDED.create_rev, mod_rev = EXCLUDED.mod_rev",
		table, values(n, 4))
}

func (postgresDialect) insertRows(table string, cols []string, n int) string {
	return insertSQL("INSERT INTO", table, cols, n)
}

func (postgresDialect) maxRows() int { return defaultMaxRows }

func (postgresDialect) snapshot() *sql.TxOptions {
	return &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
}

func (postgresDialect) limit(n int) string { return fmt.Sprintf(" LIMIT %d", n) }

func (postgresDialect) retryable(err error) bool {
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) {
		return pe.Code == "40001" || pe.Code == "40P01" // serialization failure, deadlock
	}
	return true // not an answer of the server: the connection
}

func (postgresDialect) rebind(query string) string { return dollarRebind(query) }
