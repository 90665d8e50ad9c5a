package logstore

import (
	"math"
	"testing"

	"go.etcd.io/raft/v3"
	"google.golang.org/protobuf/proto"
)

func TestEntriesMaxSize(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	mustSave(t, s, nil, ents(1, 10, 1, "0123456789"), nil)
	one := uint64(proto.Size(ent(1, 1, "0123456789")))
	for _, tc := range []struct {
		maxSize uint64
		want    int
	}{
		{0, 1}, // at least one entry, however small the limit
		{one - 1, 1},
		{one, 1},
		{3 * one, 3},
		{3*one + 1, 3},
		{math.MaxUint64, 10},
	} {
		es, err := s.Entries(1, 11, tc.maxSize)
		if err != nil || len(es) != tc.want {
			t.Errorf("Entries(1, 11, %d): %d entries, %v; want %d", tc.maxSize, len(es), err, tc.want)
		}
	}
}

func TestStorageBounds(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	mustSave(t, s, hardState(2, 1, 10), ents(1, 10, 2, "x"), nil)
	if _, err := s.CreateSnapshot(4, confState(1), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(4); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		lo, hi uint64
		err    error
	}{
		{4, 6, raft.ErrCompacted},
		{5, 11, nil},
		{5, 12, raft.ErrUnavailable}, // MemoryStorage would panic here
		{11, 13, raft.ErrUnavailable},
	} {
		if _, err := s.Entries(tc.lo, tc.hi, math.MaxUint64); err != tc.err {
			t.Errorf("Entries(%d, %d): %v, want %v", tc.lo, tc.hi, err, tc.err)
		}
	}
	for _, tc := range []struct {
		i    uint64
		term uint64
		err  error
	}{
		{3, 0, raft.ErrCompacted},
		{4, 2, nil}, // the snapshot's index: raft needs its term
		{10, 2, nil},
		{11, 0, raft.ErrUnavailable},
	} {
		if term, err := s.Term(tc.i); term != tc.term || err != tc.err {
			t.Errorf("Term(%d) = %d, %v; want %d, %v", tc.i, term, err, tc.term, tc.err)
		}
	}
}

// TestEntriesSliceIsCallers: raft may append to what Entries returns.
func TestEntriesSliceIsCallers(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	mustSave(t, s, nil, ents(1, 5, 1, "x"), nil)
	es, _ := s.Entries(1, 3, math.MaxUint64)
	_ = append(es, ent(99, 9, "intruder"))
	got, _ := s.Entries(3, 4, math.MaxUint64)
	if got[0].GetIndex() != 3 {
		t.Fatalf("append to a returned slice changed the log: %v", got[0])
	}
}

func TestFreshStoreLooksLikeMemoryStorage(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	assertSameStorage(t, s, raft.NewMemoryStorage())
	hs, cs, err := s.InitialState()
	if err != nil || hs != nil || cs == nil {
		t.Fatalf("InitialState: %v, %v, %v", hs, cs, err)
	}
}
