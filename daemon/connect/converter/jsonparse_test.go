package converter

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseJSON(t *testing.T) {
	ok := []string{
		`{}`, `[]`, `"x"`, `0`, `-0`, `1.5e-3`, `007`, `-00.5`, `true`, `null`, ` [1, {"a" : [ ]} ] `,
		"\xef\xbb\xbf{}", `{"a":1} trailing`, `1 2`, `true]`, `"\u00e9\ud834\udd1e\ud800x"`, `[1,-2.5E+3]`,
		`"` + strings.Repeat("a", 1000) + `"`, "\"\x7f\u2028\"",
	}
	for _, in := range ok {
		if _, err := parseJSON([]byte(in), false); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
	bad := []string{
		`{`, `[1,]`, `{"a":}`, `{"a" 1}`, `{a:1}`, `[1 2]`, `'x'`, `NaN`, `+1`, `.5`, `1.`, `1e`, `-`, `01x`,
		`truex`, `nul`, "\"a\tb\"", `"\q"`, `"\u12"`, `"\u12G4"`, "\"\xff\"", `/*c*/1`, `[` + "\x00" + `]`,
		`"abc`, `{"a":1,}`, `{"a":1`, `[1,2`,
	}
	for _, in := range bad {
		if _, err := parseJSON([]byte(in), false); err == nil {
			t.Errorf("%q was accepted", in)
		}
	}
}

func TestParseJSONValues(t *testing.T) {
	n, err := parseJSON([]byte(`{"s":"a\"b\\c\/\n\u0041","n":-1.50e2,"i":-0,"a":[true,false,null],"s":"again"}`), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := n.keys; strings.Join(got, ",") != "s,n,i,a" {
		t.Fatalf("keys %v", got)
	}
	if s := n.get("s"); s.kind != kString || s.str != "again" {
		t.Fatalf("repeated name: %+v", s)
	}
	if num := n.get("n"); num.kind != kNumber || num.str != "-1.50e2" || num.integral {
		t.Fatalf("number: %+v", num)
	}
	if i := n.get("i"); !i.integral || i.str != "-0" {
		t.Fatalf("integer: %+v", i)
	}
	if a := n.get("a"); len(a.elems) != 3 || !a.elems[0].b || a.elems[2].kind != kNull {
		t.Fatalf("array: %+v", a)
	}
	m, _ := parseJSON([]byte(`"a\"b\\c\/\n\u0041"`), false)
	if m.str != "a\"b\\c/\nA" {
		t.Fatalf("escapes: %q", m.str)
	}
}

func TestParseJSONRawSchema(t *testing.T) {
	in := `{"payload":{"schema":1},"schema":{"type" : "int32"}}`
	n, err := parseJSON([]byte(in), true)
	if err != nil {
		t.Fatal(err)
	}
	if s := n.get("schema"); s.kind != kRaw || string(s.raw) != `{"type" : "int32"}` {
		t.Fatalf("schema: %+v", s)
	}
	if p := n.get("payload"); p.kind != kObject || p.get("schema").kind != kNumber {
		t.Fatalf("payload: %+v", p)
	}
	if _, err := parseJSON([]byte(`{"schema":{"type":}}`), true); err == nil {
		t.Fatal("a bad raw schema was accepted")
	}
}

// FuzzParseJSON checks that the parser never panics and accepts every
// document encoding/json accepts within Jackson's limits (Jackson, unlike
// encoding/json, rejects invalid UTF-8).
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x",null,true]}`, `[[[]]]`, `"\ud834\udd1e"`, `-0.0e-5`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	docs, _ := goldenInputs(f)
	for _, d := range docs {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		_, err := parseJSON(b, false)
		if err != nil && json.Valid(b) && utf8.Valid(b) && withinLimits(b) {
			t.Fatalf("valid JSON %q rejected: %v", b, err)
		}
	})
}

// withinLimits tells whether valid JSON stays within Jackson's nesting
// and number length limits.
func withinLimits(b []byte) bool {
	depth, digits, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case inString:
			if escaped {
				escaped = false
			} else if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > maxDepth {
				return false
			}
		case c == ']' || c == '}':
			depth--
		case c >= '0' && c <= '9':
			if digits++; digits > maxNumberLen {
				return false
			}
			continue
		case digits > 0 && strings.IndexByte(".eE+-", c) >= 0:
			// Jackson counts every digit of a number, its fraction's
			// and exponent's too (golden read_float_1001_digits_*).
			continue
		}
		digits = 0
	}
	return true
}
