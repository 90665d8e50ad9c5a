package worker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connectstore"
)

func TestBudgetBoundsTaskAndWorker(t *testing.T) {
	worker := newBudget(3, 1000, nil)
	a := newBudget(2, 100, worker)
	b := newBudget(2, 100, worker)
	ctx := t.Context()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.acquire(ctx, 10))
	must(a.acquire(ctx, 10))
	// a is full by records; b gets one more, then the worker is full.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := a.acquire(short, 10); err == nil {
		t.Fatal("a went over its record limit")
	}
	must(b.acquire(ctx, 10))
	short2, cancel2 := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel2()
	if err := b.waitRoom(short2); err == nil {
		t.Fatal("b has room while the worker is full")
	}
	done := make(chan error, 1)
	go func() { done <- b.acquire(ctx, 10) }()
	time.Sleep(10 * time.Millisecond)
	a.release(1, 10)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if u := worker.usage(); u.Records != 3 || u.Bytes != 30 || u.PeakRecords != 3 {
		t.Errorf("worker usage %+v", u)
	}
	// A record larger than the byte limit passes when nothing is in flight.
	c := newBudget(5, 100, nil)
	must(c.acquire(ctx, 500))
	if u := c.usage(); u.Bytes != 500 {
		t.Errorf("big record: %+v", u)
	}
}

