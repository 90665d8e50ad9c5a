package top

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// big is the size the issue measures: 1,000 connectors with 10 tasks each
// (10,000 tasks) over 10 workers, 20 rebalances in the journal.
func big() Snapshot {
	s := Snapshot{
		At: now.Add(-time.Second), Server: "http://127.0.0.1:8083",
		Cluster: Cluster{ID: "kcd-big", Leader: 1, Term: 3, Store: "raft", Voters: 3, VotersUp: 3, Quorum: 2, QuorumOK: true},
	}
	for i := range 10 {
		id := fmt.Sprintf("kcd-%02d:8083", i)
		node := uint64(i + 1)
		roles := []string{"raft", "worker"}
		raft := "voter"
		if i >= 3 {
			roles, raft = []string{"worker"}, "none"
		}
		s.Members = append(s.Members, Member{ID: node, Roles: roles, Raft: raft, Reachable: true, Leader: i == 0, WorkerID: id})
		s.Workers = append(s.Workers, Worker{ID: id, NodeID: node, Leader: i == 0, Weight: 1, Alive: true, Tasks: map[string]int{}})
	}
	states := []string{"RUNNING", "RUNNING", "RUNNING", "RUNNING", "RUNNING", "RUNNING", "RUNNING", "PAUSED", "RESTARTING", "UNASSIGNED"}
	n := 0
	for c := range 1000 {
		con := Connector{Name: fmt.Sprintf("connector-%04d", c), Type: "sink", State: "RUNNING",
			WorkerID: strings.Clone(s.Workers[c%10].ID), RecordsPerSec: float64(c), SinkLag: int64(c * 7)}
		for t := range 10 {
			st := states[(c+t)%len(states)]
			if n%97 == 0 {
				st = "FAILED"
			}
			w := &s.Workers[n%10]
			// Own copies of every string, as decoding JSON makes them.
			task := Task{ID: t, State: strings.Clone(st), WorkerID: strings.Clone(w.ID)}
			if st == "FAILED" {
				task.Trace = strings.Clone("org.apache.kafka.connect.errors.ConnectException: boom\n\tat io.kcd.Sink.put(Sink.java:1)\n\tat io.kcd.Worker.run(Worker.java:2)")
			}
			w.Tasks[st]++
			con.Tasks = append(con.Tasks, task)
			n++
		}
		s.Connectors = append(s.Connectors, con)
	}
	for i := range 20 {
		s.Rebalances = append(s.Rebalances, Rebalance{At: now.Add(-time.Duration(i) * time.Minute), Epoch: fmt.Sprintf("3.%d", 20-i),
			Leader: 1, Triggers: []string{"worker-joined"}, Moves: i, Units: 10000, Workers: 10, Took: time.Duration(i+1) * time.Millisecond})
	}
	return s
}

func bigModel(b *testing.B) Model {
	m := New(Options{Now: clock, Context: "bench"})
	m = send(m, tea.WindowSizeMsg{Width: 160, Height: 48})
	m = send(m, FeedStateMsg{Live: true})
	return send(m, SnapshotMsg{Seq: 1, Snapshot: big()})
}

// heapMiB is the live heap after a collection.
func heapMiB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / (1 << 20)
}

// BenchmarkFrame is one View at 160x48 with 1,000 connectors and 10,000
// tasks; heap-MiB is what the model (with its snapshot) keeps alive.
func BenchmarkFrame(b *testing.B) {
	base := heapMiB()
	m := bigModel(b)
	heap := heapMiB() - base
	for _, c := range []struct {
		name string
		keys []string
	}{{"main", nil}, {"scrolled", []string{"G", "k"}}, {"drill", []string{"enter"}}} {
		b.Run(c.name, func(b *testing.B) {
			m, _ := press(b, m, c.keys...)
			if c.name == "drill" {
				m = send(m, OffsetsMsg{Connector: m.drill, Offsets: billingOffsets()})
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = m.View()
			}
			b.ReportMetric(heap, "heap-MiB")
		})
	}
	runtime.KeepAlive(m)
}

// BenchmarkSnapshot is the model taking in one poll of that size.
func BenchmarkSnapshot(b *testing.B) {
	m := bigModel(b)
	s := big()
	b.ReportAllocs()
	seq := uint64(1)
	for b.Loop() {
		seq++
		m = send(m, SnapshotMsg{Seq: seq, Snapshot: s})
	}
}

// BenchmarkStatus is one status event applied in place.
func BenchmarkStatus(b *testing.B) {
	m := bigModel(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		st := "RUNNING"
		if i%2 == 0 {
			st = "FAILED"
		}
		m = send(m, StatusMsg{Connector: fmt.Sprintf("connector-%04d", i%1000), Task: 3, State: st, WorkerID: "kcd-01:8083"})
	}
}

// BenchmarkFilterKey is one key typed into the filter.
func BenchmarkFilterKey(b *testing.B) {
	m := bigModel(b)
	m, _ = press(b, m, "/")
	b.ReportAllocs()
	for b.Loop() {
		m, _ = press(b, m, "9")
		m, _ = press(b, m, "backspace")
	}
}
