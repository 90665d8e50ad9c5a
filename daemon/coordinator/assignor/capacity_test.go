package assignor

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"
)

func TestCapacityCapsAWorkerAndTheRestFollowsWeights(t *testing.T) {
	var units []Unit
	for i := range 12 {
		units = append(units, Unit{Connector: "c", Task: i})
	}
	res := Assign(Input{
		Workers: []Worker{{ID: "a", Weight: 1, Capacity: 2}, {ID: "b", Weight: 1}, {ID: "c", Weight: 2}},
		Units:   units,
	})
	got := map[string]int{}
	for _, w := range res.Assignment {
		got[w]++
	}
	// a takes its capacity, 2; b and c share the other 10 as 1:2.
	if got["a"] != 2 || got["b"] < 3 || got["b"] > 4 || got["c"] < 6 || got["c"] > 7 || got["b"]+got["c"] != 10 {
		t.Fatalf("counts %v", got)
	}
	// When every worker is full, the rest waits unassigned.
	res = Assign(Input{Workers: []Worker{{ID: "a", Weight: 1, Capacity: 3}, {ID: "b", Weight: 5, Capacity: 4}}, Units: units})
	got = map[string]int{}
	for _, w := range res.Assignment {
		got[w]++
	}
	if got["a"] != 3 || got["b"] != 4 || got[""] != 5 {
		t.Fatalf("counts %v, want a 3, b 4, 5 unassigned", got)
	}
	// A worker over its new capacity sheds only the excess, to the others.
	cur := map[Unit]string{}
	for i, u := range units {
		cur[u] = []string{"a", "b"}[i%2]
	}
	res = Assign(Input{Workers: []Worker{{ID: "a", Weight: 1, Capacity: 4}, {ID: "b", Weight: 1}}, Units: units, Current: cur})
	for _, m := range res.Moves {
		if m.From != "a" || m.To != "b" {
			t.Fatalf("move %+v: only a's excess should move, to b", m)
		}
	}
	if len(res.Moves) != 2 {
		t.Fatalf("moves %v, want 2 (a from 6 to 4)", res.Moves)
	}
}

// With random capacities: no worker holds more than its capacity; as many
// units are assigned as there is room for; a worker below its capacity
// holds its share of what the capped ones left, within one unit.
func TestCapacityProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nw := rapid.IntRange(1, 8).Draw(t, "workers")
		var ws []Worker
		for i := range nw {
			ws = append(ws, Worker{
				ID:       fmt.Sprintf("w%d", i),
				Weight:   rapid.SampledFrom([]float64{0.5, 1, 2, 3}).Draw(t, "weight"),
				Capacity: rapid.IntRange(0, 10).Draw(t, "capacity"),
			})
		}
		n := rapid.IntRange(0, 60).Draw(t, "units")
		var units []Unit
		for i := range n {
			units = append(units, Unit{Connector: fmt.Sprintf("c%d", i%3), Task: i})
		}
		res := Assign(Input{Workers: ws, Units: units})
		got := map[string]int{}
		for _, w := range res.Assignment {
			got[w]++
		}
		room, unlimited := 0, false
		for _, w := range ws {
			if w.Capacity > 0 && got[w.ID] > w.Capacity {
				t.Fatalf("%s holds %d, capacity %d", w.ID, got[w.ID], w.Capacity)
			}
			if w.Capacity == 0 {
				unlimited = true
			}
			room += w.Capacity
		}
		want := n
		if !unlimited {
			want = min(n, room)
		}
		if n-got[""] != want {
			t.Fatalf("%d of %d units assigned, want %d (capacities %+v)", n-got[""], n, want, ws)
		}
		// Uncapped workers follow their weights over what they share.
		var sum float64
		shared := 0
		for _, w := range ws {
			if w.Capacity == 0 || got[w.ID] < w.Capacity {
				sum += w.Weight
				shared += got[w.ID]
			}
		}
		for _, w := range ws {
			if w.Capacity == 0 || got[w.ID] < w.Capacity {
				exact := float64(shared) * w.Weight / sum
				if math.Abs(float64(got[w.ID])-exact) >= 1+1e-9 {
					t.Fatalf("%s holds %d, its share of %d is %.2f (%+v, counts %v)", w.ID, got[w.ID], shared, exact, ws, got)
				}
			}
		}
	})
}
