package converter

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The scalars of the JSON reader: numbers (leading zeros allowed, as the
// Kafka Connect converter allows them, and at most 1000 digits) and
// strings (escapes decoded, UTF-8 checked, at most 20,000,000 bytes).

func (p *parser) number(skip bool) (node, error) {
	n := node{kind: kNumber, integral: true}
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
	}
	digits := p.digits()
	if digits == 0 {
		return n, p.errorf("invalid number: expected a digit")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		n.integral = false
		frac := p.digits()
		if frac == 0 {
			return n, p.errorf("invalid number: decimal point not followed by a digit")
		}
		digits += frac
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		n.integral = false
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		exp := p.digits()
		if exp == 0 {
			return n, p.errorf("invalid number: exponent indicator not followed by a digit")
		}
		digits += exp
	}
	if digits > maxNumberLen {
		return n, p.errorf("number value length (%d) exceeds the maximum allowed (%d)", digits, maxNumberLen)
	}
	if !skip {
		n.str = string(p.data[start:p.pos])
	}
	return n, nil
}

func (p *parser) digits() int {
	start := p.pos
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		p.pos++
	}
	return p.pos - start
}

// string reads a string at p.pos (a '"'), checking escapes and UTF-8.
func (p *parser) string(skip bool, limit int) (string, error) {
	p.pos++
	start := p.pos
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			s := p.data[start:p.pos]
			p.pos++
			if len(s) > limit {
				return "", p.errorf("string length (%d) exceeds the maximum allowed (%d)", len(s), limit)
			}
			if skip {
				return "", nil
			}
			return string(s), nil
		case c == '\\':
			return p.escapedString(start, skip, limit)
		case c < 0x20:
			return "", p.errorf("illegal unquoted character %s: has to be escaped in a string", p.quote())
		case c < utf8.RuneSelf:
			p.pos++
		default:
			if err := p.utf8(); err != nil {
				return "", err
			}
		}
	}
	return "", p.errorf("unexpected end-of-input in a string")
}

func (p *parser) utf8() error {
	r, size := utf8.DecodeRune(p.data[p.pos:])
	if r == utf8.RuneError && size <= 1 {
		return p.errorf("invalid UTF-8 byte 0x%02x", p.data[p.pos])
	}
	p.pos += size
	return nil
}

// escapedString continues a string from its first backslash, decoding.
func (p *parser) escapedString(start int, skip bool, limit int) (string, error) {
	buf := append([]byte(nil), p.data[start:p.pos]...)
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			if len(buf) > limit {
				return "", p.errorf("string length (%d) exceeds the maximum allowed (%d)", len(buf), limit)
			}
			if skip {
				return "", nil
			}
			return string(buf), nil
		case c == '\\':
			r, err := p.escape()
			if err != nil {
				return "", err
			}
			buf = utf8.AppendRune(buf, r)
		case c < 0x20:
			return "", p.errorf("illegal unquoted character %s: has to be escaped in a string", p.quote())
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			p.pos++
		default:
			s := p.pos
			if err := p.utf8(); err != nil {
				return "", err
			}
			buf = append(buf, p.data[s:p.pos]...)
		}
	}
	return "", p.errorf("unexpected end-of-input in a string")
}

// escape decodes the escape sequence at p.pos; a \u escape of a lone
// surrogate, which Go strings cannot hold, becomes U+FFFD.
func (p *parser) escape() (rune, error) {
	if p.pos+1 >= len(p.data) {
		return 0, p.errorf("unexpected end-of-input in an escape sequence")
	}
	c := p.data[p.pos+1]
	p.pos += 2
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
		r, err := p.hex4()
		if err != nil {
			return 0, err
		}
		if utf16.IsSurrogate(r) {
			if r < 0xdc00 && p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
				save := p.pos
				p.pos += 2
				lo, err := p.hex4()
				if err != nil {
					return 0, err
				}
				if d := utf16.DecodeRune(r, lo); d != utf8.RuneError {
					return d, nil
				}
				p.pos = save
			}
			return utf8.RuneError, nil
		}
		return r, nil
	}
	p.pos--
	return 0, p.errorf("unrecognized character escape %s", p.quote())
}

func (p *parser) hex4() (rune, error) {
	if p.pos+4 > len(p.data) {
		return 0, p.errorf("unexpected end-of-input in a \\u escape")
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c|0x20 >= 'a' && c|0x20 <= 'f':
			c = c | 0x20 - 'a' + 10
		default:
			return 0, p.errorf("unexpected character %s in a \\u escape: expected a hex digit", strconv.QuoteRuneToASCII(rune(c)))
		}
		r = r<<4 | rune(c)
	}
	p.pos += 4
	return r, nil
}
