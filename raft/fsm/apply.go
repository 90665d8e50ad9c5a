package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kcd-project/kcd/store"
)

// Apply applies committed entries in log order and returns the results of
// the commands among them. Entries at or below AppliedIndex are skipped; the
// rest must follow it without a gap. All of them, and the index and term of
// the last, are committed in one bbolt transaction.
//
// An invalid command does not make Apply fail: its Result says why, it
// changes nothing, and its index is applied like any other. An error from
// Apply itself means the disk failed or the caller broke the contract (a
// gap); the node should stop, since it can no longer follow the log. After
// a disk failure every later Apply fails too: the file was rolled back to
// its last commit, which the state in memory (applied index, ids) no longer
// matches; Open again to go on from the file.
func (f *FSM) Apply(entries []Entry) ([]Result, error) {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	f.dbMu.RLock()
	defer f.dbMu.RUnlock()
	if f.db == nil {
		return nil, fmt.Errorf("fsm: apply: %w", store.ErrClosed)
	}

	applied := f.applied.Load()
	for len(entries) > 0 && entries[0].Index <= applied {
		entries = entries[1:]
	}
	if len(entries) == 0 {
		return nil, nil
	}
	for i, e := range entries {
		if e.Index != applied+1+uint64(i) {
			return nil, fmt.Errorf("fsm: apply: entry index %d follows %d: not contiguous", e.Index, applied+uint64(i))
		}
	}
	last := entries[len(entries)-1]

	a := applier{
		dedup:   f.dedup,
		records: f.records,
		retain:  f.opts.HistoryRetain,
		events:  f.events[:0],
		revs:    f.revs[:0],
	}
	results := make([]Result, 0, len(entries))
	err := f.applyTx(func(tx *bolt.Tx) error {
		if err := a.begin(tx); err != nil {
			return err
		}
		for _, e := range entries {
			if len(e.Data) == 0 {
				continue
			}
			if isGroup(e.Data) {
				err := eachInGroup(e.Data, func(cmd []byte) error {
					r, err := a.apply(e.Index, cmd)
					results = append(results, r)
					return err
				})
				if errors.Is(err, errDecode) {
					results = append(results, Result{Index: e.Index, Rev: a.rev, Err: fmt.Errorf("%w: %w", store.ErrInvalid, err)})
				} else if err != nil {
					return fmt.Errorf("entry %d: %w", e.Index, err)
				}
			} else {
				r, err := a.apply(e.Index, e.Data)
				if err != nil {
					return fmt.Errorf("entry %d: %w", e.Index, err)
				}
				results = append(results, r)
			}
			if err := a.endEntry(); err != nil {
				return fmt.Errorf("entry %d: %w", e.Index, err)
			}
		}
		return a.end(last.Index, last.Term)
	}, entries)
	defer func() {
		// Keep the scratch memory, not what it points to, and not at all
		// once a large call has grown it.
		clear(a.events)
		clear(a.revs)
		f.events, f.revs = nil, nil
		if cap(a.events) <= maxScratch && cap(a.revs) <= maxScratch {
			f.events, f.revs = a.events[:0], a.revs[:0]
		}
	}()
	if err != nil {
		return nil, fmt.Errorf("fsm: apply entries %d-%d: %w", entries[0].Index, last.Index, err)
	}
	f.applied.Store(last.Index)
	f.publish(a.rev, a.compacted, a.reset, a.revs)
	return results, nil
}

// applyTx runs fn, which applies entries, in a write transaction: its own,
// committed at once, or without Options.CommitInterval the open one, which
// it opens and commits when due. An error rolls back everything the open
// transaction held (the node must stop: the file no longer follows the
// applied index, and a restart replays the log from what it does hold).
func (f *FSM) applyTx(apply func(*bolt.Tx) error, entries []Entry) error {
	// A panic of bbolt's on a damaged page ends the transaction as an
	// error would (db.Update rolls its own back).
	fn := func(tx *bolt.Tx) (err error) {
		defer recoverDamage(f.path, &err)
		return apply(tx)
	}
	if f.opts.CommitInterval == 0 {
		// Reads go on in their own transactions meanwhile: txMu is not
		// held across the commit and its fsync.
		f.txMu.RLock()
		broken := f.commitErr
		f.txMu.RUnlock()
		if broken != nil {
			return broken
		}
		if err := f.db.Update(fn); err != nil {
			// The ids in memory (dedupIndex) no longer match the file.
			f.txMu.Lock()
			f.commitErr = fmt.Errorf("fsm: an earlier apply failed: %w", err)
			f.txMu.Unlock()
			return err
		}
		return nil
	}
	f.txMu.Lock()
	defer f.txMu.Unlock()
	if f.commitErr != nil {
		return f.commitErr
	}
	if f.wtx == nil {
		tx, err := f.db.Begin(true)
		if err != nil {
			return err
		}
		f.wtx = tx
	}
	if err := fn(f.wtx); err != nil {
		f.rollbackLocked()
		f.commitErr = fmt.Errorf("fsm: an earlier apply failed: %w", err)
		return err
	}
	f.wtxEntries += len(entries)
	for _, e := range entries {
		f.wtxBytes += len(e.Data)
	}
	if f.wtxEntries >= f.opts.CommitEntries || f.wtxBytes >= f.opts.CommitBytes {
		return f.commitLocked()
	}
	if f.wtxTimer == nil {
		f.wtxTimer = time.AfterFunc(f.opts.CommitInterval, f.commitDue)
	}
	return nil
}

