package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kcd-project/kcd/store"
)

// Defaults of Options.
const (
	DefaultHistoryRetain    = 10000
	DefaultWatchBuffer      = 1024
	DefaultWatchBufferBytes = 16 << 20
)

// Options tune an FSM. The zero value gives the defaults.
type Options struct {
	// HistoryRetain is how many of the latest revisions keep their events
	// for watchers that start in the past (default DefaultHistoryRetain).
	// It shapes the replicated state, so every member must use the same.
	HistoryRetain int64
	// WatchBuffer and WatchBufferBytes bound the events queued for one
	// watcher that its reader has not taken yet (defaults DefaultWatchBuffer
	// and DefaultWatchBufferBytes). A watcher that would exceed either is
	// dropped with store.ErrWatcherLagging; the events of a single revision
	// are always accepted when nothing else is queued, so that one large
	// Batch cannot make a watcher unusable.
	WatchBuffer      int
	WatchBufferBytes int

	// NoSync commits Apply's transactions without fsync: they are visible
	// to reads at once and survive the process (the page cache holds
	// them), but not a crash of the machine. That is for a state whose
	// log and snapshots are durable elsewhere (the Raft node's WAL): before
	// the first such commit Open records the machine's boot id beside the
	// file, and an Open in a later boot, before the file was synced by a
	// clean Close, fails with ErrUnsynced, for the state to be rebuilt.
	// Where the boot cannot be identified (not Linux), NoSync is ignored.
	// Restore and Close always sync.
	NoSync bool
	// BootID identifies the current boot of the machine for NoSync
	// (default: Linux's /proc/sys/kernel/random/boot_id). Tests set it to
	// simulate a restart of the machine.
	BootID func() string

	// CommitInterval, when set, lets Apply leave its bbolt transaction
	// open: the next Applies go on in it, and it is committed once it is
	// CommitInterval old, holds CommitEntries entries or CommitBytes of
	// entry data, before a snapshot and on Close. Reads, history and
	// watches see the open transaction, so what Apply returned is visible
	// at once, as before; only the file lags. That is for a state whose
	// log is durable elsewhere (the Raft node's WAL replays what a crash
	// of the process lost from the file, from the applied index the file
	// does hold): one commit then writes the pages that many Applies
	// changed, instead of every Apply writing its own. Zero: every Apply
	// commits.
	CommitInterval time.Duration
	// CommitEntries and CommitBytes bound an open transaction (defaults
	// DefaultCommitEntries and DefaultCommitBytes); they matter only with
	// CommitInterval.
	CommitEntries int
	CommitBytes   int
}

// Defaults of the bounds of an open transaction (Options.CommitInterval).
const (
	DefaultCommitEntries = 8192
	DefaultCommitBytes   = 8 << 20
)

func (o *Options) validate() error {
	if o.HistoryRetain < 0 || o.WatchBuffer < 0 || o.WatchBufferBytes < 0 ||
		o.CommitInterval < 0 || o.CommitEntries < 0 || o.CommitBytes < 0 {
		return errors.New("fsm: negative option")
	}
	if o.HistoryRetain == 0 {
		o.HistoryRetain = DefaultHistoryRetain
	}
	if o.WatchBuffer == 0 {
		o.WatchBuffer = DefaultWatchBuffer
	}
	if o.WatchBufferBytes == 0 {
		o.WatchBufferBytes = DefaultWatchBufferBytes
	}
	if o.BootID == nil {
		o.BootID = currentBootID
	}
	if o.CommitEntries == 0 {
		o.CommitEntries = DefaultCommitEntries
	}
	if o.CommitBytes == 0 {
		o.CommitBytes = DefaultCommitBytes
	}
	return nil
}

// Entry is one committed Raft log entry. Data is an encoded Command, or
// empty for an entry that only advances the applied index.
type Entry struct {
	Index uint64
	Term  uint64
	Data  []byte
}

// Result is the outcome of one applied command.
type Result struct {
	ID    uint64 // the Command's request ID (0 when Data could not be decoded)
	Index uint64 // the entry's index
	// Rev is the store revision after the command: the new one when it
	// changed something, the current one when not.
	Rev int64
	// OK says, for a compare-and-set or a batch, whether its conditions
	// held; it is true for every other valid command.
	OK      bool
	Deleted bool // delete: whether the key existed
	// Err is set when the command was invalid (it wraps store.ErrInvalid)
	// or refused because the store is frozen (it wraps ErrFrozen); such a
	// command changed nothing.
	Err error

	// refused says why a command that depends on the state failed, for
	// the dedup record.
	refused refusal
}

