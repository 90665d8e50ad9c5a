package converter

import (
	"errors"
	"fmt"
)

// decodeBase64 decodes base64 as Jackson's default variant
// (MIME-NO-LINEFEEDS) does when a JSON string is read as binary: standard
// alphabet, padding required, white space (any character up to ' ')
// allowed before each 4-character unit, units after padding read on.
func decodeBase64(s string) ([]byte, error) {
	out := make([]byte, 0, len(s)*3/4)
	i := 0
	next := func(pos int) (int32, error) {
		if i >= len(s) {
			return 0, errors.New("unexpected end of base64-encoded string: padding (one or more '=' characters) expected at the end")
		}
		c := s[i]
		i++
		v := base64Value(c)
		if v == -1 {
			return 0, fmt.Errorf("illegal character %q (code 0x%02x) in base64 content", c, c)
		}
		if v == padding && pos < 2 {
			return 0, fmt.Errorf("unexpected padding character ('=') as character #%d of 4-char base64 unit: padding only legal as 3rd or 4th character", pos+1)
		}
		return v, nil
	}
	for {
		for i < len(s) && s[i] <= ' ' {
			i++
		}
		if i >= len(s) {
			return out, nil
		}
		var q [4]int32
		for pos := range q {
			v, err := next(pos)
			if err != nil {
				return nil, err
			}
			q[pos] = v
			if v == padding {
				break
			}
		}
		switch {
		case q[2] == padding:
			if q[3], _ = next(3); q[3] != padding {
				return nil, errors.New("unexpected character in base64 content: expected padding character '='")
			}
			out = append(out, byte((q[0]<<6|q[1])>>4))
		case q[3] == padding:
			v := (q[0]<<12 | q[1]<<6 | q[2]) >> 2
			out = append(out, byte(v>>8), byte(v))
		default:
			v := q[0]<<18 | q[1]<<12 | q[2]<<6 | q[3]
			out = append(out, byte(v>>16), byte(v>>8), byte(v))
		}
	}
}

const padding = -2

func base64Value(c byte) int32 {
	switch {
	case c >= 'A' && c <= 'Z':
		return int32(c - 'A')
	case c >= 'a' && c <= 'z':
		return int32(c-'a') + 26
	case c >= '0' && c <= '9':
		return int32(c-'0') + 52
	case c == '+':
		return 62
	case c == '/':
		return 63
	case c == '=':
		return padding
	}
	return -1
}
