package top

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// frames are the fixture's screens: the main view, the drill-in into the
// connector with the failed task (its trace and offsets), the full help.
func frames(t *testing.T, w, h int, o Options) map[string]string {
	t.Helper()
	m, _ := started(t, w, h, o)
	out := map[string]string{"main": frame(m)}
	d, cmd := press(t, m, "enter") // billing-source, failing, lists first
	d = do(t, d, cmd)
	out["drill"] = frame(d)
	hm, _ := press(t, m, "?")
	out["help"] = frame(hm)
	return out
}

func TestGoldenFrames(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {160, 48}} {
		w, h := sz[0], sz[1]
		for name, f := range frames(t, w, h, Options{NoColor: true}) {
			t.Run(fmt.Sprintf("%s_%dx%d", name, w, h), func(t *testing.T) {
				checkShape(t, f, w, h)
				golden(t, fmt.Sprintf("%s_%dx%d", name, w, h), f)
			})
		}
	}
}

// TestColourDecoratesOnly: with colour the frames carry ANSI styling, and
// stripped of it they are the plain frames.
func TestColourDecoratesOnly(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {160, 48}} {
		plain := frames(t, sz[0], sz[1], Options{NoColor: true})
		colour := frames(t, sz[0], sz[1], Options{})
		for name, c := range colour {
			if !strings.Contains(c, "\x1b[") {
				t.Errorf("%s %v: no ANSI sequence in the coloured frame", name, sz)
			}
			if got := ansi.Strip(c); got != plain[name] {
				t.Errorf("%s %v: coloured frame stripped differs from the plain one\n--- stripped\n%s\n--- plain\n%s", name, sz, got, plain[name])
			}
		}
	}
}

// TestNoColorHasNoEscape: NO_COLOR frames hold no escape byte at all.
func TestNoColorHasNoEscape(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {160, 48}} {
		for name, f := range frames(t, sz[0], sz[1], Options{NoColor: true, ReadOnly: true}) {
			if i := strings.IndexByte(f, 0x1b); i >= 0 {
				t.Errorf("%s %v: ESC at byte %d: %q", name, sz, i, f[max(i-20, 0):min(i+20, len(f))])
			}
		}
	}
}
