// Package javaprops reads Java .properties text as java.util.Properties.load
// does: key=value, key:value or key value; # and ! comment lines; a line
// ending in an odd number of backslashes continues on the next one (whose
// leading blanks are dropped); \t \n \r \f \uXXXX escapes, any other escaped
// character stands for itself. Text is read as UTF-8 when it is valid
// UTF-8, else as ISO-8859-1 (what Properties.load assumes). A key given
// twice keeps its last value.
package javaprops

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Parse parses the text of a .properties file.
// An error names the line but never quotes a value: values may be secrets.
func Parse(data []byte) (map[string]string, error) {
	var text string
	if utf8.Valid(data) {
		text = strings.TrimPrefix(string(data), "\uFEFF")
	} else {
		r := make([]rune, len(data))
		for i, c := range data {
			r[i] = rune(c) // ISO-8859-1 is the first 256 code points
		}
		text = string(r)
	}
	props := map[string]string{}
	lines := splitNaturalLines(text)
	for i := 0; i < len(lines); i++ {
		first := i + 1
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue // a comment never continues on the next line
		}
		// Join continuation lines: an odd number of trailing backslashes.
		var logical strings.Builder
		for {
			cont := trailingBackslashes(line)%2 == 1
			if !cont {
				logical.WriteString(line)
				break
			}
			logical.WriteString(line[:len(line)-1])
			if i+1 >= len(lines) {
				break // a backslash at the end of the file continues onto nothing
			}
			i++
			line = strings.TrimLeft(lines[i], " \t\f")
		}
		k, v, err := splitProperty(logical.String())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", first, err)
		}
		props[k] = v
	}
	return props, nil
}

func splitNaturalLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.Split(s, "\n")
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

// splitProperty splits a logical line into its unescaped key and value. The
// key ends at the first unescaped '=', ':' or blank; blanks, then one '=' or
// ':', then blanks separate it from the value.
func splitProperty(line string) (string, string, error) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++ // the escaped character belongs to the key
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			end = i
			break
		}
	}
	rest := line[end:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	key, err := unescapeProperty(line[:end])
	if err != nil {
		return "", "", fmt.Errorf("key: %w", err)
	}
	val, err := unescapeProperty(rest)
	if err != nil {
		return "", "", fmt.Errorf("value of %q: %w", key, err)
	}
	return key, val, nil
}

func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing backslash stands for nothing
		}
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf(`malformed \uxxxx escape`)
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf(`malformed \uxxxx escape`)
			}
			// Java strings are UTF-16: join a surrogate pair.
			if r >= 0xD800 && r < 0xDC00 && i+11 <= len(s) && s[i+5] == '\\' && s[i+6] == 'u' {
				if lo, err := strconv.ParseUint(s[i+7:i+11], 16, 16); err == nil && lo >= 0xDC00 && lo < 0xE000 {
					b.WriteRune(rune((r-0xD800)<<10 + (lo - 0xDC00) + 0x10000))
					i += 10
					continue
				}
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			// Any other escaped byte stands for itself; a multi-byte
			// character is copied whole by the loop.
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}
