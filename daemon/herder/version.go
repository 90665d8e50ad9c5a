package herder

import (
	"strconv"
	"strings"
)

// versionInRange tells whether version satisfies spec, which is a plain
// version (an exact requirement, as Kafka Connect treats it) or a
// Maven-style range such as "[4.0,5.0)" or "[1.2,)". It also returns the
// spec as a range, for error messages ("[v,v]" for a plain version).
func versionInRange(version, spec string) (string, bool) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return spec, true
	}
	if !strings.ContainsAny(spec[:1], "[(") {
		return "[" + spec + "," + spec + "]", compareVersions(version, spec) == 0
	}
	last := spec[len(spec)-1]
	if last != ']' && last != ')' {
		return spec, false
	}
	lo, hi, two := strings.Cut(spec[1:len(spec)-1], ",")
	if !two { // "[v]": exactly v
		return spec, spec[0] == '[' && last == ']' && compareVersions(version, lo) == 0
	}
	lo, hi = strings.TrimSpace(lo), strings.TrimSpace(hi)
	if lo != "" {
		c := compareVersions(version, lo)
		if c < 0 || (c == 0 && spec[0] == '(') {
			return spec, false
		}
	}
	if hi != "" {
		c := compareVersions(version, hi)
		if c > 0 || (c == 0 && last == ')') {
			return spec, false
		}
	}
	return spec, true
}

// compareVersions compares dotted versions part by part, numerically where
// both parts are numbers; a missing part counts as 0.
func compareVersions(a, b string) int {
	pa, pb := splitVersion(a), splitVersion(b)
	for i := range max(len(pa), len(pb)) {
		x, y := "0", "0"
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		nx, ex := strconv.Atoi(x)
		ny, ey := strconv.Atoi(y)
		switch {
		case ex == nil && ey == nil && nx != ny:
			if nx < ny {
				return -1
			}
			return 1
		case (ex != nil || ey != nil) && x != y:
			return strings.Compare(x, y)
		}
	}
	return 0
}

func splitVersion(v string) []string {
	return strings.FieldsFunc(strings.TrimSpace(v), func(r rune) bool { return r == '.' || r == '-' })
}