// refusal is why a valid command failed because of the state.
type refusal uint8

const (
	refusedFrozen refusal = 1 // ErrFrozen
	refusedBelow  refusal = 2 // a Load below the current revision
)

// ErrFrozen is the error of a write refused because the store is frozen
// (KindFreeze): another metadata backend is active, and this copy takes
// only Load, Clear and writes under the exempt prefixes.
var ErrFrozen = errors.New("fsm: store frozen: another metadata backend is active")

// FSM is the state machine. Apply must be called by one goroutine at a time
// (it serializes itself anyway); everything else is safe for concurrent use,
// and reads run alongside Apply.
type FSM struct {
	path string
	opts Options
	// noSync: commits are not synced (Options.NoSync, with a boot id).
	noSync bool

	// restoreMu makes Restores take turns: they share a temporary file.
	restoreMu sync.Mutex

	// applyMu serializes Apply, Restore and Close, and guards the scratch
	// buffers below.
	applyMu sync.Mutex
	events  []store.Event
	revs    []revEvents
	dedup   *dedupIndex
	records *recordIndex

	// dbMu is read-locked by every use of db and write-locked to replace or
	// close it.
	dbMu sync.RWMutex
	db   *bolt.DB

	// txMu guards the open write transaction of Options.CommitInterval:
	// Apply and commits lock it, reads read-lock it and read through wtx
	// while one is open (bbolt's read-only calls on a transaction are safe
	// to share once its buckets are opened, which begin does). Lock order:
	// applyMu, wmu, dbMu, txMu.
	txMu       sync.RWMutex
	wtx        *bolt.Tx
	wtxEntries int
	wtxBytes   int
	wtxTimer   *time.Timer
	// commitErr is the error of a commit the timer made: the file can no
	// longer follow the log, and the next Apply returns it.
	commitErr error

	applied atomic.Uint64

	// epoch moves when the file is replaced or closed, aborting the
	// HashViews of the old one; fence is Fence's error.
	epoch atomic.Uint64
	fence atomic.Pointer[error]

	// wmu guards the watcher set and the revision watchers are told about:
	// Watch registers under it, and Apply publishes each commit under it,
	// which is what makes replay and live events meet with no gap.
	wmu       sync.Mutex
	rev       int64
	compacted int64
	watchers  map[*watcher]struct{}
	closed    bool
}

// revEvents are the events of one revision, in the order of the ops.
type revEvents struct {
	rev    int64
	events []store.Event
}

var (
	bucketKV      = []byte("kv")
	bucketHistory = []byte("history")
	bucketMeta    = []byte("meta")
	bucketDedup   = []byte("dedup")
	// Formats 2 and 3: a record per remembered id, keyed by it.
	bucketIDsV3 = []byte("ids")
	// Format 2 only: the ids in log order, now rebuilt in memory at Open.
	bucketIDOrderV2 = []byte("id-order")

	metaVersion   = []byte("version")
	metaApplied   = []byte("applied_index")
	metaTerm      = []byte("applied_term")
	metaRevision  = []byte("revision")
	metaCompacted = []byte("compacted")
	metaDedupHead = []byte("dedup_head")
	// metaFrozen holds the exempt prefixes while the store is frozen
	// (appendStrings); absent when it is not.
	metaFrozen    = []byte("frozen")
	metaIDCountV2 = []byte("idcount") // format 2 only
)

// formatVersion is the layout of the buckets. Open refuses other versions
// rather than misread them, except the older ones it converts: formatV2
// kept the ids also in log order, in a bucket of their own; formatV3 kept
// a history record per revision and an ids record per command.
const (
	formatVersion = 4
	formatV3      = 3
	formatV2      = 2
)

// compactStep is how many history records one new revision may drop at most.
// Above one, a history that grew past HistoryRetain (the option was lowered)
// shrinks back by itself; bounded, so that no single entry pays for it all.
const compactStep = 8

// initialMmapSize is the mapping bbolt starts with (see openDB).
const initialMmapSize = 1 << 30

// kvHeader is the size of a kv record's revisions.
const kvHeader = 16

// Open opens (creating it if needed) the state file at path.
func Open(path string, opts Options) (*FSM, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	// A leftover of a Restore that crashed before its rename.
	if err := os.Remove(restorePath(path)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("fsm: open %s: %w", path, err)
	}
	boot := opts.BootID()
	if err := checkUnsynced(path, boot); err != nil {
		return nil, err
	}
	f := &FSM{path: path, opts: opts, noSync: opts.NoSync && boot != "", watchers: make(map[*watcher]struct{})}
	db, err := f.openDB()
	if err != nil {
		return nil, err
	}
	if err := f.load(db); err != nil {
		db.Close()
		return nil, err
	}
	if f.noSync {
		if err := markUnsynced(path, boot); err != nil {
			db.Close()
			return nil, err
		}
	}
	f.db = db
	return f, nil
}

