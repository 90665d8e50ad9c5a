package connectstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/kcd-project/kcd/store"
)

// ErrFenced: a write carried a fence that no longer holds — the connector
// or task was assigned to another worker since this one got it — and the
// store refused it. The writer is a zombie and must stop, not retry.
var ErrFenced = errors.New("connectstore: write fenced: the assignment it was made under has moved on")

// Fence is the claim a worker writes under: conditions on the assignment
// keys the coordinator wrote when it gave the worker a connector or task.
// Every status, offset and task-config write of that connector or task
// carries them, and the store applies the write only while they hold. A
// nil Fence (a single worker with no coordinator) always holds.
type Fence []store.Cond

// fencedBatch applies ops in batches of the store's size limit, each
// under fence; a batch the fence refuses fails with ErrFenced.
func (c *Store) fencedBatch(ctx context.Context, fence Fence, ops []store.Op) error {
	per := store.MaxBatchOps - len(fence)
	if per <= 0 {
		return fmt.Errorf("%w: fence of %d conditions", store.ErrInvalid, len(fence))
	}
	for len(ops) > 0 {
		n := min(len(ops), per)
		_, ok, err := c.s.Batch(ctx, fence, ops[:n])
		if err != nil {
			return err
		}
		if !ok {
			return ErrFenced
		}
		ops = ops[n:]
	}
	return nil
}

// holds tells whether fence still holds, after a conditional write of
// which fence was a part failed.
func (c *Store) holds(ctx context.Context, fence Fence) (bool, error) {
	for _, cond := range fence {
		kv, found, err := c.s.Get(ctx, cond.Key)
		if err != nil {
			return false, err
		}
		if (cond.ModRevision == 0 && found) || (cond.ModRevision != 0 && (!found || kv.ModRevision != cond.ModRevision)) {
			return false, nil
		}
	}
	return true, nil
}
