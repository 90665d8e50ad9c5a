package systemtest

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The verifier of TestIntegrationChaos: pure functions over the counter
// records read back from Kafka, tested on their own below.

// producerKey identifies who wrote a record batch: its producer id and
// epoch. A worker's shared idempotent producer has one id per process; a
// transactional producer per task keeps its id and bumps its epoch each
// time the task starts anywhere.
type producerKey struct {
	ID    int64
	Epoch int16
}

func (p producerKey) String() string { return fmt.Sprintf("%d/%d", p.ID, p.Epoch) }

// chaosRecord is one Datagen counter record ("task-<t>-<n>") as read back.
type chaosRecord struct {
	Task     int
	Seq      int64
	Producer producerKey
	Part     int32 // the record's partition (for the record dump only)
	// Pos orders the records of one task as the log holds them: the
	// record's offset in its partition (all of a task's records go to one
	// partition: the key is the task number).
	Pos int64
	// TS is the record's timestamp (Unix ms): when the worker converted
	// it, on the node's clock.
	TS int64
}

// parseCounter reads a counter value "task-<t>-<n>".
func parseCounter(v []byte) (task int, seq int64, ok bool) {
	rest, found := strings.CutPrefix(string(v), "task-")
	if !found {
		return 0, 0, false
	}
	ts, ns, found := strings.Cut(rest, "-")
	if !found {
		return 0, 0, false
	}
	t, err1 := strconv.Atoi(ts)
	n, err2 := strconv.ParseInt(ns, 10, 64)
	if err1 != nil || err2 != nil || t < 0 || n < 0 {
		return 0, 0, false
	}
	return t, n, true
}

// instance is one run of a task by one producer: records of that producer,
// in log order, whose sequence numbers follow each other without a jump. A
// task instance starts at its committed offset and counts up by one, so a
// jump (a replay after a restart) begins a new instance.
type instance struct {
	Producer          producerKey
	FirstSeq, LastSeq int64
	pos               []int64 // positions of its records, ascending
}

func (in *instance) firstPos() int64 { return in.pos[0] }
func (in *instance) lastPos() int64  { return in.pos[len(in.pos)-1] }

// overlap is a pair of instances of one task, by different producers, whose
// records interleave in the log: the task ran in two places at once.
type overlap struct {
	Task int
	A, B *instance
	Runs int // alternations between A's and B's records in log order (capped at 4)
}

func (o overlap) String() string {
	how := "interleave"
	if o.Runs == 3 {
		how = "overlap: A went on with its own numbers after B had taken the task over from an older offset"
	}
	return fmt.Sprintf("task %d: A = producer %s (seq %d–%d at offsets %d–%d) and B = producer %s (seq %d–%d at offsets %d–%d) %s",
		o.Task, o.A.Producer, o.A.FirstSeq, o.A.LastSeq, o.A.firstPos(), o.A.lastPos(),
		o.B.Producer, o.B.FirstSeq, o.B.LastSeq, o.B.firstPos(), o.B.lastPos(), how)
}

// taskCheck is what the verifier found for one task.
type taskCheck struct {
	Task      int
	Records   int
	Max       int64   // highest sequence number (-1: none)
	Lost      int64   // numbers in [0, Max] that are missing
	Missing   []int64 // the first missing numbers, for the report
	Dups      int     // records beyond the first copy of their number
	Instances int
	Overlaps  []overlap
}

// checkTasks checks the records of tasks 0..tasks-1 (records of other tasks
// are ignored): per task, sequence numbers contiguous from 0 (lost = gaps),
// copies beyond the first (duplicates, allowed), and overlaps.
//
// Overlap: the records of each producer are split into instances (see
// instance). Two instances of different producers overlap when their
// records interleave in the log in a way no sequence of hand-overs gives:
//   - A then B, each in one block: a hand-over, fine;
//   - A B A B… (four or more alternating blocks): both were writing at once;
//   - A B A (B in one block inside A's span): a hand-over and back, fine
//     only when B started exactly after A's last record before it and A
//     then went on where it had stopped — B took over A's committed
//     position and committed nothing before it stopped, and A's next run
//     started from that same offset. Any other B inside A (B writing from an
//     older offset while A had moved on) is an overlap.
func checkTasks(recs []chaosRecord, tasks int) []taskCheck {
	byTask := make([][]chaosRecord, tasks)
	for _, r := range recs {
		if r.Task >= 0 && r.Task < tasks {
			byTask[r.Task] = append(byTask[r.Task], r)
		}
	}
	out := make([]taskCheck, tasks)
	for t, rs := range byTask {
		out[t] = checkTask(t, rs)
	}
	return out
}

