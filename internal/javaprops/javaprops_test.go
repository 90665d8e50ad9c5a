package javaprops

import (
	"maps"
	"testing"
)

// Java's Properties.load: a lone \r ends a line, a backslash at the end of
// the text keeps its line (continued onto nothing), and a continuation line
// that starts with # is part of the value, not a comment.
func TestParseLikeJava(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string
	}{
		{"k=v\r\nk2 v2\rk3:v3", map[string]string{"k": "v", "k2": "v2", "k3": "v3"}},
		{"\\", map[string]string{"": ""}},
		{"a=1\\", map[string]string{"a": "1"}},
		{"a=x\\\n#y\nb=2", map[string]string{"a": "x#y", "b": "2"}},
		{"# c\n! c\nkey\\ with\\ blanks : v\\\n   continued\n", map[string]string{"key with blanks": "vcontinued"}},
	} {
		got, err := Parse([]byte(tc.in))
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("Parse(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
