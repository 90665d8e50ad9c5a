package logstore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"

	"go.etcd.io/raft/v3"
	raftpb "go.etcd.io/raft/v3/raftpb"
)

// TestModel drives a Store and a raft.MemoryStorage through the same random
// Ready-like operations (appends with conflicting suffixes, local snapshots
// and compactions, received snapshots) and restarts, and checks after each
// restart that the Store recovered exactly what the MemoryStorage holds.
func TestModel(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			runModel(t, seed)
		})
	}
}

func runModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	opts := Options{SegmentSize: int64(1024 + rng.IntN(16<<10)), DiscardSnapshotData: seed%4 == 3}
	s := openT(t, t.TempDir(), opts)
	model := raft.NewMemoryStorage()
	var term, vote, commit uint64 = 1, 1, 0

	randData := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return string(b)
	}
	snapData := func() string {
		if opts.DiscardSnapshotData {
			return "" // the model would keep what the store discards
		}
		return randData(1 + rng.IntN(300))
	}

	for step := range 200 {
		first, last := indexes(t, model)
		snap, _ := model.Snapshot()
		snapIndex := snap.GetMetadata().GetIndex()
		switch r := rng.IntN(100); {
		case r < 70: // append, sometimes replacing an uncommitted suffix
			lo := last + 1
			if floor := max(commit+1, first); rng.IntN(4) == 0 && floor <= last {
				lo = floor + rng.Uint64N(last+1-floor)
			}
			if lo <= last || rng.IntN(10) == 0 {
				term++ // a conflicting suffix comes from a newer leader
				vote = 1 + rng.Uint64N(3)
			}
			n := 1 + rng.Uint64N(70)
			var es []*raftpb.Entry
			for i := range n {
				es = append(es, ent(lo+i, term, randData(rng.IntN(200))))
			}
			var hs *raftpb.HardState
			if rng.IntN(5) > 0 { // else a Ready without a hard state change
				commit += rng.Uint64N(lo + n - commit)
				hs = hardState(term, vote, commit)
			}
			mustSave(t, s, hs, es, nil)
			model.Append(es)
			if hs != nil {
				model.SetHardState(hs)
			}
		case r < 82: // local snapshot, then compaction keeping a tail
			if commit <= snapIndex {
				continue
			}
			idx := snapIndex + 1 + rng.Uint64N(commit-snapIndex)
			cs, data := confState(1, 2, 1+rng.Uint64N(5)), snapData()
			if _, err := s.CreateSnapshot(idx, cs, []byte(data)); err != nil {
				t.Fatalf("step %d: CreateSnapshot(%d): %v", step, idx, err)
			}
			model.CreateSnapshot(idx, cs, []byte(data))
			c := idx - min(idx, rng.Uint64N(30))
			gotErr, wantErr := s.Compact(c), model.Compact(c)
			if !errors.Is(gotErr, wantErr) && gotErr != wantErr {
				t.Fatalf("step %d: Compact(%d): got %v, want %v", step, c, gotErr, wantErr)
			}
		case r < 88: // snapshot from the leader, replacing the whole log
			idx := commit + 1 + rng.Uint64N(100)
			term++
			commit = idx
			sn := snapshot(idx, term, confState(1, 2, 3), snapData())
			hs := hardState(term, 0, commit)
			es := ents(idx+1, idx+rng.Uint64N(5), term, randData(10))
			mustSave(t, s, hs, es, sn)
			if err := model.ApplySnapshot(sn); err != nil {
				t.Fatal(err)
			}
			model.Append(es)
			model.SetHardState(hs)
		case r < 96:
			s = reopen(t, s)
			model = reopenModel(t, model)
			assertSameStorage(t, s, model)
		default:
			assertSameStorage(t, s, model)
		}
	}
	s = reopen(t, s)
	assertSameStorage(t, s, reopenModel(t, model))
}

func TestConflictingSuffixSurvivesReopen(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	mustSave(t, s, hardState(1, 1, 3), ents(1, 10, 1, "old"), nil)
	// A new leader overwrites 6..: the old 6..10 must never come back.
	mustSave(t, s, hardState(2, 2, 5), ents(6, 7, 2, "new"), nil)
	s = reopen(t, s)

	if _, last := indexes(t, s); last != 7 {
		t.Fatalf("last index %d, want 7", last)
	}
	es, err := s.Entries(5, 8, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		want := map[bool]uint64{true: 1, false: 2}[e.GetIndex() == 5]
		if e.GetTerm() != want {
			t.Errorf("entry %d has term %d, want %d", e.GetIndex(), e.GetTerm(), want)
		}
	}
	// And appending after the truncation continues the new log.
	mustSave(t, s, nil, ents(8, 8, 2, "next"), nil)
	s = reopen(t, s)
	if _, last := indexes(t, s); last != 8 {
		t.Fatalf("last index %d, want 8", last)
	}
}

func TestIsEmpty(t *testing.T) {
	dir := t.TempDir() + "/sub/raft"
	s := openT(t, dir, Options{})
	if !s.IsEmpty() {
		t.Fatal("fresh directory not empty")
	}
	mustSave(t, s, hardState(1, 1, 0), nil, nil)
	if s = reopen(t, s); s.IsEmpty() {
		t.Fatal("directory with a hard state reported empty")
	}
	hs, _, _ := s.InitialState()
	if hs.GetTerm() != 1 || hs.GetVote() != 1 {
		t.Fatalf("hard state %v", hs)
	}
}

func TestPermissions(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix permissions")
	}
	dir := t.TempDir() + "/raft"
	s := openT(t, dir, Options{})
	mustSave(t, s, hardState(1, 1, 1), ents(1, 3, 1, "x"), nil)
	if _, err := s.CreateSnapshot(1, confState(1), []byte("data")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != dirPerm {
		t.Errorf("directory mode %v", st.Mode().Perm())
	}
	des, _ := os.ReadDir(dir)
	for _, de := range des {
		info, _ := de.Info()
		if info.Mode().Perm() != filePerm {
			t.Errorf("%s has mode %v", de.Name(), info.Mode().Perm())
		}
	}
}

func TestSecondOpenFails(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("directory lock is Linux only")
	}
	dir := t.TempDir()
	openT(t, dir, Options{})
	if s, err := Open(dir, Options{Logger: quiet}); err == nil {
		s.Close()
		t.Fatal("second Open of a directory in use succeeded")
	}
}

func TestWritesAfterClose(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	s.Close()
	if err := s.Save(hardState(1, 1, 0), nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Save after Close: %v", err)
	}
	if err := s.Compact(0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Compact after Close: %v", err)
	}
}

func TestSaveRejectsImpossibleAppends(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	mustSave(t, s, nil, ents(1, 5, 1, "x"), nil)
	for name, es := range map[string][]*raftpb.Entry{
		"gap":            ents(7, 8, 1, "x"),
		"not contiguous": {ent(6, 1, "x"), ent(8, 1, "x")},
	} {
		if err := s.Save(nil, es, nil); err == nil {
			t.Errorf("%s: Save succeeded", name)
		}
	}
	// The store stays usable: those were caller errors, not I/O errors.
	mustSave(t, s, nil, ents(6, 6, 1, "x"), nil)
	if _, last := indexes(t, reopen(t, s)); last != 6 {
		t.Fatalf("last index %d, want 6", last)
	}
}