func checkTask(task int, rs []chaosRecord) taskCheck {
	c := taskCheck{Task: task, Records: len(rs), Max: -1}
	slices.SortStableFunc(rs, func(a, b chaosRecord) int { return cmp.Compare(a.Pos, b.Pos) })
	seen := make(map[int64]struct{}, len(rs))
	for _, r := range rs {
		if _, dup := seen[r.Seq]; dup {
			c.Dups++
			continue
		}
		seen[r.Seq] = struct{}{}
		c.Max = max(c.Max, r.Seq)
	}
	c.Lost = c.Max + 1 - int64(len(seen))
	if c.Lost > 0 {
		for n := int64(0); n <= c.Max && len(c.Missing) < 10; n++ {
			if _, ok := seen[n]; !ok {
				c.Missing = append(c.Missing, n)
			}
		}
	}

	// Instances, in order of their first record.
	var all []*instance
	open := map[producerKey]*instance{}
	for _, r := range rs {
		in := open[r.Producer]
		if in == nil || r.Seq != in.LastSeq+1 {
			in = &instance{Producer: r.Producer, FirstSeq: r.Seq}
			open[r.Producer] = in
			all = append(all, in)
		}
		in.LastSeq = r.Seq
		in.pos = append(in.pos, r.Pos)
	}
	c.Instances = len(all)
	// One producer's instances follow each other (a jump closes its
	// instance), so only pairs of different producers can intersect.
	for i, a := range all {
		for _, b := range all[i+1:] {
			if b.firstPos() > a.lastPos() {
				continue // b starts after a ended: a hand-over
			}
			if o, ok := interleaved(task, a, b); ok {
				c.Overlaps = append(c.Overlaps, o)
			}
		}
	}
	return c
}

// interleaved decides whether instances a and b overlap, where b starts
// inside a's span; see checkTasks.
func interleaved(task int, a, b *instance) (overlap, bool) {
	// Count blocks in the merged log order, up to 4.
	runs, last := 0, 0
	i, j := 0, 0
	for (i < len(a.pos) || j < len(b.pos)) && runs < 4 {
		who := 1
		if i >= len(a.pos) || (j < len(b.pos) && b.pos[j] < a.pos[i]) {
			who = 2
		}
		if who != last {
			runs++
			last = who
		}
		if who == 1 {
			i++
		} else {
			j++
		}
	}
	// b starts inside a's span: at least a b a.
	o := overlap{Task: task, A: a, B: b, Runs: runs}
	if runs >= 4 {
		return o, true
	}
	// a b a: b sits in one gap of a. A hand-over and back gives b starting
	// right after a's last number before it; a then goes on from there.
	k := sort.Search(len(a.pos), func(k int) bool { return a.pos[k] > b.firstPos() })
	before := a.FirstSeq + int64(k-1) // a's numbers count up by one
	return o, b.FirstSeq != before+1
}

// progressTimes returns, per task, the timestamps (Unix ms, ascending) of
// its records: when it produced. With newOnly, only records whose number is
// higher than any the task produced before count: replays of what followed
// the last offset commit, after a restart, are left out.
func progressTimes(recs []chaosRecord, tasks int, newOnly bool) [][]int64 {
	byTask := make([][]chaosRecord, tasks)
	for _, r := range recs {
		if r.Task >= 0 && r.Task < tasks {
			byTask[r.Task] = append(byTask[r.Task], r)
		}
	}
	out := make([][]int64, tasks)
	for t, rs := range byTask {
		slices.SortStableFunc(rs, func(a, b chaosRecord) int {
			return cmp.Or(cmp.Compare(a.TS, b.TS), cmp.Compare(a.Pos, b.Pos))
		})
		hi := int64(-1)
		for _, r := range rs {
			if newOnly && r.Seq <= hi {
				continue
			}
			hi = max(hi, r.Seq)
			if n := len(out[t]); n == 0 || out[t][n-1] != r.TS {
				out[t] = append(out[t], r.TS)
			}
		}
	}
	return out
}