// A batch is taken in chunks: the longest prefix that fits both the
// task's and the worker's limits, never more.
func TestBudgetTakesTheLongestPrefixThatFits(t *testing.T) {
	worker := newBudget(5, 1000, nil)
	a := newBudget(10, 100, worker)
	b := newBudget(10, 100, worker)
	ctx := t.Context()
	if k, err := a.acquireSome(ctx, []int64{30, 30, 30, 30}); err != nil || k != 3 {
		t.Fatalf("took %d (%v), want 3: the fourth is over a's 100 bytes", k, err)
	}
	if k, err := b.acquireSome(ctx, []int64{1, 1, 1, 1}); err != nil || k != 2 {
		t.Fatalf("took %d (%v), want 2: the worker's 5 records", k, err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if k, err := b.acquireSome(short, []int64{1}); err == nil {
		t.Fatalf("took %d over the worker's limit", k)
	}
	if u, ub := worker.usage(), b.usage(); u.Records != 5 || u.Bytes != 92 || u.PeakRecords != 5 || ub.Records != 2 || ub.PeakRecords != 2 {
		t.Fatalf("worker %+v, b %+v", u, ub)
	}
	// Waiting: room comes back once the worker is down to three quarters.
	done := make(chan int, 1)
	go func() { k, _ := b.acquireSome(ctx, []int64{1, 1, 1, 1}); done <- k }()
	time.Sleep(10 * time.Millisecond)
	a.release(3, 90)
	if k := <-done; k != 3 {
		t.Fatalf("took %d after the release, want 3 (worker 2 + 3)", k)
	}
	// A record too large for an empty budget goes alone.
	c := newBudget(5, 100, nil)
	if k, err := c.acquireSome(ctx, []int64{500, 1}); err != nil || k != 1 {
		t.Fatalf("took %d (%v), want the big record alone", k, err)
	}
}

func TestOffsetTrackerCommitsInOrderOnly(t *testing.T) {
	tr := newOffsetTracker("c", 8)
	p := func(i int) map[string]any { return map[string]any{"p": i % 2} }
	o := func(i int) map[string]any { return map[string]any{"n": i} }
	var seqs []uint64
	for i := range 5 {
		seqs = append(seqs, tr.add(p(i), o(i), 1))
	}
	// Acks out of order: 1, 2, 4 first. Nothing commits while 0 is missing.
	for _, i := range []int{1, 2, 4} {
		if n, _ := tr.ack(seqs[i], true); n != 0 {
			t.Fatalf("ack %d released %d", i, n)
		}
	}
	if d := tr.take(); len(d) != 0 {
		t.Fatalf("committable before the first ack: %v", d)
	}
	if n, b := tr.ack(seqs[0], true); n != 3 || b != 3 {
		t.Fatalf("ack 0 released %d/%d, want 3", n, b)
	}
	d := tr.take()
	got := map[string]int{}
	for _, so := range d {
		got[fmt.Sprint(so.Partition["p"])] = so.Offset["n"].(int)
	}
	if len(got) != 2 || got["0"] != 2 || got["1"] != 1 {
		t.Fatalf("committable %v, want p0→2, p1→1", got)
	}
	// Record 3 is lost: nothing after it may commit, not even 4 (acked).
	if n, _ := tr.ack(seqs[3], false); n != 2 {
		t.Fatalf("ack 3 released %d, want 2", n)
	}
	if d := tr.take(); len(d) != 0 {
		t.Fatalf("committed past a lost record: %v", d)
	}
	if tr.inFlight() != 0 {
		t.Fatal("in flight after all acks")
	}
	select {
	case <-tr.drained():
	default:
		t.Fatal("not drained")
	}
}

// A run of acknowledgements (sendBatch's) counts as its records acked one
// by one: nothing after a missing record commits.
func TestOffsetTrackerAcksRuns(t *testing.T) {
	tr := newOffsetTracker("c", 16)
	part := map[string]any{"f": "x"}
	first := tr.add(part, map[string]any{"n": 0}, 1)
	for i := 1; i < 8; i++ {
		tr.add(part, map[string]any{"n": i}, 1)
	}
	if n, _ := tr.ackRun(first+2, 4, true); n != 0 {
		t.Fatalf("a run after unacknowledged records released %d", n)
	}
	if d := tr.take(); len(d) != 0 {
		t.Fatalf("committable past unacknowledged records: %v", d)
	}
	if n, b := tr.ackRun(first, 2, true); n != 6 || b != 6 {
		t.Fatalf("the first run released %d/%d, want 6", n, b)
	}
	for _, so := range tr.take() {
		if so.Offset["n"] != 5 {
			t.Fatalf("committable offset %v, want n=5", so.Offset)
		}
	}
	if n, _ := tr.ackRun(first+6, 2, false); n != 2 {
		t.Fatalf("a lost run released %d, want 2", n)
	}
	if d := tr.take(); len(d) != 0 {
		t.Fatalf("committed a lost record's offset: %v", d)
	}
}

// The ring grows past its initial size up to the limit, keeping every
// pending record in its place in the order.
func TestOffsetTrackerGrows(t *testing.T) {
	n := 3*initialRing + 5
	tr := newOffsetTracker("c", n)
	part := map[string]any{"p": 0}
	seqs := make([]uint64, n)
	// Acknowledge the first half out of order while adding, so that the
	// ring wraps before it grows.
	for i := range n {
		seqs[i] = tr.add(part, map[string]any{"n": i}, 1)
		if i == initialRing/2 {
			for j := initialRing / 2; j >= 1; j-- {
				tr.ack(seqs[j], true)
			}
		}
	}
	if len(tr.ring) != n {
		t.Fatalf("ring of %d, want the limit %d", len(tr.ring), n)
	}
	if tr.inFlight() != n {
		t.Fatalf("in flight %d, want %d", tr.inFlight(), n)
	}
	// An offset commit while records are in flight keeps the ring.
	if d := tr.take(); len(d) != 0 || len(tr.ring) != n {
		t.Fatalf("take with record 0 pending: %v, ring of %d", d, len(tr.ring))
	}
	if got, _ := tr.ack(seqs[0], true); got != initialRing/2+1 {
		t.Fatalf("ack 0 released %d, want %d", got, initialRing/2+1)
	}
	for i := n - 1; i > initialRing/2; i-- {
		tr.ack(seqs[i], true)
	}
	d := tr.take()
	if len(d) != 1 || tr.inFlight() != 0 {
		t.Fatalf("after all acks: %v, %d in flight", d, tr.inFlight())
	}
	for _, so := range d {
		if so.Offset["n"] != n-1 {
			t.Fatalf("committable %v, want n=%d", so.Offset, n-1)
		}
	}
	// Drained at a commit: the ring is back to its first size, and the
	// order goes on.
	if len(tr.ring) != initialRing {
		t.Fatalf("ring of %d once drained, want %d", len(tr.ring), initialRing)
	}
	a, b := tr.add(part, map[string]any{"n": n}, 1), tr.add(part, map[string]any{"n": n + 1}, 1)
	tr.ack(b, true)
	if d := tr.take(); len(d) != 0 {
		t.Fatalf("committed past a pending record after the shrink: %v", d)
	}
	if got, _ := tr.ack(a, true); got != 2 {
		t.Fatalf("ack released %d, want 2", got)
	}
	for _, so := range tr.take() {
		if so.Offset["n"] != n+1 {
			t.Fatalf("committable %v after the shrink, want n=%d", so.Offset, n+1)
		}
	}
}

func TestOffsetTrackerGiveBack(t *testing.T) {
	tr := newOffsetTracker("c", 4)
	part := map[string]any{"f": "x"}
	tr.ack(tr.add(part, map[string]any{"pos": 1}, 0), true)
	d := tr.take()
	tr.ack(tr.add(part, map[string]any{"pos": 2}, 0), true)
	tr.giveBack(d) // a failed store: the newer offset wins
	for _, so := range tr.take() {
		if so.Offset["pos"] != 2 {
			t.Errorf("after give back: %v", so.Offset)
		}
	}
}

func tp(topic string, p int32) connect.TopicPartition {
	return connect.TopicPartition{Topic: topic, Partition: p}
}

func TestSplitPartitionsRoundRobin(t *testing.T) {
	parts := []connect.TopicPartition{tp("b", 0), tp("a", 1), tp("a", 0), tp("b", 1), tp("a", 2), tp("a", 0)}
	got := SplitPartitions(parts, 2)
	want := [][]connect.TopicPartition{{tp("a", 0), tp("a", 2), tp("b", 1)}, {tp("a", 1), tp("b", 0)}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("split %v, want %v", got, want)
	}
	if got := SplitPartitions(parts, 8); len(got) != 8 || len(got[7]) != 0 {
		t.Errorf("more tasks than partitions: %v", got)
	}
	if !slices.Equal(intersect(want[0], []connect.TopicPartition{tp("a", 2), tp("c", 0)}), []connect.TopicPartition{tp("a", 2)}) {
		t.Error("intersect")
	}
	if !slices.Equal(minus(want[0], []connect.TopicPartition{tp("a", 2)}), []connect.TopicPartition{tp("a", 0), tp("b", 1)}) {
		t.Error("minus")
	}
}

func TestParseKey(t *testing.T) {
	tests := []struct {
		key  string
		kind keyKind
		name string
	}{
		{connectstore.Prefix + "config/a%2Fb", keyConfig, "a/b"},
		{connectstore.Prefix + "target/x", keyTarget, "x"},
		{connectstore.Prefix + "tasks/x", keyTasks, "x"},
		{connectstore.Prefix + "restart/x", keyRestart, "x"},
		{connectstore.Prefix + "status/x/connector", keyOther, ""},
		{connectstore.Prefix + "offset/x/abc", keyOther, ""},
		{"other/config/x", keyOther, ""},
	}
	for _, tt := range tests {
		if k, n := parseKey(tt.key); k != tt.kind || n != tt.name {
			t.Errorf("parseKey(%q) = %v %q", tt.key, k, n)
		}
	}
	if tasksKey("a/b") != connectstore.Prefix+"tasks/a%2Fb" {
		t.Error(tasksKey("a/b"))
	}
}

func TestBackoffAndSettings(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: 5 * time.Second}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 5 * time.Second, 40: 5 * time.Second} {
		if got := b.Delay(n); got != want {
			t.Errorf("Delay(%d) = %v, want %v", n, got, want)
		}
	}
	st, err := parseSettings("c", map[string]string{"errors.tolerance": "all", "offset.flush.interval.ms": "250", "consumer.override.group.id": "g"}, Default())
	if err != nil || !st.tolerateAll || st.flushInterval != 250*time.Millisecond || st.groupID != "g" || st.topicPartitions != -1 {
		t.Errorf("settings %+v %v", st, err)
	}
	if _, err := parseSettings("c", map[string]string{"errors.tolerance": "some"}, Default()); err == nil {
		t.Error("bad tolerance accepted")
	}
}

