// Package assignor computes which worker runs each connector instance and
// task. It is pure: Assign reads its Input, returns a Result, and keeps no
// state, so the same input (in any order) gives the same result.
//
// The algorithm is a weighted, sticky, incremental round-robin:
//
//  1. Effective weights. A worker's effective weight is its Weight; a
//     draining worker's is 0. The leader's is LeaderWeightFactor (default
//     0.5) times the smaller of its own Weight and the mean Weight of the
//     other eligible workers, so the leader never carries more than that
//     fraction of an average worker's share, however heavy it is. A worker
//     with effective weight 0 is not eligible.
//  2. Quotas. Worker i's exact share of the N units is q = N·w_i/Σw. Each
//     worker gets ⌊q⌋; the R units left over go one each to R workers with a
//     fractional share, first to those that already hold more than ⌊q⌋ (so
//     they keep what they have: this makes the number of moves the least any
//     floor-or-ceiling quota allows), then by largest remainder, then to the
//     worker holding more, then by ID.
//  3. Keep. A unit stays with its current owner if that owner is eligible.
//     A worker over its quota sheds the excess, each time a unit of the
//     connector it holds most of (its highest task).
//  4. Place. Shed units, units of departed, draining or ineligible owners,
//     and new units go, connector by connector, to workers under quota: to
//     the one whose load of that connector, (count+1)/weight, is lowest,
//     then the one least filled, (held+1)/quota, then by ID. From scratch
//     with equal weights this deals the units round-robin, so each
//     connector's units differ by at most one between workers.
//
// So a rebalance moves only what the new quotas force: nothing leaves a
// worker that is eligible and within its quota, and the quotas make that
// shedding the least possible. When workers join, leave, drain or change
// weight, every other worker's exact share scales by the same factor, and a
// unit moves between two such unaffected workers only when rounding forces
// it: after a join or a weight increase, from a worker that holds more than
// its new ceiling to one at its floor; after a leave, a drain or a weight
// decrease, from a worker at its ceiling when more workers hold their
// ceiling than there are units above the floors. Everything else moves from
// or to the worker that changed (and the leader, when its capped weight
// follows the change).
package assignor

import (
	"cmp"
	"math"
	"slices"

	"github.com/kcd-project/kcd/api"
)

// DefaultLeaderWeightFactor is the leader's weight factor when
// Input.LeaderWeightFactor is 0.
const DefaultLeaderWeightFactor = 0.5

// Unit is one thing to run: a connector instance (Task == -1) or one of its
// tasks.
type Unit struct {
	Connector string
	Task      int
}

// String returns "name/connector" for a connector instance and "name/3" for
// task 3: the unit's name in the API (api.UnitName).
func (u Unit) String() string { return api.UnitName(u.Connector, u.Task) }

func (u Unit) compare(v Unit) int {
	if c := cmp.Compare(u.Connector, v.Connector); c != 0 {
		return c
	}
	return cmp.Compare(u.Task, v.Task)
}

// Worker is a worker with a live session.
type Worker struct {
	ID       string
	Weight   float64 // > 0 (finite) takes work in proportion; 0 (or less) takes none
	Draining bool    // takes none and sheds what it holds
	// Capacity is the most units the worker takes, whatever its weight;
	// 0 means no limit. What a capped worker cannot take goes to the others
	// by their weights, and units no worker has room for stay unassigned.
	Capacity int
}

// Input is what Assign works from.
type Input struct {
	Workers            []Worker        // workers with a live session
	Leader             string          // ID of the worker on the Raft leader's node ("" if none)
	LeaderWeightFactor float64         // DefaultLeaderWeightFactor when 0
	Units              []Unit          // everything that must run now
	Current            map[Unit]string // current owner; may name departed workers or units that no longer exist
}

// Move is one unit changing owner. From is "" for a unit that was
// unassigned or is new; To is "" when no worker is eligible.
type Move struct {
	Unit     Unit
	From, To string
}

// Share is one worker's part of a Result.
type Share struct {
	Worker string
	Weight float64 // effective weight: 0 for draining, reduced for the leader
	Exact  float64 // exact share of the units, N·Weight/ΣWeight
	Quota  int     // ⌊Exact⌋ or ⌈Exact⌉
	Before int     // units of Input.Units it held in Input.Current
	After  int     // units it holds in the Result (== Quota when any worker is eligible)
}