// openDB opens the file, commits from then on synced or not as f says.
func (f *FSM) openDB() (*bolt.DB, error) {
	db, err := openDB(f.path)
	if err != nil {
		return nil, err
	}
	db.NoSync = f.noSync
	return db, nil
}

func openDB(path string) (db *bolt.DB, err error) {
	if err := checkFile(path); err != nil {
		return nil, err
	}
	defer recoverDamage(path, &err)
	db, err = bolt.Open(path, 0o600, &bolt.Options{
		// Fail instead of waiting forever when another process holds it.
		Timeout: 5 * time.Second,
		// As etcd runs bbolt: the hashmap free list (the array one degrades
		// with fragmentation), and not written on every commit (measured:
		// one 4 KiB page less per transaction, about 10 % of a small
		// Apply's writes) at the price of a scan of the file at Open.
		FreelistType:   bolt.FreelistMapType,
		NoFreelistSync: true,
		// Address space only, not memory: while the file is smaller than
		// this, growing it needs no remap, and a remap has to wait for
		// every open read transaction (a long Scan, a snapshot) to end,
		// stalling Apply behind them.
		InitialMmapSize: initialMmapSize,
	})
	if err != nil {
		return nil, fmt.Errorf("fsm: open %s: %w", path, err)
	}
	if err := db.Update(initBuckets); err != nil {
		db.Close()
		return nil, fmt.Errorf("fsm: open %s: %w", path, err)
	}
	return db, nil
}

// hasBuckets tells whether tx holds every bucket of the layout of version.
func hasBuckets(tx *bolt.Tx, version uint64) bool {
	for _, b := range [][]byte{bucketMeta, bucketKV, bucketHistory, idsBucket(version)} {
		if tx.Bucket(b) == nil {
			return false
		}
	}
	return true
}

// idsBucket is the bucket of the remembered ids in a format version.
func idsBucket(version uint64) []byte {
	if version < formatVersion {
		return bucketIDsV3
	}
	return bucketDedup
}

// initBuckets creates the buckets of a new file and checks an existing one.
func initBuckets(tx *bolt.Tx) error {
	if meta := tx.Bucket(bucketMeta); meta != nil {
		v := getUint(meta, metaVersion)
		if v != formatVersion && v != formatV3 && v != formatV2 {
			return fmt.Errorf("state format version %d, want %d", v, formatVersion)
		}
		if !hasBuckets(tx, v) {
			return errors.New("state file lacks a bucket")
		}
		if v == formatV2 {
			if err := upgradeV2(tx, meta); err != nil {
				return fmt.Errorf("convert format 2: %w", err)
			}
			v = formatV3
		}
		if v == formatV3 {
			if err := upgradeV3(tx, meta); err != nil {
				return fmt.Errorf("convert format 3: %w", err)
			}
		}
		return nil
	}
	// No meta: a new file, unless it holds someone else's buckets.
	if err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		return fmt.Errorf("not a kcd state file (has bucket %q)", name)
	}); err != nil {
		return err
	}
	meta, err := tx.CreateBucket(bucketMeta)
	if err != nil {
		return err
	}
	if _, err := tx.CreateBucket(bucketKV); err != nil {
		return err
	}
	for _, b := range [][]byte{bucketHistory, bucketDedup} {
		if _, err := tx.CreateBucket(b); err != nil {
			return err
		}
	}
	for _, k := range [][]byte{metaApplied, metaTerm, metaRevision, metaCompacted, metaDedupHead} {
		if err := putUint(meta, k, 0); err != nil {
			return err
		}
	}
	return putUint(meta, metaVersion, formatVersion)
}

// upgradeV2 converts a format 2 file: its id-order bucket and id count go,
// the ids themselves stay.
func upgradeV2(tx *bolt.Tx, meta *bolt.Bucket) error {
	if tx.Bucket(bucketIDOrderV2) != nil {
		if err := tx.DeleteBucket(bucketIDOrderV2); err != nil {
			return err
		}
	}
	if err := meta.Delete(metaIDCountV2); err != nil {
		return err
	}
	return putUint(meta, metaVersion, formatV3)
}

