package logstore

import (
	"go.etcd.io/raft/v3"
	raftpb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// The raft.Storage read side. raft compares the errors it gets with ==, so
// ErrCompacted and ErrUnavailable are returned as they are, never wrapped.

// InitialState implements raft.Storage: the newest hard state (nil if none
// was ever saved) and the newest snapshot's ConfState. Conf changes applied
// after that snapshot are in the log; raft hands them out again unless
// Config.Applied says they were applied already, so a node that sets Applied
// above the snapshot must keep its own ConfState.
func (s *Store) InitialState() (*raftpb.HardState, *raftpb.ConfState, error) {
	s.memMu.RLock()
	defer s.memMu.RUnlock()
	var hs *raftpb.HardState
	if s.hs != nil {
		hs = proto.Clone(s.hs).(*raftpb.HardState)
	}
	cs := proto.Clone(s.snap.GetConfState()).(*raftpb.ConfState)
	return hs, raftpb.EnsureConfState(cs), nil
}

// Entries implements raft.Storage. Unlike raft.MemoryStorage, which panics,
// it returns ErrUnavailable for a range that ends beyond the last index.
func (s *Store) Entries(lo, hi, maxSize uint64) ([]*raftpb.Entry, error) {
	s.memMu.RLock()
	defer s.memMu.RUnlock()
	first, _ := s.ms.FirstIndex()
	if lo < first {
		return nil, raft.ErrCompacted
	}
	if last, _ := s.ms.LastIndex(); hi > last+1 || lo > hi {
		return nil, raft.ErrUnavailable
	}
	return s.ms.Entries(lo, hi, maxSize)
}

// Term implements raft.Storage; it works down to FirstIndex()-1, the index
// of the snapshot or of the last compacted entry.
func (s *Store) Term(i uint64) (uint64, error) {
	s.memMu.RLock()
	defer s.memMu.RUnlock()
	return s.ms.Term(i)
}

// LastIndex implements raft.Storage.
func (s *Store) LastIndex() (uint64, error) {
	s.memMu.RLock()
	defer s.memMu.RUnlock()
	return s.ms.LastIndex()
}

// FirstIndex implements raft.Storage.
func (s *Store) FirstIndex() (uint64, error) {
	s.memMu.RLock()
	defer s.memMu.RUnlock()
	return s.ms.FirstIndex()
}