// Result is a complete assignment.
type Result struct {
	// Assignment maps every unit of Input.Units (and nothing else) to its
	// worker, or to "" when no worker is eligible or has room (Capacity).
	Assignment map[Unit]string
	// Moves lists the units whose owner changes, sorted by unit.
	Moves []Move
	// Shares has one entry per distinct worker ID of Input.Workers, sorted
	// by ID: the numbers behind a rebalance plan.
	Shares []Share
}

// worker is a Worker during one Assign call.
type worker struct {
	id       string
	capacity int     // 0: no limit
	capped   bool    // its quota is its capacity
	weight   float64 // effective
	exact    float64
	rem      float64
	quota    int
	before   int
	held     int
}

// Assign computes the assignment for in. See the package comment.
func Assign(in Input) Result {
	ws := workers(in)
	units := normalUnits(in.Units)
	n := len(units)

	idx := make(map[string]int32, len(ws))
	for i := range ws {
		idx[ws[i].id] = int32(i)
	}
	// owner[u] is the index of the unit's eligible owner, or -1.
	owner := make([]int32, n)
	from := make([]string, n)
	for u := range units {
		owner[u] = -1
		cur, ok := in.Current[units[u]]
		if !ok {
			continue
		}
		from[u] = cur
		if i, ok := idx[cur]; ok {
			ws[i].before++
			if ws[i].weight > 0 {
				owner[u] = i
			}
		}
	}
	for i := range ws {
		ws[i].held = ws[i].before
		if ws[i].weight == 0 {
			ws[i].held = 0
		}
	}

	eligible := quotas(ws, n)
	if eligible {
		shed(ws, units, owner)
		place(ws, units, owner)
	}

	res := Result{
		Assignment: make(map[Unit]string, n),
		Shares:     make([]Share, len(ws)),
	}
	moved := 0
	for u := range units {
		if to := ownerID(ws, owner[u]); to != from[u] {
			moved++
		}
	}
	if moved > 0 {
		res.Moves = make([]Move, 0, moved)
	}
	for u := range units {
		to := ownerID(ws, owner[u])
		res.Assignment[units[u]] = to
		if to != from[u] {
			res.Moves = append(res.Moves, Move{Unit: units[u], From: from[u], To: to})
		}
	}
	for i, w := range ws {
		res.Shares[i] = Share{Worker: w.id, Weight: w.weight, Exact: w.exact, Quota: w.quota, Before: w.before, After: w.held}
	}
	return res
}

func ownerID(ws []worker, i int32) string {
	if i < 0 {
		return ""
	}
	return ws[i].id
}

// workers returns the workers sorted by ID with effective weights. A
// duplicate ID counts once (the first in a fixed order); an empty ID none.
func workers(in Input) []worker {
	sorted := slices.Clone(in.Workers)
	slices.SortFunc(sorted, func(a, b Worker) int {
		if c := cmp.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		if a.Draining != b.Draining {
			if a.Draining {
				return 1
			}
			return -1
		}
		return cmp.Compare(b.Weight, a.Weight)
	})
	sorted = slices.CompactFunc(sorted, func(a, b Worker) bool { return a.ID == b.ID })
	if len(sorted) > 0 && sorted[0].ID == "" {
		sorted = sorted[1:]
	}

	ws := make([]worker, len(sorted))
	var others float64
	nothers := 0
	for i, w := range sorted {
		ws[i].id = w.ID
		ws[i].capacity = max(0, w.Capacity)
		if !w.Draining && w.Weight > 0 && !math.IsInf(w.Weight, 1) {
			ws[i].weight = w.Weight
		}
		if ws[i].weight > 0 && w.ID != in.Leader {
			others += ws[i].weight
			nothers++
		}
	}
	if l, ok := slices.BinarySearchFunc(ws, in.Leader, func(w worker, id string) int { return cmp.Compare(w.id, id) }); ok && ws[l].weight > 0 {
		f := in.LeaderWeightFactor
		if !(f > 0) || math.IsInf(f, 1) {
			f = DefaultLeaderWeightFactor
		}
		w := ws[l].weight
		if nothers > 0 {
			w = min(w, others/float64(nothers))
		}
		ws[l].weight = f * w
	}
	return ws
}

// normalUnits returns the units sorted and without duplicates.
func normalUnits(in []Unit) []Unit {
	us := slices.Clone(in)
	slices.SortFunc(us, Unit.compare)
	return slices.Compact(us)
}

