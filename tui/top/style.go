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

	title, titleFocus, colHead, sel paint
	flash, bad, warn, ok, dim       paint
	state                           map[string]paint
	help                            help.Styles
}

// paint is a lipgloss style turned into the SGR sequences around a
// single-line text, so a frame of many cells does not run lipgloss's
// layout code once per cell.
type paint struct{ pre, post string }

func painted(st lipgloss.Style) paint {
	out := st.Render("X")
	i := strings.IndexByte(out, 'X')
	if i < 0 {
		return paint{}
	}
	return paint{pre: out[:i], post: out[i+1:]}
}

func newStyles(plain bool) styles {
	if plain {
		return styles{plain: true, help: help.Styles{}}
	}
	s := lipgloss.NewStyle
	return styles{
		title:      painted(s().Faint(true)),
		titleFocus: painted(s().Bold(true).Foreground(lipgloss.Cyan)),
		colHead:    painted(s().Faint(true)),
		sel:        painted(s().Reverse(true)),
		flash:      painted(s().Bold(true).Reverse(true).Foreground(lipgloss.Yellow)),
		bad:        painted(s().Bold(true).Foreground(lipgloss.Red)),
		warn:       painted(s().Foreground(lipgloss.Yellow)),
		ok:         painted(s().Foreground(lipgloss.Green)),
		dim:        painted(s().Faint(true)),
		state: map[string]paint{
			"RUNNING":    painted(s().Foreground(lipgloss.Green)),
			"FAILED":     painted(s().Bold(true).Foreground(lipgloss.Red)),
			"PAUSED":     painted(s().Foreground(lipgloss.Yellow)),
			"RESTARTING": painted(s().Foreground(lipgloss.Cyan)),
			"UNASSIGNED": painted(s().Foreground(lipgloss.Magenta)),
			"STOPPED":    painted(s().Faint(true)),
		},
		help: help.DefaultDarkStyles(),
	}
}

// r styles text (nothing under plain).
func (s *styles) r(p paint, text string) string {
	if s.plain || text == "" {
		return text
	}
	return p.pre + text + p.post
}

// byState styles text in the colour of a task or connector state.
func (s *styles) byState(state, text string) string {
	if p, ok := s.state[state]; ok {
		return s.r(p, text)
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
	var tw int
	if ascii(text) {
		tw = len(text)
		if tw > w {
			text, tw = text[:w-1]+"…", w
		}
	} else {
		tw = ansi.StringWidth(text)
		if tw > w {
			text = ansi.Truncate(text, w, "…")
			tw = ansi.StringWidth(text)
		}
	}
	if tw >= w {
		return text
	}
	if right {
		return strings.Repeat(" ", w-tw) + text
	}
	return text + strings.Repeat(" ", w-tw)
}

// ascii: every byte is a printable ASCII character, one cell wide.
func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// cut cuts a line to w cells without padding.
func cut(line string, w int) string {
	if ansi.StringWidth(line) <= w {
		return line
	}
	return ansi.Truncate(line, w, "…")
}
