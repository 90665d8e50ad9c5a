package logstore

import (
	"bytes"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.etcd.io/raft/v3"
)

// TestConcurrentUse runs the three callers a node has at once: the raft
// goroutine saving and reading, an apply goroutine snapshotting and
// compacting behind it, and another reader (raft is single-threaded, but
// status pages are not). Run with -race.
func TestConcurrentUse(t *testing.T) {
	s := openT(t, t.TempDir(), Options{SegmentSize: 8 << 10})
	var committed atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup

	wg.Go(func() { // apply goroutine
		for {
			select {
			case <-done:
				return
			default:
			}
			c := committed.Load()
			if c < 10 {
				continue
			}
			if _, err := s.CreateSnapshot(c, confState(1), []byte("state")); err != nil && !errors.Is(err, raft.ErrSnapOutOfDate) {
				t.Error(err)
				return
			}
			if err := s.Compact(c - 5); err != nil && err != raft.ErrCompacted {
				t.Error(err)
				return
			}
		}
	})
	wg.Go(func() { // reader
		for {
			select {
			case <-done:
				return
			default:
			}
			first, _ := s.FirstIndex()
			last, _ := s.LastIndex()
			if _, err := s.Entries(first, last+1, math.MaxUint64); err != nil && err != raft.ErrCompacted && err != raft.ErrUnavailable {
				t.Error(err)
				return
			}
			if _, err := s.Snapshot(); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for i := uint64(1); i <= 300; i++ { // raft goroutine
		mustSave(t, s, hardState(1, 1, i), ents(i, i, 1, "entry"), nil)
		committed.Store(i)
		if _, err := s.Term(i); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	s = reopen(t, s)
	if _, last := indexes(t, s); last != 300 {
		t.Fatalf("last index %d, want 300", last)
	}
}

func TestTornTailIsLogged(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{SegmentSize: 4096})
	mustSave(t, s, hardState(1, 1, 1), ents(1, 3, 1, "x"), nil)
	s.Close()
	seg := segmentFiles(t, dir)[0]
	recs := records(t, seg)
	flipByte(t, seg, int64(recs[len(recs)-1].end-1)) // damage the last record only

	var logs bytes.Buffer
	s = openT(t, dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if !strings.Contains(logs.String(), "torn write") || !strings.Contains(logs.String(), filepath.Base(seg)) {
		t.Fatalf("no warning naming the segment: %q", logs.String())
	}
	if hs, _, _ := s.InitialState(); hs != nil {
		t.Fatalf("hard state %v survived although its record was torn", hs)
	}
}

// FuzzOpen feeds arbitrary bytes as the only WAL segment. Open must either
// recover or fail with an error; it must never panic or hand raft an
// inconsistent log.
func FuzzOpen(f *testing.F) {
	seedDir := f.TempDir()
	s := openT(f, seedDir, Options{SegmentSize: 1 << 20})
	mustSave(f, s, hardState(1, 1, 2), ents(1, 3, 1, "seed"), nil)
	mustSave(f, s, hardState(2, 2, 3), ents(3, 4, 2, "conflict"), nil)
	mustSave(f, s, hardState(3, 0, 10), nil, snapshot(10, 3, confState(1), ""))
	s.Close()
	seed, err := os.ReadFile(segmentFiles(f, seedDir)[0])
	if err != nil {
		f.Fatal(err)
	}
	recs := records(f, segmentFiles(f, seedDir)[0])
	f.Add(seed[:recs[len(recs)-1].end])
	f.Add(seed[:recs[2].end])
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		name := segmentInfo{seq: 1, first: 1}.name()
		if err := os.WriteFile(filepath.Join(dir, name), b, filePerm); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, Options{Logger: quiet, SegmentSize: 4096})
		if err != nil {
			return
		}
		defer s.Close()
		first, last := indexes(t, s)
		if last >= first {
			if _, err := s.Entries(first, last+1, math.MaxUint64); err != nil {
				t.Fatalf("Entries(%d, %d) after a successful Open: %v", first, last+1, err)
			}
		}
		if hs, _, _ := s.InitialState(); hs.GetCommit() > last {
			t.Fatalf("commit %d beyond last index %d", hs.GetCommit(), last)
		}
	})
}
