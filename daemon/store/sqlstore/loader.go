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
	err := s.run(ctx, op, func(ctx context.Context) error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var cur, compacted int64
		if err := tx.QueryRowContext(ctx, s.q.lockMeta).Scan(&cur, &compacted); err != nil {
			return err
		}
		if err := fn(ctx, tx, cur, compacted); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return &commitError{err}
		}
		return nil
	})
	if err != nil {
		return err
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
// prefixes in keep and all history. Without keep the revision goes back to
// 0; with keep it stays, and history starts after it.
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
	var rev int64
	return s.resetting(ctx, "clear", &rev, func(ctx context.Context, tx *sql.Tx, cur, _ int64) error {
		if _, err := tx.ExecContext(ctx, s.d.rebind(q), args...); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q.deleteAllHistory); err != nil {
			return err
		}
		rev = 0
		if len(keep) > 0 {
			rev = cur
		}
		_, err := tx.ExecContext(ctx, s.q.updateMeta, rev, rev)
		return err
	})
}

// resetting runs a Clear or a Load: fn leaves the revision at *rev with no
// history. The feed moves there with it, and every watcher ends with
// store.ErrCompacted but one that has nothing to miss: it started at *rev
// and the revision did not go back. Holding the watchers' lock throughout,
// no Watch starts from the state before and no feed round publishes it
// after.
func (s *Store) resetting(ctx context.Context, op string, rev *int64, fn func(ctx context.Context, tx *sql.Tx, cur, compacted int64) error) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var before int64
	err := s.writeTx(ctx, op, func(ctx context.Context, tx *sql.Tx, cur, compacted int64) error {
		before = cur
		return fn(ctx, tx, cur, compacted)
	})
	if err != nil {
		return err
	}
	s.moveLocked(*rev, func(after int64) bool { return after == *rev && *rev >= before },
		fmt.Errorf("%w: the store was cleared or loaded (%s)", store.ErrCompacted, op))
	return nil
}

// Load implements store.Loader: kvs keep their revisions, the keys of
// deleted go, the revision becomes rev and the history starts there, in
// one transaction.
func (s *Store) Load(ctx context.Context, rev int64, kvs []store.KV, deleted []string) error {
	if err := s.enter(ctx, "load"); err != nil {
		return err
	}
	if err := store.CheckLoad(rev, kvs, deleted); err != nil {
		return s.fail(ctx, "load", err)
	}
	loaded := rev
	return s.resetting(ctx, "load", &loaded, func(ctx context.Context, tx *sql.Tx, cur, _ int64) error {
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