// maxScratch is the most events (and revisions) whose scratch slices Apply
// keeps from one call to the next.
const maxScratch = 4096

// applier holds the state of one Apply transaction.
type applier struct {
	kv, hist, meta *bolt.Bucket
	// kvc and histc are kept for lookups and deletions, which through the
	// Bucket allocate a cursor each.
	kvc, histc     *bolt.Cursor
	rev, compacted int64
	retain         int64
	// record gathers the revisions of the entry being applied; records
	// is the FSM's list of the history records' keys.
	record  historyRecord
	records *recordIndex

	// ids remembers the results of recently applied commands by request
	// id, so that a command the log holds twice (a proposal the network
	// delivered twice, a client retry) is applied once and answered with
	// the first result; dedup is its copy in memory, which Apply reads.
	ids   *bolt.Bucket
	dedup *dedupIndex

	// events of every revision made in this transaction; revs slices it.
	events []store.Event
	revs   []revEvents
	// reset: a Load or Clear replaced the history, and the watchers of
	// the revisions before it must end.
	reset bool

	// frozen and exempt are the freeze state (metaFrozen).
	frozen bool
	exempt []string
}

func (a *applier) begin(tx *bolt.Tx) error {
	a.kv, a.hist, a.meta = tx.Bucket(bucketKV), tx.Bucket(bucketHistory), tx.Bucket(bucketMeta)
	a.ids = tx.Bucket(bucketDedup)
	if a.kv == nil || a.hist == nil || a.meta == nil || a.ids == nil {
		return errors.New("state file lacks a bucket")
	}
	a.kvc, a.histc = a.kv.Cursor(), a.hist.Cursor()
	a.rev = int64(getUint(a.meta, metaRevision))
	a.compacted = int64(getUint(a.meta, metaCompacted))
	var err error
	a.frozen, a.exempt, err = decodeFrozen(a.meta.Get(metaFrozen))
	return err
}

// endEntry writes the history record of the entry just applied, and
// deletes the records trimmed meanwhile.
func (a *applier) endEntry() error {
	if rec := a.record.take(); rec != nil {
		if err := a.hist.Put(revKey(a.rev), rec); err != nil {
			return err
		}
		a.records.add(a.rev)
	}
	// Every record whose last revision is trimmed goes.
	for {
		last, ok := a.records.oldest()
		if !ok || last > a.compacted {
			return nil
		}
		k := revKey(last)
		if got, _ := a.histc.Seek(k); !bytes.Equal(got, k) {
			return fmt.Errorf("history record of revision %d is missing", last)
		}
		if err := a.histc.Delete(); err != nil {
			return err
		}
		a.records.drop()
	}
}

func (a *applier) end(index, term uint64) error {
	if err := a.dedup.writeTail(a.ids); err != nil {
		return err
	}
	buf := make([]byte, 0, 40)
	buf = binary.BigEndian.AppendUint64(buf, index)
	buf = binary.BigEndian.AppendUint64(buf, term)
	buf = binary.BigEndian.AppendUint64(buf, uint64(a.rev))
	buf = binary.BigEndian.AppendUint64(buf, uint64(a.compacted))
	buf = binary.BigEndian.AppendUint64(buf, a.dedup.headSeq())
	for i, k := range [][]byte{metaApplied, metaTerm, metaRevision, metaCompacted, metaDedupHead} {
		if err := a.meta.Put(k, buf[i*8:i*8+8]); err != nil {
			return err
		}
	}
	return nil
}

// get is a.kv.Get through the kept cursor.
func (a *applier) get(key []byte) []byte {
	k, v := a.kvc.Seek(key)
	if !bytes.Equal(k, key) {
		return nil
	}
	return v
}

