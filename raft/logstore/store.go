package logstore

import (
	"fmt"
	"log/slog"
	"os"
	"sync"

	"go.etcd.io/raft/v3"
	raftpb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// DefaultSegmentSize is the WAL segment size unless Options say otherwise.
const DefaultSegmentSize = 64 << 20

// Options configure a Store. The zero value is ready to use.
type Options struct {
	// SegmentSize is the size at which the WAL moves on to a new segment
	// file (default 64 MiB). A single larger record gets a segment of its own.
	SegmentSize int64
	// Logger receives recovery warnings; default slog.Default().
	Logger *slog.Logger
	// DiscardSnapshotData skips storing snapshots' Data; Snapshot then
	// returns the metadata only and the node must fill in Data itself
	// before sending the snapshot to a follower. By default Data is stored.
	DiscardSnapshotData bool
}

// Store is a durable raft.Storage. Save, CreateSnapshot, Compact and Close
// may be called from different goroutines than raft's reads.
type Store struct {
	dir   string
	opts  Options
	log   *slog.Logger
	dirf  *os.File // held open for the directory lock and directory fsyncs
	empty bool

	// snapMu serialises CreateSnapshot, so that it can write the snapshot
	// data (possibly large) without holding mu and stalling Save.
	snapMu sync.Mutex

	// mu serialises everything that writes files.
	mu     sync.Mutex
	wal    *wal
	closed bool
	failed error // first write error; see fail

	// memMu guards the in-memory view below. Writers take it only after
	// their data is durable, and only briefly, so reads never wait for disk.
	memMu sync.RWMutex
	ms    *raft.MemoryStorage
	hs    *raftpb.HardState        // newest durable hard state, nil if none
	snap  *raftpb.SnapshotMetadata // newest durable snapshot, never nil
}

var _ raft.Storage = (*Store)(nil)

// Open opens or creates the store in dir and recovers its state. The
// directory is locked (flock on Linux) for as long as the Store is open.
func Open(dir string, opts Options) (*Store, error) {
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := mkdirDurable(dir); err != nil {
		return nil, fmt.Errorf("logstore: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("logstore: open %s: %w", dir, err)
	}
	if err := lockDir(d); err != nil {
		d.Close()
		return nil, fmt.Errorf("logstore: lock %s: %w", dir, err)
	}
	s := &Store{
		dir:  dir,
		opts: opts,
		log:  opts.Logger.With("subsys", "logstore", "dir", dir),
		dirf: d,
	}
	if err := s.recover(); err != nil {
		if s.wal != nil {
			s.wal.close()
		}
		d.Close()
		return nil, fmt.Errorf("logstore: open %s: %w", dir, err)
	}
	return s, nil
}

// IsEmpty reports whether the directory held no state when it was opened:
// the node then bootstraps a new member instead of restarting one.
func (s *Store) IsEmpty() bool { return s.empty }

// Save persists one Ready's snapshot, entries and hard state, in that order,
// with a single fdatasync of the WAL (plus the snapshot files' own syncs, and
// a segment rotation's, when those happen), and only then makes them visible
// to raft. Messages that promise durability may be sent once it returns.
//
// An I/O error leaves the files in an unknown state, so the Store refuses
// all further writes; the process should exit and recover by reopening.
func (s *Store) Save(hs *raftpb.HardState, entries []*raftpb.Entry, snap *raftpb.Snapshot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	hasSnap, hasHS := !raft.IsEmptySnap(snap), !raft.IsEmptyHardState(hs)
	if !hasSnap && !hasHS && len(entries) == 0 {
		return nil
	}

	s.memMu.RLock()
	last, _ := s.ms.LastIndex()
	first, _ := s.ms.FirstIndex()
	snapIndex := s.snap.GetIndex()
	s.memMu.RUnlock()

	prevLast := last
	var meta *raftpb.SnapshotMetadata
	if hasSnap {
		if snap.GetMetadata().GetIndex() <= snapIndex {
			return fmt.Errorf("logstore: save snapshot %d, have %d: %w", snap.GetMetadata().GetIndex(), snapIndex, raft.ErrSnapOutOfDate)
		}
		meta = proto.Clone(snap.GetMetadata()).(*raftpb.SnapshotMetadata)
		raftpb.EnsureSnapshotMetadata(meta)
		first, last = meta.GetIndex()+1, meta.GetIndex()
	}
	if err := checkAppend(entries, first, last); err != nil {
		return err
	}
	if hasHS {
		hs = proto.Clone(hs).(*raftpb.HardState)
	} else {
		hs = nil
	}

	if hasSnap {
		if err := s.writeSnapData(refOf(meta), snap.GetData()); err != nil {
			return s.fail(err)
		}
		if err := writeSnapMeta(s.dirf, recSnapReceived, meta); err != nil {
			return s.fail(err)
		}
	}
	// As etcd's raft.MustSync: a new term or vote, new entries or a
	// snapshot must be durable before raft acts on them; a hard state that
	// only moves the commit index need not be (a restarted node learns the
	// commit index from the leader again), so it is written but not synced.
	mustSync := hasSnap || len(entries) > 0 ||
		(hasHS && (s.hs == nil || hs.GetTerm() != s.hs.GetTerm() || hs.GetVote() != s.hs.GetVote()))
	if err := s.appendWAL(hs, entries, meta, prevLast, last, mustSync); err != nil {
		return s.fail(err)
	}

	s.memMu.Lock()
	if hasSnap {
		// Data stays on disk: Snapshot reads it when raft needs it.
		if err := s.ms.ApplySnapshot(&raftpb.Snapshot{Metadata: meta}); err != nil {
			s.memMu.Unlock()
			return s.fail(fmt.Errorf("apply snapshot %d: %w", meta.GetIndex(), err))
		}
		s.snap = meta
	}
	if err := s.ms.Append(entries); err != nil {
		s.memMu.Unlock()
		return s.fail(fmt.Errorf("append to memory: %w", err))
	}
	if hasHS {
		s.hs = hs
		s.ms.SetHardState(hs)
	}
	s.memMu.Unlock()

	if hasSnap {
		// Only now is the received snapshot valid (its reset record is
		// durable), so only now may the previous snapshot go.
		s.removeSnapshotsBefore(refOf(meta))
	}
	return nil
}

// appendWAL writes the WAL records of one Save and, when sync, syncs them. prevLast is
// the log's last index before this Save, last the one the entries follow
// (the snapshot's index if there is a reset).
func (s *Store) appendWAL(hs *raftpb.HardState, entries []*raftpb.Entry, reset *raftpb.SnapshotMetadata, prevLast, last uint64, sync bool) error {
	if reset != nil {
		// A segment started before the reset record still continues the
		// old log, which is what recovery checks; hence prevLast.
		if err := s.wal.add(recReset, reset, prevLast+1); err != nil {
			return err
		}
	}
	for _, e := range entries {
		if err := s.wal.add(recEntry, e, last+1); err != nil {
			return err
		}
		last = e.GetIndex()
	}
	if hs != nil {
		if err := s.wal.add(recHardState, hs, last+1); err != nil {
			return err
		}
	}
	if !sync {
		return s.wal.flush()
	}
	return s.wal.commit()
}

// checkAppend rejects entries raft would never hand out: they must be
// contiguous, must not reach into the compacted or snapshotted log and
// must not leave a gap after last.
func checkAppend(entries []*raftpb.Entry, first, last uint64) error {
	if len(entries) == 0 {
		return nil
	}
	lo := entries[0].GetIndex()
	for i, e := range entries {
		if e.GetIndex() != lo+uint64(i) {
			return fmt.Errorf("logstore: entries are not contiguous: index %d follows %d", e.GetIndex(), lo+uint64(i)-1)
		}
	}
	if lo < first || lo > last+1 {
		return fmt.Errorf("logstore: cannot append at index %d to a log holding [%d, %d]", lo, first, last)
	}
	return nil
}

func (s *Store) writable() error {
	switch {
	case s.closed:
		return ErrClosed
	case s.failed != nil:
		return fmt.Errorf("logstore: unusable after an earlier write error: %w", s.failed)
	}
	return nil
}

// fail records a write error. After a failed write or fsync the kernel may
// have dropped dirty pages and the files' contents are unknown, so retrying
// could acknowledge data that is not on disk.
func (s *Store) fail(err error) error {
	if s.failed == nil {
		s.failed = err
	}
	return fmt.Errorf("logstore: %w", err)
}

// Close syncs and releases the files.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	// A hard state that only moved the commit index was written unsynced;
	// a clean close makes it durable too.
	var err error
	if s.failed == nil && s.wal.f != nil {
		err = s.wal.commit()
	}
	if cerr := s.wal.close(); err == nil {
		err = cerr
	}
	if cerr := s.dirf.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", s.dir, cerr)
	}
	if err != nil {
		return fmt.Errorf("logstore: %w", err)
	}
	return nil
}
