package assignor

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"testing"
)

// tasks returns the connector instance and n tasks of each named connector.
func tasks(n int, names ...string) []Unit {
	var us []Unit
	for _, c := range names {
		us = append(us, Unit{c, -1})
		for t := range n {
			us = append(us, Unit{c, t})
		}
	}
	return us
}

// counts returns units per worker.
func counts(a map[Unit]string) map[string]int {
	m := map[string]int{}
	for _, w := range a {
		m[w]++
	}
	return m
}

func TestUnitString(t *testing.T) {
	if got := (Unit{"orders", -1}).String(); got != "orders/connector" {
		t.Errorf("connector unit: %q", got)
	}
	if got := (Unit{"orders", 3}).String(); got != "orders/3" {
		t.Errorf("task unit: %q", got)
	}
}

func TestThreeWorkersAndLeader(t *testing.T) {
	// 4 workers of weight 1, one of them the leader: effective weights
	// 1, 1, 1, 0.5, so 12 units split 12·(1, 1, 1, 0.5)/3.5.
	in := Input{
		Workers: []Worker{{ID: "a", Weight: 1}, {ID: "b", Weight: 1}, {ID: "c", Weight: 1}, {ID: "lead", Weight: 1}},
		Leader:  "lead",
		Units:   tasks(11, "orders"), // 12 units
	}
	res := Assign(in)
	want := map[string]int{"a": 4, "b": 3, "c": 3, "lead": 2} // 3.43 ×3, 1.71: a gets the extra by ID
	if got := counts(res.Assignment); !maps.Equal(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	if len(res.Moves) != 12 {
		t.Fatalf("from scratch every unit moves from \"\": %d moves", len(res.Moves))
	}
	for _, m := range res.Moves {
		if m.From != "" {
			t.Fatalf("move %+v from a worker, want from \"\"", m)
		}
	}
	if !slices.IsSortedFunc(res.Moves, func(a, b Move) int { return a.Unit.compare(b.Unit) }) {
		t.Fatalf("moves not sorted: %v", res.Moves)
	}
	wantShares := []Share{
		{Worker: "a", Weight: 1, Exact: 12 / 3.5, Quota: 4, After: 4},
		{Worker: "b", Weight: 1, Exact: 12 / 3.5, Quota: 3, After: 3},
		{Worker: "c", Weight: 1, Exact: 12 / 3.5, Quota: 3, After: 3},
		{Worker: "lead", Weight: 0.5, Exact: 6 / 3.5, Quota: 2, After: 2},
	}
	if !reflect.DeepEqual(res.Shares, wantShares) {
		t.Fatalf("shares %+v\nwant %+v", res.Shares, wantShares)
	}

	// A fifth worker joins: shares are 12·(1, 1, 1, 1, 0.5)/4.5 = 2.67 ×4,
	// 1.33. a and the leader are over their ceilings (3 and 2) and shed one
	// each; b and c keep their 3 (sticky rounding), so d gets 2.
	in.Current = res.Assignment
	in.Workers = append(in.Workers, Worker{ID: "d", Weight: 1})
	res = Assign(in)
	want = map[string]int{"a": 3, "b": 3, "c": 3, "d": 2, "lead": 1}
	if got := counts(res.Assignment); !maps.Equal(got, want) {
		t.Fatalf("after join: counts %v, want %v", got, want)
	}
	for _, m := range res.Moves {
		if m.To != "d" {
			t.Errorf("after join: move %+v not to d", m)
		}
	}
	if len(res.Moves) != 2 {
		t.Errorf("after join: %d moves, want 2", len(res.Moves))
	}
}

func TestLeaderCappedAtAverage(t *testing.T) {
	// The leader's weight 4 is capped at the mean of the others (1), then
	// halved: 10 units split 10·(1, 1, 0.5)/2.5 = 4, 4, 2.
	res := Assign(Input{
		Workers: []Worker{{ID: "a", Weight: 1}, {ID: "b", Weight: 1}, {ID: "big", Weight: 4}},
		Leader:  "big",
		Units:   tasks(9, "x"),
	})
	if got, want := counts(res.Assignment), map[string]int{"a": 4, "b": 4, "big": 2}; !maps.Equal(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	// Alone, the leader takes everything.
	res = Assign(Input{Workers: []Worker{{ID: "big", Weight: 4}}, Leader: "big", Units: tasks(9, "x")})
	if got, want := counts(res.Assignment), map[string]int{"big": 10}; !maps.Equal(got, want) {
		t.Fatalf("alone: counts %v, want %v", got, want)
	}
}

func TestWeights(t *testing.T) {
	res := Assign(Input{
		Workers: []Worker{{ID: "a", Weight: 1}, {ID: "b", Weight: 2}, {ID: "c", Weight: 3}, {ID: "off", Weight: 0}},
		Units:   tasks(11, "x", "y"), // 24 units
	})
	if got, want := counts(res.Assignment), map[string]int{"a": 4, "b": 8, "c": 12}; !maps.Equal(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	// Each connector (12 units) splits 2/4/6 too.
	per := map[string]int{}
	for u, w := range res.Assignment {
		per[u.Connector+" "+w]++
	}
	want := map[string]int{"x a": 2, "x b": 4, "x c": 6, "y a": 2, "y b": 4, "y c": 6}
	if !maps.Equal(per, want) {
		t.Fatalf("per connector %v, want %v", per, want)
	}
}

func TestDrainAndDeparted(t *testing.T) {
	cur := map[Unit]string{
		{"x", -1}: "a", {"x", 0}: "a", {"x", 1}: "b", {"x", 2}: "gone",
		{"x", 3}: "c", {"old", 0}: "a", // old/0 no longer exists
	}
	res := Assign(Input{
		Workers: []Worker{{ID: "a", Weight: 1}, {ID: "b", Weight: 1}, {ID: "c", Weight: 1, Draining: true}},
		Units:   tasks(4, "x"), // x/connector, x/0..3: 5 units
		Current: cur,
	})
	want := map[Unit]string{{"x", -1}: "a", {"x", 0}: "a", {"x", 1}: "b", {"x", 2}: "b", {"x", 3}: "a"}
	if !maps.Equal(res.Assignment, want) {
		t.Fatalf("assignment %v, want %v", res.Assignment, want)
	}
	wantMoves := []Move{{Unit{"x", 2}, "gone", "b"}, {Unit{"x", 3}, "c", "a"}}
	if !slices.Equal(res.Moves, wantMoves) {
		t.Fatalf("moves %v, want %v", res.Moves, wantMoves)
	}
	if res.Shares[2] != (Share{Worker: "c", Before: 1}) {
		t.Fatalf("draining share %+v", res.Shares[2])
	}
}

func TestNoEligibleWorker(t *testing.T) {
	res := Assign(Input{
		Workers: []Worker{{ID: "a", Weight: 1, Draining: true}, {ID: "b"}},
		Units:   tasks(1, "x"),
		Current: map[Unit]string{{"x", 0}: "a"},
	})
	want := map[Unit]string{{"x", -1}: "", {"x", 0}: ""}
	if !maps.Equal(res.Assignment, want) {
		t.Fatalf("assignment %v, want %v", res.Assignment, want)
	}
	if wantMoves := []Move{{Unit{"x", 0}, "a", ""}}; !slices.Equal(res.Moves, wantMoves) {
		t.Fatalf("moves %v, want %v", res.Moves, wantMoves)
	}
	if res := Assign(Input{Units: tasks(1, "x")}); len(res.Moves) != 0 || len(res.Assignment) != 2 {
		t.Fatalf("no workers, nothing assigned before: %+v", res)
	}
}

func TestSpreadFromScratch(t *testing.T) {
	// 3 connectors × 4 units over 4 equal workers: each worker gets one of
	// each connector, not one connector each.
	res := Assign(Input{
		Workers: []Worker{{ID: "a", Weight: 1}, {ID: "b", Weight: 1}, {ID: "c", Weight: 1}, {ID: "d", Weight: 1}},
		Units:   tasks(3, "x", "y", "z"),
	})
	per := map[string]int{}
	for u, w := range res.Assignment {
		per[u.Connector+" "+w]++
	}
	for _, c := range []string{"x", "y", "z"} {
		for _, w := range []string{"a", "b", "c", "d"} {
			if per[c+" "+w] != 1 {
				t.Fatalf("connector %s on %s: %d units, want 1 (%v)", c, w, per[c+" "+w], per)
			}
		}
	}
}

func TestNewTasksGoWhereTheirConnectorIsFewest(t *testing.T) {
	// a and b hold two units each, of different connectors. The new x/1
	// goes to b, which has no x, and y/1 to a: not both to the first.
	res := Assign(Input{
		Workers: []Worker{{ID: "a", Weight: 1}, {ID: "b", Weight: 1}},
		Units:   append(tasks(2, "x"), tasks(2, "y")...),
		Current: map[Unit]string{{"x", -1}: "a", {"x", 0}: "a", {"y", -1}: "b", {"y", 0}: "b"},
	})
	want := []Move{{Unit{"x", 1}, "", "b"}, {Unit{"y", 1}, "", "a"}}
	if !slices.Equal(res.Moves, want) {
		t.Fatalf("moves %v, want %v", res.Moves, want)
	}
}

func TestShedsTheConnectorItHoldsMost(t *testing.T) {
	// a holds 3 of x and 1 of y; when b joins, a sheds two units of x
	// (its highest tasks), not y.
	res := Assign(Input{
		Workers: []Worker{{ID: "a", Weight: 1}, {ID: "b", Weight: 1}},
		Units:   append(tasks(2, "x"), Unit{"y", -1}),
		Current: map[Unit]string{{"x", -1}: "a", {"x", 0}: "a", {"x", 1}: "a", {"y", -1}: "a"},
	})
	want := []Move{{Unit{"x", 0}, "a", "b"}, {Unit{"x", 1}, "a", "b"}}
	if !slices.Equal(res.Moves, want) {
		t.Fatalf("moves %v, want %v", res.Moves, want)
	}
}

func TestRemainderTiesGoToTheHolder(t *testing.T) {
	// 4 units over 3 equal workers: shares 1.33 each, one extra unit. The
	// remainders tie; c, which already holds a unit, gets the extra.
	res := Assign(Input{
		Workers: []Worker{{ID: "a", Weight: 1}, {ID: "b", Weight: 1}, {ID: "c", Weight: 1}},
		Units:   tasks(3, "x"),
		Current: map[Unit]string{{"x", 2}: "c"},
	})
	if got, want := counts(res.Assignment), map[string]int{"a": 1, "b": 1, "c": 2}; !maps.Equal(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
}

func TestLeaderWeightFactor(t *testing.T) {
	ws := []Worker{{ID: "a", Weight: 1}, {ID: "b", Weight: 1}, {ID: "lead", Weight: 1}}
	for _, c := range []struct {
		factor float64
		lead   int
	}{{0, 2}, {0.5, 2}, {1, 3}, {2, 5}, {0.25, 1}} {
		res := Assign(Input{Workers: ws, Leader: "lead", LeaderWeightFactor: c.factor, Units: tasks(9, "x")})
		if got := counts(res.Assignment)["lead"]; got != c.lead {
			t.Errorf("factor %v: leader has %d of 10 units, want %d", c.factor, got, c.lead)
		}
	}
}

func ExampleAssign() {
	in := Input{
		Workers: []Worker{{ID: "w1", Weight: 1}, {ID: "w2", Weight: 1}},
		Units:   []Unit{{"orders", -1}, {"orders", 0}, {"orders", 1}, {"orders", 2}},
	}
	res := Assign(in)
	in.Current = res.Assignment
	in.Workers = append(in.Workers, Worker{ID: "w3", Weight: 1})
	for _, m := range Assign(in).Moves {
		fmt.Printf("%s: %s -> %s\n", m.Unit, m.From, m.To)
	}
	// Output:
	// orders/2: w2 -> w3
}

// effective is the test's own reading of the weight rules.
func effective(in Input) map[string]float64 {
	f := in.LeaderWeightFactor
	if f == 0 {
		f = DefaultLeaderWeightFactor
	}
	eff := map[string]float64{}
	var others float64
	n := 0
	for _, w := range in.Workers {
		if w.Draining || w.Weight <= 0 {
			eff[w.ID] = 0
			continue
		}
		eff[w.ID] = w.Weight
		if w.ID != in.Leader {
			others += w.Weight
			n++
		}
	}
	if w := eff[in.Leader]; w > 0 {
		if n > 0 {
			w = math.Min(w, others/float64(n))
		}
		eff[in.Leader] = f * w
	}
	return eff
}
