package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTornTail cuts the last segment at every byte offset inside its last
// three records, as a crash in the middle of a Save would, optionally
// followed by the zeros or garbage a crash can leave. Open must succeed with
// exactly the records before the torn one, and later writes must land after
// them.
func TestTornTail(t *testing.T) {
	src := t.TempDir()
	s := openT(t, src, Options{SegmentSize: 64 << 10})
	for i := uint64(1); i <= 20; i++ {
		mustSave(t, s, hardState(1, 1, i-1), ents(i, i, 1, strings.Repeat("x", int(i))), nil)
	}
	mustSave(t, s, nil, ents(21, 23, 1, "last batch"), nil) // no hard state: the last records are entries
	s.Close()

	segs := segmentFiles(t, src)
	if len(segs) != 1 {
		t.Fatalf("%d segments, want 1", len(segs))
	}
	recs := records(t, segs[0])
	tail := recs[len(recs)-3:]
	full, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	full = full[:tail[2].end]

	rng := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 300)
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	endings := map[string][]byte{
		"cut":     nil,
		"zeros":   make([]byte, 4096),
		"garbage": garbage,
	}
	for cut := tail[0].off; cut < tail[2].end; cut++ {
		wantLast := uint64(20)
		for _, r := range tail {
			if r.end <= cut {
				wantLast++
			}
		}
		for name, ending := range endings {
			t.Run(fmt.Sprintf("%s@%d", name, cut), func(t *testing.T) {
				dir := t.TempDir()
				b := append(bytes.Clone(full[:cut]), ending...)
				if err := os.WriteFile(filepath.Join(dir, filepath.Base(segs[0])), b, filePerm); err != nil {
					t.Fatal(err)
				}
				s := openT(t, dir, Options{SegmentSize: 64 << 10})
				if _, last := indexes(t, s); last != wantLast {
					t.Fatalf("last index %d, want %d", last, wantLast)
				}
				if hs, _, _ := s.InitialState(); hs.GetCommit() != 19 {
					t.Fatalf("commit %d, want 19", hs.GetCommit())
				}
				mustSave(t, s, nil, ents(wantLast+1, wantLast+1, 2, "after"), nil)
				s = reopen(t, s)
				es, err := s.Entries(wantLast, wantLast+2, 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				if len(es) != 2 || es[0].GetTerm() != 1 || string(es[1].GetData()) != "after" {
					t.Fatalf("entries after repair: %v", es)
				}
			})
		}
	}
}

// TestCorruptionInTheMiddle flips every byte of a record that valid records
// follow: that data was acknowledged, so Open must refuse, name the file and
// leave it untouched.
func TestCorruptionInTheMiddle(t *testing.T) {
	src := t.TempDir()
	s := openT(t, src, Options{SegmentSize: 64 << 10})
	for i := uint64(1); i <= 10; i++ {
		mustSave(t, s, hardState(1, 1, i), ents(i, i, 1, "payload"), nil)
	}
	s.Close()
	seg := segmentFiles(t, src)[0]
	victim := records(t, seg)[6]

	for off := victim.off; off < victim.end; off++ {
		dir := copyDir(t, src)
		path := filepath.Join(dir, filepath.Base(seg))
		flipByte(t, path, int64(off))
		before, _ := os.ReadFile(path)

		_, err := Open(dir, Options{Logger: quiet})
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d: Open: %v, want ErrCorrupt", off, err)
		}
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.File != path || ce.Offset != int64(victim.off) {
			t.Fatalf("flip at %d: error %v does not point at %s offset %d", off, err, path, victim.off)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Fatalf("flip at %d: Open modified the damaged segment", off)
		}
	}
}

func TestCorruptionInAFinishedSegment(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{SegmentSize: 512})
	for i := uint64(1); i <= 40; i++ {
		mustSave(t, s, hardState(1, 1, i), ents(i, i, 1, "payload payload"), nil)
	}
	s.Close()
	segs := segmentFiles(t, dir)
	if len(segs) < 3 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	// The last record of a finished segment: corrupt even though nothing
	// follows it in that file.
	recs := records(t, segs[1])
	flipByte(t, segs[1], int64(recs[len(recs)-1].end-1))
	_, err := Open(dir, Options{Logger: quiet})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), filepath.Base(segs[1])) {
		t.Fatalf("Open: %v, want ErrCorrupt naming %s", err, segs[1])
	}
}

