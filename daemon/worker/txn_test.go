package worker

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// With transactions, an acknowledged record's offset is not committable
// until its transaction committed (seal); an aborted transaction's
// offsets never are (discard).
func TestOffsetTrackerCommitsSealedOnly(t *testing.T) {
	tr := newOffsetTracker("c", 8)
	tr.transactional()
	part := map[string]any{"p": 0}
	ackAll := func(from, to int) {
		for i := from; i < to; i++ {
			tr.ack(tr.add(part, map[string]any{"n": i}, 1), true)
		}
	}
	offset := func() any {
		d := tr.take()
		if len(d) == 0 {
			return nil
		}
		for _, so := range d {
			return so.Offset["n"]
		}
		return nil
	}
	ackAll(0, 3)
	if o := offset(); o != nil {
		t.Fatalf("offset %v committable before its transaction committed", o)
	}
	tr.seal()
	if o := offset(); o != 2 {
		t.Fatalf("after the commit: offset %v, want 2", o)
	}
	// A failed store gives them back; a sealed newer one wins.
	ackAll(3, 5)
	tr.seal()
	d := tr.take()
	ackAll(5, 6)
	tr.giveBack(d)
	if o := offset(); o != 4 {
		t.Fatalf("given back: offset %v, want 4", o)
	}
	// Aborted: 5 never becomes committable, not even after a later seal.
	tr.discard()
	tr.seal()
	if o := offset(); o != nil {
		t.Fatalf("offset %v of an aborted transaction committable", o)
	}
}

func TestTransactionalID(t *testing.T) {
	if got := transactionalID("kcd-0a1b2c3d", "orders", 3); got != "kcd-0a1b2c3d-orders-3" {
		t.Errorf("transactionalID = %q", got)
	}
	// Long names are cut (at a rune) and hashed: bounded and distinct.
	long := strings.Repeat("é", 300)
	a, b := transactionalID("kcd-x", long+"a", 0), transactionalID("kcd-x", long+"b", 0)
	if a == b || len(a) > len("kcd-x-")+maxTxnName+len("-0") || !utf8.ValidString(a) {
		t.Errorf("long names: %q (%d bytes) and %q", a, len(a), b)
	}
	if transactionalID("kcd-x", long+"a", 0) != a {
		t.Error("not stable")
	}
}

func TestTransactionSettings(t *testing.T) {
	st, err := parseSettings("c", map[string]string{}, Default())
	if err != nil || st.intervalBoundary || st.txnInterval != Default().OffsetFlushInterval || !st.readCommitted {
		t.Errorf("defaults: %+v %v", st, err)
	}
	if d := txnTimeout(st); d != time.Minute {
		t.Errorf("transaction timeout %v, want 1m", d)
	}
	st, err = parseSettings("c", map[string]string{"transaction.boundary": "INTERVAL", "transaction.boundary.interval.ms": "90000",
		"consumer.override.isolation.level": "read_uncommitted", "exactly.once.support": "requested"}, Default())
	if err != nil || !st.intervalBoundary || st.txnInterval != 90*time.Second || st.readCommitted {
		t.Errorf("interval: %+v %v", st, err)
	}
	if d := txnTimeout(st); d != 3*time.Minute {
		t.Errorf("transaction timeout %v, want twice the interval", d)
	}
	disabled := Default()
	disabled.ExactlyOnceSource = ExactlyOnceDisabled
	if st, _ := parseSettings("c", nil, disabled); st.readCommitted {
		t.Error("sinks read committed without exactly-once support: Kafka Connect's default is read_uncommitted")
	}
	for k, v := range map[string]string{
		"transaction.boundary":              "connector",
		"exactly.once.support":              "required",
		"consumer.override.isolation.level": "dirty",
		"transaction.boundary.interval.ms":  "-1",
	} {
		if _, err := parseSettings("c", map[string]string{k: v}, Default()); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
	if _, err := New(Config{Store: openStore(t), Seeds: []string{"x:1"}, ExactlyOnceSource: "preparing"}); err == nil {
		t.Error("exactly-once source support preparing accepted")
	}
}
