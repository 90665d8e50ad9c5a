package assignor

import (
	"fmt"
	"testing"
)

// BenchmarkAssign: 500 connectors × 20 tasks (10,500 units with the
// connector instances) over 100 workers, one of them the leader; and
// 10,500 units of one connector.
func BenchmarkAssign(b *testing.B) {
	var units []Unit
	for c := range 500 {
		units = append(units, tasks(20, fmt.Sprintf("connector-%03d", c))...)
	}
	var ws []Worker
	for i := range 100 {
		ws = append(ws, Worker{ID: fmt.Sprintf("worker-%03d", i), Weight: 1})
	}
	scratch := Input{Workers: ws, Leader: ws[0].ID, Units: units}
	steady := scratch
	steady.Current = Assign(scratch).Assignment
	join := steady
	join.Workers = append(ws[:len(ws):len(ws)], Worker{ID: "worker-new", Weight: 1})
	leave := steady
	leave.Workers = ws[:len(ws)-1]
	// The worst case for placement: one connector, so every worker holds
	// some of it and each unit scans them all.
	big := Input{Workers: ws, Leader: ws[0].ID, Units: tasks(10_499, "big")}

	for _, c := range []struct {
		name string
		in   Input
	}{{"scratch", scratch}, {"unchanged", steady}, {"join", join}, {"leave", leave}, {"scratch-one-connector", big}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var moves int
			for b.Loop() {
				moves = len(Assign(c.in).Moves)
			}
			b.ReportMetric(float64(moves), "moves")
		})
	}
}