func TestTruncatedFinishedSegment(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{SegmentSize: 512})
	for i := uint64(1); i <= 40; i++ {
		mustSave(t, s, hardState(1, 1, i), ents(i, i, 1, "payload payload"), nil)
	}
	s.Close()
	segs := segmentFiles(t, dir)
	st, _ := os.Stat(segs[1])
	if err := os.Truncate(segs[1], st.Size()-3); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{Logger: quiet}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open: %v, want ErrCorrupt", err)
	}
}

func TestMissingSegment(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{SegmentSize: 512})
	for i := uint64(1); i <= 40; i++ {
		mustSave(t, s, hardState(1, 1, i), ents(i, i, 1, "payload payload"), nil)
	}
	s.Close()
	segs := segmentFiles(t, dir)
	os.Remove(segs[2])
	if _, err := Open(dir, Options{Logger: quiet}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open: %v, want ErrCorrupt", err)
	}
}

// TestImpossibleRecordAtTheTail appends a record with a valid CRC but an
// index that leaves a gap. It is intact, so it was written like that: not a
// torn write but a bug or tampering, and Open must say so.
func TestImpossibleRecordAtTheTail(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{SegmentSize: 64 << 10})
	mustSave(t, s, hardState(1, 1, 1), ents(1, 3, 1, "x"), nil)
	s.Close()
	seg := segmentFiles(t, dir)[0]
	recs := records(t, seg)
	end := int64(recs[len(recs)-1].end)
	rec, err := appendRecord(nil, recEntry, ent(9, 1, "gap"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(seg, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(rec, end); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Open(dir, Options{Logger: quiet})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Offset != end || !strings.Contains(ce.Reason, "gap") {
		t.Fatalf("Open: %v, want a gap reported at offset %d", err, end)
	}
}

func TestCorruptSnapshotMetadata(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	mustSave(t, s, hardState(1, 1, 5), ents(1, 5, 1, "x"), nil)
	if _, err := s.CreateSnapshot(4, confState(1), []byte("state")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	path := filepath.Join(dir, snapRef{index: 4, term: 1}.metaName())
	flipByte(t, path, 12)
	if _, err := Open(dir, Options{Logger: quiet}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open: %v, want ErrCorrupt naming %s", err, path)
	}
}

func TestCorruptSnapshotData(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	mustSave(t, s, hardState(1, 1, 5), ents(1, 5, 1, "x"), nil)
	if _, err := s.CreateSnapshot(4, confState(1), []byte("state")); err != nil {
		t.Fatal(err)
	}
	flipByte(t, filepath.Join(dir, snapRef{index: 4, term: 1}.dataName()), headerSize+1)
	if _, err := s.Snapshot(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Snapshot: %v, want ErrCorrupt", err)
	}
}

func flipByte(tb testing.TB, path string, off int64) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		tb.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, off); err != nil {
		tb.Fatal(err)
	}
}

// TestValidRecordFarIntoThePreallocatedTail writes an intact record megabytes
// after the end of the data, in the preallocated tail (unwritten extents,
// which the scan for zeros skips unread): what lies beyond the unused space
// is still read, and a valid record there is damage, not a torn tail.
func TestValidRecordFarIntoThePreallocatedTail(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{SegmentSize: 8 << 20})
	mustSave(t, s, hardState(1, 1, 1), ents(1, 3, 1, "x"), nil)
	s.Close()
	seg := segmentFiles(t, dir)[0]
	recs := records(t, seg)
	end := int64(recs[len(recs)-1].end)
	rec, err := appendRecord(nil, recEntry, ent(4, 1, "far"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(seg, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := int64(6<<20 + 123) // zeros between end and at: the scan stops at end
	if _, err := f.WriteAt(rec, at); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Open(dir, Options{Logger: quiet})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Offset != end || !strings.Contains(ce.Reason, fmt.Sprint(at)) {
		t.Fatalf("Open: %v, want damage at offset %d naming the record at %d", err, end, at)
	}
}
