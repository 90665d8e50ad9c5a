package fsm

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/kcd-project/kcd/store"
)

// The history bucket holds a record per Raft entry that made revisions:
// keyed by the last of them (revKey), it holds them all, in order, each as
// its events (appendEvents). One record per entry rather than per revision
// saves a group of many commands a bbolt write and a deletion per command;
// the entries are the same on every member, and so are the records.
//
// A record is a uvarint count of revisions, then each revision's events as
// a uvarint length and bytes; the revisions are consecutive, ending at the
// key. History is contiguous: each record starts after the one before.
// Trimming (compacted, in the meta bucket) is per revision, as ever; a
// record goes once every revision in it is trimmed, and revisions of a
// record that are trimmed already are never read.

// recordIndex is the in-memory list of the history records' keys, oldest
// first, which tells Apply which records trimming deletes without looking
// for them in the file. It holds one key per record, at most HistoryRetain
// and one more (each record holds a revision at least). Only Apply, Open
// and Restore use it, under applyMu.
type recordIndex struct {
	keys []int64 // keys[head:] are the records'
	head int
}

// loadRecords reads the keys of the history bucket.
func loadRecords(tx *bolt.Tx) (*recordIndex, error) {
	r := &recordIndex{}
	c := tx.Bucket(bucketHistory).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) != 8 {
			return nil, fmt.Errorf("corrupt history key %x", k)
		}
		rev := int64(binary.BigEndian.Uint64(k))
		if n := len(r.keys); n > 0 && rev <= r.keys[n-1] {
			return nil, fmt.Errorf("history key %d after %d", rev, r.keys[n-1])
		}
		r.keys = append(r.keys, rev)
	}
	return r, nil
}

func (r *recordIndex) add(last int64) {
	if r.head > 0 && r.head >= len(r.keys)/2 {
		n := copy(r.keys, r.keys[r.head:])
		r.keys, r.head = r.keys[:n], 0
	}
	r.keys = append(r.keys, last)
}

// oldest is the key of the oldest record.
func (r *recordIndex) oldest() (int64, bool) {
	if r.head == len(r.keys) {
		return 0, false
	}
	return r.keys[r.head], true
}

func (r *recordIndex) drop() { r.head++ }

// historyRecord gathers the revisions of one entry for its record.
type historyRecord struct {
	revs    int
	buf     []byte // each revision's events, length first
	scratch []byte // one revision's events
}

func (h *historyRecord) add(evs []store.Event) {
	h.scratch = appendEvents(h.scratch[:0], evs)
	h.buf = binary.AppendUvarint(h.buf, uint64(len(h.scratch)))
	h.buf = append(h.buf, h.scratch...)
	h.revs++
}

// take returns the record of the revisions added since the last take, nil
// when there were none.
func (h *historyRecord) take() []byte {
	if h.revs == 0 {
		return nil
	}
	rec := make([]byte, 0, binary.MaxVarintLen64+len(h.buf))
	rec = binary.AppendUvarint(rec, uint64(h.revs))
	rec = append(rec, h.buf...)
	h.revs, h.buf = 0, h.buf[:0]
	return rec
}

// eachRevision calls fn with each revision of the history record rec, whose
// key is last, from the revision from on, until fn returns false.
func eachRevision(rec []byte, last, from int64, fn func(rev int64, events []byte) (bool, error)) error {
	d := decoder{buf: rec}
	n, err := d.count(2)
	if err != nil {
		return err
	}
	first := last - int64(n) + 1
	if n == 0 || first < 1 {
		return fmt.Errorf("record of %d revisions ending at %d", n, last)
	}
	for rev := first; rev <= last; rev++ {
		evs, err := d.raw()
		if err != nil {
			return fmt.Errorf("revision %d: %w", rev, err)
		}
		if rev < from {
			continue
		}
		more, err := fn(rev, evs)
		if err != nil || !more {
			return err
		}
	}
	if d.off != len(rec) {
		return fmt.Errorf("%d trailing bytes", len(rec)-d.off)
	}
	return nil
}

// upgradeHistoryV3 converts a format 3 history, a record per revision
// holding its events, to records of one revision each.
func upgradeHistoryV3(tx *bolt.Tx) error {
	b := tx.Bucket(bucketHistory)
	type kv struct{ k, v []byte }
	var all []kv
	err := b.ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			return fmt.Errorf("corrupt history key %x", k)
		}
		rec := binary.AppendUvarint(nil, 1)
		rec = appendBytes(rec, v)
		all = append(all, kv{append([]byte{}, k...), rec})
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range all {
		if err := b.Put(r.k, r.v); err != nil {
			return err
		}
	}
	return nil
}
