package assignor

import (
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestMain runs 1000 cases per property (rapid's default is 100) unless
// -rapid.checks says otherwise.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set {
		if err := flag.Set("rapid.checks", "1000"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}

var weightSet = []float64{0.5, 1, 2, 3}

func genWorker(t *rapid.T, id string) Worker {
	return Worker{
		ID:       id,
		Weight:   rapid.SampledFrom(weightSet).Draw(t, "weight"),
		Draining: rapid.IntRange(0, 9).Draw(t, "drain") == 0,
	}
}

func genWorkers(t *rapid.T, lo, hi int) []Worker {
	ws := make([]Worker, rapid.IntRange(lo, hi).Draw(t, "workers"))
	for i := range ws {
		ws[i] = genWorker(t, fmt.Sprintf("w%02d", i))
	}
	return ws
}

func genUnits(t *rapid.T) []Unit {
	var us []Unit
	for c := range rapid.IntRange(0, 12).Draw(t, "connectors") {
		us = append(us, tasks(rapid.IntRange(0, 20).Draw(t, "tasks"), fmt.Sprintf("c%02d", c))...)
	}
	return us
}

// genInput draws workers, units, a leader and a current assignment that
// may name departed workers and units that no longer exist.
func genInput(t *rapid.T) Input {
	in := Input{Workers: genWorkers(t, 1, 30), Units: genUnits(t)}
	ids := []string{"", "gone"}
	for _, w := range in.Workers {
		ids = append(ids, w.ID)
	}
	in.Leader = rapid.SampledFrom(ids).Draw(t, "leader")
	in.LeaderWeightFactor = rapid.SampledFrom([]float64{0, 0, 0.25, 1}).Draw(t, "factor")
	in.Current = map[Unit]string{}
	if rapid.Bool().Draw(t, "history") {
		for _, u := range append(slices.Clone(in.Units), Unit{"deleted", 0}) {
			if o := rapid.SampledFrom(ids).Draw(t, "owner"); o != "" {
				in.Current[u] = o
			}
		}
	}
	return in
}

// balanced is Assign's result for a random input, as the starting point of
// a change.
func balanced(t *rapid.T) Input {
	in := genInput(t)
	in.Current = Assign(in).Assignment
	return in
}

// check asserts what holds for every result.
func check(t *rapid.T, in Input, res Result) {
	t.Helper()
	units := map[Unit]bool{}
	for _, u := range in.Units {
		units[u] = true
	}
	if !maps.Equal(maps.Collect(func(yield func(Unit, bool) bool) {
		for u := range res.Assignment {
			if !yield(u, true) {
				return
			}
		}
	}), units) {
		t.Fatalf("assignment covers %d units, input has %d distinct", len(res.Assignment), len(units))
	}

	eff := effective(in)
	var sum float64
	for _, w := range eff {
		sum += w
	}
	count := map[string]int{}
	for u, w := range res.Assignment {
		if sum > 0 && !(eff[w] > 0) {
			t.Fatalf("%s assigned to %q, not an eligible worker", u, w)
		}
		if sum == 0 && w != "" {
			t.Fatalf("%s assigned to %q with no eligible worker", u, w)
		}
		count[w]++
	}

	// Shares follow weights within one unit.
	n := float64(len(units))
	before := map[string]int{}
	for u, w := range in.Current {
		if units[u] {
			before[w]++
		}
	}
	for id, w := range eff {
		if w == 0 {
			continue
		}
		exact := n * w / sum
		if c := count[id]; c < int(math.Floor(exact+1e-9)) || c > int(math.Ceil(exact-1e-9)) {
			t.Fatalf("%s has %d units, exact share %.3f", id, c, exact)
		}
	}
	for _, s := range res.Shares {
		if s.Quota != s.After || s.After != count[s.Worker] || s.Before != before[s.Worker] || math.Abs(s.Weight-eff[s.Worker]) > 1e-12 {
			t.Fatalf("share %+v: count %d, before %d, weight %v", s, count[s.Worker], before[s.Worker], eff[s.Worker])
		}
	}

	// Moves are exactly the changed owners, sorted.
	var want []Move
	for u, to := range res.Assignment {
		if from := in.Current[u]; from != to {
			want = append(want, Move{u, from, to})
		}
	}
	slices.SortFunc(want, func(a, b Move) int { return a.Unit.compare(b.Unit) })
	if !slices.Equal(res.Moves, want) {
		t.Fatalf("moves %v, want %v", res.Moves, want)
	}

	// Only the excess leaves an eligible worker, and the quotas keep that
	// excess the least any floor-or-ceiling quotas allow.
	shed := map[string]int{}
	for _, m := range res.Moves {
		shed[m.From]++
	}
	least, extras, keepers := 0, len(units), 0
	for id, w := range eff {
		if w == 0 {
			continue
		}
		exact := n * w / sum
		fl := int(math.Floor(exact + 1e-9))
		extras -= fl
		least += max(0, before[id]-fl)
		if exact-float64(fl) > 1e-9 && before[id] > fl {
			keepers++
		}
		if shed[id] != max(0, before[id]-count[id]) {
			t.Fatalf("%s held %d, keeps quota %d, but shed %d", id, before[id], count[id], shed[id])
		}
	}
	if sum > 0 {
		least -= min(extras, keepers)
		excess := 0
		for id, w := range eff {
			if w > 0 {
				excess += max(0, before[id]-count[id])
			}
		}
		if excess != least {
			t.Fatalf("workers shed %d units, the least possible is %d", excess, least)
		}
	}

	// The leader carries at most half an average worker's share (+1 for
	// rounding).
	if in.LeaderWeightFactor == 0 && eff[in.Leader] > 0 {
		others, k := 0, 0
		for id, w := range eff {
			if w > 0 && id != in.Leader {
				others += count[id]
				k++
			}
		}
		if k > 0 && float64(count[in.Leader]) > 0.5*float64(others)/float64(k)+1 {
			t.Fatalf("leader has %d units, others %d over %d workers", count[in.Leader], others, k)
		}
	}
}

func TestPropInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genInput(t)
		check(t, in, Assign(in))
	})
}