// recordingConverter remembers how it was configured.
type recordingConverter struct {
	Converter
	class string
	cfg   map[string]string
	isKey bool
}

func (c *recordingConverter) Configure(cfg map[string]string, isKey bool) error {
	c.cfg, c.isKey = cfg, isKey
	return nil
}

func TestConvertersFromConnectorOrWorker(t *testing.T) {
	w, err := New(Config{Store: openStore(t), Seeds: []string{"x:1"},
		Converters: func(class string) (Converter, error) { return &recordingConverter{class: class}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := w.newConverters(map[string]string{
		"value.converter":                StringConverter,
		"value.converter.encoding":       "UTF-16",
		"key.converter.schemas.enable":   "false", // ignored: the key converter is the worker's
		"header.converter":               SimpleHeaderConverter,
		"transforms.x.value.converter.y": "z",
	})
	if err != nil {
		t.Fatal(err)
	}
	k, v := cs.key.(*recordingConverter), cs.value.(*recordingConverter)
	if k.class != JSONConverter || !k.isKey || k.cfg["schemas.enable"] != "true" || len(k.cfg) != 1 {
		t.Errorf("key converter %+v", k)
	}
	if v.class != StringConverter || v.isKey || v.cfg["encoding"] != "UTF-16" || len(v.cfg) != 1 {
		t.Errorf("value converter %+v", v)
	}
	if _, ok := cs.header.(simpleHeaderConverter); !ok {
		t.Errorf("header converter %T", cs.header)
	}
	w2, _ := New(Config{Store: openStore(t), Seeds: []string{"x:1"}})
	if _, err := w2.newConverters(map[string]string{}); err == nil || !strings.Contains(err.Error(), "no converters") {
		t.Errorf("without a converter registry: %v", err)
	}
}

// TestOffsetTrackerKeepsTheHostsPartitionBytes: a Java plugin's partition
// JSON (its map's order) becomes the stored offset's Kafka Connect key; a
// Go connector's partition gets none.
func TestOffsetTrackerKeepsTheHostsPartitionBytes(t *testing.T) {
	tr := newOffsetTracker(`src "1"`, 8)
	java := map[string]any{"server": "s", "database": "d"}
	goPart := map[string]any{"filename": "/f"}
	seqs := tr.addAll([]pending{
		{partition: java, offset: map[string]any{"lsn": 1}, partJSON: `{"server":"s","database":"d"}`, size: 1},
		{partition: java, offset: map[string]any{"lsn": 2}, partJSON: `{"server":"s","database":"d"}`, size: 1},
		{partition: goPart, offset: map[string]any{"position": 3}, size: 1},
	})
	if n, _ := tr.ackRun(seqs, 3, true); n != 3 {
		t.Fatalf("acked %d", n)
	}
	keys := map[any]string{}
	for _, o := range tr.take() {
		keys[fmt.Sprint(o.Partition)] = o.Key
	}
	want := map[any]string{fmt.Sprint(java): `["src \"1\"",{"server":"s","database":"d"}]`, fmt.Sprint(goPart): ""}
	if !maps.Equal(keys, want) {
		t.Errorf("keys %q, want %q", keys, want)
	}
}
