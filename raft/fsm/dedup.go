package fsm

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/kcd-project/kcd/store"
)

// dedupIndex is the in-memory copy of the dedup bucket: the results of the
// most recent DedupRetain commands by request id, and their ids in log
// order, oldest first, which is the order they are forgotten in. Apply
// consults and updates it instead of searching the bucket, which it still
// writes, so that Open and Restore can rebuild it. Only Apply, Open and
// Restore use it, under applyMu.
//
// Every remembered command has a sequence number, counted from the first
// ever remembered: order[i] has base+i. The bucket holds the records in
// chunks of dedupChunk by sequence, chunk n holding n*dedupChunk onwards,
// and the meta bucket the sequence of the oldest live one (metaDedupHead):
// a command costs the bucket no write of its own, only a share of its
// chunk's, which Apply writes once per call (see writeTail).
type dedupIndex struct {
	results map[uint64]Result
	order   []uint64 // ids in log order; order[head:] are live
	head    int
	base    uint64 // the sequence of order[0]

	// tail is the encoding of the last, unfilled chunk (its records from
	// the chunk's start, forgotten ones included), and dirty tells whether
	// it changed since it was last written.
	tail  []byte
	dirty bool
}

// dedupChunk is how many records one dedup bucket record holds. A chunk
// is rewritten by every Apply that adds to it, so it stays small.
const dedupChunk = 64

// dedupRecord is the size of one record in a chunk: the id, then the
// result's index, revision and flags.
const dedupRecord = 8 + dedupResult

// dedupResult is the size of an encoded result: index, revision, flags.
const dedupResult = 17

