package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/kcd-project/kcd/store"
)

// writeTx runs fn in a transaction holding the revision lock, with the
// current and compacted revisions, and commits.
func (s *Store) writeTx(ctx context.Context, op string, fn func(ctx context.Context, tx *sql.Tx, cur, compacted int64) error) error {
	if err := s.enter(ctx, op); err != nil {
		return err
	}
	octx, cancel := context.WithTimeout(ctx, s.cfg.opTimeout)
	defer cancel()
	tx, err := s.db.BeginTx(octx, nil)
	if err != nil {
		return s.fail(ctx, op, err)
	}
	defer tx.Rollback()
	var cur, compacted int64
	if err := tx.QueryRowContext(octx, s.q.lockMeta).Scan(&cur, &compacted); err != nil {
		return s.fail(ctx, op, err)
	}
	if err := fn(octx, tx, cur, compacted); err != nil {
		return s.fail(ctx, op, err)
	}
	if err := tx.Commit(); err != nil {
		return s.fail(ctx, op+" (commit)", err)
	}
	s.notify()
	return nil
}

// Compact drops the watch history of revisions up to and including rev
// (storetest.Compacter); a Watch from below rev then fails with
// store.ErrCompacted.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	if rev < 0 {
		return s.fail(ctx, "compact", fmt.Errorf("%w: negative revision %d", store.ErrInvalid, rev))
	}
	return s.writeTx(ctx, "compact", func(ctx context.Context, tx *sql.Tx, cur, compacted int64) error {
		if rev > cur {
			return fmt.Errorf("%w: compact revision %d is beyond the current revision %d", store.ErrInvalid, rev, cur)
		}
		if rev <= compacted {
			return nil
		}
		if _, err := tx.ExecContext(ctx, s.q.deleteHistoryUpTo, rev); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q.updateMeta, cur, rev)
		return err
	})
}

// Clear implements store.Loader: it removes every key outside the
// prefixes in keep and all history, and sets the revision to 0.
func (s *Store) Clear(ctx context.Context, keep ...string) error {
	var conds []string
	var args []any
	for _, p := range keep {
		if p == "" {
			conds = []string{"1 = 1"}
			args = nil
			break
		}
		c, a := rangeCond(p)
		conds = append(conds, c)
		args = append(args, a...)
	}
	q := "DELETE FROM " + s.q.kv
	if len(conds) > 0 {
		q += " WHERE NOT (" + strings.Join(conds, " OR ") + ")"
	}
	return s.writeTx(ctx, "clear", func(ctx context.Context, tx *sql.Tx, _, _ int64) error {
		if _, err := tx.ExecContext(ctx, s.d.rebind(q), args...); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q.deleteAllHistory); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q.updateMeta, 0, 0)
		return err
	})
}

// validLoad checks a Load against the store's limits.
func validLoad(rev int64, kvs []store.KV, deleted []string) error {
	if rev < 0 {
		return fmt.Errorf("%w: negative revision %d", store.ErrInvalid, rev)
	}
	if n := len(kvs) + len(deleted); n > store.MaxBatchOps {
		return fmt.Errorf("%w: load of %d keys exceeds %d", store.ErrInvalid, n, store.MaxBatchOps)
	}
	size := 0
	for i, kv := range kvs {
		if err := validPut(kv.Key, kv.Value); err != nil {
			return fmt.Errorf("kv %d: %w", i, err)
		}
		if kv.CreateRevision < 1 || kv.ModRevision < kv.CreateRevision || kv.ModRevision > rev {
			return fmt.Errorf("kv %d: %w: revisions create %d mod %d at load revision %d",
				i, store.ErrInvalid, kv.CreateRevision, kv.ModRevision, rev)
		}
		size += len(kv.Key) + len(kv.Value)
	}
	for i, k := range deleted {
		if err := validKey(k); err != nil {
			return fmt.Errorf("deleted %d: %w", i, err)
		}
		size += len(k)
	}
	if size > store.MaxLoadBytes && !(len(kvs) == 1 && len(deleted) == 0) {
		return fmt.Errorf("%w: load of %d bytes exceeds %d", store.ErrInvalid, size, store.MaxLoadBytes)
	}
	return nil
}

// Load implements store.Loader: kvs keep their revisions, the keys of
// deleted go, the revision becomes rev and the history starts there, in
// one transaction.
func (s *Store) Load(ctx context.Context, rev int64, kvs []store.KV, deleted []string) error {
	if err := s.enter(ctx, "load"); err != nil {
		return err
	}
	if err := validLoad(rev, kvs, deleted); err != nil {
		return s.fail(ctx, "load", err)
	}
	return s.writeTx(ctx, "load", func(ctx context.Context, tx *sql.Tx, cur, _ int64) error {
		if rev < cur {
			return fmt.Errorf("%w: load at revision %d below the current revision %d", store.ErrInvalid, rev, cur)
		}
		dels := make([][]byte, len(deleted))
		for i, k := range deleted {
			dels[i] = []byte(k)
		}
		if err := s.deleteKeys(ctx, tx, dels); err != nil {
			return err
		}
		// The last of a key's KVs wins, as it would in a Batch.
		last := make(map[string]int, len(kvs))
		for i, kv := range kvs {
			last[kv.Key] = i
		}
		rows := make([][]any, 0, len(kvs))
		for i, kv := range kvs {
			if last[kv.Key] == i {
				rows = append(rows, []any{[]byte(kv.Key), nonNil(kv.Value), kv.CreateRevision, kv.ModRevision})
			}
		}
		if err := s.upsert(ctx, tx, rows); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q.deleteAllHistory); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q.updateMeta, rev, rev)
		return err
	})
}
