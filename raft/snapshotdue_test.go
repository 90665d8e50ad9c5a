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