// upgradeV3 converts a format 3 file: its history to records per entry
// (of one revision each, as it does not know the entries), its ids to
// dedup chunks.
func upgradeV3(tx *bolt.Tx, meta *bolt.Bucket) error {
	if err := upgradeHistoryV3(tx); err != nil {
		return err
	}
	if err := upgradeDedupV3(tx, meta); err != nil {
		return err
	}
	return putUint(meta, metaVersion, formatVersion)
}

// load reads the cached values from db's meta bucket and the ids.
func (f *FSM) load(db *bolt.DB) (err error) {
	defer recoverDamage(f.path, &err)
	return db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		d, err := loadDedup(tx)
		if err != nil {
			return err
		}
		f.dedup = d
		if f.records, err = loadRecords(tx); err != nil {
			return err
		}
		f.applied.Store(getUint(meta, metaApplied))
		f.rev = int64(getUint(meta, metaRevision))
		f.compacted = int64(getUint(meta, metaCompacted))
		return nil
	})
}

// AppliedIndex is the index of the last entry applied and committed to disk.
func (f *FSM) AppliedIndex() uint64 { return f.applied.Load() }

// Close ends every watcher with store.ErrClosed and closes the file.
func (f *FSM) Close() error {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	f.wmu.Lock()
	if f.closed {
		f.wmu.Unlock()
		return nil
	}
	f.closed = true
	f.stopWatchersLocked(store.ErrClosed)
	f.wmu.Unlock()

	f.epoch.Add(1)
	f.dbMu.Lock()
	defer f.dbMu.Unlock()
	f.txMu.Lock()
	err := f.commitLocked()
	f.rollbackLocked() // only left after a failed commit
	f.txMu.Unlock()
	if err == nil && f.noSync {
		// Synced, the file no longer depends on this boot's page cache.
		if err = f.db.Sync(); err == nil {
			err = clearUnsynced(f.path)
		}
	}
	if cerr := f.db.Close(); err == nil {
		err = cerr
	}
	f.db = nil
	if err != nil {
		return fmt.Errorf("fsm: close %s: %w", f.path, err)
	}
	return nil
}

// Abandon closes the file as a crash of the process would leave it: without
// syncing it, and with its unsynced marker in place. For tests.
func (f *FSM) Abandon() {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	f.wmu.Lock()
	if f.closed {
		f.wmu.Unlock()
		return
	}
	f.closed = true
	f.stopWatchersLocked(store.ErrClosed)
	f.wmu.Unlock()
	f.epoch.Add(1)
	f.dbMu.Lock()
	defer f.dbMu.Unlock()
	f.txMu.Lock()
	f.rollbackLocked()
	f.txMu.Unlock()
	_ = f.db.Close()
	f.db = nil
}

// view runs fn on the current state: in the open write transaction when
// there is one (fn must only read), else in a read transaction.
func (f *FSM) view(fn func(*bolt.Tx) error) (err error) {
	defer recoverDamage(f.path, &err)
	if err := f.fenced(); err != nil {
		return err
	}
	f.dbMu.RLock()
	defer f.dbMu.RUnlock()
	if f.db == nil {
		return store.ErrClosed
	}
	f.txMu.RLock()
	defer f.txMu.RUnlock()
	if f.commitErr != nil {
		return f.commitErr
	}
	if f.wtx != nil {
		return fn(f.wtx)
	}
	return f.db.View(fn)
}

// viewCommitted commits the open write transaction and runs fn in a read
// transaction, which Apply does not wait for: for long reads (snapshots)
// and for what needs the file itself.
func (f *FSM) viewCommitted(fn func(*bolt.Tx) error) (err error) {
	defer recoverDamage(f.path, &err)
	f.dbMu.RLock()
	defer f.dbMu.RUnlock()
	if f.db == nil {
		return store.ErrClosed
	}
	f.txMu.Lock()
	err = f.commitLocked()
	f.txMu.Unlock()
	if err != nil {
		return err
	}
	return f.db.View(fn)
}

// commitLocked commits the open write transaction, if any. txMu held.
func (f *FSM) commitLocked() error {
	if f.commitErr != nil {
		return f.commitErr
	}
	if f.wtx == nil {
		return nil
	}
	if f.wtxTimer != nil {
		f.wtxTimer.Stop()
		f.wtxTimer = nil
	}
	tx := f.wtx
	f.wtx, f.wtxEntries, f.wtxBytes = nil, 0, 0
	if err := f.commitTx(tx); err != nil {
		f.commitErr = fmt.Errorf("fsm: commit: %w", err)
		return f.commitErr
	}
	return nil
}