func TestPropNothingChanged(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genInput(t)
		res := Assign(in)
		in.Current = res.Assignment
		again := Assign(in)
		if len(again.Moves) != 0 {
			t.Fatalf("moves with nothing changed: %v", again.Moves)
		}
		if !maps.Equal(again.Assignment, res.Assignment) {
			t.Fatal("assignment changed with nothing changed")
		}
	})
}

func TestPropDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genInput(t)
		res := Assign(in)
		other := in
		other.Workers = rapid.Permutation(in.Workers).Draw(t, "workers order")
		other.Units = rapid.Permutation(in.Units).Draw(t, "units order")
		if len(in.Units) > 0 {
			other.Units = append(other.Units, rapid.SampledFrom(in.Units).Draw(t, "duplicate"))
		}
		if got := Assign(other); !reflect.DeepEqual(got, res) {
			t.Fatalf("different result for the same input in another order:\n%+v\n%+v", got, res)
		}
	})
}

func TestPropSpread(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := rapid.SampledFrom(weightSet).Draw(t, "weight")
		in := Input{Units: genUnits(t)}
		for i := range rapid.IntRange(1, 30).Draw(t, "workers") {
			in.Workers = append(in.Workers, Worker{ID: fmt.Sprintf("w%02d", i), Weight: w})
		}
		res := Assign(in)
		check(t, in, res)
		per := map[string]map[string]int{}
		for u, w := range res.Assignment {
			if per[u.Connector] == nil {
				per[u.Connector] = map[string]int{}
			}
			per[u.Connector][w]++
		}
		for c, m := range per {
			lo, hi := math.MaxInt, 0
			for _, w := range in.Workers {
				lo, hi = min(lo, m[w.ID]), max(hi, m[w.ID])
			}
			if hi-lo > 1 {
				t.Fatalf("connector %s: per-worker counts %v differ by %d", c, m, hi-lo)
			}
		}
	})
}