// DedupRetain is how many recent request ids the state machine remembers
// to apply a duplicated command once. Duplicates come from the network and
// from the node's retries of a proposal, which stop once it is applied on
// the proposing node, and after its 10 s timeout at the latest: a copy
// lands in the log after the original by at most the writes of those
// seconds, which this window covers at up to 10,000 writes/s sustained
// (a three-node cluster on two cores does about three times that at its
// peak, when a retry is rare: retries follow a lost proposal or a leader
// change, during which writes stall). It shapes the replicated state, so
// it is the same on every member.
const DedupRetain = 100000

// dedupRetain is DedupRetain; tests lower it.
var dedupRetain uint64 = DedupRetain

// seen returns the recorded result of a command id applied before.
func (a *applier) seen(id uint64) (Result, bool) {
	r, ok := a.dedup.results[id]
	return r, ok
}

// remember records a command's result, and forgets the oldest beyond
// DedupRetain (a few per command, so the work per entry stays bounded).
func (a *applier) remember(r Result) error {
	a.dedup.add(r)
	if err := a.dedup.writeFull(a.ids); err != nil {
		return err
	}
	for n := 0; n < 4 && uint64(a.dedup.len()) > dedupRetain; n++ {
		a.dedup.oldest()
		if err := a.dedup.forget(a.ids); err != nil {
			return err
		}
	}
	return nil
}

// apply applies one command, of the entry at index. Its error is a storage
// failure; an invalid command is reported in the Result.
func (a *applier) apply(index uint64, data []byte) (Result, error) {
	c, err := DecodeCommand(data)
	if err != nil {
		return Result{Index: index, Rev: a.rev, Err: fmt.Errorf("%w: %w", store.ErrInvalid, err)}, nil
	}
	if c.ID != 0 {
		if prev, ok := a.seen(c.ID); ok {
			return prev, nil
		}
	}
	r := Result{ID: c.ID, Index: index, Rev: a.rev}
	if err := c.Validate(); err != nil {
		r.Err = err
		return r, nil
	}
	r.OK = true
	if a.frozen && !a.writable(&c) {
		r.OK = false
		r.Err = fmt.Errorf("%w: %s of a key outside %q", ErrFrozen, c.Kind, a.exempt)
		r.refused = refusedFrozen
		if c.ID != 0 {
			if err := a.remember(r); err != nil {
				return Result{}, err
			}
		}
		return r, nil
	}
	switch c.Kind {
	case KindPut:
		err = a.change(func(rev int64) (bool, error) {
			return true, a.put(c.Key, c.Value, rev)
		})
	case KindDelete:
		err = a.change(func(rev int64) (bool, error) {
			deleted, err := a.delete(c.Key, rev)
			r.Deleted = deleted
			return deleted, err
		})
	case KindCompareAndSet:
		if r.OK = a.holds(store.Cond{Key: c.Key, ModRevision: c.ExpectModRev}); r.OK {
			err = a.change(func(rev int64) (bool, error) {
				return true, a.put(c.Key, c.Value, rev)
			})
		}
	case KindBatch:
		for _, cd := range c.Conds {
			if !a.holds(cd) {
				r.OK = false
				break
			}
		}
		if r.OK {
			err = a.change(func(rev int64) (bool, error) {
				changed := false
				for _, op := range c.Ops {
					if op.Type == store.OpPut {
						changed = true
						if err := a.put(op.Key, op.Value, rev); err != nil {
							return false, err
						}
						continue
					}
					deleted, err := a.delete(op.Key, rev)
					if err != nil {
						return false, err
					}
					changed = changed || deleted
				}
				return changed, nil
			})
		}
	case KindCompact:
		if c.Rev > a.rev {
			r.OK = false
			r.Err = fmt.Errorf("%w: compact revision %d is beyond the current revision %d", store.ErrInvalid, c.Rev, a.rev)
			return r, nil
		}
		a.compactTo(c.Rev)
	case KindLoad:
		if c.Rev < a.rev {
			r.OK = false
			r.Err = fmt.Errorf("%w: load at revision %d, below the current revision %d", store.ErrInvalid, c.Rev, a.rev)
			r.refused = refusedBelow
			break
		}
		err = a.load(&c)
	case KindClear:
		err = a.clear(c.Prefixes)
	case KindFreeze:
		err = a.freeze(c.Frozen, c.Prefixes)
	}
	if err != nil {
		return Result{}, err
	}
	r.Rev = a.rev
	// A result that depends on the state (refused as frozen or below the
	// revision) is remembered too, unlike an invalid command's: a copy of
	// the command applied later must get the same answer.
	if c.ID != 0 && (r.Err == nil || r.refused != 0) {
		if err := a.remember(r); err != nil {
			return Result{}, err
		}
	}
	return r, nil
}

