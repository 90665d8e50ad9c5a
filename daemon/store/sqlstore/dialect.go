package sqlstore

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// dialect is everything that differs between SQL databases. The store's
// queries are written once, with ? placeholders and the column types of
// this interface; another database (Oracle, DB2) is one more file with one
// more dialect.
type dialect interface {
	// name is the backend's name, as registered and as in errors.
	name() string
	// openDB returns the pool for dsn.
	openDB(dsn string) (*sql.DB, error)
	// secrets returns the strings of dsn that must never appear in an
	// error or a log line (the password), besides dsn itself.
	secrets(dsn string) []string
	// createTables returns the statements that create the store's tables
	// if they do not exist, for table names starting with p.
	createTables(p string) []string
	// insertIgnore returns an INSERT of one row into table with cols that
	// does nothing when the primary key is taken.
	insertIgnore(table string, cols []string) string
	// upsertKV returns a statement that writes n rows (k, val, create_rev,
	// mod_rev) into the kv table, replacing rows of the same key.
	upsertKV(table string, n int) string
	// insertRows returns an INSERT of n rows into table with cols (one
	// multi-row VALUES here; INSERT ALL or a SELECT … UNION ALL where the
	// database lacks it).
	insertRows(table string, cols []string, n int) string
	// maxRows is the most rows one statement of upsertKV or insertRows
	// writes, and the most keys one IN (…) list names (Oracle allows
	// 1,000 in a list).
	maxRows() int
	// snapshot returns the options of the read-only transaction in which
	// a Scan reads the revision and the rows, so that both come from one
	// snapshot (REPEATABLE READ here; SERIALIZABLE on Oracle, whose
	// read-only transactions see one point in time).
	snapshot() *sql.TxOptions
	// limit returns the clause that ends a SELECT reading at most n rows.
	limit(n int) string
	// retryable says whether an operation that failed with err, before
	// COMMIT, may succeed when tried again: a lost connection, a deadlock,
	// a serialization failure; not an error in the statement.
	retryable(err error) bool
	// rebind turns the ? placeholders of query into the database's own.
	rebind(query string) string
}

// defaultMaxRows is maxRows of MySQL and PostgreSQL: a statement of that
// many rows stays well within their limits on placeholders (65,535).
const defaultMaxRows = 2048

// values returns n rows of cols placeholders: (?,?),(?,?).
func values(n, cols int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", cols), ",") + ")"
	var b strings.Builder
	b.Grow(n * (len(row) + 1))
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(row)
	}
	return b.String()
}

// placeholders returns n comma-separated ?.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// dollarRebind numbers placeholders as $1, $2... (PostgreSQL). The store's
// queries hold no ? other than placeholders.
func dollarRebind(query string) string {
	n := strings.Count(query, "?")
	if n == 0 {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + n*4)
	i := 0
	for _, r := range query {
		if r == '?' {
			i++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(i))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// insertSQL returns "<verb> table (cols) VALUES (?,...)" for n rows.
func insertSQL(verb, table string, cols []string, n int) string {
	return fmt.Sprintf("%s %s (%s) VALUES %s", verb, table, strings.Join(cols, ", "), values(n, len(cols)))
}
