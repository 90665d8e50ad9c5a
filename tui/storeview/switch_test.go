package storeview

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/kcd-project/kcd/api"
)

func TestLine(t *testing.T) {
	for _, tc := range []struct {
		sw   api.StoreSwitch
		want string
	}{
		{api.StoreSwitch{Phase: api.PhaseCheck}, "check"},
		{api.StoreSwitch{Phase: api.PhaseCopy, Copied: 1200, Total: 100000}, "copy 1200/100000"},
		{api.StoreSwitch{Phase: api.PhaseHold, Copied: 100000, Total: 100000}, "hold 100000/100000"},
	} {
		if got := Line(tc.sw); got != tc.want {
			t.Errorf("Line(%+v) = %q, want %q", tc.sw, got, tc.want)
		}
	}
}

// Plain lines: one at each phase; within a phase, one per Every while the
// count moves; nothing for a failure, which is reported as an error.
func TestLinesThrottle(t *testing.T) {
	var out bytes.Buffer
	l := &Lines{W: &out, Every: 3 * time.Second}
	at := func(s int) time.Time { return now.Add(time.Duration(s) * time.Second) }
	run := func(phase string, copied int64) api.StoreSwitch {
		return api.StoreSwitch{State: api.SwitchRunning, Phase: phase, Copied: copied, Total: 100}
	}
	check := api.StoreSwitch{State: api.SwitchRunning, Phase: api.PhaseCheck}
	l.Update(at(0), check)
	l.Update(at(0), check)                  // same: nothing
	l.Update(at(1), run(api.PhaseCopy, 10)) // new phase
	l.Update(at(2), run(api.PhaseCopy, 20)) // too soon
	l.Update(at(4), run(api.PhaseCopy, 40)) // 3 s on, moved
	l.Update(at(9), run(api.PhaseCopy, 40)) // did not move
	l.Update(at(9), run(api.PhaseVerify, 100))
	l.Update(at(9), run(api.PhaseHold, 100))
	l.Update(at(9), api.StoreSwitch{State: api.SwitchDone, Phase: api.PhaseDone, Copied: 100, Total: 100})
	want := "check\ncopy 10/100\ncopy 40/100\nverify 100/100\nhold 100/100\ndone 100/100\n"
	if out.String() != want {
		t.Errorf("lines:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	l.Update(at(20), api.StoreSwitch{State: api.SwitchFailed, Phase: api.PhaseCopy, Error: "x"})
	if out.Len() != 0 {
		t.Errorf("a failure printed %q", out.String())
	}
}

func TestFraction(t *testing.T) {
	for _, tc := range []struct {
		sw   api.StoreSwitch
		want float64
	}{
		{api.StoreSwitch{State: api.SwitchRunning, Phase: api.PhaseCheck}, 0},
		{api.StoreSwitch{State: api.SwitchRunning, Phase: api.PhaseCopy, Copied: 25, Total: 100}, 0.25},
		{api.StoreSwitch{State: api.SwitchRunning, Phase: api.PhaseHold, Copied: 120, Total: 100}, 1},
		{api.StoreSwitch{State: api.SwitchDone, Phase: api.PhaseDone}, 1}, // an empty store
	} {
		if got := Fraction(tc.sw); got != tc.want {
			t.Errorf("Fraction(%+v) = %v, want %v", tc.sw, got, tc.want)
		}
	}
}

// The bar's line names the backends and the phase, shows the counts, and
// fits the terminal's width.
func TestProgressRender(t *testing.T) {
	sw := api.StoreSwitch{ID: "s", From: "raft", To: "mysql", State: api.SwitchRunning, Phase: api.PhaseCheck}
	m := NewProgress(sw)
	line := ansi.Strip(m.Render())
	if !strings.HasPrefix(line, "raft → mysql  checking ") || !strings.HasSuffix(line, "  0%  0s") {
		t.Errorf("check: %q", line)
	}
	next, _ := m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	sw.Phase, sw.Copied, sw.Total = api.PhaseCopy, 1200, 4800
	next, _ = next.Update(SwitchMsg(sw))
	m = next.(Progress)
	line = ansi.Strip(m.Render())
	if !strings.Contains(line, "copying") || !strings.Contains(line, " 25%  1200/4800 keys") {
		t.Errorf("copy: %q", line)
	}
	if w := ansi.StringWidth(line); w > 80 {
		t.Errorf("copy line is %d columns wide on an 80-column terminal: %q", w, line)
	}
	// The bar takes what the text leaves, between a minimum and a maximum.
	width := func(cols int) int {
		next, _ := m.Update(tea.WindowSizeMsg{Width: cols, Height: 24})
		return ansi.StringWidth(next.(Progress).Render())
	}
	if w20, w80, w200 := width(20), width(80), width(200); w200-w80 != maxBar-(80-textWidth) || w80-w20 != (80-textWidth)-minBar {
		t.Errorf("line widths %d, %d, %d on 20, 80, 200 columns", w20, w80, w200)
	}
	sw.State, sw.Phase, sw.Copied = api.SwitchDone, api.PhaseDone, 4800
	next, _ = m.Update(SwitchMsg(sw))
	if got := ansi.Strip(next.(Progress).Render()); !strings.Contains(got, "done") || !strings.Contains(got, "100%") {
		t.Errorf("done: %q", got)
	}
	_, cmd := next.Update(EndMsg{})
	if cmd == nil {
		t.Fatal("EndMsg does not quit")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Errorf("EndMsg answers %T, want tea.QuitMsg", cmd())
	}
}

// script is a fake status endpoint: it answers its steps in order, then
// the last one forever.
type script struct {
	mu    sync.Mutex
	steps []step
	calls int
}

type step struct {
	st  api.StoreStatus
	err error
}

func (s *script) poll(context.Context) (api.StoreStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := min(s.calls, len(s.steps)-1)
	s.calls++
	return s.steps[i].st, s.steps[i].err
}

func running(id, phase string, copied int64) step {
	return step{st: api.StoreStatus{Backend: "raft", LastSwitch: &api.StoreSwitch{ID: id, From: "raft", To: "mysql",
		State: api.SwitchRunning, Phase: phase, Copied: copied, Total: 100}}}
}

func ended(id, state string) step {
	return step{st: api.StoreStatus{Backend: "mysql", LastSwitch: &api.StoreSwitch{ID: id, From: "raft", To: "mysql",
		State: state, Phase: api.PhaseDone, Copied: 100, Total: 100, Error: map[bool]string{true: "boom"}[state == api.SwitchFailed]}}}
}

var started = api.StoreSwitch{ID: "s1", From: "raft", To: "mysql", State: api.SwitchRunning, Phase: api.PhaseCheck}

// Watch follows the switch through errors, a status that does not name it
// yet (another node, before it heard) and every phase, to its end.
func TestWatchFollowsToTheEnd(t *testing.T) {
	s := &script{steps: []step{
		{err: errors.New("connection refused")},
		{st: api.StoreStatus{Backend: "raft"}},
		running("s1", api.PhaseCopy, 50),
		running("s1", api.PhaseHold, 100),
		ended("s1", api.SwitchDone),
	}}
	var seen []string
	sw, err := Watch(t.Context(), s.poll, started, time.Millisecond, time.Minute, func(sw api.StoreSwitch) { seen = append(seen, Line(sw)) })
	if err != nil {
		t.Fatal(err)
	}
	if sw.State != api.SwitchDone || strings.Join(seen, ",") != "copy 50/100,hold 100/100,done 100/100" {
		t.Errorf("ended %+v after %q", sw, seen)
	}

	s = &script{steps: []step{running("s1", api.PhaseCopy, 50), ended("s1", api.SwitchFailed)}}
	sw, err = Watch(t.Context(), s.poll, started, time.Millisecond, time.Minute, func(api.StoreSwitch) {})
	if err != nil || sw.State != api.SwitchFailed || sw.Error != "boom" {
		t.Errorf("failed switch: %+v, %v", sw, err)
	}
}

// Watch gives up after grace without news of the switch, and says so.
func TestWatchLosesTrack(t *testing.T) {
	for name, last := range map[string]step{
		"unreachable":     {err: errors.New("connection refused")},
		"another switch":  running("s2", api.PhaseCopy, 1),
		"no switch known": {st: api.StoreStatus{Backend: "raft"}},
	} {
		s := &script{steps: []step{running("s1", api.PhaseCopy, 10), last}}
		start := time.Now()
		sw, err := Watch(t.Context(), s.poll, started, time.Millisecond, 50*time.Millisecond, func(api.StoreSwitch) {})
		if !errors.Is(err, ErrLost) {
			t.Errorf("%s: %+v, %v", name, sw, err)
			continue
		}
		if time.Since(start) < 50*time.Millisecond {
			t.Errorf("%s: gave up before the grace period", name)
		}
		if sw.Copied != 10 {
			t.Errorf("%s: returned %+v, not the switch as last seen", name, sw)
		}
		t.Logf("%s: %v", name, err)
	}
}

func TestWatchStopsWithItsContext(t *testing.T) {
	s := &script{steps: []step{running("s1", api.PhaseCopy, 10)}}
	ctx, cancel := context.WithCancel(t.Context())
	seen := make(chan struct{}, 1)
	go func() {
		<-seen
		cancel()
	}()
	_, err := Watch(ctx, s.poll, started, time.Millisecond, time.Minute, func(api.StoreSwitch) {
		select {
		case seen <- struct{}{}:
		default:
		}
	})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "goes on in the cluster") {
		t.Errorf("err %v", err)
	}
}

func TestFollowLines(t *testing.T) {
	s := &script{steps: []step{running("s1", api.PhaseCopy, 50), ended("s1", api.SwitchDone)}}
	var out bytes.Buffer
	sw, err := FollowLines(t.Context(), &out, s.poll, started, time.Millisecond, time.Minute, time.Hour)
	if err != nil || sw.State != api.SwitchDone {
		t.Fatalf("%+v, %v", sw, err)
	}
	if out.String() != "copy 50/100\ndone 100/100\n" {
		t.Errorf("lines %q", out.String())
	}
}

// The bar runs as a real bubbletea program and ends with the switch.
func TestFollowBar(t *testing.T) {
	s := &script{steps: []step{running("s1", api.PhaseCopy, 50), running("s1", api.PhaseHold, 100), ended("s1", api.SwitchDone)}}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	sw, err := FollowBar(ctx, &out, s.poll, started, time.Millisecond, time.Minute, tea.WithWindowSize(80, 24))
	if err != nil || sw.State != api.SwitchDone {
		t.Fatalf("%+v, %v", sw, err)
	}
	if got := ansi.Strip(out.String()); !strings.Contains(got, "raft → mysql") || !strings.Contains(got, "100%") {
		t.Errorf("the terminal never showed the finished bar: %q", got)
	}

	// Interrupted (Ctrl-C ends kcctl's context): it returns at once.
	s = &script{steps: []step{running("s1", api.PhaseCopy, 50)}}
	ictx, icancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, icancel)
	_, err = FollowBar(ictx, &bytes.Buffer{}, s.poll, started, time.Millisecond, time.Minute)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted: %v", err)
	}
}
