package sqlstore

import (
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// mysqlDialect is MySQL 8 and MariaDB 10.6+ with InnoDB. Keys are
// VARBINARY(1024): byte order, and within InnoDB's 3072-byte index limit.
type mysqlDialect struct{}

func (mysqlDialect) name() string { return "mysql" }

// openDB sets interpolateParams: the driver then sends each statement with
// its arguments in one round trip instead of preparing it first (two), which
// is safe for the binary and integer arguments the store passes.
func (mysqlDialect) openDB(dsn string) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg.InterpolateParams = true
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

func (mysqlDialect) secrets(dsn string) []string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil || cfg.Passwd == "" {
		return nil
	}
	return []string{cfg.Passwd}
}

func (mysqlDialect) createTables(p string) []string {
	const opts = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
	return []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %[1]sschema (
  id INT NOT NULL PRIMARY KEY,
  version INT NOT NULL
)`+opts, p),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %[1]smeta (
  id INT NOT NULL PRIMARY KEY,
  rev BIGINT NOT NULL,
  compacted BIGINT NOT NULL
)`+opts, p),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %[1]skv (
  k VARBINARY(%[2]d) NOT NULL PRIMARY KEY,
  val LONGBLOB NOT NULL,
  create_rev BIGINT NOT NULL,
  mod_rev BIGINT NOT NULL
)`+opts, p, maxKeyColumn),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %[1]shistory (
  rev BIGINT NOT NULL,
  seq INT NOT NULL,
  op VARCHAR(6) NOT NULL,
  k VARBINARY(%[2]d) NOT NULL,
  val LONGBLOB NOT NULL,
  create_rev BIGINT NOT NULL,
  PRIMARY KEY (rev, seq)
)`+opts, p, maxKeyColumn),
	}
}

func (mysqlDialect) insertIgnore(table string, cols []string) string {
	return insertSQL("INSERT IGNORE INTO", table, cols, 1)
}

func (mysqlDialect) upsertKV(table string, n int) string {
	// VALUES() in ON DUPLICATE KEY UPDATE works on MySQL 8 (deprecated
	// there in favour of a row alias, which MariaDB lacks) and MariaDB.
	return fmt.Sprintf("INSERT INTO %s (k, val, create_rev, mod_rev) VALUES %s"+
		" ON DUPLICATE KEY UPDATE val = VALUES(val), create_rev = VALUES(create_rev), mod_rev = VALUES(mod_rev)",
		table, values(n, 4))
}

func (mysqlDialect) insertRows(table string, cols []string, n int) string {
	return insertSQL("INSERT INTO", table, cols, n)
}

func (mysqlDialect) maxRows() int { return defaultMaxRows }

func (mysqlDialect) snapshot() *sql.TxOptions {
	return &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
}

func (mysqlDialect) limit(n int) string { return fmt.Sprintf(" LIMIT %d", n) }

func (mysqlDialect) retryable(err error) bool {
	if me := (*mysql.MySQLError)(nil); errors.As(err, &me) {
		return me.Number == 1213 || me.Number == 1205 // deadlock, lock wait timeout
	}
	return true // not an answer of the server: the connection
}

func (mysqlDialect) rebind(query string) string { return query }

func init() {
	// The driver logs connection trouble on its own; send it through slog.
	// Its lines hold no DSN.
	mysql.SetLogger(driverLog{})
}

type driverLog struct{}

func (driverLog) Print(v ...any) {
	slog.Warn("sql store: mysql driver: " + strings.TrimSpace(fmt.Sprint(v...)))
}