// eps absorbs rounding in N·w/Σw, so that an exact share of 3 computed as
// 2.9999999999 still counts as 3.
const eps = 1e-9

// quotas sets exact shares and integer quotas; it reports whether any worker
// is eligible.
func quotas(ws []worker, n int) bool {
	var sum float64
	for _, w := range ws {
		sum += w.weight
	}
	if !(sum > 0) {
		return false
	}
	// Water-filling: a worker whose share exceeds its capacity gets its
	// capacity; the rest is shared again among the others by weight.
	left := n
	for {
		sum = 0
		for _, w := range ws {
			if !w.capped {
				sum += w.weight
			}
		}
		capped := false
		for i := range ws {
			w := &ws[i]
			if w.capped || w.capacity == 0 || w.weight == 0 || !(sum > 0) {
				continue
			}
			if float64(left)*w.weight/sum > float64(w.capacity)+eps {
				w.capped, capped = true, true
				w.exact, w.rem, w.quota = float64(w.capacity), 0, w.capacity
			}
		}
		if !capped {
			break
		}
		left = n
		for _, w := range ws {
			if w.capped {
				left -= w.quota
			}
		}
		if left <= 0 {
			left = 0
			break
		}
	}
	for i := range ws {
		w := &ws[i]
		if w.capped {
			continue
		}
		w.exact, w.rem, w.quota = 0, 0, 0
		if !(sum > 0) || w.weight == 0 {
			continue
		}
		w.exact = float64(left) * w.weight / sum
		fl := math.Floor(w.exact + eps)
		w.rem = max(0, w.exact-fl)
		if w.rem < eps {
			w.rem = 0
		}
		w.quota = int(fl)
	}
	for _, w := range ws {
		if !w.capped {
			left -= w.quota
		}
	}
	if left <= 0 {
		return true
	}
	order := make([]int, 0, len(ws))
	for i := range ws {
		if !ws[i].capped && ws[i].weight > 0 {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		x, y := &ws[a], &ws[b]
		if c := cmpBool(x.rem > 0, y.rem > 0); c != 0 {
			return c
		}
		if c := cmpBool(x.held > x.quota, y.held > y.quota); c != 0 {
			return c
		}
		if c := cmp.Compare(y.rem, x.rem); c != 0 {
			return c
		}
		if c := cmp.Compare(y.held, x.held); c != 0 {
			return c
		}
		return a - b // by ID: ws is sorted
	})
	for _, i := range order[:min(left, len(order))] {
		ws[i].quota++
	}
	return true
}

// cmpBool orders true before false.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	default:
		return 1
	}
}

// shed takes units off workers over quota: each time a unit of the
// connector the worker holds most of (ties: the first connector by name),
// its highest task.
func shed(ws []worker, units []Unit, owner []int32) {
	over := false
	for i := range ws {
		if ws[i].held > ws[i].quota {
			over = true
		}
	}
	if !over {
		return
	}
	// Units of each over-quota worker, in unit order (so by connector).
	start := make([]int, len(ws)+1)
	for u := range units {
		if o := owner[u]; o >= 0 && ws[o].held > ws[o].quota {
			start[o+1]++
		}
	}
	for i := range ws {
		start[i+1] += start[i]
	}
	held := make([]int32, start[len(ws)])
	fill := slices.Clone(start[:len(ws)])
	for u := range units {
		if o := owner[u]; o >= 0 && ws[o].held > ws[o].quota {
			held[fill[o]] = int32(u)
			fill[o]++
		}
	}
	type run struct{ lo, hi int } // held[lo:hi] is one connector's units
	var runs []run
	for i := range ws {
		w := &ws[i]
		if w.held <= w.quota {
			continue
		}
		runs = runs[:0]
		us := held[start[i]:start[i+1]]
		for lo := 0; lo < len(us); {
			hi := lo + 1
			for hi < len(us) && units[us[hi]].Connector == units[us[lo]].Connector {
				hi++
			}
			runs = append(runs, run{lo, hi})
			lo = hi
		}
		for ; w.held > w.quota; w.held-- {
			best := 0
			for r := range runs {
				if runs[r].hi-runs[r].lo > runs[best].hi-runs[best].lo {
					best = r
				}
			}
			runs[best].hi--
			owner[us[runs[best].hi]] = -1
		}
	}
}