func chunkKey(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// headSeq is the sequence of the oldest live record; nextSeq that of the
// next one.
func (d *dedupIndex) headSeq() uint64 { return d.base + uint64(d.head) }
func (d *dedupIndex) nextSeq() uint64 { return d.base + uint64(len(d.order)) }

// loadDedup reads the dedup bucket and the oldest live sequence.
func loadDedup(tx *bolt.Tx) (*dedupIndex, error) {
	head := getUint(tx.Bucket(bucketMeta), metaDedupHead)
	d := &dedupIndex{results: map[uint64]Result{}, base: head}
	next := head - head%dedupChunk // the first chunk's start
	err := tx.Bucket(bucketDedup).ForEach(func(k, v []byte) error {
		if len(k) != 8 || len(v) == 0 || len(v)%dedupRecord != 0 || len(v) > dedupChunk*dedupRecord {
			return fmt.Errorf("corrupt dedup chunk %x (%d bytes)", k, len(v))
		}
		start := binary.BigEndian.Uint64(k) * dedupChunk
		if start != next {
			return fmt.Errorf("dedup chunk %x: starts at %d, want %d", k, start, next)
		}
		if len(d.tail) > 0 {
			return fmt.Errorf("dedup chunk %x follows an unfilled one", k)
		}
		for i := 0; i < len(v); i += dedupRecord {
			seq := start + uint64(i/dedupRecord)
			if seq < head {
				continue
			}
			r := decodeDedup(binary.BigEndian.Uint64(v[i:]), v[i+8:i+dedupRecord])
			d.results[r.ID] = r
			d.order = append(d.order, r.ID)
		}
		next = start + uint64(len(v)/dedupRecord)
		if len(v) < dedupChunk*dedupRecord {
			d.tail = append(make([]byte, 0, dedupChunk*dedupRecord), v...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if next < head {
		return nil, fmt.Errorf("dedup chunks end at %d, before the oldest live record %d", next, head)
	}
	return d, nil
}

func (d *dedupIndex) len() int { return len(d.order) - d.head }

// add records r as the newest.
func (d *dedupIndex) add(r Result) {
	d.results[r.ID] = r
	if d.head > 0 && d.head >= len(d.order)/2 {
		n := copy(d.order, d.order[d.head:])
		d.order, d.base, d.head = d.order[:n], d.base+uint64(d.head), 0
	}
	d.order = append(d.order, r.ID)
	if d.tail == nil {
		d.tail = make([]byte, 0, dedupChunk*dedupRecord)
	}
	d.tail = appendDedupRecord(d.tail, r)
	d.dirty = true
}

// oldest forgets the oldest id and returns it.
func (d *dedupIndex) oldest() uint64 {
	id := d.order[d.head]
	d.head++
	delete(d.results, id)
	return id
}

// writeFull writes the tail chunk to b once add has filled it; the next
// add starts a new one.
func (d *dedupIndex) writeFull(b *bolt.Bucket) error {
	if len(d.tail) < dedupChunk*dedupRecord {
		return nil
	}
	return d.writeTail(b)
}

// writeTail writes the tail chunk to b if it changed since it was last
// written: Apply calls it once at its end.
func (d *dedupIndex) writeTail(b *bolt.Bucket) error {
	if !d.dirty {
		return nil
	}
	n := (d.nextSeq() - 1) / dedupChunk // the chunk of the newest record
	// bbolt keeps the value until commit: give it its own copy.
	if err := b.Put(chunkKey(n), slices.Clone(d.tail)); err != nil {
		return err
	}
	d.dirty = false
	if len(d.tail) == dedupChunk*dedupRecord {
		d.tail = d.tail[:0]
	}
	return nil
}

// forget deletes the chunk whose last record was just forgotten, if one was.
func (d *dedupIndex) forget(b *bolt.Bucket) error {
	if h := d.headSeq(); h%dedupChunk == 0 {
		return b.Delete(chunkKey(h/dedupChunk - 1))
	}
	return nil
}

// appendDedupRecord appends r as a record of a chunk: its id, then its
// result.
func appendDedupRecord(dst []byte, r Result) []byte {
	return appendDedup(binary.BigEndian.AppendUint64(dst, r.ID), r)
}

// appendDedup appends r's result: index, revision, flags.
func appendDedup(dst []byte, r Result) []byte {
	dst = binary.BigEndian.AppendUint64(dst, r.Index)
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.Rev))
	var flags byte
	if r.OK {
		flags |= 1
	}
	if r.Deleted {
		flags |= 2
	}
	switch r.refused {
	case refusedFrozen:
		flags |= 4
	case refusedBelow:
		flags |= 8
	}
	return append(dst, flags)
}

func decodeDedup(id uint64, v []byte) Result {
	r := Result{
		ID:      id,
		Index:   binary.BigEndian.Uint64(v[0:8]),
		Rev:     int64(binary.BigEndian.Uint64(v[8:16])),
		OK:      v[16]&1 != 0,
		Deleted: v[16]&2 != 0,
	}
	switch {
	case v[16]&4 != 0:
		r.refused, r.Err = refusedFrozen, ErrFrozen
	case v[16]&8 != 0:
		r.refused, r.Err = refusedBelow, fmt.Errorf("%w: load below the current revision", store.ErrInvalid)
	}
	return r
}

// upgradeDedupV3 moves a format 3 file's ids bucket (a record per id,
// keyed by it, holding its result) into dedup chunks in log order.
func upgradeDedupV3(tx *bolt.Tx, meta *bolt.Bucket) error {
	old := tx.Bucket(bucketIDsV3)
	var all []Result
	err := old.ForEach(func(k, v []byte) error {
		if len(k) != 8 || len(v) != dedupResult {
			return fmt.Errorf("corrupt id record %x=%x", k, v)
		}
		all = append(all, decodeDedup(binary.BigEndian.Uint64(k), v))
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(all, func(a, b Result) int { return cmp.Compare(a.Index, b.Index) })
	if err := tx.DeleteBucket(bucketIDsV3); err != nil {
		return err
	}
	b, err := tx.CreateBucket(bucketDedup)
	if err != nil {
		return err
	}
	for n := 0; n*dedupChunk < len(all); n++ {
		var v []byte
		for _, r := range all[n*dedupChunk : min(len(all), (n+1)*dedupChunk)] {
			v = appendDedupRecord(v, r)
		}
		if err := b.Put(chunkKey(uint64(n)), v); err != nil {
			return err
		}
	}
	return putUint(meta, metaDedupHead, 0)
}
