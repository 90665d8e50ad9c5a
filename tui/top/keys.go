package top

import (
	"context"
	"fmt"
	"slices"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// keyMap is every key of the dashboard, for matching and for the help.
type keyMap struct {
	Next, Prev, Up, Down, Left, Right key.Binding
	Top, Bottom, PageUp, PageDown     key.Binding
	Enter, Back, Restart, Pause       key.Binding
	Filter, Help, Quit                key.Binding
}

func newKeys(readOnly bool) keyMap {
	k := keyMap{
		Next:     key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next pane")),
		Prev:     key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous pane")),
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Left:     key.NewBinding(key.WithKeys("left", "h"), key.WithHelp("←/h", "pane left, back")),
		Right:    key.NewBinding(key.WithKeys("right", "l"), key.WithHelp("→/l", "pane right")),
		Top:      key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g", "first")),
		Bottom:   key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "last")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+f"), key.WithHelp("pgdn", "page down")),
		Enter:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "connector's tasks")),
		Back:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Restart:  key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "restart")),
		Pause:    key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause/resume")),
		Filter:   key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:     key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
	}
	if readOnly {
		k.Restart.SetEnabled(false)
		k.Pause.SetEnabled(false)
	}
	return k
}

// shortHelp is the help line of the current view.
func (m *Model) shortHelp() []key.Binding {
	k := m.keys
	if m.drill != "" {
		return []key.Binding{k.Back, short(k.Down, "↑↓", "task"), short(k.Restart, "r", "restart task"), k.Pause, k.Help, k.Quit}
	}
	return []key.Binding{short(k.Next, "tab", "pane"), short(k.Enter, "enter", "tasks"), k.Restart, k.Pause, k.Filter, k.Help, k.Quit}
}

// short is b with a shorter help text, for the one-line help.
func short(b key.Binding, keys, desc string) key.Binding {
	b.SetHelp(keys, desc)
	return b
}

func (m *Model) fullHelpKeys() [][]key.Binding {
	k := m.keys
	return [][]key.Binding{
		{k.Next, k.Prev, k.Left, k.Right, k.Up, k.Down},
		{k.Top, k.Bottom, k.PageUp, k.PageDown, k.Help, k.Quit},
		{k.Enter, k.Back, k.Filter, k.Restart, k.Pause},
	}
}

func (m *Model) onKey(msg tea.KeyPressMsg) tea.Cmd {
	s := msg.String()
	if s == "ctrl+c" {
		return tea.Quit
	}
	switch {
	case m.confirm != nil:
		return m.onConfirmKey(s)
	case m.editing:
		m.onFilterKey(msg)
		return nil
	case m.fullHelp:
		switch {
		case key.Matches(msg, m.keys.Quit):
			return tea.Quit
		case key.Matches(msg, m.keys.Help, m.keys.Back):
			m.fullHelp = false
		}
		return nil
	}
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Help):
		m.fullHelp = true
	case key.Matches(msg, k.Filter):
		if m.drill == "" {
			m.editing, m.focus = true, paneConnectors
		}
	case key.Matches(msg, k.Next):
		m.moveFocus(1)
	case key.Matches(msg, k.Prev):
		m.moveFocus(-1)
	case key.Matches(msg, k.Left):
		if m.drill != "" {
			m.back()
		} else {
			m.moveFocus(-1)
		}
	case key.Matches(msg, k.Right):
		m.moveFocus(1)
	case key.Matches(msg, k.Up):
		m.move(-1)
	case key.Matches(msg, k.Down):
		m.move(1)
	case key.Matches(msg, k.PageUp):
		m.move(-m.page())
	case key.Matches(msg, k.PageDown):
		m.move(m.page())
	case key.Matches(msg, k.Top):
		m.move(-1 << 30)
	case key.Matches(msg, k.Bottom):
		m.move(1 << 30)
	case key.Matches(msg, k.Enter):
		return m.drillIn()
	case key.Matches(msg, k.Back):
		switch {
		case m.drill != "":
			m.back()
		case m.filter != "":
			m.filter = ""
			m.refilter()
		default:
			m.note = ""
		}
	case key.Matches(msg, k.Restart):
		m.askRestart()
	case key.Matches(msg, k.Pause):
		m.askPause()
	case m.opt.ReadOnly && (slices.Contains(k.Restart.Keys(), s) || slices.Contains(k.Pause.Keys(), s)):
		m.setNote("read-only (--readonly): restart and pause/resume are off", true)
	}
	return nil
}

func (m *Model) moveFocus(d int) {
	if m.drill != "" {
		return
	}
	m.focus = pane((int(m.focus) + d + int(numPanes)) % int(numPanes))
}