// place gives every unit without an owner to a worker under quota, see the
// package comment.
//
// For each connector, the open workers holding none of it wait in a heap
// (for them the best is the heaviest, then the least filled); those holding
// some are scanned. A unit costs O(log workers + workers holding its
// connector), not O(workers).
func place(ws []worker, units []Unit, owner []int32) {
	var cs []cand
	ci := make([]int32, len(ws)) // worker index → index in cs, or -1
	for i := range ws {
		ci[i] = -1
		if ws[i].held < ws[i].quota {
			ci[i] = int32(len(cs))
			cs = append(cs, cand{i: int32(i), held: ws[i].held, quota: ws[i].quota, weight: ws[i].weight})
		}
	}
	if len(cs) == 0 {
		return
	}
	h := candHeap{cs: cs, heap: make([]int32, 0, len(cs)), pos: make([]int32, len(cs))}
	for c := range cs {
		h.push(int32(c))
	}
	var touched []int32 // open candidates holding units of the connector
	for lo := 0; lo < len(units); {
		hi := lo + 1
		free := owner[lo] < 0
		for hi < len(units) && units[hi].Connector == units[lo].Connector {
			free = free || owner[hi] < 0
			hi++
		}
		if !free {
			lo = hi
			continue
		}
		for u := lo; u < hi; u++ {
			if o := owner[u]; o >= 0 {
				if c := ci[o]; c >= 0 && cs[c].held < cs[c].quota {
					if cs[c].count == 0 {
						h.remove(c)
						touched = append(touched, c)
					}
					cs[c].count++
				}
			}
		}
		for u := lo; u < hi; u++ {
			if owner[u] >= 0 {
				continue
			}
			best := int32(-1)
			if len(h.heap) > 0 {
				best = h.heap[0]
			}
			for _, c := range touched {
				if cs[c].held < cs[c].quota && (best < 0 || cs[c].less(&cs[best])) {
					best = c
				}
			}
			if best < 0 {
				break // every quota is full; cannot happen, as Σquota = len(units)
			}
			c := &cs[best]
			if c.count == 0 {
				h.remove(best)
				touched = append(touched, best)
			}
			owner[u] = c.i
			c.count++
			c.held++
			ws[c.i].held++
		}
		for _, c := range touched {
			cs[c].count = 0
			if cs[c].held < cs[c].quota {
				h.push(c)
			}
		}
		touched = touched[:0]
		lo = hi
	}
}

// cand is a worker under quota while place runs.
type cand struct {
	i, count    int32 // worker index; units of the current connector
	held, quota int
	weight      float64
}

// less orders candidates for a unit of the current connector: lower
// (count+1)/weight, then lower (held+1)/quota (both compared by
// cross-multiplying), then lower ID.
func (a *cand) less(b *cand) bool {
	if al, bl := float64(a.count+1)*b.weight, float64(b.count+1)*a.weight; al != bl {
		return al < bl
	}
	if af, bf := (a.held+1)*b.quota, (b.held+1)*a.quota; af != bf {
		return af < bf
	}
	return a.i < b.i
}

// candHeap is a binary min-heap of indices into cs by cand.less, with each
// index's position so that any one can be removed.
type candHeap struct {
	cs   []cand
	heap []int32
	pos  []int32
}

func (h *candHeap) push(c int32) {
	h.pos[c] = int32(len(h.heap))
	h.heap = append(h.heap, c)
	h.up(len(h.heap) - 1)
}

func (h *candHeap) remove(c int32) {
	k, last := int(h.pos[c]), len(h.heap)-1
	if k != last {
		h.swap(k, last)
	}
	h.heap = h.heap[:last]
	if k != last {
		h.down(k)
		h.up(k)
	}
}

func (h *candHeap) lessAt(i, j int) bool { return h.cs[h.heap[i]].less(&h.cs[h.heap[j]]) }

func (h *candHeap) swap(i, j int) {
	h.heap[i], h.heap[j] = h.heap[j], h.heap[i]
	h.pos[h.heap[i]], h.pos[h.heap[j]] = int32(i), int32(j)
}

func (h *candHeap) up(k int) {
	for k > 0 {
		p := (k - 1) / 2
		if !h.lessAt(k, p) {
			return
		}
		h.swap(k, p)
		k = p
	}
}

func (h *candHeap) down(k int) {
	for {
		m, l, r := k, 2*k+1, 2*k+2
		if l < len(h.heap) && h.lessAt(l, m) {
			m = l
		}
		if r < len(h.heap) && h.lessAt(r, m) {
			m = r
		}
		if m == k {
			return
		}
		h.swap(k, m)
		k = m
	}
}
