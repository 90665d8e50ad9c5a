package logstore

import (
	"fmt"
	"testing"

	raftpb "go.etcd.io/raft/v3/raftpb"
)

// BenchmarkSave measures Save as the Ready loop calls it: n new entries of
// 100 bytes plus a hard state, one fdatasync per call. Entries are built and
// the log is snapshotted and compacted with the timer stopped, so the
// figures (and allocations) are Save's own.
func BenchmarkSave(b *testing.B) {
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			s := openT(b, b.TempDir(), Options{})
			data := make([]byte, 100)
			const batches = 512
			var (
				index, saved uint64
				pending      []ready
			)
			b.ReportAllocs()
			for b.Loop() {
				if len(pending) == 0 {
					b.StopTimer()
					if index > 0 {
						// Keep memory bounded, as the node does.
						if _, err := s.CreateSnapshot(index, confState(1), nil); err != nil {
							b.Fatal(err)
						}
						if err := s.Compact(index); err != nil {
							b.Fatal(err)
						}
					}
					pending = make([]ready, batches)
					for i := range pending {
						es := make([]*raftpb.Entry, n)
						for j := range es {
							idx := index + uint64(i*n+j) + 1
							es[j] = &raftpb.Entry{Index: new(idx), Term: new(uint64(1)), Type: raftpb.EntryNormal.Enum(), Data: data}
						}
						pending[i] = ready{hardState(1, 1, es[n-1].GetIndex()), es}
					}
					b.StartTimer()
				}
				rd := pending[0]
				pending = pending[1:]
				index += uint64(n)
				if err := s.Save(rd.hs, rd.entries, nil); err != nil {
					b.Fatal(err)
				}
				saved += uint64(n)
			}
			b.ReportMetric(float64(saved)/b.Elapsed().Seconds(), "entries/s")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "saves/s")
		})
	}
}

type ready struct {
	hs      *raftpb.HardState
	entries []*raftpb.Entry
}
