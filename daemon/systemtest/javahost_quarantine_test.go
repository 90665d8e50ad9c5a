package systemtest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// quarantineWindow is how long the test watches the healthy task once the
// bad connector runs in a host of its own.
const quarantineWindow = 20 * time.Second

// TestIntegrationJavaHostQuarantine: a source whose every start exhausts the
// heap, beside a healthy Java source on the same node. After it halted the
// shared host twice it runs in a Java host of its own, where it keeps
// failing and its status says why; the healthy task runs on without another
// restart in the same shared host process. A manual restart gives the bad
// connector a fresh chance in the shared host.
func TestIntegrationJavaHostQuarantine(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	n, brokers := startIsoNode(t)
	pid := n.PID()
	prefix := fmt.Sprintf("kcd-quarantine-%d", time.Now().UnixNano())
	healthyTopic, badTopic := prefix+"-healthy", prefix+"-bad"
	t.Cleanup(func() { deleteTopics(brokers, healthyTopic, badTopic) })

	isoCreate(ctx, t, n, "healthy", map[string]string{"connector.class": misbehaveSource, "topic": healthyTopic,
		"tasks.max": "1", "mode": "ok", "interval.ms": "50"})
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		s, err := isoStatusOf(ctx, n, "healthy")
		st, _ := s.task0()
		return err == nil && st == "RUNNING" && isoSeq(ctx, n, "healthy") > 0, err
	}); err != nil {
		t.Fatalf("the healthy Java connector does not run: %v", err)
	}
	first := javaHostPID(pid)
	created := time.Now()
	isoCreate(ctx, t, n, "bad", map[string]string{"connector.class": misbehaveSource, "topic": badTopic,
		"tasks.max": "1", "mode": "heap", "after": "10"})

	// The bad connector halts the shared host twice, then fails in a host
	// of its own, and its status says so.
	var trace string
	qctx, qcancel := context.WithTimeout(ctx, 3*time.Minute)
	defer qcancel()
	if err := WaitFor(qctx, 100*time.Millisecond, func() (bool, error) {
		s, err := isoStatusOf(ctx, n, "bad")
		st, tr := s.task0()
		trace = tr
		return err == nil && st == "FAILED" && strings.Contains(tr, "in a Java host of its own"), fmt.Errorf("bad task %s: %s (%v)", st, firstLines(tr, 2), err)
	}); err != nil {
		t.Fatalf("the bad connector never ran in a Java host of its own: %v", err)
	}
	t.Logf("the bad connector runs in a host of its own %v after it was created; its task's trace:\n%s",
		time.Since(created).Round(time.Millisecond), firstLines(trace, 6))
	for _, w := range []string{
		"kcd runs the java connector bad in a Java host of its own: it exhausted the shared Java host's heap 2 times in 10m",
		"POST /connectors/bad/restart?includeTasks=true returns it to the shared host",
		"java.lang.OutOfMemoryError: Java heap space",
	} {
		if !strings.Contains(trace, w) {
			t.Errorf("the bad task's trace lacks %q", w)
		}
	}
	if c := logLines(t, n, "run in a java host of their own until it is restarted", "connector=bad"); c != 1 {
		t.Errorf("%d log lines say the bad connector was quarantined, want 1", c)
	}

	// The healthy task is back in a shared host; from now on it runs on.
	var shared int
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		s, err := isoStatusOf(ctx, n, "healthy")
		st, _ := s.task0()
		shared = javaHostPID(pid)
		return err == nil && st == "RUNNING" && shared != 0, fmt.Errorf("healthy task %s, shared host %d (%v)", st, shared, err)
	}); err != nil {
		t.Fatalf("the healthy task does not run again: %v", err)
	}
	if shared == first {
		t.Errorf("the shared host (pid %d) never died: the bad connector was quarantined without halting it", first)
	}
	restarts0 := logLines(t, n, "task restarted after a failure", "connector=healthy")
	seq0 := isoSeq(ctx, n, "healthy")
	own := map[int]bool{}
	end := time.Now().Add(quarantineWindow)
	for time.Now().Before(end) {
		if !n.Running() || n.PID() != pid {
			t.Fatalf("kcd (pid %d) is gone", pid)
		}
		s, err := isoStatusOf(ctx, n, "healthy")
		if err != nil {
			t.Fatalf("REST: %v", err)
		}
		if st, tr := s.task0(); st != "RUNNING" {
			t.Fatalf("the healthy task is %s while the bad connector runs in a host of its own: %s", st, firstLines(tr, 4))
		}
		if p := javaHostPID(pid); p != shared {
			t.Fatalf("the shared host changed from pid %d to %d while the bad connector runs in a host of its own", shared, p)
		}
		for _, p := range ownJavaHostPIDs(pid) {
			own[p] = true
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	if r := logLines(t, n, "task restarted after a failure", "connector=healthy"); r != restarts0 {
		t.Errorf("the healthy task restarted %d times during the window", r-restarts0)
	}
	seq1 := isoSeq(ctx, n, "healthy")
	if seq1 <= seq0 {
		t.Errorf("the healthy task's offset did not advance during the window (%d → %d)", seq0, seq1)
	}
	if len(own) == 0 {
		t.Error("no own host of the bad connector ran during the window: it does not keep retrying")
	}
	s, _ := isoStatusOf(ctx, n, "bad")
	st, tr := s.task0()
	t.Logf("during %v: healthy RUNNING in shared host %d, its offset %d → %d; the bad connector in own hosts %v, its task %s (%s)",
		quarantineWindow, shared, seq0, seq1, own, st, firstLines(tr, 1))

	// A manual restart: the bad connector runs in the shared host again (and
	// halts it again).
	if code, err := n.do(ctx, "POST", "/connectors/bad/restart?includeTasks=true", nil, nil); err != nil || code/100 != 2 {
		t.Fatalf("restart the bad connector: %d %v", code, err)
	}
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		p := javaHostPID(pid)
		return p != shared, fmt.Errorf("the shared host is still pid %d", p)
	}); err != nil {
		t.Fatalf("after the restart the bad connector does not run in the shared host: %v", err)
	}
	if c := logLines(t, n, "runs in the shared java host again", "connector=bad"); c != 1 {
		t.Errorf("%d log lines say the restarted connector runs in the shared host again, want 1", c)
	}
}

// logLines counts the lines of n's log that hold every one of subs.
func logLines(t *testing.T, n *Node, subs ...string) int {
	t.Helper()
	f, err := os.Open(n.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	c := 0
outer:
	for sc.Scan() {
		for _, s := range subs {
			if !strings.Contains(sc.Text(), s) {
				continue outer
			}
		}
		c++
	}
	return c
}
