package storeview

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"charm.land/bubbles/v2/progress"
	tea "charm.land/bubbletea/v2"

	"github.com/kcd-project/kcd/api"
)

// SwitchMsg carries the switch as last polled to a Progress.
type SwitchMsg api.StoreSwitch

// EndMsg tells a Progress that following has ended: it quits.
type EndMsg struct{}

// Progress is the bubbletea model of a running switch on a terminal: the
// backends, the phase, a bar of the keys copied, and the counts.
type Progress struct {
	sw    api.StoreSwitch
	bar   progress.Model
	began time.Time // by kcctl's clock: the server's may differ
	ended bool
}

// barWidth bounds the bar: the text around it takes about 50 columns.
const (
	minBar, maxBar = 10, 40
	textWidth      = 50
)

// NewProgress returns the model of switch sw as it started.
func NewProgress(sw api.StoreSwitch) Progress {
	return Progress{sw: sw, bar: progress.New(progress.WithWidth(maxBar), progress.WithDefaultBlend()), began: time.Now()}
}

// Init implements tea.Model.
func (m Progress) Init() tea.Cmd { return nil }

// Update implements tea.Model.
func (m Progress) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case SwitchMsg:
		m.sw = api.StoreSwitch(msg)
	case EndMsg:
		m.ended = true
		return m, tea.Quit
	case tea.WindowSizeMsg:
		m.bar.SetWidth(min(max(msg.Width-textWidth, minBar), maxBar))
	}
	return m, nil
}

// View implements tea.Model.
func (m Progress) View() tea.View { return tea.NewView(m.Render()) }

// Switch is the switch as the model last saw it.
func (m Progress) Switch() api.StoreSwitch { return m.sw }

// Render is the model's one line, without a trailing newline.
func (m Progress) Render() string {
	sw := m.sw
	var b strings.Builder
	fmt.Fprintf(&b, "%s → %s  %-8s %s", sw.From, sw.To, phaseWord(sw), m.bar.ViewAs(Fraction(sw)))
	if sw.Total > 0 {
		fmt.Fprintf(&b, "  %d/%d keys", sw.Copied, sw.Total)
	}
	if sw.State == api.SwitchRunning {
		fmt.Fprintf(&b, "  %s", time.Since(m.began).Round(time.Second))
	}
	return b.String()
}

// phaseWord names what a switch is doing, for the bar.
func phaseWord(sw api.StoreSwitch) string {
	if sw.State == api.SwitchFailed {
		return "failed"
	}
	switch sw.Phase {
	case api.PhaseCheck:
		return "checking"
	case api.PhaseCopy:
		return "copying"
	case api.PhaseVerify:
		return "verifying"
	case api.PhaseHold:
		return "holding"
	case api.PhaseDone:
		return "done"
	}
	return sw.Phase
}

// Fraction is how far a switch has come, from 0 to 1, by keys copied.
func Fraction(sw api.StoreSwitch) float64 {
	switch {
	case sw.State == api.SwitchDone || sw.Phase == api.PhaseDone:
		return 1
	case sw.Total <= 0:
		return 0
	}
	return min(max(float64(sw.Copied)/float64(sw.Total), 0), 1)
}

// FollowBar follows switch sw (see Watch) and shows it as a progress bar on
// out, a terminal. Input is left alone: Ctrl-C reaches kcctl as a signal,
// which ends ctx. opts are added to the program's options (tests set the
// window size of an output that is not a terminal).
func FollowBar(parent context.Context, out io.Writer, poll Poll, sw api.StoreSwitch, every, grace time.Duration, opts ...tea.ProgramOption) (api.StoreSwitch, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	opts = append([]tea.ProgramOption{tea.WithOutput(out), tea.WithInput(nil), tea.WithoutSignalHandler(), tea.WithContext(ctx)}, opts...)
	p := tea.NewProgram(NewProgress(sw), opts...)
	var final api.StoreSwitch
	var werr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		final, werr = Watch(ctx, poll, sw, every, grace, func(s api.StoreSwitch) { p.Send(SwitchMsg(s)) })
		p.Send(EndMsg{})
	}()
	_, err := p.Run()
	cancel()
	<-done
	if err != nil && parent.Err() == nil {
		// The bar failed, and its end stopped Watch.
		return final, fmt.Errorf("show the progress of switch/%s, which goes on in the cluster (see 'kcctl store status'): %w", sw.ID, err)
	}
	return final, werr
}

// FollowLines follows switch sw (see Watch) and prints its progress as
// plain lines on out (see Lines).
func FollowLines(ctx context.Context, out io.Writer, poll Poll, sw api.StoreSwitch, every, grace, lineEvery time.Duration) (api.StoreSwitch, error) {
	l := &Lines{W: out, Every: lineEvery}
	return Watch(ctx, poll, sw, every, grace, func(s api.StoreSwitch) { l.Update(time.Now(), s) })
}
