package fsm_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

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

// BenchmarkApplyGroups measures Apply as a node under many concurrent
// writers calls it: entries that each carry a group of Puts (24-byte keys
// over 10,000, 76-byte values, every command with a request id of its
// own), a few entries per call, in a write transaction left open as the
// node leaves it (CommitInterval, NoSync). It starts from a state whose
// history and id table are full, so that every command also trims them.
func BenchmarkApplyGroups(b *testing.B) {
	for _, group := range []int{1, 20} {
		b.Run(fmt.Sprintf("group=%d", group), func(b *testing.B) {
			f, err := fsm.Open(filepath.Join(b.TempDir(), "state.db"), fsm.Options{
				NoSync: true, CommitInterval: 100 * time.Millisecond,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			const keys, perCall = 10000, 4
			names := make([]string, keys)
			for i := range names {
				names[i] = fmt.Sprintf("offsets/conn-%02d/p-%05d", i%100, i)
			}
			value := make([]byte, 76)
			var id, index uint64
			cmds := make([][]byte, group)
			entry := func() fsm.Entry {
				for i := range cmds {
					id++
					c, err := fsm.EncodeCommand(fsm.Command{ID: id, Kind: fsm.KindPut, Key: names[id%keys], Value: value})
					if err != nil {
						b.Fatal(err)
					}
					cmds[i] = c
				}
				index++
				if group == 1 {
					return fsm.Entry{Index: index, Term: 1, Data: cmds[0]}
				}
				return fsm.Entry{Index: index, Term: 1, Data: fsm.AppendGroup(nil, cmds)}
			}
			entries := make([]fsm.Entry, perCall)
			apply := func() {
				for i := range entries {
					entries[i] = entry()
				}
				if _, err := f.Apply(entries); err != nil {
					b.Fatal(err)
				}
			}
			for id < fsm.DedupRetain+fsm.DefaultHistoryRetain {
				apply()
			}
			id0 := id
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				for i := range entries {
					entries[i] = entry()
				}
				b.StartTimer()
				if _, err := f.Apply(entries); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(id-id0), "ns/command")
		})
	}
}
