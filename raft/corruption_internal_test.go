package raft

import (
	"slices"
	"testing"
)

func TestJudge(t *testing.T) {
	rep := func(member uint64, hash uint32) hashReport {
		return hashReport{member: member, index: 10, rev: 5, hash: hash}
	}
	round := func(rs ...hashReport) map[uint64]hashReport {
		m := map[uint64]hashReport{}
		for _, r := range rs {
			m[r.member] = r
		}
		return m
	}
	three := &[]uint64{1, 2, 3}
	two := &[]uint64{1, 2}
	cases := []struct {
		name   string
		round  map[uint64]hashReport
		voters *[]uint64
		want   []uint64 // alarmed members (0: no majority)
	}{
		{"all agree", round(rep(1, 7), rep(2, 7), rep(3, 7)), three, nil},
		{"one differs", round(rep(1, 7), rep(2, 9), rep(3, 7)), three, []uint64{2}},
		{"majority before the third reports", round(rep(1, 7), rep(3, 7)), three, nil},
		{"the odd one reports first", round(rep(2, 9), rep(1, 7)), three, nil},
		{"a learner differs", round(rep(1, 7), rep(2, 7), rep(4, 8)), three, []uint64{4}},
		{"a learner's hash is no majority", round(rep(1, 7), rep(4, 9), rep(5, 9)), three, nil},
		{"two voters disagree", round(rep(1, 7), rep(2, 9)), two, []uint64{0}},
		{"three different hashes", round(rep(1, 7), rep(2, 8), rep(3, 9)), three, []uint64{0}},
	}
	for _, tc := range cases {
		var got []uint64
		for _, a := range judge(tc.round, tc.voters) {
			got = append(got, a.Member)
			if a.Member != 0 && a.Majority == a.Hash {
				t.Errorf("%s: alarm %+v names the majority's own hash", tc.name, a)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: alarms on %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestHashReportEncoding(t *testing.T) {
	r := hashReport{member: 3, index: 1 << 40, rev: 12345, hash: 0xdeadbeef}
	data := r.encode()
	if !isCheckEntry(data) {
		t.Fatal("a report is not a check entry")
	}
	got, ok := decodeHashReport(data)
	if !ok || got != r {
		t.Fatalf("decoded %+v, %v; want %+v", got, ok, r)
	}
	if _, ok := decodeHashReport(data[:len(data)-1]); ok {
		t.Fatal("a short report decoded")
	}
	if isCheckEntry([]byte{1, 2, 3}) || isCheckEntry([]byte{0x80, 1}) {
		t.Fatal("a command or a group taken for a check entry")
	}
}
