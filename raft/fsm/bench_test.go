package fsm_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/kcd-project/kcd/raft/fsm"
)

// BenchmarkApply measures Apply with batches of small Puts (24-byte keys
// over a working set of 10,000, 64-byte values: offset commits), one bbolt
// transaction and fsync per batch, as the Raft node will call it.
func BenchmarkApply(b *testing.B) {
	for _, batch := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			f, err := fsm.Open(filepath.Join(b.TempDir(), "state.db"), fsm.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			const keys = 10000
			value := make([]byte, 64)
			data := make([][]byte, keys)
			for i := range data {
				c := fsm.Command{ID: uint64(i), Kind: fsm.KindPut, Key: fmt.Sprintf("offsets/conn-%03d/p-%05d", i%100, i), Value: value}
				if data[i], err = fsm.EncodeCommand(c); err != nil {
					b.Fatal(err)
				}
			}
			entries := make([]fsm.Entry, batch)
			var index uint64
			b.ReportAllocs()
			for b.Loop() {
				for i := range entries {
					index++
					entries[i] = fsm.Entry{Index: index, Term: 1, Data: data[index%keys]}
				}
				if _, err := f.Apply(entries); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(index)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}