// recovery is how one fault ended for the connector's tasks.
type recovery struct {
	Gap       int64 // ms from the fault until every task made progress again for good
	Recovered bool
	Slowest   int // the task that took longest
}

// faultRecovery measures a fault that started at start (Unix ms) and whose
// window ends at end (the next fault, or the end of the schedule): per task,
// the end of the pause in progress that spans start, and of any later pause
// longer than stall that begins before end; the fault's gap is the latest
// of these over all tasks. A task whose pause is still open at end (no
// progress for longer than stall) has not recovered.
func faultRecovery(progress [][]int64, start, end, stall int64) recovery {
	rec := recovery{Recovered: true, Slowest: -1}
	unrecovered := func(t int) {
		if rec.Recovered {
			rec.Recovered, rec.Slowest = false, t
		}
	}
	for t, ps := range progress {
		i := sort.Search(len(ps), func(i int) bool { return ps[i] > start })
		if i == len(ps) || ps[i] >= end {
			unrecovered(t) // no progress after the fault inside its window
			continue
		}
		back, open := ps[i], false
		for j := i; j < len(ps) && ps[j] < end; j++ {
			next := int64(math.MaxInt64)
			if j+1 < len(ps) {
				next = ps[j+1]
			}
			switch {
			case next-ps[j] <= stall:
			case next < end:
				back = next // a later stall inside the window
			case end-ps[j] > stall:
				open = true // stalled at the window's end
			}
		}
		if open {
			unrecovered(t)
			continue
		}
		if g := back - start; g > rec.Gap {
			rec.Gap = g
			if rec.Recovered {
				rec.Slowest = t
			}
		}
	}
	return rec
}

// percentile returns the p-th percentile (0..100, nearest rank) of xs.
func percentile(xs []int64, p float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	k := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(k, 0), len(s)-1)]
}

// seg is a block of records one producer appends to a task's log: numbers
// from, from+1, … (n of them).
type seg struct {
	p    producerKey
	from int64
	n    int
}

// logOf lays segs out one after another in task's log; gap leaves that many
// offsets free between records (other tasks' records in the partition).
func logOf(task int, gap int64, segs ...seg) []chaosRecord {
	var out []chaosRecord
	pos := int64(0)
	for _, s := range segs {
		for k := range s.n {
			out = append(out, chaosRecord{Task: task, Seq: s.from + int64(k), Producer: s.p, Pos: pos})
			pos += 1 + gap
		}
	}
	return out
}

