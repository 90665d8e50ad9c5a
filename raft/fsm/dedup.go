package fsm

import (
	"encoding/binary"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// dedupIndex is the in-memory copy of the ids bucket: the results of the
// most recent DedupRetain commands by request id, and their ids in log
// order, oldest first, which is the order they are forgotten in. Apply
// consults and updates it instead of searching the bucket, which it still
// writes, so that Open and Restore can rebuild it. Only Apply, Open and
// Restore use it, under applyMu.
type dedupIndex struct {
	results map[uint64]Result
	order   []uint64 // ids in log order; order[head:] are live
	head    int
}

// loadDedup reads the ids bucket: every record holds its entry's index,
// which gives the log order back.
func loadDedup(tx *bolt.Tx) (*dedupIndex, error) {
	d := &dedupIndex{results: map[uint64]Result{}}
	type idAt struct{ id, index uint64 }
	var all []idAt
	err := tx.Bucket(bucketIDs).ForEach(func(k, v []byte) error {
		if len(k) != 8 || len(v) != dedupRecord {
			return fmt.Errorf("corrupt id record %x=%x", k, v)
		}
		r := decodeDedup(binary.BigEndian.Uint64(k), v)
		d.results[r.ID] = r
		all = append(all, idAt{r.ID, r.Index})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b idAt) int {
		switch {
		case a.index < b.index:
			return -1
		case a.index > b.index:
			return 1
		}
		return 0
	})
	d.order = make([]uint64, len(all))
	for i, x := range all {
		d.order[i] = x.id
	}
	return d, nil
}

func (d *dedupIndex) len() int { return len(d.order) - d.head }

// add records r as the newest.
func (d *dedupIndex) add(r Result) {
	d.results[r.ID] = r
	if d.head > 0 && d.head >= len(d.order)/2 {
		n := copy(d.order, d.order[d.head:])
		d.order, d.head = d.order[:n], 0
	}
	d.order = append(d.order, r.ID)
}

// oldest forgets the oldest id and returns it.
func (d *dedupIndex) oldest() uint64 {
	id := d.order[d.head]
	d.head++
	delete(d.results, id)
	return id
}

// dedupRecord is the size of an ids record: index, revision, flags.
const dedupRecord = 17

func encodeDedup(r Result) []byte {
	v := make([]byte, dedupRecord)
	binary.BigEndian.PutUint64(v[0:8], r.Index)
	binary.BigEndian.PutUint64(v[8:16], uint64(r.Rev))
	if r.OK {
		v[16] |= 1
	}
	if r.Deleted {
		v[16] |= 2
	}
	return v
}

func decodeDedup(id uint64, v []byte) Result {
	return Result{
		ID:      id,
		Index:   binary.BigEndian.Uint64(v[0:8]),
		Rev:     int64(binary.BigEndian.Uint64(v[8:16])),
		OK:      v[16]&1 != 0,
		Deleted: v[16]&2 != 0,
	}
}
