// Package sqlstore is kcd's metadata store in a relational database:
// MySQL 8 or MariaDB ("mysql", through go-sql-driver/mysql) and PostgreSQL
// ("postgres", through pgx). Import it for its side effect:
//
//	import _ "github.com/kcd-project/kcd/daemon/store/sqlstore"
//
// and open a store with store.Open(ctx, "mysql", map[string]string{"dsn": ...}).
//
// The store keeps four plain tables a DBA can read and back up (names start
// with the table_prefix setting, "kcd_" by default): kv (every key, its
// value and revisions), meta (the current and the compacted revision),
// history (the events of recent revisions, for watches) and schema (the
// version of this layout). Every write is one transaction that first locks
// the meta row, so revisions are allocated one at a time and commits land
// in revision order. One feed goroutine per store reads new history rows,
// woken by the store's own commits and otherwise every poll_interval, and
// fans them out to the watchers.
//
// Dialect differences live in the dialect interface (mysql.go,
// postgres.go); everything else is portable SQL.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcd-project/kcd/store"
)

// schemaVersion is the layout of the tables this kcd writes. Open creates
// it, upgrades older ones and refuses newer ones.
const schemaVersion = 1

// maxKeyColumn is the size of the key columns.
const maxKeyColumn = store.MaxKeySize

// Defaults of the settings.
const (
	DefaultMaxOpenConns    = 8
	DefaultConnMaxLifetime = 30 * time.Minute
	DefaultOpTimeout       = 5 * time.Second
	DefaultTablePrefix     = "kcd_"
	DefaultPollInterval    = 200 * time.Millisecond
	DefaultHistoryKeep     = 10000
)

// Bounds of the watch machinery, as in the Raft backend.
const (
	watchBuffer      = 1024     // events queued for one watcher
	watchBufferBytes = 16 << 20 // bytes queued for one watcher
	historyRows      = 8192     // rows read from history at once (at least 2 revisions' worth)
	trimSlack        = 64       // revisions history may exceed history_keep by before a trim
	trimMax          = 1024     // revisions one write trims at most
	stmtBytes        = 2 << 20  // bytes of values of one multi-row statement (MySQL's escaping may double them)
	feedBackoffMin   = 100 * time.Millisecond
	feedBackoffMax   = 5 * time.Second
)

func init() {
	for _, d := range []dialect{mysqlDialect{}, postgresDialect{}} {
		store.Register(d.name(), func(ctx context.Context, settings map[string]string) (store.Store, error) {
			s, err := open(ctx, d, settings)
			if err != nil {
				return nil, err // not a typed nil
			}
			return s, nil
		})
	}
}

// config is the parsed settings.
type config struct {
	dsn             string
	maxOpenConns    int
	maxIdleConns    int
	connMaxLifetime time.Duration
	opTimeout       time.Duration
	tablePrefix     string
	pollInterval    time.Duration
	historyKeep     int64
}

var knownSettings = []string{
	"dsn", "max_open_conns", "max_idle_conns", "conn_max_lifetime",
	"op_timeout", "table_prefix", "poll_interval", "history_keep",
}

var prefixRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,31}$|^$`)

// parseSettings reads the settings. Its errors name a setting, never its
// value: the values may hold secrets.
func parseSettings(settings map[string]string) (config, error) {
	c := config{
		maxOpenConns:    DefaultMaxOpenConns,
		connMaxLifetime: DefaultConnMaxLifetime,
		opTimeout:       DefaultOpTimeout,
		tablePrefix:     DefaultTablePrefix,
		pollInterval:    DefaultPollInterval,
		historyKeep:     DefaultHistoryKeep,
	}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		if !slices.Contains(knownSettings, k) {
			return c, fmt.Errorf("unknown setting %q (known: %s)", k, strings.Join(knownSettings, ", "))
		}
	}
	c.dsn = settings["dsn"]
	if c.dsn == "" {
		return c, errors.New(`setting "dsn" is required`)
	}
	positive := func(k string, dst *int) error {
		if v, ok := settings[k]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return fmt.Errorf("setting %q: want a positive integer", k)
			}
			*dst = n
		}
		return nil
	}
	duration := func(k string, dst *time.Duration) error {
		if v, ok := settings[k]; ok {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("setting %q: want a positive duration such as 5s", k)
			}
			*dst = d
		}
		return nil
	}
	keep := 0
	for _, err := range []error{
		positive("max_open_conns", &c.maxOpenConns),
		positive("max_idle_conns", &c.maxIdleConns),
		duration("conn_max_lifetime", &c.connMaxLifetime),
		duration("op_timeout", &c.opTimeout),
		duration("poll_interval", &c.pollInterval),
		positive("history_keep", &keep),
	} {
		if err != nil {
			return c, err
		}
	}
	if keep > 0 {
		c.historyKeep = int64(keep)
	}
	if c.maxIdleConns == 0 || c.maxIdleConns > c.maxOpenConns {
		c.maxIdleConns = c.maxOpenConns
	}
	if p, ok := settings["table_prefix"]; ok {
		if !prefixRE.MatchString(p) {
			return c, errors.New(`setting "table_prefix": want at most 32 letters, digits and underscores, not starting with a digit`)
		}
		c.tablePrefix = p
	}
	return c, nil
}

// Store is a store.Store and store.Loader over a SQL database.
type Store struct {
	d       dialect
	db      *sql.DB
	cfg     config
	secrets []string // never in an error or a log line
	log     *slog.Logger
	q       queries

	closed   atomic.Bool
	life     context.Context // ends with Close
	stop     context.CancelFunc
	wake     chan struct{} // a token: this store committed
	feedDone chan struct{}

	wmu       sync.Mutex
	watchers  map[*watcher]struct{}
	delivered int64 // every revision up to it was offered to the watchers
	// epoch grows whenever delivered moves other than by publishing the
	// next revision (a Clear, a Load, history the feed found gone): a
	// feed round or a Watch that started before works from stale state.
	epoch int64
}

var (
	_ store.Store  = (*Store)(nil)
	_ store.Loader = (*Store)(nil)
	// storetest.Compacter, for the conformance suite's compaction test.
	_ interface {
		Compact(context.Context, int64) error
	} = (*Store)(nil)
)

// queries are the fixed statements, for the store's tables and dialect.
type queries struct {
	kv, meta, history, schema string // table names

	lockMeta, readMeta, updateMeta string
	get, deleteHistoryUpTo         string
	deleteAllHistory               string
}

func (s *Store) prepareQueries() {
	p := s.cfg.tablePrefix
	q := &s.q
	q.kv, q.meta, q.history, q.schema = p+"kv", p+"meta", p+"history", p+"schema"
	r := s.d.rebind
	q.lockMeta = r("SELECT rev, compacted FROM " + q.meta + " WHERE id = 1 FOR UPDATE")
	q.readMeta = r("SELECT rev, compacted FROM " + q.meta + " WHERE id = 1")
	q.updateMeta = r("UPDATE " + q.meta + " SET rev = ?, compacted = ? WHERE id = 1")
	q.get = r("SELECT val, create_rev, mod_rev FROM " + q.kv + " WHERE k = ?")
	q.deleteHistoryUpTo = r("DELETE FROM " + q.history + " WHERE rev <= ?")
	q.deleteAllHistory = "DELETE FROM " + q.history
}

// open opens the store of dialect d.
func open(ctx context.Context, d dialect, settings map[string]string) (*Store, error) {
	cfg, err := parseSettings(settings)
	if err != nil {
		return nil, fmt.Errorf("%s store: %w", d.name(), err)
	}
	s := &Store{
		d:        d,
		cfg:      cfg,
		secrets:  append([]string{cfg.dsn}, d.secrets(cfg.dsn)...),
		log:      slog.Default().With("store", d.name(), "table_prefix", cfg.tablePrefix),
		wake:     make(chan struct{}, 1),
		feedDone: make(chan struct{}),
		watchers: map[*watcher]struct{}{},
	}
	s.prepareQueries()
	db, err := d.openDB(cfg.dsn)
	if err != nil {
		return nil, s.fail(ctx, "open", err)
	}
	db.SetMaxOpenConns(cfg.maxOpenConns)
	db.SetMaxIdleConns(cfg.maxIdleConns)
	db.SetConnMaxLifetime(cfg.connMaxLifetime)
	s.db = db
	rev, err := s.migrate(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.delivered = rev
	s.life, s.stop = context.WithCancel(context.Background())
	go s.feed()
	return s, nil
}

// migrate creates the tables or checks and upgrades their schema, and
// returns the current revision.
func (s *Store) migrate(ctx context.Context) (int64, error) {
	octx, cancel := context.WithTimeout(ctx, s.cfg.opTimeout)
	defer cancel()
	if err := s.db.PingContext(octx); err != nil {
		return 0, s.fail(ctx, "connect", err)
	}
	stmts := s.d.createTables(s.cfg.tablePrefix)
	// The schema table first, to refuse a newer layout before touching
	// anything else.
	if _, err := s.db.ExecContext(octx, stmts[0]); err != nil {
		return 0, s.fail(ctx, "create table "+s.q.schema, err)
	}
	var version int
	err := s.db.QueryRowContext(octx, s.d.rebind("SELECT version FROM "+s.q.schema+" WHERE id = 1")).Scan(&version)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		version = 0
	case err != nil:
		return 0, s.fail(ctx, "read schema version", err)
	}
	if version > schemaVersion {
		return 0, fmt.Errorf("%s store: tables %s* have schema version %d, newer than this kcd knows (%d): upgrade kcd",
			s.d.name(), s.cfg.tablePrefix, version, schemaVersion)
	}
	// Version 1 is the first layout: creating it is the only upgrade so
	// far. A later version adds its steps here, each from the one before.
	for _, stmt := range stmts[1:] {
		if _, err := s.db.ExecContext(octx, stmt); err != nil {
			return 0, s.fail(ctx, "create tables", err)
		}
	}
	if _, err := s.db.ExecContext(octx, s.d.rebind(s.d.insertIgnore(s.q.meta, []string{"id", "rev", "compacted"})), 1, 0, 0); err != nil {
		return 0, s.fail(ctx, "create tables", err)
	}
	if version < schemaVersion {
		if _, err := s.db.ExecContext(octx, s.d.rebind(s.d.insertIgnore(s.q.schema, []string{"id", "version"})), 1, schemaVersion); err != nil {
			return 0, s.fail(ctx, "record schema version", err)
		}
		if _, err := s.db.ExecContext(octx, s.d.rebind("UPDATE "+s.q.schema+" SET version = ? WHERE id = 1 AND version < ?"), schemaVersion, schemaVersion); err != nil {
			return 0, s.fail(ctx, "record schema version", err)
		}
	}
	var rev, compacted int64
	if err := s.db.QueryRowContext(octx, s.q.readMeta).Scan(&rev, &compacted); err != nil {
		return 0, s.fail(ctx, "read revision", err)
	}
	return rev, nil
}

// scrubbed is an error whose message has the store's secrets removed; it
// unwraps to the original for errors.Is.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// scrub removes the DSN and the password from msg: those the driver
// parses out of the DSN, and those store.MaskString finds in it (also
// percent-encoded).
func (s *Store) scrub(msg string) string {
	msg = store.MaskString(msg, map[string]string{"dsn": s.cfg.dsn})
	secrets := slices.Clone(s.secrets)
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, v := range secrets {
		if len(v) >= 3 {
			msg = strings.ReplaceAll(msg, v, "[redacted]")
		}
	}
	return msg
}

// fail describes the failure of op. ctx is the caller's context: when it
// ended, the error wraps its error; when the operation's own timeout ran
// out, the error says so.
func (s *Store) fail(ctx context.Context, op string, err error) error {
	prefix := s.d.name() + " store: " + op
	switch {
	case errors.Is(err, store.ErrInvalid), errors.Is(err, store.ErrCompacted), errors.Is(err, store.ErrClosed):
		return fmt.Errorf("%s: %w", prefix, err)
	case s.closed.Load():
		return fmt.Errorf("%s: %w", prefix, store.ErrClosed)
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", prefix, ctx.Err())
	}
	clean := &scrubbed{msg: s.scrub(err.Error()), err: err}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: the database did not answer within op_timeout %v: %w", prefix, s.cfg.opTimeout, clean)
	}
	return fmt.Errorf("%s: %w", prefix, clean)
}

// enter refuses a call after Close or with an ended context.
func (s *Store) enter(ctx context.Context, op string) error {
	if s.closed.Load() {
		return fmt.Errorf("%s store: %s: %w", s.d.name(), op, store.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s store: %s: %w", s.d.name(), op, err)
	}
	return nil
}

// notify wakes the feed after a commit.
func (s *Store) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// commitError is a failure of COMMIT: the write may or may not have
// happened, so it is not tried again.
type commitError struct{ err error }

func (e *commitError) Error() string { return e.err.Error() }
func (e *commitError) Unwrap() error { return e.err }

// retryPause paces the attempts of one operation; see run.
const retryPause = 20 * time.Millisecond

// run runs fn under op_timeout. A failure before COMMIT leaves nothing
// behind (the transaction rolls back), so run tries fn again within
// op_timeout after a lost connection or a deadlock: a database restart
// then costs no failed call, though every pooled connection is broken
// (hence one attempt per pooled connection, and one more).
func (s *Store) run(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	if err := s.enter(ctx, op); err != nil {
		return err
	}
	octx, cancel := context.WithTimeout(ctx, s.cfg.opTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		err := fn(octx)
		if err == nil {
			return nil
		}
		if ce := (*commitError)(nil); errors.As(err, &ce) {
			return s.fail(ctx, op+" (commit: the write may or may not have happened)", ce.err)
		}
		if attempt > s.cfg.maxOpenConns || octx.Err() != nil || s.closed.Load() ||
			errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrCompacted) || !s.d.retryable(err) {
			return s.fail(ctx, op, err)
		}
		select {
		case <-time.After(min(time.Duration(attempt-1)*retryPause, 10*retryPause)):
		case <-octx.Done():
			return s.fail(ctx, op, err)
		}
	}
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (store.KV, bool, error) {
	if err := store.CheckKey(key); err != nil {
		if err := s.enter(ctx, "get"); err != nil {
			return store.KV{}, false, err
		}
		return store.KV{}, false, s.fail(ctx, "get", err)
	}
	var kv store.KV
	found := false
	err := s.run(ctx, "get", func(ctx context.Context) error {
		kv = store.KV{Key: key}
		err := s.db.QueryRowContext(ctx, s.q.get, []byte(key)).Scan(&kv.Value, &kv.CreateRevision, &kv.ModRevision)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		found = err == nil
		kv.Value = nonNil(kv.Value)
		return err
	})
	if err != nil || !found {
		return store.KV{}, false, err
	}
	return kv, true, nil
}

// Revision implements store.Store.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	rev, _, err := s.readMeta(ctx, "revision")
	return rev, err
}

// readMeta reads the current and the compacted revision.
func (s *Store) readMeta(ctx context.Context, op string) (rev, compacted int64, err error) {
	err = s.run(ctx, op, func(ctx context.Context) error {
		return s.db.QueryRowContext(ctx, s.q.readMeta).Scan(&rev, &compacted)
	})
	return rev, compacted, err
}

// prefixRange returns the bounds of the keys starting with prefix: lo
// inclusive, hi exclusive, hi nil when there is no upper bound.
func prefixRange(prefix string) (lo, hi []byte) {
	lo = []byte(prefix)
	hi = []byte(prefix)
	for i := len(hi) - 1; i >= 0; i-- {
		if hi[i] < 0xff {
			hi[i]++
			return lo, hi[:i+1]
		}
	}
	return lo, nil
}

// rangeCond returns the WHERE condition on column k for prefix and its
// arguments; "1 = 1" for the empty prefix.
func rangeCond(prefix string) (string, []any) {
	if prefix == "" {
		return "1 = 1", nil
	}
	lo, hi := prefixRange(prefix)
	if hi == nil {
		return "k >= ?", []any{lo}
	}
	return "(k >= ? AND k < ?)", []any{lo, hi}
}

// Scan implements store.Store.
func (s *Store) Scan(ctx context.Context, prefix string, limit int) ([]store.KV, int64, error) {
	if limit < 0 {
		if err := s.enter(ctx, "scan"); err != nil {
			return nil, 0, err
		}
		return nil, 0, s.fail(ctx, "scan", fmt.Errorf("%w: negative limit %d", store.ErrInvalid, limit))
	}
	cond, args := rangeCond(prefix)
	q := "SELECT k, val, create_rev, mod_rev FROM " + s.q.kv + " WHERE " + cond + " ORDER BY k"
	if limit > 0 {
		q += s.d.limit(limit)
	}
	q = s.d.rebind(q)
	var (
		kvs []store.KV
		rev int64
	)
	err := s.run(ctx, "scan", func(ctx context.Context) error {
		kvs = nil
		// One snapshot for the revision and the keys.
		tx, err := s.db.BeginTx(ctx, s.d.snapshot())
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var compacted int64
		if err := tx.QueryRowContext(ctx, s.q.readMeta).Scan(&rev, &compacted); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var kv store.KV
			var k []byte
			if err := rows.Scan(&k, &kv.Value, &kv.CreateRevision, &kv.ModRevision); err != nil {
				return err
			}
			kv.Value = nonNil(kv.Value)
			kv.Key = string(k)
			kvs = append(kvs, kv)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return nil, 0, err
	}
	return kvs, rev, nil
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, key string, value []byte) (int64, error) {
	rev, _, _, err := s.apply(ctx, "put", nil, []store.Op{store.Put(key, value)})
	return rev, err
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key string) (int64, bool, error) {
	rev, _, changed, err := s.apply(ctx, "delete", nil, []store.Op{store.Delete(key)})
	return rev, changed, err
}

// CompareAndSet implements store.Store.
func (s *Store) CompareAndSet(ctx context.Context, key string, expectModRev int64, value []byte) (int64, bool, error) {
	if expectModRev < 0 {
		if err := s.enter(ctx, "compare-and-set"); err != nil {
			return 0, false, err
		}
		return 0, false, s.fail(ctx, "compare-and-set", fmt.Errorf("%w: negative expected revision %d", store.ErrInvalid, expectModRev))
	}
	rev, ok, _, err := s.apply(ctx, "compare-and-set", []store.Cond{{Key: key, ModRevision: expectModRev}}, []store.Op{store.Put(key, value)})
	return rev, ok, err
}

// Batch implements store.Store.
func (s *Store) Batch(ctx context.Context, conds []store.Cond, ops []store.Op) (int64, bool, error) {
	rev, ok, _, err := s.apply(ctx, "batch", conds, ops)
	return rev, ok, err
}

// keyState is a key's row as a write transaction found it.
type keyState struct {
	exists      bool
	create, mod int64
}

// histRow is one event, as a row of the history table.
type histRow struct {
	del    bool
	key    string
	value  []byte
	create int64
}

func opName(del bool) string {
	if del {
		return "delete"
	}
	return "put"
}

// apply runs conds and ops as one transaction: it locks the revision,
// checks conds, applies ops in order and, when they changed something,
// writes the keys, their events and the new revision. It returns the
// resulting revision, whether conds held and whether anything changed.
func (s *Store) apply(ctx context.Context, op string, conds []store.Cond, ops []store.Op) (rev int64, ok, changed bool, err error) {
	if err := store.CheckBatch(conds, ops); err != nil {
		if err := s.enter(ctx, op); err != nil {
			return 0, false, false, err
		}
		return 0, false, false, s.fail(ctx, op, err)
	}
	err = s.run(ctx, op, func(ctx context.Context) error {
		var err error
		rev, ok, changed, err = s.applyTx(ctx, conds, ops)
		return err
	})
	if err != nil {
		return 0, false, false, err
	}
	if changed {
		s.notify()
	}
	return rev, ok, changed, nil
}

// applyTx is one attempt of apply.
func (s *Store) applyTx(ctx context.Context, conds []store.Cond, ops []store.Op) (rev int64, ok, changed bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, false, false, err
	}
	defer tx.Rollback()
	var cur, compacted int64
	if err := tx.QueryRowContext(ctx, s.q.lockMeta).Scan(&cur, &compacted); err != nil {
		return 0, false, false, err
	}
	// Every key the batch reads or writes, in first-seen order.
	var keys []string
	seen := make(map[string]bool, len(conds)+len(ops))
	for _, c := range conds {
		if !seen[c.Key] {
			seen[c.Key] = true
			keys = append(keys, c.Key)
		}
	}
	for _, o := range ops {
		if !seen[o.Key] {
			seen[o.Key] = true
			keys = append(keys, o.Key)
		}
	}
	state, err := s.readKeys(ctx, tx, keys)
	if err != nil {
		return 0, false, false, err
	}
	for _, c := range conds {
		st := state[c.Key]
		if (c.ModRevision == 0 && st.exists) || (c.ModRevision != 0 && (!st.exists || st.mod != c.ModRevision)) {
			return cur, false, false, nil
		}
	}
	rev = cur + 1
	type final struct {
		exists, touched bool
		create          int64
		value           []byte
	}
	fin := make(map[string]*final, len(ops))
	var order []string
	var events []histRow
	for _, o := range ops {
		f := fin[o.Key]
		if f == nil {
			st := state[o.Key]
			f = &final{exists: st.exists, create: st.create}
			fin[o.Key] = f
			order = append(order, o.Key)
		}
		if o.Type == store.OpPut {
			if !f.exists {
				f.create = rev
			}
			f.exists, f.touched, f.value = true, true, o.Value
			events = append(events, histRow{key: o.Key, value: o.Value, create: f.create})
			continue
		}
		if f.exists {
			events = append(events, histRow{del: true, key: o.Key, create: f.create})
			f.exists, f.touched = false, true
		}
	}
	if len(events) == 0 {
		return cur, true, false, nil
	}
	var dels [][]byte
	var puts [][]any
	for _, k := range order {
		f := fin[k]
		switch {
		case !f.touched:
		case f.exists:
			puts = append(puts, []any{[]byte(k), nonNil(f.value), f.create, rev})
		case state[k].exists:
			dels = append(dels, []byte(k))
		}
	}
	if err := s.deleteKeys(ctx, tx, dels); err != nil {
		return 0, false, false, err
	}
	if err := s.upsert(ctx, tx, puts); err != nil {
		return 0, false, false, err
	}
	if err := s.insertHistory(ctx, tx, rev, events); err != nil {
		return 0, false, false, err
	}
	if rev-compacted > s.cfg.historyKeep+trimSlack {
		to := min(rev-s.cfg.historyKeep, compacted+trimMax)
		if _, err := tx.ExecContext(ctx, s.q.deleteHistoryUpTo, to); err != nil {
			return 0, false, false, err
		}
		compacted = to
	}
	if _, err := tx.ExecContext(ctx, s.q.updateMeta, rev, compacted); err != nil {
		return 0, false, false, err
	}
	if err := tx.Commit(); err != nil {
		return 0, false, false, &commitError{err}
	}
	return rev, true, true, nil
}

// nonNil is b, or an empty value for nil: a value is written as an empty
// byte string, never NULL, and a NULL read (from a database that stores an
// empty value as NULL, such as Oracle) is an empty value.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// readKeys reads the rows of keys, locking them.
func (s *Store) readKeys(ctx context.Context, tx *sql.Tx, keys []string) (map[string]keyState, error) {
	state := make(map[string]keyState, len(keys))
	for chunk := range slices.Chunk(keys, s.d.maxRows()) {
		args := make([]any, len(chunk))
		for i, k := range chunk {
			args[i] = []byte(k)
		}
		q := "SELECT k, create_rev, mod_rev FROM " + s.q.kv + " WHERE k IN (" + placeholders(len(chunk)) + ") FOR UPDATE"
		rows, err := tx.QueryContext(ctx, s.d.rebind(q), args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var k []byte
			st := keyState{exists: true}
			if err := rows.Scan(&k, &st.create, &st.mod); err != nil {
				rows.Close()
				return nil, err
			}
			state[string(k)] = st
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return state, nil
}

func (s *Store) deleteKeys(ctx context.Context, tx *sql.Tx, keys [][]byte) error {
	for chunk := range slices.Chunk(keys, s.d.maxRows()) {
		args := make([]any, len(chunk))
		for i, k := range chunk {
			args[i] = k
		}
		q := "DELETE FROM " + s.q.kv + " WHERE k IN (" + placeholders(len(chunk)) + ")"
		if _, err := tx.ExecContext(ctx, s.d.rebind(q), args...); err != nil {
			return err
		}
	}
	return nil
}

// upsert writes kv rows (k, val, create_rev, mod_rev).
func (s *Store) upsert(ctx context.Context, tx *sql.Tx, rows [][]any) error {
	return s.execRows(ctx, tx, rows, 1, func(n int) string { return s.d.upsertKV(s.q.kv, n) })
}

func (s *Store) insertHistory(ctx context.Context, tx *sql.Tx, rev int64, events []histRow) error {
	rows := make([][]any, len(events))
	for i, ev := range events {
		rows[i] = []any{rev, i, opName(ev.del), []byte(ev.key), nonNil(ev.value), ev.create}
	}
	return s.execRows(ctx, tx, rows, 4, func(n int) string {
		return s.d.insertRows(s.q.history, []string{"rev", "seq", "op", "k", "val", "create_rev"}, n)
	})
}

// execRows runs multi-row statements for rows, at most maxRows rows and
// about stmtBytes of the byte column valueCol per statement.
func (s *Store) execRows(ctx context.Context, tx *sql.Tx, rows [][]any, valueCol int, stmt func(n int) string) error {
	for len(rows) > 0 {
		n, size := 0, 0
		for n < len(rows) && n < s.d.maxRows() {
			size += len(rows[n][valueCol].([]byte))
			if n > 0 && size > stmtBytes {
				break
			}
			n++
		}
		args := make([]any, 0, n*len(rows[0]))
		for _, r := range rows[:n] {
			args = append(args, r...)
		}
		if _, err := tx.ExecContext(ctx, s.d.rebind(stmt(n)), args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// Close implements store.Store: open watchers end with store.ErrClosed.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	s.stop()
	<-s.feedDone
	s.wmu.Lock()
	for w := range s.watchers {
		w.stop(store.ErrClosed)
	}
	clear(s.watchers)
	s.wmu.Unlock()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("%s store: close: %s", s.d.name(), s.scrub(err.Error()))
	}
	return nil
}
