package daemon

import (
	"context"
	"fmt"
	"strings"

	"github.com/kcd-project/kcd/store"
)

// guardedStore is the store as the REST API serves it: writes under
// reservedPrefix (the cluster's own settings, such as its join token) are
// refused, so that REST access cannot replace the join credential.
type guardedStore struct {
	store.Store
}

func guardStore(s store.Store) store.Store { return guardedStore{s} }

func reserved(key string) error {
	if strings.HasPrefix(key, reservedPrefix) {
		return fmt.Errorf("%w: keys under %s are kept by kcd and cannot be changed through the API", store.ErrInvalid, reservedPrefix)
	}
	return nil
}

func (g guardedStore) Put(ctx context.Context, key string, value []byte) (int64, error) {
	if err := reserved(key); err != nil {
		return 0, err
	}
	return g.Store.Put(ctx, key, value)
}

func (g guardedStore) Delete(ctx context.Context, key string) (int64, bool, error) {
	if err := reserved(key); err != nil {
		return 0, false, err
	}
	return g.Store.Delete(ctx, key)
}

func (g guardedStore) CompareAndSet(ctx context.Context, key string, expectModRev int64, value []byte) (int64, bool, error) {
	if err := reserved(key); err != nil {
		return 0, false, err
	}
	return g.Store.CompareAndSet(ctx, key, expectModRev, value)
}

func (g guardedStore) Batch(ctx context.Context, conds []store.Cond, ops []store.Op) (int64, bool, error) {
	for _, op := range ops {
		if err := reserved(op.Key); err != nil {
			return 0, false, err
		}
	}
	return g.Store.Batch(ctx, conds, ops)
}

// Compact passes compaction through to a store that has it (the REST store
// API offers it only then).
func (g guardedStore) Compact(ctx context.Context, rev int64) error {
	c, ok := g.Store.(interface {
		Compact(context.Context, int64) error
	})
	if !ok {
		return fmt.Errorf("%w: this store does not compact", store.ErrInvalid)
	}
	return c.Compact(ctx, rev)
}