func TestChaosCheckTasks(t *testing.T) {
	a, b, c := producerKey{ID: 1}, producerKey{ID: 2}, producerKey{ID: 3}
	tx0, tx1 := producerKey{ID: 7, Epoch: 0}, producerKey{ID: 7, Epoch: 1}
	cases := []struct {
		name     string
		log      []chaosRecord
		lost     int64
		missing  []int64
		dups     int
		overlaps int
	}{
		// Histories a correct runtime produces: no overlap.
		{name: "one producer", log: logOf(0, 0, seg{a, 0, 100})},
		{name: "graceful hand-over", log: logOf(0, 0, seg{a, 0, 50}, seg{b, 50, 50})},
		{name: "failover replays from the last commit", log: logOf(0, 0, seg{a, 0, 60}, seg{b, 40, 60}), dups: 20},
		{name: "moved away and back after a commit", log: logOf(0, 0, seg{a, 0, 30}, seg{b, 30, 30}, seg{a, 60, 40})},
		{name: "moved away and back, the middle worker killed before its first commit",
			log: logOf(0, 0, seg{a, 0, 30}, seg{b, 30, 15}, seg{a, 30, 70}), dups: 15},
		{name: "moved away and back with replays",
			log: logOf(0, 0, seg{a, 0, 30}, seg{b, 20, 25}, seg{a, 20, 80}), dups: 10 + 25},
		{name: "restarted on the same worker", log: logOf(0, 0, seg{a, 0, 50}, seg{a, 30, 70}), dups: 20},
		{name: "transactional producer, new epoch per start",
			log: logOf(0, 0, seg{tx0, 0, 50}, seg{tx1, 40, 60}), dups: 10},
		{name: "the same worker's old and new instance interleave (one process: not two workers)",
			log: logOf(0, 0, seg{a, 0, 10}, seg{a, 5, 3}, seg{a, 10, 3}, seg{a, 8, 5}), dups: 3 + 5},
		{name: "three workers in turn", log: logOf(0, 3, seg{a, 0, 10}, seg{b, 5, 10}, seg{c, 12, 10}, seg{a, 20, 10}), dups: 5 + 3 + 2},

		// A task running in two places at once.
		{name: "zombie goes on after SIGCONT while the new owner runs",
			log: logOf(0, 0, seg{a, 0, 50}, seg{b, 40, 30}, seg{a, 50, 10}, seg{b, 70, 30}), dups: 10 + 10, overlaps: 1},
		{name: "the old owner ignores a hand-over and goes on",
			log: logOf(0, 0, seg{a, 0, 10}, seg{b, 10, 10}, seg{a, 10, 10}, seg{b, 20, 10}), dups: 10, overlaps: 1},
		{name: "two producers alternate",
			log: logOf(0, 2, seg{a, 0, 10}, seg{b, 0, 10}, seg{a, 10, 10}, seg{b, 10, 10}, seg{a, 20, 10}), dups: 20, overlaps: 1},
		{name: "a zombie batch from an older offset inside the owner's run",
			log: logOf(0, 0, seg{a, 0, 30}, seg{b, 20, 40}, seg{a, 20, 10}, seg{b, 60, 40}), dups: 10 + 10, overlaps: 1},
		{name: "zombie under the same transactional id but its old epoch",
			log: logOf(0, 0, seg{tx0, 0, 50}, seg{tx1, 40, 30}, seg{tx0, 50, 10}, seg{tx1, 70, 30}), dups: 20, overlaps: 1},
		{name: "three producers at once",
			log: logOf(0, 0, seg{a, 0, 5}, seg{b, 0, 5}, seg{c, 0, 5}, seg{a, 5, 5}, seg{b, 5, 5}, seg{c, 5, 5}), dups: 20, overlaps: 3},

		// Losses.
		{name: "a hole", log: logOf(0, 0, seg{a, 0, 10}, seg{a, 20, 10}), lost: 10, missing: []int64{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}},
		{name: "the first records missing", log: logOf(0, 0, seg{b, 3, 5}), lost: 3, missing: []int64{0, 1, 2}},
		{name: "nothing at all", log: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := checkTasks(tc.log, 1)[0]
			if got.Lost != tc.lost || !slices.Equal(got.Missing, tc.missing) {
				t.Errorf("lost %d %v, want %d %v", got.Lost, got.Missing, tc.lost, tc.missing)
			}
			if got.Dups != tc.dups {
				t.Errorf("dups %d, want %d", got.Dups, tc.dups)
			}
			if len(got.Overlaps) != tc.overlaps {
				t.Errorf("%d overlaps, want %d: %v", len(got.Overlaps), tc.overlaps, got.Overlaps)
			}
			if got.Records != len(tc.log) {
				t.Errorf("records %d, want %d", got.Records, len(tc.log))
			}
		})
	}
}

// Records of other tasks and the order of the input change nothing.
func TestChaosCheckTasksMixed(t *testing.T) {
	a, b := producerKey{ID: 1}, producerKey{ID: 2}
	t0 := logOf(0, 1, seg{a, 0, 50}, seg{b, 40, 30}, seg{a, 50, 10}, seg{b, 70, 30})
	t1 := logOf(1, 1, seg{b, 0, 50}, seg{a, 50, 50})
	for i := range t1 {
		t1[i].Pos++ // the odd offsets of the same partition
	}
	all := append(slices.Clone(t0), t1...)
	slices.Reverse(all)
	all = append(all, chaosRecord{Task: 5, Seq: 0, Producer: a}) // a task the connector does not have
	got := checkTasks(all, 2)
	if len(got[0].Overlaps) != 1 || len(got[1].Overlaps) != 0 || got[0].Lost != 0 || got[1].Lost != 0 {
		t.Errorf("task 0: %d overlaps, %d lost; task 1: %d overlaps, %d lost; want 1, 0; 0, 0",
			len(got[0].Overlaps), got[0].Lost, len(got[1].Overlaps), got[1].Lost)
	}
}

