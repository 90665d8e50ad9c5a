package logstore

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/raft/v3"
	raftpb "go.etcd.io/raft/v3/raftpb"
)

// TestReceivedSnapshotResetsLog covers a follower that holds an uncommitted
// suffix from an old term when the leader sends a snapshot: the suffix must
// not come back after a restart (it would make this node vote for
// candidates that lack committed entries).
func TestReceivedSnapshotResetsLog(t *testing.T) {
	s := openT(t, t.TempDir(), Options{SegmentSize: 4096})
	mustSave(t, s, hardState(1, 1, 50), ents(1, 150, 1, "old term"), nil)
	cs := confState(1, 2, 3)
	mustSave(t, s, hardState(2, 0, 100), nil, snapshot(100, 2, cs, "state at 100"))

	check := func(s *Store) {
		t.Helper()
		if first, last := indexes(t, s); first != 101 || last != 100 {
			t.Fatalf("indexes [%d, %d], want [101, 100]", first, last)
		}
		if term, err := s.Term(100); err != nil || term != 2 {
			t.Fatalf("Term(100) = %d, %v; want 2", term, err)
		}
		if _, err := s.Entries(50, 101, 1<<20); err != raft.ErrCompacted {
			t.Fatalf("Entries below the snapshot: %v, want ErrCompacted", err)
		}
		hs, gotCS, _ := s.InitialState()
		if hs.GetCommit() != 100 || !slices.Equal(gotCS.GetVoters(), []uint64{1, 2, 3}) {
			t.Fatalf("InitialState: %v, %v", hs, gotCS)
		}
		snap, err := s.Snapshot()
		if err != nil || snap.GetMetadata().GetIndex() != 100 || string(snap.GetData()) != "state at 100" {
			t.Fatalf("Snapshot: %v, %v", snap, err)
		}
	}
	check(s)
	s = reopen(t, s)
	check(s)

	// The log continues after the snapshot, also across another restart.
	mustSave(t, s, hardState(2, 0, 101), ents(101, 103, 2, "new"), nil)
	s = reopen(t, s)
	if first, last := indexes(t, s); first != 101 || last != 103 {
		t.Fatalf("indexes [%d, %d], want [101, 103]", first, last)
	}
}

// TestUnfinishedReceivedSnapshot simulates a crash after a received
// snapshot's files were written but before its WAL records were: that Save
// never returned, so the previous state must come back and the orphaned
// files go away.
func TestUnfinishedReceivedSnapshot(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	mustSave(t, s, hardState(1, 1, 8), ents(1, 10, 1, "x"), nil)
	if _, err := s.CreateSnapshot(5, confState(1), []byte("local")); err != nil {
		t.Fatal(err)
	}
	s.Close()

	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ref := snapRef{index: 50, term: 3}
	meta := &raftpb.SnapshotMetadata{Index: new(ref.index), Term: new(ref.term), ConfState: confState(1)}
	if err := writeSnapData(d, ref, []byte("received")); err != nil {
		t.Fatal(err)
	}
	if err := writeSnapMeta(d, recSnapReceived, meta); err != nil {
		t.Fatal(err)
	}

	var logs bytes.Buffer
	s = openT(t, dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	snap, err := s.Snapshot()
	if err != nil || snap.GetMetadata().GetIndex() != 5 || string(snap.GetData()) != "local" {
		t.Fatalf("Snapshot: %v, %v; want the local one at 5", snap, err)
	}
	if _, last := indexes(t, s); last != 10 {
		t.Fatalf("last index %d, want 10", last)
	}
	if !strings.Contains(logs.String(), "did not complete") {
		t.Fatalf("no warning logged: %q", logs.String())
	}
	for _, name := range []string{ref.metaName(), ref.dataName()} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s still exists: %v", name, err)
		}
	}
}

