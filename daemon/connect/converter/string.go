package converter

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/kcd-project/kcd/daemon/connect/data"
	"github.com/kcd-project/kcd/daemon/connect/internal/java"
)

// StringConverter is Kafka Connect's
// org.apache.kafka.connect.storage.StringConverter: it writes the value's
// Java toString() in converter.encoding (UTF-8 by default; also US-ASCII,
// ISO-8859-1, UTF-16, UTF-16BE and UTF-16LE) and reads any bytes as an
// optional string. Characters an encoding cannot hold are written as '?',
// bytes that are not valid in it are read as U+FFFD, as Java does.
// kcd.float.format picks the JDK whose Double.toString to follow, as for
// JSONConverter.
type StringConverter struct {
	enc         charset
	floatFormat java.FloatFormat
}

// Configure reads converter.encoding and kcd.float.format.
func (c *StringConverter) Configure(config map[string]string, _ bool) error {
	c.enc = utf8Charset{}
	if name, ok := config["converter.encoding"]; ok {
		enc, err := charsetFor(name)
		if err != nil {
			return err
		}
		c.enc = enc
	}
	ff, err := floatFormatSetting(config)
	c.floatFormat = ff
	return err
}

func (c *StringConverter) charset() charset {
	if c.enc == nil {
		return utf8Charset{}
	}
	return c.enc
}

// FromConnectData writes value's toString(); the schema is ignored.
func (c *StringConverter) FromConnectData(_ string, _ *data.Schema, value any) ([]byte, error) {
	if isNull(value) {
		return nil, nil
	}
	switch v := value.(type) {
	case []byte:
		return v, nil
	case string:
		if _, ok := c.charset().(utf8Charset); ok {
			return stringBytes(v), nil
		}
	}
	b := c.charset().encode(java.AppendToString(nil, value, c.floatFormat))
	if b == nil {
		b = []byte{} // an empty string is an empty value, not a null one
	}
	return b, nil
}

// stringBytes returns the bytes of s itself, not a copy: what a converter
// returns is only read (produced as it is), and a string's bytes never
// change. An empty s gives an empty, non-nil slice.
func stringBytes(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// ToConnectData reads b as an optional string.
func (c *StringConverter) ToConnectData(_ string, b []byte) (*data.Schema, any, error) {
	if b == nil {
		return data.OptionalStringSchema, nil, nil
	}
	return data.OptionalStringSchema, c.charset().decode(b), nil
}

// ToConnectDataShared is ToConnectData for bytes that never change while
// the value lives (a fetched record's, in a sink): valid UTF-8 is read as
// b itself, not a copy. The string keeps all of b's array reachable.
func (c *StringConverter) ToConnectDataShared(topic string, b []byte) (*data.Schema, any, error) {
	if _, ok := c.charset().(utf8Charset); !ok || len(b) == 0 || !utf8.Valid(b) {
		return c.ToConnectData(topic, b)
	}
	return data.OptionalStringSchema, unsafe.String(unsafe.SliceData(b), len(b)), nil
}

// charset is one of the Java charsets StringConverter supports here.
type charset interface {
	encode(utf8Text []byte) []byte
	decode(b []byte) string
}

func charsetFor(name string) (charset, error) {
	switch strings.ToUpper(strings.TrimSpace(name)) {
	case "UTF-8", "UTF8":
		return utf8Charset{}, nil
	case "US-ASCII", "ASCII", "ISO646-US":
		return singleByte{max: 0x7f}, nil
	case "ISO-8859-1", "ISO8859-1", "ISO8859_1", "LATIN1", "L1":
		return singleByte{max: 0xff}, nil
	case "UTF-16":
		return utf16Charset{bom: true}, nil
	case "UTF-16BE", "UNICODEBIGUNMARKED":
		return utf16Charset{}, nil
	case "UTF-16LE", "UNICODELITTLEUNMARKED":
		return utf16Charset{le: true}, nil
	}
	return nil, fmt.Errorf("unsupported converter.encoding %q (supported: UTF-8, US-ASCII, ISO-8859-1, UTF-16, UTF-16BE, UTF-16LE)", name)
}

type utf8Charset struct{}

func (utf8Charset) encode(b []byte) []byte { return b }

// decode replaces each maximal ill-formed subsequence by one U+FFFD, as
// Java's UTF-8 decoder does.
func (utf8Charset) decode(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || n > 1 {
			out = append(out, b[i:i+n]...)
			i += n
			continue
		}
		out = utf8.AppendRune(out, utf8.RuneError)
		i += maximalSubpart(b[i:])
	}
	return string(out)
}

// maximalSubpart is the length of the ill-formed sequence at the start of
// b, as Java's decoder counts it: the lead byte and the continuation bytes
// that could still have made a character, where Java lets ED start an
// encoded surrogate (ED A0 80 is one ill-formed sequence).
func maximalSubpart(b []byte) int {
	lo, hi := byte(0x80), byte(0xBF)
	var need int
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default:
		return 1
	}
	i := 1
	for ; i <= need && i < len(b); i++ {
		if b[i] < lo || b[i] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return i
}

// singleByte is US-ASCII (max 0x7f) or ISO-8859-1 (max 0xff).
type singleByte struct{ max rune }

func (c singleByte) encode(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for _, r := range string(b) {
		if r > c.max {
			r = '?'
		}
		out = append(out, byte(r))
	}
	return out
}

func (c singleByte) decode(b []byte) string {
	out := make([]rune, len(b))
	for i, x := range b {
		out[i] = rune(x)
		if rune(x) > c.max {
			out[i] = utf8.RuneError
		}
	}
	return string(out)
}

// utf16Charset is UTF-16 in big- or little-endian order; with bom it is
// Java's "UTF-16": written big-endian after a byte-order mark, read in the
// order a mark says (big-endian without one).
type utf16Charset struct{ le, bom bool }

func (c utf16Charset) encode(b []byte) []byte {
	if len(b) == 0 {
		return []byte{} // Java writes no byte-order mark for ""
	}
	units := utf16.Encode([]rune(string(b)))
	out := make([]byte, 0, 2*len(units)+2)
	if c.bom {
		out = append(out, 0xFE, 0xFF)
	}
	for _, u := range units {
		if c.le {
			out = append(out, byte(u), byte(u>>8))
		} else {
			out = append(out, byte(u>>8), byte(u))
		}
	}
	return out
}

func (c utf16Charset) decode(b []byte) string {
	le := c.le
	if c.bom && len(b) >= 2 {
		switch {
		case b[0] == 0xFE && b[1] == 0xFF:
			b = b[2:]
		case b[0] == 0xFF && b[1] == 0xFE:
			b, le = b[2:], true
		}
	}
	units := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		if le {
			units = append(units, uint16(b[i])|uint16(b[i+1])<<8)
		} else {
			units = append(units, uint16(b[i])<<8|uint16(b[i+1]))
		}
	}
	s := string(utf16.Decode(units))
	if len(b)%2 == 1 {
		s += string(utf8.RuneError)
	}
	return s
}
