package fsm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	bolt "go.etcd.io/bbolt"

	"github.com/kcd-project/kcd/store"
)

// StateHash is a digest of the key space as of an applied index: every
// key, its revisions and value, the store revision, the compacted
// revision and the freeze state. Members that applied the same log up to
// Index have the same Hash. History and the remembered request ids are left out: their records
// are laid out differently in a file converted from an older format.
type StateHash struct {
	Index    uint64
	Revision int64
	Hash     uint32
	Keys     int
}

// ErrHashAborted ends a hash whose state was replaced (Restore) or closed
// while it ran.
var ErrHashAborted = errors.New("fsm: state hash aborted: the state was replaced or closed")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// HashView is a read view of the state at the applied index it was taken
// at, for StateHash. It holds a bbolt read transaction: Apply goes on
// meanwhile (it waits for it only when bbolt must grow its mapping past
// the initial one), and a Restore or Close aborts it.
type HashView struct {
	f     *FSM
	tx    *bolt.Tx
	epoch uint64
	index uint64
	done  bool
}

// ViewForHash takes a view of the state as it is now, at AppliedIndex: the
// caller makes sure no Apply runs meanwhile (the Raft node calls it from
// its applier, between Applies). It commits the open write transaction
// (Options.CommitInterval) so that the view sees everything applied.
// Sum the view, from any goroutine, then Close it.
func (f *FSM) ViewForHash() (v *HashView, err error) {
	defer recoverDamage(f.path, &err)
	f.dbMu.RLock()
	release := true
	defer func() {
		if release {
			f.dbMu.RUnlock()
		}
	}()
	if f.db == nil {
		return nil, fmt.Errorf("fsm: hash: %w", store.ErrClosed)
	}
	f.txMu.Lock()
	err = f.commitLocked()
	f.txMu.Unlock()
	if err != nil {
		return nil, err
	}
	tx, err := f.db.Begin(false)
	if err != nil {
		return nil, fmt.Errorf("fsm: hash: %w", err)
	}
	release = false // until Close
	return &HashView{f: f, tx: tx, epoch: f.epoch.Load(), index: f.applied.Load()}, nil
}

// Index is the applied index the view shows.
func (v *HashView) Index() uint64 { return v.index }

// hashYield is how many keys Sum hashes between looks at ctx and at the
// state being replaced.
const hashYield = 1024

// Sum hashes the view's key space.
func (v *HashView) Sum(ctx context.Context) (h StateHash, err error) {
	defer recoverDamage(v.f.path, &err)
	meta, kv := v.tx.Bucket(bucketMeta), v.tx.Bucket(bucketKV)
	if meta == nil || kv == nil {
		return h, errors.New("fsm: hash: state file lacks a bucket")
	}
	h.Index = getUint(meta, metaApplied)
	h.Revision = int64(getUint(meta, metaRevision))
	var buf []byte
	buf = binary.BigEndian.AppendUint64(buf, uint64(h.Revision))
	buf = binary.BigEndian.AppendUint64(buf, getUint(meta, metaCompacted))
	// The freeze state, only while frozen: the hash of a store never
	// frozen stays what older versions compute.
	if fr := meta.Get(metaFrozen); fr != nil {
		buf = append(buf, "frozen"...)
		buf = appendBytes(buf, fr)
	}
	sum := crc32.Update(0, castagnoli, buf)
	c := kv.Cursor()
	for k, val := c.First(); k != nil; k, val = c.Next() {
		if h.Keys%hashYield == 0 {
			if err := ctx.Err(); err != nil {
				return h, err
			}
			if v.f.epoch.Load() != v.epoch {
				return h, ErrHashAborted
			}
		}
		h.Keys++
		buf = binary.AppendUvarint(buf[:0], uint64(len(k)))
		buf = append(buf, k...)
		buf = binary.AppendUvarint(buf, uint64(len(val)))
		sum = crc32.Update(crc32.Update(sum, castagnoli, buf), castagnoli, val)
	}
	h.Hash = sum
	return h, nil
}

// Close ends the view.
func (v *HashView) Close() {
	if v.done {
		return
	}
	v.done = true
	func() {
		defer func() { _ = recover() }()
		_ = v.tx.Rollback()
	}()
	v.f.dbMu.RUnlock()
}

// Fence makes every later read (Get, Scan, Revision, Watch) fail with err
// and ends every watcher with it, while Apply goes on: for a state found to
// differ from the other members', which must no longer be served.
func (f *FSM) Fence(err error) {
	f.fence.Store(&err)
	f.wmu.Lock()
	f.stopWatchersLocked(err)
	f.wmu.Unlock()
}

// fenced is the error Fence set, or nil.
func (f *FSM) fenced() error {
	if p := f.fence.Load(); p != nil {
		return *p
	}
	return nil
}