// transition checks next's result against in's (a balanced start) and
// returns it with the workers whose effective weight changed (joined and
// departed ones included).
//
// What holds for a unit that moves between two unaffected workers (same
// effective weight before and after): the change scaled every unaffected
// worker's exact share by Σw/Σw', and the move is one that rounding forces.
//   - Σw grew (join, weight up): the sender held more than its new ceiling,
//     so it had to shed whatever the quotas; the receiver held exactly its
//     new floor and gets its ceiling.
//   - Σw shrank or stayed (leave, drain, weight down): the sender held
//     exactly its new ceiling and drops to its floor, because more workers
//     held their ceiling than there are units above the floors (check
//     asserts that this shedding is the least possible).
func transition(t *rapid.T, in, next Input) (res Result, ch map[string]bool, rounding int) {
	t.Helper()
	res = Assign(next)
	check(t, next, res)
	ea, eb := effective(in), effective(next)
	ch = map[string]bool{}
	for id := range ea {
		if ea[id] != eb[id] {
			ch[id] = true
		}
	}
	for id := range eb {
		if ea[id] != eb[id] {
			ch[id] = true
		}
	}
	var sa, sb float64
	for _, w := range ea {
		sa += w
	}
	for _, w := range eb {
		sb += w
	}
	held := counts(in.Current)
	n := float64(len(res.Assignment))
	for _, m := range res.Moves {
		if ch[m.From] || ch[m.To] || m.From == "" || !(eb[m.From] > 0) {
			continue
		}
		rounding++
		from, to := n*eb[m.From]/sb, n*eb[m.To]/sb
		if sb > sa {
			if held[m.From] <= int(math.Ceil(from-1e-9)) || held[m.To] != int(math.Floor(to+1e-9)) {
				t.Fatalf("move %+v between unaffected workers: sender held %d (share %.3f), receiver %d (share %.3f)", m, held[m.From], from, held[m.To], to)
			}
		} else if held[m.From] != int(math.Ceil(from-1e-9)) || math.Floor(from+1e-9) == from {
			t.Fatalf("move %+v between unaffected workers: sender held %d, share %.3f", m, held[m.From], from)
		}
	}
	return res, ch, rounding
}

func TestPropJoin(t *testing.T) {
	moves, rounding := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		in := balanced(t)
		next := in
		next.Workers = append(slices.Clone(in.Workers), Worker{ID: "new", Weight: rapid.SampledFrom(weightSet).Draw(t, "weight")})
		res, ch, r := transition(t, in, next)
		if !ch["new"] {
			t.Fatal("the new worker is not among the changed")
		}
		for _, m := range res.Moves {
			if m.From == "new" {
				t.Fatalf("join: move %+v from the new worker", m)
			}
		}
		moves, rounding = moves+len(res.Moves), rounding+r
	})
	t.Logf("%d moves, %d of them rounding moves between unaffected workers", moves, rounding)
}

func TestPropLeave(t *testing.T) {
	moves, rounding := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		in := balanced(t)
		next := in
		i := rapid.IntRange(0, len(in.Workers)-1).Draw(t, "leaves")
		next.Workers = slices.Delete(slices.Clone(in.Workers), i, i+1)
		res, _, r := transition(t, in, next)
		moves, rounding = moves+len(res.Moves), rounding+r
	})
	t.Logf("%d moves, %d of them rounding moves between unaffected workers", moves, rounding)
}

func TestPropDrain(t *testing.T) {
	moves, rounding := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		in := balanced(t)
		next := in
		i := rapid.IntRange(0, len(in.Workers)-1).Draw(t, "drains")
		next.Workers = slices.Clone(in.Workers)
		next.Workers[i].Draining = true
		res, _, r := transition(t, in, next)
		for _, m := range res.Moves {
			if m.To == next.Workers[i].ID {
				t.Fatalf("drain: move %+v to the drained worker", m)
			}
		}
		moves, rounding = moves+len(res.Moves), rounding+r
	})
	t.Logf("%d moves, %d of them rounding moves between unaffected workers", moves, rounding)
}

func TestPropWeight(t *testing.T) {
	moves, rounding := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		in := balanced(t)
		next := in
		i := rapid.IntRange(0, len(in.Workers)-1).Draw(t, "changes")
		next.Workers = slices.Clone(in.Workers)
		next.Workers[i].Weight = rapid.SampledFrom(weightSet).Draw(t, "new weight")
		res, _, r := transition(t, in, next)
		moves, rounding = moves+len(res.Moves), rounding+r
	})
	t.Logf("%d moves, %d of them rounding moves between unaffected workers", moves, rounding)
}

func TestPropLeaderChange(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := balanced(t)
		next := in
		next.Leader = rapid.SampledFrom(in.Workers).Draw(t, "new leader").ID
		transition(t, in, next)
	})
}
