package javahost

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestStrikesWindowThresholdReset(t *testing.T) {
	s := newStrikes(2, 10*time.Minute)
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

	if is, newly := s.charge("bad", t0); is || newly {
		t.Fatalf("one strike quarantines: %v %v", is, newly)
	}
	// The next strike comes after the window: the first no longer counts.
	if is, _ := s.charge("bad", t0.Add(10*time.Minute)); is {
		t.Fatal("two strikes 10m apart (the window) quarantine")
	}
	// Another connector's strikes are its own.
	if is, _ := s.charge("other", t0.Add(11*time.Minute)); is {
		t.Fatal("a strike of another connector counts for bad")
	}
	is, newly := s.charge("bad", t0.Add(19*time.Minute))
	if !is || !newly {
		t.Fatalf("two strikes within 10m: quarantined %v, newly %v", is, newly)
	}
	if q, n := s.isQuarantined("bad"); !q || n != 2 {
		t.Fatalf("isQuarantined: %v after %d strikes", q, n)
	}
	if q, _ := s.isQuarantined("other"); q {
		t.Fatal("other is quarantined")
	}
	// Quarantined, it stays so, whatever the time, until reset.
	if is, newly := s.charge("bad", t0.Add(time.Hour)); !is || newly {
		t.Fatalf("a strike of a quarantined connector: %v %v", is, newly)
	}
	if q, _ := s.isQuarantined("bad"); !q {
		t.Fatal("the quarantine ended by itself")
	}

	// A manual restart forgets the quarantine and the strikes.
	if !s.reset("bad") {
		t.Fatal("reset says bad was not quarantined")
	}
	if q, _ := s.isQuarantined("bad"); q {
		t.Fatal("still quarantined after reset")
	}
	if is, _ := s.charge("bad", t0.Add(time.Hour+time.Second)); is {
		t.Fatal("one strike after the reset quarantines")
	}
	s.reset("other")
	if is, _ := s.charge("other", t0.Add(12*time.Minute)); is {
		t.Fatal("a strike before the reset still counts")
	}
}

func TestStrikesBounded(t *testing.T) {
	s := newStrikes(2, time.Minute)
	t0 := time.Now()
	for i := range 3 * maxStrikeRecords {
		at := t0.Add(time.Duration(i) * time.Millisecond)
		s.charge(fmt.Sprint("c", i), at)
		s.charge(fmt.Sprint("c", i), at)
		s.charge(fmt.Sprint("d", i), at)
	}
	if len(s.at) > maxStrikeRecords || len(s.quarantined) > maxStrikeRecords {
		t.Fatalf("%d connectors with strikes, %d quarantined; the bound is %d", len(s.at), len(s.quarantined), maxStrikeRecords)
	}
	// The newest are kept.
	last := fmt.Sprint("c", 3*maxStrikeRecords-1)
	if q, _ := s.isQuarantined(last); !q {
		t.Fatalf("the newest quarantine (%s) was dropped", last)
	}
}

func TestConnectorOfUnit(t *testing.T) {
	for unit, want := range map[string]string{
		"connector-bad":          "bad",
		"connector-my-conn":      "my-conn",
		"task-bad-0#12":          "bad",
		"task-my-conn-3#7":       "my-conn",
		"task-a#b-1#2":           "a#b",
		"task-x":                 "",
		"task--0#1":              "",
		"host-misc":              "",
		"":                       "",
		"connector-with space-1": "with space-1",
	} {
		if got := connectorOfUnit(unit); got != want {
			t.Errorf("connectorOfUnit(%q) = %q, want %q", unit, got, want)
		}
	}
}

