package top

import (
	"strings"
	"unicode/utf8"

	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// styles colour the dashboard. Colour only decorates: the text is the same
// with and without it, and with plain set nothing is styled at all.
type styles struct {
	plain bool

	title, titleFocus, colHead, sel lipgloss.Style
	flash, bad, warn, ok, dim       lipgloss.Style
	state                           map[string]lipgloss.Style
	help                            help.Styles
}

func newStyles(plain bool) styles {
	if plain {
		return styles{plain: true, help: help.Styles{}}
	}
	s := lipgloss.NewStyle
	return styles{
		title:      s().Faint(true),
		titleFocus: s().Bold(true).Foreground(lipgloss.Cyan),
		colHead:    s().Faint(true),
		sel:        s().Reverse(true),
		flash:      s().Bold(true).Reverse(true).Foreground(lipgloss.Yellow),
		bad:        s().Bold(true).Foreground(lipgloss.Red),
		warn:       s().Foreground(lipgloss.Yellow),
		ok:         s().Foreground(lipgloss.Green),
		dim:        s().Faint(true),
		state: map[string]lipgloss.Style{
			"RUNNING":    s().Foreground(lipgloss.Green),
			"FAILED":     s().Bold(true).Foreground(lipgloss.Red),
			"PAUSED":     s().Foreground(lipgloss.Yellow),
			"RESTARTING": s().Foreground(lipgloss.Cyan),
			"UNASSIGNED": s().Foreground(lipgloss.Magenta),
			"STOPPED":    s().Faint(true),
		},
		help: help.DefaultDarkStyles(),
	}
}

// r styles text (nothing under plain).
func (s *styles) r(st lipgloss.Style, text string) string {
	if s.plain || text == "" {
		return text
	}
	return st.Render(text)
}

// byState styles text in the colour of a task or connector state.
func (s *styles) byState(state, text string) string {
	if st, ok := s.state[state]; ok && !s.plain {
		return st.Render(text)
	}
	return text
}

// clean makes text from the server safe to print: tabs become spaces and
// other control characters (which could drive the terminal) are dropped.
func clean(s string) string {
	safe := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteString("  ")
		case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0, r == utf8.RuneError:
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// fit cuts text to w cells, ending in … when cut, and pads it to w.
func fit(text string, w int, right bool) string {
	if w <= 0 {
		return ""
	}
	text = clean(text)
	tw := ansi.StringWidth(text)
	if tw > w {
		text = ansi.Truncate(text, w, "…")
		tw = ansi.StringWidth(text)
	}
	if tw >= w {
		return text
	}
	if right {
		return strings.Repeat(" ", w-tw) + text
	}
	return text + strings.Repeat(" ", w-tw)
}

// cut cuts a line to w cells without padding.
func cut(line string, w int) string {
	if ansi.StringWidth(line) <= w {
		return line
	}
	return ansi.Truncate(line, w, "…")
}