// commitTx commits tx, which on a damaged page may panic in bbolt: the
// transaction is then rolled back and the error names the file.
func (f *FSM) commitTx(tx *bolt.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			func() {
				defer func() { _ = recover() }()
				_ = tx.Rollback()
			}()
			err = damaged(f.path, "bbolt failed writing it: %v", r)
		}
	}()
	return tx.Commit()
}

// commitDue is the timer of an open transaction.
func (f *FSM) commitDue() {
	f.dbMu.RLock()
	defer f.dbMu.RUnlock()
	if f.db == nil {
		return
	}
	f.txMu.Lock()
	defer f.txMu.Unlock()
	_ = f.commitLocked() // kept in commitErr for the next Apply
}

// rollbackLocked drops the open write transaction, as a crash would.
// txMu held.
func (f *FSM) rollbackLocked() {
	if f.wtxTimer != nil {
		f.wtxTimer.Stop()
		f.wtxTimer = nil
	}
	if f.wtx != nil {
		_ = f.wtx.Rollback()
		f.wtx, f.wtxEntries, f.wtxBytes = nil, 0, 0
	}
}

// Get returns key's value and revisions; found is false when it does not
// exist.
func (f *FSM) Get(key string) (kv store.KV, found bool, err error) {
	if err := store.CheckKey(key); err != nil {
		return kv, false, err
	}
	err = f.view(func(tx *bolt.Tx) error {
		rec := tx.Bucket(bucketKV).Get([]byte(key))
		if rec == nil {
			return nil
		}
		found = true
		kv, err = decodeKV(key, rec)
		return err
	})
	if err != nil {
		return store.KV{}, false, fmt.Errorf("fsm: get: %w", err)
	}
	return kv, found, nil
}

// Scan returns the keys starting with prefix in key order, at most limit of
// them (0: all), and the revision they were read at.
func (f *FSM) Scan(prefix string, limit int) (kvs []store.KV, rev int64, err error) {
	if limit < 0 {
		return nil, 0, fmt.Errorf("fsm: scan: %w: negative limit %d", store.ErrInvalid, limit)
	}
	err = f.view(func(tx *bolt.Tx) error {
		rev = int64(getUint(tx.Bucket(bucketMeta), metaRevision))
		c := tx.Bucket(bucketKV).Cursor()
		p := []byte(prefix)
		for k, v := c.Seek(p); k != nil && hasPrefix(k, p); k, v = c.Next() {
			kv, err := decodeKV(string(k), v)
			if err != nil {
				return err
			}
			kvs = append(kvs, kv)
			if limit > 0 && len(kvs) == limit {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("fsm: scan: %w", err)
	}
	return kvs, rev, nil
}

// Revision returns the current store revision.
func (f *FSM) Revision() (rev int64, err error) {
	err = f.view(func(tx *bolt.Tx) error {
		rev = int64(getUint(tx.Bucket(bucketMeta), metaRevision))
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("fsm: revision: %w", err)
	}
	return rev, nil
}

// Frozen returns the freeze state (KindFreeze) and, while frozen, the
// prefixes of the keys that may still be written.
func (f *FSM) Frozen() (frozen bool, exempt []string, err error) {
	err = f.view(func(tx *bolt.Tx) error {
		frozen, exempt, err = decodeFrozen(tx.Bucket(bucketMeta).Get(metaFrozen))
		return err
	})
	if err != nil {
		return false, nil, fmt.Errorf("fsm: frozen: %w", err)
	}
	return frozen, exempt, nil
}

func hasPrefix(k, p []byte) bool {
	return len(k) >= len(p) && string(k[:len(p)]) == string(p)
}

// decodeKV copies a kv record out of bbolt's memory, which is only valid
// inside the transaction.
func decodeKV(key string, rec []byte) (store.KV, error) {
	if len(rec) < kvHeader {
		return store.KV{}, fmt.Errorf("corrupt record of key %q: %d bytes", key, len(rec))
	}
	return store.KV{
		Key:            key,
		Value:          append([]byte{}, rec[kvHeader:]...),
		CreateRevision: int64(binary.BigEndian.Uint64(rec)),
		ModRevision:    int64(binary.BigEndian.Uint64(rec[8:])),
	}, nil
}

func getUint(b *bolt.Bucket, key []byte) uint64 {
	v := b.Get(key)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func putUint(b *bolt.Bucket, key []byte, v uint64) error {
	return b.Put(key, binary.BigEndian.AppendUint64(nil, v))
}

func revKey(rev int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(rev))
}