func TestChaosParseCounter(t *testing.T) {
	for _, tc := range []struct {
		in   string
		task int
		seq  int64
		ok   bool
	}{
		{"task-0-0", 0, 0, true},
		{"task-3-123456", 3, 123456, true},
		{`"task-3-1"`, 0, 0, false},
		{"task-3", 0, 0, false},
		{"task--1-2", 0, 0, false},
		{"chaos-end", 0, 0, false},
	} {
		task, seq, ok := parseCounter([]byte(tc.in))
		if task != tc.task || seq != tc.seq || ok != tc.ok {
			t.Errorf("parseCounter(%q) = %d, %d, %v; want %d, %d, %v", tc.in, task, seq, ok, tc.task, tc.seq, tc.ok)
		}
	}
}

func TestChaosProgressTimes(t *testing.T) {
	var recs []chaosRecord
	for n := range 10 { // numbers 0..9 at 0, 100, … 900 ms
		recs = append(recs, chaosRecord{Task: 0, Seq: int64(n), TS: int64(n) * 100, Pos: int64(n)})
	}
	for k := range 10 { // after a restart: 5..14 at 2000, 2100, … 2900 ms
		recs = append(recs, chaosRecord{Task: 0, Seq: int64(5 + k), TS: 2000 + int64(k)*100, Pos: int64(10 + k)})
	}
	got := progressTimes(recs, 1, true)[0]
	want := []int64{0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 2500, 2600, 2700, 2800, 2900}
	if !slices.Equal(got, want) {
		t.Errorf("new numbers at %v, want %v", got, want)
	}
	got = progressTimes(recs, 1, false)[0]
	want = []int64{0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 2000, 2100, 2200, 2300, 2400, 2500, 2600, 2700, 2800, 2900}
	if !slices.Equal(got, want) {
		t.Errorf("records at %v, want %v", got, want)
	}
}

// steady returns progress every 100 ms over [from, to).
func steady(from, to int64) []int64 {
	var out []int64
	for ts := from; ts < to; ts += 100 {
		out = append(out, ts)
	}
	return out
}

func TestChaosFaultRecovery(t *testing.T) {
	const stall = 1500
	cases := []struct {
		name      string
		progress  [][]int64
		start     int64
		end       int64
		gap       int64
		recovered bool
		slowest   int
	}{
		{name: "nothing stopped", progress: [][]int64{steady(0, 20000), steady(50, 20000)},
			start: 5010, end: 15000, gap: 90, recovered: true, slowest: 0},
		{name: "a task moved", progress: [][]int64{steady(0, 20000), append(steady(0, 5000), steady(9000, 20000)...)},
			start: 5000, end: 15000, gap: 4000, recovered: true, slowest: 1},
		{name: "running again, then stopped a while later", progress: [][]int64{append(steady(0, 8000), steady(12000, 20000)...)},
			start: 5000, end: 15000, gap: 7000, recovered: true, slowest: 0},
		{name: "a short pause later is not a stall", progress: [][]int64{append(steady(0, 8000), steady(9000, 20000)...)},
			start: 5000, end: 15000, gap: 100, recovered: true, slowest: 0},
		{name: "stalled until after the window", progress: [][]int64{steady(0, 20000), append(steady(0, 8000), steady(16000, 20000)...)},
			start: 5000, end: 15000, recovered: false, slowest: 1},
		{name: "never again", progress: [][]int64{steady(0, 5000)},
			start: 5000, end: 15000, recovered: false, slowest: 0},
		{name: "a pause just before the window ends is the next fault's", progress: [][]int64{append(steady(0, 14600), 16500)},
			start: 5000, end: 15000, gap: 100, recovered: true, slowest: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := faultRecovery(tc.progress, tc.start, tc.end, stall)
			if got.Recovered != tc.recovered || got.Slowest != tc.slowest || (tc.recovered && got.Gap != tc.gap) {
				t.Errorf("got %+v, want gap %d recovered %v slowest %d", got, tc.gap, tc.recovered, tc.slowest)
			}
		})
	}
}

func TestChaosPercentile(t *testing.T) {
	xs := []int64{5, 1, 4, 2, 3}
	for _, tc := range []struct {
		p    float64
		want int64
	}{{50, 3}, {99, 5}, {100, 5}, {0, 1}} {
		if got := percentile(xs, tc.p); got != tc.want {
			t.Errorf("p%v = %d, want %d", tc.p, got, tc.want)
		}
	}
}
