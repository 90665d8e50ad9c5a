package logstore

import (
	"fmt"
	"path/filepath"

	"go.etcd.io/raft/v3"
	raftpb "go.etcd.io/raft/v3/raftpb"
)

// recover rebuilds the state from the directory and opens the WAL tail for
// appending. Files are only modified once everything has been validated, so
// a store that fails with ErrCorrupt is left exactly as it was found.
func (s *Store) recover() error {
	l, err := listDir(s.dir)
	if err != nil {
		return err
	}
	s.empty = len(l.segments) == 0 && len(l.snaps) == 0

	st, err := readWAL(s.dir, l.segments)
	if err != nil {
		return err
	}
	meta, err := s.pickSnapshot(l, st)
	if err != nil {
		return err
	}
	ents, hs, err := s.combine(st, meta)
	if err != nil {
		return err
	}

	ms := raft.NewMemoryStorage()
	if err := ms.ApplySnapshot(&raftpb.Snapshot{Metadata: meta}); err != nil {
		return fmt.Errorf("load snapshot %d: %w", meta.GetIndex(), err)
	}
	if err := ms.Append(ents); err != nil {
		return fmt.Errorf("load entries: %w", err)
	}
	if hs != nil {
		ms.SetHardState(hs)
	}
	s.ms, s.hs, s.snap = ms, hs, meta

	// From here on the directory is changed.
	if err := removeFiles(s.dirf, l.temps...); err != nil {
		return err
	}
	s.wal = &wal{d: s.dirf, segSize: s.opts.SegmentSize, log: s.log, segs: st.segs, hs: hs}
	if len(st.segs) == 0 {
		last, _ := ms.LastIndex()
		if err := s.wal.create(1, last+1); err != nil {
			return err
		}
		if err := s.wal.commit(); err != nil {
			return err
		}
	} else {
		if st.tailTorn {
			s.log.Warn("truncating torn write at the end of the wal",
				"file", s.wal.tail().name(), "offset", st.tailEnd, "bytes", st.tailSize-st.tailEnd)
		}
		if err := s.wal.openTail(st.tailEnd, st.tailTorn); err != nil {
			return err
		}
	}
	s.removeStaleSnapshots(l, refOf(meta))
	return nil
}

// pickSnapshot returns the newest valid snapshot's metadata (an empty one
// if there is none). A damaged metadata file is an error, not a reason to
// fall back: the WAL before it may already be deleted. A received snapshot
// without its WAL reset record belongs to a Save that never returned, so it
// is skipped in favour of the previous one, which is kept until then.
func (s *Store) pickSnapshot(l dirListing, st *walState) (*raftpb.SnapshotMetadata, error) {
	for _, ref := range l.snaps {
		m, received, err := readSnapMeta(s.dir, ref)
		if err != nil {
			return nil, err
		}
		if received && !st.resets[ref] {
			s.log.Warn("discarding received snapshot whose save did not complete", "index", ref.index, "term", ref.term)
			continue
		}
		if l.data[ref] {
			if err := checkSnapDataHeader(filepath.Join(s.dir, ref.dataName())); err != nil {
				return nil, err
			}
		}
		return m, nil
	}
	return raftpb.EnsureSnapshotMetadata(nil), nil
}

// combine lays the WAL's log over the snapshot: entries the snapshot covers
// are dropped, and the rest must continue it without a gap.
func (s *Store) combine(st *walState, meta *raftpb.SnapshotMetadata) ([]*raftpb.Entry, *raftpb.HardState, error) {
	si, sterm := meta.GetIndex(), meta.GetTerm()
	bad := func(format string, args ...any) error { return corruptf(s.dir, -1, format, args...) }

	if r := st.lastReset; r != nil && (r.GetIndex() > si || r.GetIndex() == si && r.GetTerm() != sterm) {
		return nil, nil, bad("the wal was reset to snapshot %d/%d, which has no metadata file", r.GetIndex(), r.GetTerm())
	}
	ents, base := st.ents, st.base
	switch {
	case si < base:
		return nil, nil, bad("the wal starts after index %d but the newest snapshot ends at %d", base, si)
	case si > st.lastIndex():
		return nil, nil, bad("the wal ends at index %d, before the newest snapshot %d", st.lastIndex(), si)
	case si > base:
		if t := ents[si-base-1].GetTerm(); t != sterm {
			return nil, nil, bad("entry %d has term %d but snapshot %d has term %d", si, t, si, sterm)
		}
		ents = ents[si-base:]
	}

	hs := st.hs
	if hs != nil && hs.GetCommit() < si {
		// A snapshot is committed by definition, and raft refuses to start
		// with a commit index below its snapshot. Raft always saves the two
		// together; this covers a caller that saved a snapshot alone.
		hs.Commit = new(si)
	}
	if last := max(si, st.lastIndex()); hs.GetCommit() > last {
		return nil, nil, bad("hard state commit %d is beyond the last entry %d", hs.GetCommit(), last)
	}
	return ents, hs, nil
}

// removeStaleSnapshots deletes snapshot files other than keep's: older ones,
// received ones that were discarded, and data without metadata.
func (s *Store) removeStaleSnapshots(l dirListing, keep snapRef) {
	var names []string
	for _, r := range l.snaps {
		if r != keep {
			names = append(names, r.metaName())
		}
	}
	for r := range l.data {
		if r != keep {
			names = append(names, r.dataName())
		}
	}
	if err := removeFiles(s.dirf, names...); err != nil {
		s.log.Warn("cannot remove stale snapshots", "err", err)
	}
}
