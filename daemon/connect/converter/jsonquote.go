package converter

import (
	"encoding/base64"
	"unicode/utf16"
	"unicode/utf8"
)

// How Jackson writes strings and binary values.

func appendBase64(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

const hexDigits = "0123456789ABCDEF"

// appendJSONString appends s quoted as Jackson quotes: '"', '\\' and
// control characters escaped (\b \t \n \f \r, others as \u00XX), the
// characters beyond U+FFFF as their two escaped UTF-16 surrogates
// (\uD834\uDD1E), all else as UTF-8; invalid UTF-8 is written as U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				dst = append(dst, s[start:i]...)
				dst = append(dst, "\uFFFD"...)
			case r > 0xFFFF:
				dst = append(dst, s[start:i]...)
				hi, lo := utf16.EncodeRune(r)
				dst = appendEscapedUnit(dst, uint16(hi))
				dst = appendEscapedUnit(dst, uint16(lo))
			default:
				i += size
				continue
			}
			i += size
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = appendEscapedUnit(dst, uint16(c))
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func appendEscapedUnit(dst []byte, u uint16) []byte {
	return append(dst, '\\', 'u', hexDigits[u>>12], hexDigits[u>>8&0xF], hexDigits[u>>4&0xF], hexDigits[u&0xF])
}
