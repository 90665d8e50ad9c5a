package logstore

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/raft/v3"
	"google.golang.org/protobuf/proto"
)

func TestRotationAndCompaction(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{SegmentSize: 4096})
	data := strings.Repeat("d", 100)
	for lo := uint64(1); lo <= 500; lo += 10 {
		mustSave(t, s, hardState(1, 1, lo+9), ents(lo, lo+9, 1, data), nil)
	}
	before := segmentFiles(t, dir)
	if len(before) < 10 {
		t.Fatalf("%d segments after 500 entries of 100 bytes, want more than 10", len(before))
	}
	// Segment names carry contiguous sequence numbers and the index their
	// first record continues from.
	for i, path := range before {
		seq, first, ok := parsePairName(filepath.Base(path), extSegment)
		if !ok || seq != uint64(i+1) {
			t.Fatalf("segment %d is named %s", i, path)
		}
		if recs := records(t, path); i > 0 && len(recs) == 0 || first < 1 {
			t.Fatalf("segment %s looks wrong", path)
		}
	}

	all, _ := s.Entries(1, 501, math.MaxUint64)
	if _, err := s.CreateSnapshot(400, confState(1), []byte("state")); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(400); err != nil {
		t.Fatal(err)
	}
	after := segmentFiles(t, dir)
	if len(after) >= len(before)-5 {
		t.Fatalf("Compact left %d of %d segments", len(after), len(before))
	}
	check := func(s *Store) {
		t.Helper()
		if _, err := s.Entries(400, 401, math.MaxUint64); err != raft.ErrCompacted {
			t.Fatalf("Entries(400): %v, want ErrCompacted", err)
		}
		if term, err := s.Term(400); err != nil || term != 1 {
			t.Fatalf("Term(400) = %d, %v", term, err)
		}
		es, err := s.Entries(401, 501, math.MaxUint64)
		if err != nil || len(es) != 100 {
			t.Fatalf("Entries(401, 501): %d entries, %v", len(es), err)
		}
		for i, e := range es {
			if !proto.Equal(e, all[400+i]) {
				t.Fatalf("entry %d differs after compaction", e.GetIndex())
			}
		}
	}
	check(s)
	s = reopen(t, s)
	check(s)
	if first, _ := indexes(t, s); first != 401 {
		t.Fatalf("first index after reopen %d, want 401", first)
	}

	// After a restart the memory starts at the snapshot, so compacting below
	// it reports ErrCompacted, like MemoryStorage, but still drops segments.
	mustSave(t, s, hardState(1, 1, 600), ents(501, 600, 1, data), nil)
	if _, err := s.CreateSnapshot(590, confState(1), nil); err != nil {
		t.Fatal(err)
	}
	n := len(segmentFiles(t, dir))
	if err := s.Compact(300); err != raft.ErrCompacted {
		t.Fatalf("Compact below the memory: %v, want ErrCompacted", err)
	}
	if err := s.Compact(580); err != nil {
		t.Fatal(err)
	}
	if len(segmentFiles(t, dir)) >= n {
		t.Fatal("Compact(580) removed no segment")
	}
	s = reopen(t, s)
	if first, last := indexes(t, s); first != 591 || last != 600 {
		t.Fatalf("indexes [%d, %d], want [591, 600]", first, last)
	}
}

func TestCompactBeyondSnapshot(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	mustSave(t, s, hardState(1, 1, 10), ents(1, 10, 1, "x"), nil)
	if _, err := s.CreateSnapshot(5, confState(1), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(6); err == nil {
		t.Fatal("Compact beyond the snapshot succeeded")
	}
	if err := s.Compact(5); err != nil {
		t.Fatal(err)
	}
}

// TestCompactKeepsSnapshotReset checks that the segment holding a received
// snapshot's reset record survives compaction while that snapshot is the
// newest: without it, the next Open could not tell the snapshot was saved.
// The reset is placed at the very end of a segment, so that the segment
// holds no entry after it and would otherwise qualify for removal.
func TestCompactKeepsSnapshotReset(t *testing.T) {
	dir := t.TempDir()
	const segSize = 1024
	s := openT(t, dir, Options{SegmentSize: segSize})
	data := strings.Repeat("d", 100)
	mustSave(t, s, hardState(1, 1, 20), ents(1, 20, 1, data), nil)
	i := uint64(21)
	for ; segSize-s.wal.size >= 100; i++ { // small entries until about 100 bytes are left
		mustSave(t, s, nil, ents(i, i, 1, "s"), nil)
	}
	seq := s.wal.tail().seq
	mustSave(t, s, hardState(2, 0, 100), nil, snapshot(100, 2, confState(1), "snap"))
	mustSave(t, s, hardState(2, 0, 101), ents(101, 101, 2, data), nil)
	if s.wal.tail().seq != seq+1 || s.wal.segs[len(s.wal.segs)-2].resetIndex != 100 {
		t.Fatalf("setup: the reset record is not the last thing in segment %d", seq)
	}
	if err := s.Compact(100); err != nil && !errors.Is(err, raft.ErrCompacted) {
		t.Fatal(err)
	}
	s = reopen(t, s)
	if snap, _ := s.Snapshot(); snap.GetMetadata().GetIndex() != 100 || string(snap.GetData()) != "snap" {
		t.Fatalf("snapshot after compaction and reopen: %v", snap.GetMetadata())
	}
	if first, last := indexes(t, s); first != 101 || last != 101 {
		t.Fatalf("indexes [%d, %d], want [101, 101]", first, last)
	}
}

// TestSegmentHeaderKeepsHardState: once old segments are gone, the newest
// hard state must still be found even if no Save since carried one.
func TestSegmentHeaderKeepsHardState(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{SegmentSize: 512})
	mustSave(t, s, hardState(7, 3, 0), ents(1, 5, 7, "x"), nil)
	for i := uint64(6); i <= 60; i++ {
		mustSave(t, s, nil, ents(i, i, 7, strings.Repeat("y", 50)), nil)
	}
	if _, err := s.CreateSnapshot(50, confState(1), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(50); err != nil {
		t.Fatal(err)
	}
	if s.wal.segs[0].seq == 1 {
		t.Fatal("setup: the first segment, with the only hard state record, was not removed")
	}
	s = reopen(t, s)
	hs, _, _ := s.InitialState()
	// The commit index is raised to the snapshot's: a snapshot is committed.
	if hs.GetTerm() != 7 || hs.GetVote() != 3 || hs.GetCommit() != 50 {
		t.Fatalf("hard state %v, want term 7 vote 3 commit 50", hs)
	}
}
