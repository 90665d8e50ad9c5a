package logstore

import (
	"bytes"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/raft/v3"
	raftpb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

var quiet = slog.New(slog.DiscardHandler)

func openT(tb testing.TB, dir string, opts Options) *Store {
	tb.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	s, err := Open(dir, opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func reopen(tb testing.TB, s *Store) *Store {
	tb.Helper()
	if err := s.Close(); err != nil {
		tb.Fatalf("Close: %v", err)
	}
	return openT(tb, s.dir, s.opts)
}

func ent(index, term uint64, data string) *raftpb.Entry {
	return &raftpb.Entry{Index: new(index), Term: new(term), Type: raftpb.EntryNormal.Enum(), Data: []byte(data)}
}

func ents(lo, hi, term uint64, data string) []*raftpb.Entry {
	var es []*raftpb.Entry
	for i := lo; i <= hi; i++ {
		es = append(es, ent(i, term, data))
	}
	return es
}

func hardState(term, vote, commit uint64) *raftpb.HardState {
	return &raftpb.HardState{Term: new(term), Vote: new(vote), Commit: new(commit)}
}

func confState(voters ...uint64) *raftpb.ConfState {
	return raftpb.EnsureConfState(&raftpb.ConfState{Voters: voters})
}

func snapshot(index, term uint64, cs *raftpb.ConfState, data string) *raftpb.Snapshot {
	var d []byte
	if data != "" {
		d = []byte(data)
	}
	return &raftpb.Snapshot{Data: d, Metadata: &raftpb.SnapshotMetadata{Index: new(index), Term: new(term), ConfState: cs}}
}

func mustSave(tb testing.TB, s *Store, hs *raftpb.HardState, es []*raftpb.Entry, snap *raftpb.Snapshot) {
	tb.Helper()
	if err := s.Save(hs, es, snap); err != nil {
		tb.Fatalf("Save: %v", err)
	}
}

func indexes(tb testing.TB, st raft.Storage) (first, last uint64) {
	tb.Helper()
	first, err := st.FirstIndex()
	if err != nil {
		tb.Fatal(err)
	}
	last, err = st.LastIndex()
	if err != nil {
		tb.Fatal(err)
	}
	return first, last
}

// assertSameStorage checks that got serves exactly what want does.
func assertSameStorage(tb testing.TB, got *Store, want *raft.MemoryStorage) {
	tb.Helper()
	gf, gl := indexes(tb, got)
	wf, wl := indexes(tb, want)
	if gf != wf || gl != wl {
		tb.Fatalf("indexes: got [%d, %d], want [%d, %d]", gf, gl, wf, wl)
	}
	ghs, gcs, _ := got.InitialState()
	whs, wcs, _ := want.InitialState()
	if !raft.IsEmptyHardState(ghs) || !raft.IsEmptyHardState(whs) {
		if !proto.Equal(ghs, whs) {
			tb.Fatalf("hard state: got %v, want %v", ghs, whs)
		}
	}
	if !proto.Equal(raftpb.EnsureConfState(gcs), raftpb.EnsureConfState(proto.Clone(wcs).(*raftpb.ConfState))) {
		tb.Fatalf("conf state: got %v, want %v", gcs, wcs)
	}
	for i := wf - 1; i <= wl; i++ {
		gt, gerr := got.Term(i)
		wt, werr := want.Term(i)
		if gt != wt || gerr != werr {
			tb.Fatalf("Term(%d): got %d, %v; want %d, %v", i, gt, gerr, wt, werr)
		}
	}
	if wl >= wf {
		ge, err := got.Entries(wf, wl+1, math.MaxUint64)
		if err != nil {
			tb.Fatalf("Entries(%d, %d): %v", wf, wl+1, err)
		}
		we, _ := want.Entries(wf, wl+1, math.MaxUint64)
		if !slices.EqualFunc(ge, we, func(a, b *raftpb.Entry) bool { return proto.Equal(a, b) }) {
			tb.Fatalf("entries [%d, %d] differ", wf, wl)
		}
	}
	gs, err := got.Snapshot()
	if err != nil {
		tb.Fatalf("Snapshot: %v", err)
	}
	ws, _ := want.Snapshot()
	gm, wm := gs.GetMetadata(), ws.GetMetadata()
	if gm.GetIndex() != wm.GetIndex() || gm.GetTerm() != wm.GetTerm() || !bytes.Equal(gs.GetData(), ws.GetData()) ||
		!proto.Equal(raftpb.EnsureConfState(gm.GetConfState()), raftpb.EnsureConfState(wm.GetConfState())) {
		tb.Fatalf("snapshot: got %v (%d data bytes), want %v (%d data bytes)", gm, len(gs.GetData()), wm, len(ws.GetData()))
	}
}

// reopenModel turns a MemoryStorage into what a restart recovers: the
// snapshot, the entries after it and the hard state.
func reopenModel(tb testing.TB, m *raft.MemoryStorage) *raft.MemoryStorage {
	tb.Helper()
	snap, _ := m.Snapshot()
	hs, _, _ := m.InitialState()
	_, last := indexes(tb, m)
	n := raft.NewMemoryStorage()
	if err := n.ApplySnapshot(snap); err != nil {
		tb.Fatal(err)
	}
	si := snap.GetMetadata().GetIndex()
	if last > si {
		es, err := m.Entries(si+1, last+1, math.MaxUint64)
		if err != nil {
			tb.Fatal(err)
		}
		n.Append(es)
	}
	if hs != nil {
		n.SetHardState(hs)
	}
	return n
}

func segmentFiles(tb testing.TB, dir string) []string {
	tb.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, de := range des {
		if strings.HasSuffix(de.Name(), extSegment) {
			names = append(names, filepath.Join(dir, de.Name()))
		}
	}
	return names
}

// records lists the records of a segment file up to where its data ends.
func records(tb testing.TB, path string) []record {
	tb.Helper()
	var recs []record
	if _, _, _, err := scanSegment(path, true, func(r record) error {
		r.payload = nil // reused by the scanner
		recs = append(recs, r)
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return recs
}

// copyDir copies the regular files of src into a new temporary directory.
func copyDir(tb testing.TB, src string) string {
	tb.Helper()
	dst := tb.TempDir()
	des, err := os.ReadDir(src)
	if err != nil {
		tb.Fatal(err)
	}
	for _, de := range des {
		b, err := os.ReadFile(filepath.Join(src, de.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, de.Name()), b, filePerm); err != nil {
			tb.Fatal(err)
		}
	}
	return dst
}
