// Package connectjson writes JSON text byte for byte as Kafka Connect's
// JsonConverter (Jackson underneath) writes it, where kcd must match those
// bytes: Kafka Connect finds a source offset by its record key's bytes.
package connectjson

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// AppendString appends s as Jackson writes a string: '"' and '\' escaped,
// control characters as \b \t \n \f \r or \u00XX, characters beyond U+FFFF
// as \uD8XX\uDCXX (upper-case hex), all else raw UTF-8. Invalid UTF-8
// (which no Java string holds) becomes U+FFFD.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	s = strings.ToValidUTF8(s, "\uFFFD")
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		case c >= 0xf0:
			// A 4-byte sequence: beyond U+FFFF, which Jackson writes as
			// two escaped UTF-16 surrogates.
			r, n := utf8.DecodeRuneInString(s[i:])
			hi, lo := utf16.EncodeRune(r)
			for _, u := range []rune{hi, lo} {
				b = append(b, '\\', 'u', hex[u>>12], hex[u>>8&0xf], hex[u>>4&0xf], hex[u&0xf])
			}
			i += n - 1
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// OffsetKeyPrefix is the start of every offsets topic key of connector
// name: `["<name>",`; the source partition's JSON object and "]" follow.
func OffsetKeyPrefix(name string) string {
	return string(append(AppendString([]byte{'['}, name), ','))
}