func TestLocalSnapshotAndOldFiles(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	mustSave(t, s, hardState(1, 1, 30), ents(1, 30, 1, "x"), nil)
	for _, idx := range []uint64{10, 20, 30} {
		if _, err := s.CreateSnapshot(idx, confState(1, 2), []byte{byte(idx)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateSnapshot(25, confState(1), nil); !errors.Is(err, raft.ErrSnapOutOfDate) {
		t.Fatalf("older snapshot: %v, want ErrSnapOutOfDate", err)
	}
	if _, err := s.CreateSnapshot(31, confState(1), nil); !errors.Is(err, raft.ErrUnavailable) {
		t.Fatalf("snapshot beyond the log: %v, want ErrUnavailable", err)
	}
	var snaps []string
	des, _ := os.ReadDir(dir)
	for _, de := range des {
		if !strings.HasSuffix(de.Name(), extSegment) {
			snaps = append(snaps, de.Name())
		}
	}
	want := []string{snapRef{30, 1}.metaName(), snapRef{30, 1}.dataName()}
	if !slices.Equal(snaps, want) {
		t.Fatalf("snapshot files %v, want %v", snaps, want)
	}
}

func TestDiscardSnapshotData(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{DiscardSnapshotData: true})
	mustSave(t, s, hardState(1, 1, 5), ents(1, 5, 1, "x"), nil)
	if _, err := s.CreateSnapshot(5, confState(1), []byte("not stored")); err != nil {
		t.Fatal(err)
	}
	mustSave(t, s, hardState(2, 0, 9), nil, snapshot(9, 2, confState(1), "not stored either"))
	s = reopen(t, s)
	snap, err := s.Snapshot()
	if err != nil || snap.GetMetadata().GetIndex() != 9 || snap.GetData() != nil {
		t.Fatalf("Snapshot: %v, %v", snap, err)
	}
	des, _ := os.ReadDir(dir)
	for _, de := range des {
		if strings.HasSuffix(de.Name(), extSnapData) {
			t.Errorf("data file %s written", de.Name())
		}
	}
}

func TestStaleSnapshotRejected(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	mustSave(t, s, hardState(2, 0, 10), nil, snapshot(10, 2, confState(1), ""))
	if err := s.Save(nil, nil, snapshot(10, 2, confState(1), "")); !errors.Is(err, raft.ErrSnapOutOfDate) {
		t.Fatalf("same snapshot again: %v, want ErrSnapOutOfDate", err)
	}
}

// A snapshot streamed from a writer (CreateSnapshotFrom) is stored as
// CreateSnapshot stores the same bytes: read back whole after a reopen. An
// image that writes another size than announced is refused and leaves no
// snapshot behind.
func TestSnapshotFromStream(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	mustSave(t, s, hardState(1, 1, 30), ents(1, 30, 1, "x"), nil)
	image := bytes.Repeat([]byte("0123456789abcdef"), 200_000) // 3.2 MB, past the writer's buffer
	write := func(b []byte) func(w io.Writer) error {
		return func(w io.Writer) error {
			for len(b) > 0 { // in pieces, as a database image is
				n := min(len(b), 4096)
				if _, err := w.Write(b[:n]); err != nil {
					return err
				}
				b = b[n:]
			}
			return nil
		}
	}
	if _, err := s.CreateSnapshotFrom(20, confState(1, 2), []byte("head"), int64(len(image)+1), write(image)); err == nil {
		t.Fatal("an image shorter than announced was taken")
	}
	meta, err := s.CreateSnapshotFrom(20, confState(1, 2), []byte("head"), int64(len(image)), write(image))
	if err != nil || meta.GetIndex() != 20 {
		t.Fatalf("CreateSnapshotFrom: %v, %v", meta, err)
	}
	s = reopen(t, s)
	snap, err := s.Snapshot()
	if err != nil || snap.GetMetadata().GetIndex() != 20 || !bytes.Equal(snap.GetData(), append([]byte("head"), image...)) {
		t.Fatalf("Snapshot after reopen: index %d, %d bytes, %v; want index 20 and head+image", snap.GetMetadata().GetIndex(), len(snap.GetData()), err)
	}
}