// writable says whether c may apply while the store is frozen: it writes
// no key outside the exempt prefixes. Load, Clear, Compact and Freeze
// always may.
func (a *applier) writable(c *Command) bool {
	switch c.Kind {
	case KindPut, KindDelete, KindCompareAndSet:
		return a.isExempt(c.Key)
	case KindBatch:
		for _, op := range c.Ops {
			if !a.isExempt(op.Key) {
				return false
			}
		}
	}
	return true
}

func (a *applier) isExempt(key string) bool {
	for _, p := range a.exempt {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// load writes c's KVs as they are, deletes its Keys, and moves the
// revision to c.Rev, with no events: the history before it is dropped.
func (a *applier) load(c *Command) error {
	for _, kv := range c.KVs {
		rec := make([]byte, kvHeader+len(kv.Value))
		binary.BigEndian.PutUint64(rec, uint64(kv.CreateRevision))
		binary.BigEndian.PutUint64(rec[8:], uint64(kv.ModRevision))
		copy(rec[kvHeader:], kv.Value)
		if err := a.kv.Put([]byte(kv.Key), rec); err != nil {
			return err
		}
	}
	for _, k := range c.Keys {
		if a.get([]byte(k)) == nil {
			continue
		}
		if err := a.kvc.Delete(); err != nil { // at k, where get left it
			return err
		}
	}
	return a.resetHistory(c.Rev)
}

// clear deletes every key outside the kept prefixes and sets the revision
// to 0, with no events and no history.
func (a *applier) clear(keep []string) error {
	c := a.kvc
	for k, _ := c.First(); k != nil; {
		kept := false
		for _, p := range keep {
			if hasPrefix(k, []byte(p)) {
				kept = true
				break
			}
		}
		if kept {
			k, _ = c.Next()
			continue
		}
		// A bbolt cursor's Next after Delete may skip a key: seek again.
		at := bytes.Clone(k)
		if err := c.Delete(); err != nil {
			return err
		}
		k, _ = c.Seek(at)
	}
	if len(keep) > 0 {
		// Kept keys keep their revisions: the revision never goes back.
		return a.resetHistory(a.rev)
	}
	return a.resetHistory(0)
}

// resetHistory sets the revision to rev and drops all history, so that
// watches start after rev: revisions this transaction made before are
// forgotten, and the watchers of this FSM end when it is published.
func (a *applier) resetHistory(rev int64) error {
	a.rev, a.compacted = rev, rev
	a.record.take()
	a.revs = a.revs[:0]
	a.reset = true
	for {
		last, ok := a.records.oldest()
		if !ok {
			return nil
		}
		k := revKey(last)
		if got, _ := a.histc.Seek(k); !bytes.Equal(got, k) {
			return fmt.Errorf("history record of revision %d is missing", last)
		}
		if err := a.histc.Delete(); err != nil {
			return err
		}
		a.records.drop()
	}
}

// freeze records the freeze state in the meta bucket: absent when thawed.
func (a *applier) freeze(frozen bool, exempt []string) error {
	a.frozen, a.exempt = frozen, nil
	if !frozen {
		return a.meta.Delete(metaFrozen)
	}
	a.exempt = slices.Clone(exempt)
	return a.meta.Put(metaFrozen, appendStrings(nil, exempt))
}

// decodeFrozen reads the meta record of the freeze state: nil when thawed,
// the exempt prefixes when frozen.
func decodeFrozen(rec []byte) (frozen bool, exempt []string, err error) {
	if rec == nil {
		return false, nil, nil
	}
	d := decoder{buf: rec}
	if exempt, err = d.strings(); err == nil && d.off != len(rec) {
		err = fmt.Errorf("%d trailing bytes", len(rec)-d.off)
	}
	if err != nil {
		return false, nil, fmt.Errorf("corrupt freeze state %x: %w", rec, err)
	}
	return true, exempt, nil
}

// holds says whether cond holds in the current state.
func (a *applier) holds(cond store.Cond) bool {
	rec := a.get([]byte(cond.Key))
	if rec == nil {
		return cond.ModRevision == 0
	}
	return len(rec) >= kvHeader && int64(binary.BigEndian.Uint64(rec[8:])) == cond.ModRevision
}

// change runs fn at the next revision. When fn changed something the
// revision is taken: its events go to history and older history is
// trimmed. When fn changed nothing, it must not have written anything.
func (a *applier) change(fn func(rev int64) (bool, error)) error {
	rev := a.rev + 1
	start := len(a.events)
	changed, err := fn(rev)
	if err != nil || !changed {
		return err
	}
	evs := a.events[start:len(a.events):len(a.events)]
	a.record.add(evs)
	a.rev = rev
	a.revs = append(a.revs, revEvents{rev: rev, events: evs})
	a.trim()
	return nil
}

func (a *applier) put(key string, value []byte, rev int64) error {
	k := []byte(key)
	create := rev
	if old := a.get(k); len(old) >= kvHeader {
		create = int64(binary.BigEndian.Uint64(old))
	}
	// bbolt keeps the slice until commit: each record needs its own.
	rec := make([]byte, kvHeader+len(value))
	binary.BigEndian.PutUint64(rec, uint64(create))
	binary.BigEndian.PutUint64(rec[8:], uint64(rev))
	copy(rec[kvHeader:], value)
	if err := a.kv.Put(k, rec); err != nil {
		return err
	}
	a.events = append(a.events, store.Event{Type: store.EventPut, KV: store.KV{
		Key: key, Value: rec[kvHeader:], CreateRevision: create, ModRevision: rev,
	}})
	return nil
}

func (a *applier) delete(key string, rev int64) (bool, error) {
	k := []byte(key)
	old := a.get(k)
	if old == nil {
		return false, nil
	}
	var create int64
	if len(old) >= kvHeader {
		create = int64(binary.BigEndian.Uint64(old))
	}
	if err := a.kvc.Delete(); err != nil { // at k, where get left it
		return false, err
	}
	a.events = append(a.events, store.Event{Type: store.EventDelete, KV: store.KV{
		Key: key, CreateRevision: create, ModRevision: rev,
	}})
	return true, nil
}

// trim drops history older than the retained window, at most compactStep
// revisions for this revision. The records go at the end of the entry.
func (a *applier) trim() {
	target := a.rev - a.retain
	if target <= a.compacted {
		return
	}
	a.compactTo(min(target, a.compacted+compactStep))
}

// compactTo drops the history of revisions up to rev; endEntry deletes the
// records.
func (a *applier) compactTo(rev int64) {
	a.compacted = max(a.compacted, rev)
}

// appendEvents appends to b the encoding of one revision's events: uvarint
// count, then per event a type byte, the key, the uvarint create revision,
// and for a put the value (key and value as uvarint length and bytes). The
// mod revision is the revision's own, which the history record gives.
func appendEvents(b []byte, evs []store.Event) []byte {
	n := binary.MaxVarintLen64
	for _, ev := range evs {
		n += 1 + 3*binary.MaxVarintLen64 + len(ev.KV.Key) + len(ev.KV.Value)
	}
	b = slices.Grow(b, n)
	b = binary.AppendUvarint(b, uint64(len(evs)))
	for _, ev := range evs {
		b = append(b, byte(ev.Type))
		b = appendString(b, ev.KV.Key)
		b = binary.AppendUvarint(b, uint64(ev.KV.CreateRevision))
		if ev.Type == store.EventPut {
			b = appendBytes(b, ev.KV.Value)
		}
	}
	return b
}

// decodeEvents reads a history record of revision rev and appends to dst the
// events whose key starts with prefix, copying them out of bbolt's memory.
func decodeEvents(dst []store.Event, rec []byte, rev int64, prefix string) ([]store.Event, error) {
	d := decoder{buf: rec}
	n, err := d.count(2)
	if err != nil {
		return dst, err
	}
	for range n {
		t, err := d.byte()
		if err != nil {
			return dst, err
		}
		key, err := d.raw()
		if err != nil {
			return dst, err
		}
		create, err := d.int64()
		if err != nil {
			return dst, err
		}
		var value []byte
		switch store.EventType(t) {
		case store.EventPut:
			if value, err = d.raw(); err != nil {
				return dst, err
			}
		case store.EventDelete:
		default:
			return dst, fmt.Errorf("unknown event type %d", t)
		}
		if !hasPrefix(key, []byte(prefix)) {
			continue
		}
		ev := store.Event{Type: store.EventType(t), KV: store.KV{
			Key: string(key), CreateRevision: create, ModRevision: rev,
		}}
		if value != nil {
			ev.KV.Value = append([]byte{}, value...)
		}
		dst = append(dst, ev)
	}
	if d.off != len(rec) {
		return dst, fmt.Errorf("%d trailing bytes", len(rec)-d.off)
	}
	return dst, nil
}