// move moves the selection of the focused list by d rows.
func (m *Model) move(d int) {
	if m.drill != "" {
		m.dsel = clampAdd(m.dsel, d)
		return
	}
	m.sel[m.focus] = clampAdd(m.sel[m.focus], d)
	if m.focus == paneConnectors {
		m.sel[paneConnectors] = min(max(m.sel[paneConnectors], 0), max(len(m.ix.shown)-1, 0))
		m.rememberConn()
	}
}

// clampAdd adds without overflowing; clampScroll bounds the result.
func clampAdd(a, d int) int { return max(min(a+d, 1<<30), -1<<30) }

func (m *Model) page() int {
	l := m.layout()
	if m.drill != "" {
		return max(l.tasks, 1)
	}
	return max(l.rows[m.focus], 1)
}

// drillIn opens the selected connector and asks for its offsets.
func (m *Model) drillIn() tea.Cmd {
	if m.drill != "" || m.focus != paneConnectors {
		return nil
	}
	c := m.selected()
	if c == nil {
		return nil
	}
	m.drill, m.doff, m.dsel = c.Name, 0, 0
	for i, t := range c.Tasks {
		if t.State == "FAILED" {
			m.dsel = i // a failed task's trace is what one drills in for
			break
		}
	}
	m.offsets, m.offErr, m.offLoading = nil, nil, true
	b, name := m.opt.Backend, c.Name
	if b == nil {
		m.offLoading, m.offErr = false, fmt.Errorf("no backend")
		return nil
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), actionTimeout)
		defer cancel()
		offs, err := b.Offsets(ctx, name)
		return OffsetsMsg{Connector: name, Offsets: offs, Err: err}
	}
}

func (m *Model) back() {
	m.drill, m.offsets, m.offErr, m.offLoading = "", nil, nil, false
}

// askRestart asks to restart the drilled-in connector's selected task, or
// the selected connector with its tasks.
func (m *Model) askRestart() {
	c := m.selected()
	if c == nil {
		m.setNote("select a connector first (tab to Connectors)", true)
		return
	}
	name := c.Name
	if m.drill != "" && m.dsel < len(c.Tasks) {
		id := c.Tasks[m.dsel].ID
		m.confirm = &confirmation{
			prompt: fmt.Sprintf("restart task %s/%d? (y/n)", name, id),
			what:   fmt.Sprintf("restart %s/%d", name, id),
			run:    func(ctx context.Context, b Backend) error { return b.RestartTask(ctx, name, id) },
		}
		return
	}
	m.confirm = &confirmation{
		prompt: fmt.Sprintf("restart connector %s and its tasks? (y/n)", name),
		what:   "restart " + name,
		run:    func(ctx context.Context, b Backend) error { return b.RestartConnector(ctx, name, true) },
	}
}

// askPause asks to resume a paused connector or pause any other.
func (m *Model) askPause() {
	c := m.selected()
	if c == nil {
		m.setNote("select a connector first (tab to Connectors)", true)
		return
	}
	name := c.Name
	if c.State == "PAUSED" {
		m.confirm = &confirmation{
			prompt: fmt.Sprintf("resume connector %s? (y/n)", name),
			what:   "resume " + name,
			run:    func(ctx context.Context, b Backend) error { return b.ResumeConnector(ctx, name) },
		}
		return
	}
	m.confirm = &confirmation{
		prompt: fmt.Sprintf("pause connector %s? (y/n)", name),
		what:   "pause " + name,
		run:    func(ctx context.Context, b Backend) error { return b.PauseConnector(ctx, name) },
	}
}

func (m *Model) onConfirmKey(s string) tea.Cmd {
	c := m.confirm
	switch s {
	case "y", "Y":
		m.confirm = nil
		b := m.opt.Backend
		if b == nil {
			m.setNote(c.what+" failed: no backend", true)
			return nil
		}
		m.setNote(c.what+"…", false)
		return func() tea.Msg {
			ctx, cancel := context.WithTimeout(context.Background(), actionTimeout)
			defer cancel()
			return ActionDoneMsg{What: c.what, Err: c.run(ctx, b)}
		}
	case "n", "N", "esc", "q":
		m.confirm = nil
		m.setNote(c.what+": cancelled", false)
	}
	return nil
}

// onFilterKey edits the filter; it applies as it is typed.
func (m *Model) onFilterKey(msg tea.KeyPressMsg) {
	switch msg.String() {
	case "enter":
		m.editing = false
		return
	case "esc":
		m.editing, m.filter = false, ""
	case "backspace":
		if r := []rune(m.filter); len(r) > 0 {
			m.filter = string(r[:len(r)-1])
		}
	default:
		t := msg.Key().Text
		if t == "" || len(m.filter) >= 64 {
			return
		}
		m.filter += t
	}
	m.refilter()
}
