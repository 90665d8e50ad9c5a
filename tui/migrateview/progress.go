package migrateview

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"charm.land/bubbles/v2/progress"
	tea "charm.land/bubbletea/v2"

	"github.com/kcd-project/kcd/migrate"
)

// Reporter shows the progress of a long read or import.
type Reporter interface {
	Report(migrate.Progress)
	// Stop ends the display; the last state stays on screen.
	Stop()
}

// Bar is the bubbletea model of a read or import on a terminal: what is
// read, a bar, and the counts.
type Bar struct {
	p   migrate.Progress
	bar progress.Model
}

type endMsg struct{}

// Init implements tea.Model.
func (m Bar) Init() tea.Cmd { return nil }

// Update implements tea.Model.
func (m Bar) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case migrate.Progress:
		m.p = msg
	case endMsg:
		return m, tea.Quit
	case tea.WindowSizeMsg:
		m.bar.SetWidth(min(max(msg.Width-50, 10), 40))
	}
	return m, nil
}

// View implements tea.Model.
func (m Bar) View() tea.View { return tea.NewView(m.Render()) }

// Render is the model's one line.
func (m Bar) Render() string {
	return fmt.Sprintf("%-24s %s  %s", what(m.p), m.bar.ViewAs(Fraction(m.p)), counts(m.p))
}

// Fraction is how far p has come, from 0 to 1.
func Fraction(p migrate.Progress) float64 {
	if p.Total <= 0 {
		return 1
	}
	return min(max(float64(p.Read)/float64(p.Total), 0), 1)
}

func what(p migrate.Progress) string {
	if p.Topic == "import" {
		return "staging offsets"
	}
	return "reading " + p.Topic
}

func counts(p migrate.Progress) string {
	return fmt.Sprintf("%d/%d records", p.Read, p.Total)
}

// NewBar starts a progress bar on out, a terminal. Input is left alone:
// Ctrl-C reaches kcctl as a signal, which ends ctx. opts are added to the
// program's options (tests set the window size of an output that is not a
// terminal).
func NewBar(ctx context.Context, out io.Writer, opts ...tea.ProgramOption) Reporter {
	opts = append([]tea.ProgramOption{tea.WithOutput(out), tea.WithInput(nil), tea.WithoutSignalHandler(), tea.WithContext(ctx)}, opts...)
	b := &barReporter{p: tea.NewProgram(Bar{bar: progress.New(progress.WithWidth(40), progress.WithDefaultBlend())}, opts...), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		_, _ = b.p.Run() // a bar that cannot be drawn changes nothing of the work
	}()
	return b
}

type barReporter struct {
	p    *tea.Program
	done chan struct{}
	once sync.Once
}

func (b *barReporter) Report(p migrate.Progress) { b.p.Send(p) }

func (b *barReporter) Stop() {
	b.once.Do(func() {
		b.p.Send(endMsg{})
		<-b.done
	})
}

// Lines prints progress as plain lines, for output that is not a terminal:
// one when a topic starts and ends, and one every Every in between.
type Lines struct {
	W     io.Writer
	Every time.Duration

	mu     sync.Mutex
	last   migrate.Progress
	lastAt time.Time
}

// Report implements Reporter.
func (l *Lines) Report(p migrate.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if p.Topic == l.last.Topic && p.Read < p.Total && now.Sub(l.lastAt) < l.Every {
		return
	}
	if p == l.last {
		return
	}
	fmt.Fprintf(l.W, "%s: %s\n", what(p), counts(p))
	l.last, l.lastAt = p, now
}

// Stop implements Reporter.
func (l *Lines) Stop() {}