// hostFor: the shared host for a connector in good standing, a host of its
// own once it is quarantined (one per connector, up to the bound, beyond
// which it fails saying why), and the shared host again after a restart;
// an own host closes once its last unit is gone for the linger.
func TestHostForQuarantined(t *testing.T) {
	h := New(Options{Dir: t.TempDir(), PluginPath: []string{t.TempDir()}, Logger: testLogger(t)})
	t.Cleanup(func() { _ = h.Close() })
	h.quarantine.maxOwn = 2
	h.quarantine.linger = 50 * time.Millisecond

	got, release, err := h.hostFor("bad")
	if err != nil || got != h {
		t.Fatalf("a connector without strikes: %v %v", got == h, err)
	}
	release()
	if removed := h.heapDeath("bad"); removed {
		t.Fatal("one heap death moves the connector out")
	}
	if got, _, _ := h.hostFor("bad"); got != h {
		t.Fatal("after one heap death the connector runs apart")
	}
	if removed := h.heapDeath("bad"); !removed {
		t.Fatal("two heap deaths in the window leave the connector in the shared host")
	}
	own, rel1, err := h.hostFor("bad")
	if err != nil || own == h || own.forConnector != "bad" {
		t.Fatalf("a quarantined connector's host: shared %v, for %q, %v", own == h, own.forConnector, err)
	}
	own2, rel2, err := h.hostFor("bad")
	if err != nil || own2 != own {
		t.Fatal("a second unit of the connector gets another host")
	}
	if !strings.Contains(own.note, "exhausted the shared Java host's heap 2 times in 10m") ||
		!strings.Contains(own.note, "POST /connectors/bad/restart?includeTasks=true") {
		t.Errorf("the own host's note: %s", own.note)
	}
	err = own.noted(errors.New("java.lang.OutOfMemoryError: Java heap space"))
	if !strings.HasPrefix(err.Error(), own.note+"\n") || own.noted(err) != err || h.noted(err) != err {
		t.Errorf("noted error: %v", err)
	}

	h.heapDeath("b2")
	h.heapDeath("b2")
	if _, rel, err := h.hostFor("b2"); err != nil {
		t.Fatal(err)
	} else {
		defer rel()
	}
	h.heapDeath("b3")
	h.heapDeath("b3")
	_, _, err = h.hostFor("b3")
	if err == nil || !strings.Contains(err.Error(), "the java connector b3 exhausted the Java host's heap 2 times in 10m") ||
		!strings.Contains(err.Error(), "it runs again after POST /connectors/b3/restart?includeTasks=true") {
		t.Fatalf("beyond the bound of own hosts: %v", err)
	}
	if pids := h.ownHostPids(); len(pids) != 0 {
		t.Fatalf("own hosts run without a call: %v", pids)
	}

	// The restart: new units run in the shared host; the own host closes
	// after its last unit left.
	h.forgive("bad")
	if got, rel, _ := h.hostFor("bad"); got != h {
		t.Fatal("a restarted connector does not run in the shared host")
	} else {
		rel()
	}
	rel1()
	rel1() // once only
	h.quarantine.mu.Lock()
	o := h.quarantine.own["bad"]
	h.quarantine.mu.Unlock()
	if o == nil || o.units != 1 {
		t.Fatalf("the own host's units after one release: %+v", o)
	}
	rel2()
	waitUntil(t, 5*time.Second, "the own host closes", func() bool {
		h.quarantine.mu.Lock()
		defer h.quarantine.mu.Unlock()
		_, ok := h.quarantine.own["bad"]
		return !ok
	})
	own.mu.Lock()
	closed := own.closed
	own.mu.Unlock()
	if !closed {
		t.Fatal("the own host was dropped, not closed")
	}
	// The slot is free again.
	if _, rel, err := h.hostFor("b3"); err != nil {
		t.Fatalf("b3 after a slot freed: %v", err)
	} else {
		rel()
	}
}

func TestFmtWindow(t *testing.T) {
	for d, want := range map[time.Duration]string{10 * time.Minute: "10m", time.Hour: "1h", 90 * time.Second: "1m30s", 30 * time.Second: "30s"} {
		if got := fmtWindow(d); got != want {
			t.Errorf("fmtWindow(%v) = %q, want %q", d, got, want)
		}
	}
}
