package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kcd-project/kcd/store"
)

// Snapshot returns the whole state (a bbolt file image, as large as the
// file) and the index and term of the last entry it contains. It commits
// the open write transaction (Options.CommitInterval), then reads in one
// read transaction, so it is consistent while Apply goes on.
func (f *FSM) Snapshot() (data []byte, index, term uint64, err error) {
	var buf bytes.Buffer
	err = f.viewCommitted(func(tx *bolt.Tx) error {
		buf.Grow(int(tx.Size()))
		index, term, err = writeSnapshot(tx, &buf)
		return err
	})
	if err != nil {
		return nil, 0, 0, fmt.Errorf("fsm: snapshot: %w", err)
	}
	return buf.Bytes(), index, term, nil
}

// AppendSnapshot is Snapshot appended to dst, which saves a copy of the
// whole state when the caller puts a header in front of it.
func (f *FSM) AppendSnapshot(dst []byte) (data []byte, index, term uint64, err error) {
	buf := bytes.NewBuffer(dst)
	err = f.viewCommitted(func(tx *bolt.Tx) error {
		buf.Grow(int(tx.Size()))
		index, term, err = writeSnapshot(tx, buf)
		return err
	})
	if err != nil {
		return nil, 0, 0, fmt.Errorf("fsm: snapshot: %w", err)
	}
	return buf.Bytes(), index, term, nil
}

// WriteSnapshotThen opens a read transaction and calls fn with the image's
// index and size and a function that writes the image (what Snapshot
// returns) to w, within the transaction: the caller can write a large image
// straight to a file, holding none of it in memory, while Apply goes on
// (the image stays at index). As for WriteSnapshot, w should be quick.
func (f *FSM) WriteSnapshotThen(fn func(index uint64, size int64, image func(w io.Writer) error) error) error {
	err := f.viewCommitted(func(tx *bolt.Tx) error {
		index := getUint(tx.Bucket(bucketMeta), metaApplied)
		return fn(index, tx.Size(), func(w io.Writer) error {
			_, err := tx.WriteTo(w)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("fsm: snapshot: %w", err)
	}
	return nil
}

// DataSize is about the size of a snapshot of the state: the pages it has
// allocated as of its last commit (pages freed by deletes still count, as
// a snapshot copies them), 0 when it cannot be read. The file says little:
// it grows in steps of 16 MiB.
func (f *FSM) DataSize() int64 {
	var n int64
	if err := f.view(func(tx *bolt.Tx) error { n = tx.Size(); return nil }); err != nil {
		return 0
	}
	return n
}

// WriteSnapshot writes what Snapshot returns to w, without holding it in
// memory. w should be quick (a local file): the read transaction stays open
// until it is done, and while it is, an Apply that needs to grow the file
// waits.
func (f *FSM) WriteSnapshot(w io.Writer) (index, term uint64, err error) {
	err = f.viewCommitted(func(tx *bolt.Tx) error {
		index, term, err = writeSnapshot(tx, w)
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("fsm: snapshot: %w", err)
	}
	return index, term, nil
}

func writeSnapshot(tx *bolt.Tx, w io.Writer) (index, term uint64, err error) {
	meta := tx.Bucket(bucketMeta)
	index, term = getUint(meta, metaApplied), getUint(meta, metaTerm)
	if _, err := tx.WriteTo(w); err != nil {
		return 0, 0, err
	}
	return index, term, nil
}

func restorePath(path string) string { return path + ".restore" }

// Restore replaces the whole state with a snapshot read from r (what
// Snapshot or WriteSnapshot produced, possibly on another node). The
// snapshot is written to a file beside the state, synced and checked, then
// renamed over it, so a crash leaves either the old state or the new one.
// Every watcher ends with store.ErrCompacted: the revisions it would need
// may not exist in the new state.
//
// A snapshot older than AppliedIndex is refused. An error after the old
// file was closed leaves the FSM unusable (every call then fails with
// store.ErrClosed); the node must stop.
func (f *FSM) Restore(r io.Reader) error {
	// One Restore at a time: they share the temporary file.
	f.restoreMu.Lock()
	defer f.restoreMu.Unlock()
	tmp := restorePath(f.path)
	if err := writeFileSync(tmp, r); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("fsm: restore: %w", err)
	}
	index, err := checkSnapshot(tmp)
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("fsm: restore: %w", err)
	}

	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	// wmu is held until the new state is loaded, so that no Watch registers
	// against the old revision.
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if f.closed {
		os.Remove(tmp)
		return fmt.Errorf("fsm: restore: %w", store.ErrClosed)
	}
	if applied := f.applied.Load(); index < applied {
		os.Remove(tmp)
		return fmt.Errorf("fsm: restore: snapshot at index %d is older than the applied index %d", index, applied)
	}
	f.stopWatchersLocked(fmt.Errorf("%w: state replaced by a snapshot", store.ErrCompacted))

	f.epoch.Add(1)
	f.dbMu.Lock()
	defer f.dbMu.Unlock()
	// The open transaction holds nothing the snapshot lacks (its index is
	// at least the applied one): dropped, not written.
	f.txMu.Lock()
	f.rollbackLocked()
	f.commitErr = nil
	f.txMu.Unlock()
	closeErr := f.db.Close()
	f.db = nil
	if closeErr == nil {
		if err := os.Rename(tmp, f.path); err != nil {
			os.Remove(tmp)
			closeErr = err
		} else {
			closeErr = syncDir(filepath.Dir(f.path))
		}
	}
	// Whether the rename happened or not, the file at f.path is a complete
	// state: reopen it.
	db, err := f.openDB()
	if err == nil {
		if err = f.load(db); err != nil {
			db.Close()
		}
	}
	if err != nil {
		f.closed = true
		return fmt.Errorf("fsm: restore: reopen: %w", errors.Join(closeErr, err))
	}
	f.db = db
	if closeErr != nil {
		return fmt.Errorf("fsm: restore: %w", closeErr)
	}
	return nil
}

func writeFileSync(path string, r io.Reader) error {
	fl, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(fl, r); err != nil {
		fl.Close()
		return err
	}
	if err := fl.Sync(); err != nil {
		fl.Close()
		return err
	}
	return fl.Close()
}

// checkSnapshot opens a received snapshot and returns its applied index,
// refusing anything that is not a state file of this format.
func checkSnapshot(path string) (index uint64, err error) {
	if err := checkFile(path); err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	defer recoverDamage(path, &err)
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			return errors.New("not a kcd state file")
		}
		v := getUint(meta, metaVersion)
		if v != formatVersion && v != formatV3 && v != formatV2 {
			return fmt.Errorf("state format version %d, want %d", v, formatVersion)
		}
		if !hasBuckets(tx, v) {
			return errors.New("not a kcd state file")
		}
		index = getUint(meta, metaApplied)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	return index, nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
