package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcd-project/kcd/daemon/connectstore"
)

// A broker that takes produce requests and never answers: records stay in
// flight. The worker must stop polling at its limits instead of growing.
func stuckBroker(t *testing.T) *env {
	e := fakeEnv(t)
	e.fake.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		e.fake.KeepControl()
		return nil, nil, true // handled, no reply
	})
	return e
}

// Both with exactly-once support (the serial path) and without (the
// poll-ahead path, whose batch polled ahead counts in the bytes).
func TestWorkerInFlightBoundedByRecords(t *testing.T) {
	for _, eos := range []string{ExactlyOnceEnabled, ExactlyOnceDisabled} {
		t.Run("eos="+eos, func(t *testing.T) {
			t.Parallel()
			inFlightBoundedByRecords(t, eos)
		})
	}
}

func inFlightBoundedByRecords(t *testing.T, eos string) {
	e := stuckBroker(t)
	e.mod = func(c *Config) { c.ExactlyOnceSource = eos }
	lim := Limits{TaskInFlightRecords: 300, WorkerInFlightRecords: 500}
	w := e.start(func(c *Config) { c.Limits = lim; c.ShutdownTimeout = 500 * time.Millisecond })
	a, b := e.name("a"), e.name("b")
	for _, n := range []string{a, b} {
		e.create(n, map[string]string{"connector.class": "Datagen", "topic": e.name("t"), "tasks.max": "1", "value.converter": StringConverter})
	}
	// Two tasks of 300 each would be 600: the worker's 500 binds first.
	waitFor(t, 30*time.Second, "the worker's limit reached", func() (bool, string) {
		st := w.Stats()
		return st.InFlightRecords == 500, fmt.Sprintf("%+v", st)
	})
	time.Sleep(300 * time.Millisecond)
	st := w.Stats()
	if st.PeakInFlightRecords > 500 || st.InFlightRecords > 500 {
		t.Fatalf("worker in flight %d (peak %d), limit 500", st.InFlightRecords, st.PeakInFlightRecords)
	}
	for _, ts := range st.Tasks {
		if ts.PeakInFlightRecords > 300 {
			t.Fatalf("task %v peak in flight %d, limit 300", ts.ID, ts.PeakInFlightRecords)
		}
	}
	// Nothing was acknowledged, so no offset may be stored, even after a
	// clean stop that gives up draining.
	w.stop()
	for _, n := range []string{a, b} {
		if offs, _ := e.cs.SourceOffsets(context.Background(), n); len(offs) != 0 {
			t.Errorf("%s stored offsets of unacknowledged records: %v", n, offs)
		}
	}
}

// Both with exactly-once support (the serial path) and without (the
// poll-ahead path, whose batch polled ahead counts in the bytes).
func TestWorkerInFlightBoundedByBytes(t *testing.T) {
	for _, eos := range []string{ExactlyOnceEnabled, ExactlyOnceDisabled} {
		t.Run("eos="+eos, func(t *testing.T) {
			t.Parallel()
			inFlightBoundedByBytes(t, eos)
		})
	}
}

func inFlightBoundedByBytes(t *testing.T, eos string) {
	e := stuckBroker(t)
	e.mod = func(c *Config) { c.ExactlyOnceSource = eos }
	lim := Limits{TaskInFlightBytes: 64 << 10}
	w := e.start(func(c *Config) { c.Limits = lim; c.ShutdownTimeout = 500 * time.Millisecond })
	n := e.name("bytes")
	e.create(n, map[string]string{"connector.class": "Datagen", "topic": e.name("t"), "shape": "bytes", "record.size": "5000",
		"value.converter": ByteArrayConverter})
	waitFor(t, 30*time.Second, "the task's byte limit reached", func() (bool, string) {
		ts, ok := w.Stats().Task(n, 0)
		return ok && ts.InFlightBytes > 64<<10-5100, e.progress(w, n, fmt.Sprintf("task stats %+v (listed: %v)", ts, ok))
	})
	time.Sleep(300 * time.Millisecond)
	ts, _ := w.Stats().Task(n, 0)
	if ts.PeakInFlightBytes > 64<<10 {
		t.Fatalf("peak in flight %d bytes, limit %d", ts.PeakInFlightBytes, 64<<10)
	}
	if st := e.waitState(n, 0, connectstore.StateRunning); st.State != connectstore.StateRunning {
		t.Fatal(st)
	}
}
