package logstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"go.etcd.io/raft/v3"
	raftpb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// CreateSnapshot durably records a snapshot of the state machine at index,
// which must be applied and above the current snapshot. The snapshot, with
// its data, is what a state machine that does not sync its own commits is
// rebuilt from after a crash of the machine, so the log behind it may then
// be compacted. cs is the ConfState as of index; data is stored unless
// Options.DiscardSnapshotData is set. The log itself is untouched: follow up
// with Compact.
func (s *Store) CreateSnapshot(index uint64, cs *raftpb.ConfState, data []byte) (*raftpb.Snapshot, error) {
	meta, err := s.createSnapshot(index, cs, func(ref snapRef) error { return s.writeSnapData(ref, data) })
	if err != nil {
		return nil, err
	}
	return &raftpb.Snapshot{Data: data, Metadata: meta}, nil
}

// CreateSnapshotFrom is CreateSnapshot of data that is not held in memory:
// prefix, then size bytes that image writes to w (a state machine's image
// written straight from its read transaction), so that a large state costs
// no heap the size of its image. It returns the snapshot's metadata.
func (s *Store) CreateSnapshotFrom(index uint64, cs *raftpb.ConfState, prefix []byte, size int64, image func(w io.Writer) error) (*raftpb.SnapshotMetadata, error) {
	return s.createSnapshot(index, cs, func(ref snapRef) error {
		if s.opts.DiscardSnapshotData {
			return nil
		}
		return streamSnapData(s.dirf, ref, prefix, size, image)
	})
}

// createSnapshot records the snapshot at index whose data writeData writes.
func (s *Store) createSnapshot(index uint64, cs *raftpb.ConfState, writeData func(snapRef) error) (*raftpb.SnapshotMetadata, error) {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()

	term, err := s.snapshotTerm(index)
	if err != nil {
		return nil, fmt.Errorf("logstore: create snapshot %d: %w", index, err)
	}
	meta := &raftpb.SnapshotMetadata{Index: new(index), Term: new(term)}
	if cs != nil {
		meta.ConfState = proto.Clone(cs).(*raftpb.ConfState)
	}
	raftpb.EnsureSnapshotMetadata(meta)
	ref := refOf(meta)

	// The data may be a whole database image; writing it while holding mu
	// would stall Save, and with it heartbeats, for as long as that takes.
	if err := writeData(ref); err != nil {
		return nil, fmt.Errorf("logstore: create snapshot %d: %w", index, err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	err = s.writable()
	if err == nil {
		// A snapshot received meanwhile may have replaced the log.
		var t uint64
		if t, err = s.snapshotTerm(index); err == nil && t != term {
			err = raft.ErrSnapOutOfDate
		}
	}
	if err == nil {
		err = writeSnapMeta(s.dirf, recSnapLocal, meta)
	}
	if err != nil {
		if rerr := removeFiles(s.dirf, ref.dataName()); rerr != nil {
			s.log.Warn("cannot remove data of failed snapshot", "index", index, "err", rerr)
		}
		return nil, fmt.Errorf("logstore: create snapshot %d: %w", index, err)
	}

	s.memMu.Lock()
	_, err = s.ms.CreateSnapshot(index, meta.GetConfState(), nil)
	if err == nil {
		s.snap = meta
	}
	s.memMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("logstore: create snapshot %d: %w", index, err)
	}
	s.removeSnapshotsBefore(ref)
	return proto.Clone(meta).(*raftpb.SnapshotMetadata), nil
}

// snapshotTerm checks that a snapshot can be taken at index and returns the
// term of the entry there.
func (s *Store) snapshotTerm(index uint64) (uint64, error) {
	s.memMu.RLock()
	defer s.memMu.RUnlock()
	if index <= s.snap.GetIndex() {
		return 0, fmt.Errorf("have snapshot %d: %w", s.snap.GetIndex(), raft.ErrSnapOutOfDate)
	}
	if last, _ := s.ms.LastIndex(); index > last {
		return 0, fmt.Errorf("beyond last index %d: %w", last, raft.ErrUnavailable)
	}
	return s.ms.Term(index)
}

// Compact discards the entries up to and including index from memory and
// deletes the WAL segments that hold nothing newer. index must not exceed
// the newest snapshot's: entries that no snapshot covers are needed to
// rebuild the state on restart, and raft could not catch up a follower
// that needs them either.
//
// Like raft.MemoryStorage, it returns raft.ErrCompacted (unwrapped) when the
// in-memory log already starts after index; old segments are removed anyway,
// since after a restart the memory starts at the snapshot while the
// segments before it may still be on disk.
func (s *Store) Compact(index uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	s.memMu.Lock()
	snapIndex := s.snap.GetIndex()
	if index > snapIndex {
		s.memMu.Unlock()
		return fmt.Errorf("logstore: compact to %d: newest snapshot is at %d; create a snapshot first", index, snapIndex)
	}
	err := s.ms.Compact(index)
	s.memMu.Unlock()
	if err != nil && !errors.Is(err, raft.ErrCompacted) {
		return fmt.Errorf("logstore: compact to %d: %w", index, err)
	}
	if rerr := s.wal.removeObsolete(index, snapIndex); rerr != nil {
		// Not fatal: the segments are merely kept, and replaying them is
		// harmless.
		return fmt.Errorf("logstore: compact to %d: %w", index, rerr)
	}
	return err
}

// writeSnapData stores data for ref, unless the options say not to or there
// is none (a missing data file means no Data).
func (s *Store) writeSnapData(ref snapRef, data []byte) error {
	if s.opts.DiscardSnapshotData || len(data) == 0 {
		return nil
	}
	return writeSnapData(s.dirf, ref, data)
}

// removeSnapshotsBefore deletes the files of snapshots older than ref once
// ref is valid. Failure only wastes space, so it is logged, not returned.
func (s *Store) removeSnapshotsBefore(ref snapRef) {
	l, err := listDir(s.dir)
	if err == nil {
		var names []string
		for _, r := range l.snaps {
			if r.index < ref.index {
				names = append(names, r.metaName())
			}
		}
		for r := range l.data {
			if r.index < ref.index {
				names = append(names, r.dataName())
			}
		}
		err = removeFiles(s.dirf, names...)
	}
	if err != nil {
		s.log.Warn("cannot remove old snapshots", "err", err)
	}
}

// Snapshot implements raft.Storage. The Data is read back from disk and
// verified on every call rather than kept in memory: it may be large and is
// needed only when a follower has fallen behind the compacted log.
func (s *Store) Snapshot() (*raftpb.Snapshot, error) {
	s.memMu.RLock()
	meta := proto.Clone(s.snap).(*raftpb.SnapshotMetadata)
	var f *os.File
	var err error
	if meta.GetIndex() > 0 {
		// Opened under the lock: the file cannot be removed before it is
		// open, and stays readable after.
		f, err = os.Open(filepath.Join(s.dir, refOf(meta).dataName()))
	}
	s.memMu.RUnlock()

	snap := &raftpb.Snapshot{Metadata: meta}
	switch {
	case errors.Is(err, os.ErrNotExist):
		return snap, nil // no data stored
	case err != nil:
		return nil, fmt.Errorf("logstore: snapshot data: %w", err)
	case f == nil:
		return snap, nil
	}
	defer f.Close()
	if snap.Data, err = readSnapData(f); err != nil {
		return nil, fmt.Errorf("logstore: snapshot %d: %w", meta.GetIndex(), err)
	}
	return snap, nil
}
