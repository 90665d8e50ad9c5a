package raft

import "testing"

func TestSnapshotDue(t *testing.T) {
	const every, mb = 10000, 1 << 20
	for _, tc := range []struct {
		name                       string
		since, logBytes, snapBytes uint64
		want                       bool
	}{
		{"before SnapshotEntries", every - 1, 100 * mb, 100, false},
		{"small state: every SnapshotEntries", every, 10, 512 << 10, true},
		{"first snapshot (size unknown)", every, 10, 0, true},
		{"large state, small log: waits", every, 1 * mb, 16 * mb, false},
		{"large state, log half its size", 3 * every, 8 * mb, 16 * mb, true},
		{"large state, waited 4x", 4 * every, 1 * mb, 16 * mb, true},
		{"large state, just under 4x", 4*every - 1, 1 * mb, 16 * mb, false},
	} {
		if got := snapshotDue(tc.since, every, tc.logBytes, tc.snapBytes); got != tc.want {
			t.Errorf("%s: snapshotDue(%d, %d, %d, %d) = %v, want %v", tc.name, tc.since, every, tc.logBytes, tc.snapBytes, got, tc.want)
		}
	}
}

// Members of a large state take their snapshots apart: member id's first
// is due every + id%4 * every/8 entries after the last, so that a cluster
// of ids 1, 2, 3 never has every member snapshotting at once.
func TestStaggeredSnapshots(t *testing.T) {
	const every = 10000
	dueAt := func(id uint64) uint64 {
		for since := uint64(0); since < 2*every; since++ {
			if snapshotDue(staggered(since, id, every), every, 0, 0) {
				return since
			}
		}
		return 0
	}
	for id, want := range map[uint64]uint64{1: 11250, 2: 12500, 3: 13750, 4: 10000, 7: 13750} {
		if got := dueAt(id); got != want {
			t.Errorf("member %d: first snapshot due %d entries after the last; want %d", id, got, want)
		}
	}
}

// A state whose last snapshot was small but whose file has grown large
// since (a store switch cleared it, then loaded 100k keys) is large: its
// next snapshot goes off the Ready loop and is staggered.
func TestLargeStateAfterASmallSnapshot(t *testing.T) {
	const every, from = 100, 1 << 20
	file := func(n int64) func() int64 { return func() int64 { return n } }
	for _, tc := range []struct {
		snapBytes, since uint64
		file             int64
		want             bool
	}{
		{snapBytes: 2 << 20, since: 0, file: 0, want: true},
		{snapBytes: 4 << 10, since: every, file: 50 << 20, want: true},
		{snapBytes: 0, since: every, file: 50 << 20, want: true},
		{snapBytes: 4 << 10, since: every - 1, file: 50 << 20, want: false},
		{snapBytes: 4 << 10, since: every, file: 64 << 10, want: false},
		{snapBytes: 0, since: every, file: -1, want: false},
	} {
		if got := isLarge(tc.snapBytes, tc.since, every, from, file(tc.file)); got != tc.want {
			t.Errorf("isLarge(snapshot %d bytes, %d entries since, state %d bytes) = %v, want %v", tc.snapBytes, tc.since, tc.file, got, tc.want)
		}
	}
}
