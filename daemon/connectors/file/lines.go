package file

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// maxLine bounds the buffer of one line; a longer line fails the task
// rather than growing memory without bound.
const maxLine = 16 << 20

// lineReader splits a byte stream into lines as FileStreamSourceTask does:
// a line ends at \n, \r or \r\n; a \r at the end of the data read so far
// waits for the next byte; a last line without terminator waits for one.
// It counts what it consumes in UTF-16 chars, as Java's char buffer does.
type lineReader struct {
	r          io.Reader
	buf        []byte
	start, end int
	// skip is how many chars must still be dropped before the first line
	// (the stored position).
	skip int64
	// cr and wide are the indexes in buf of the next \r and of the next
	// byte that is not ASCII, at or after start (end: none before end),
	// or -1 when not known yet. Found once for the data read rather than
	// per line, a line's end is one search for \n, and whether it is
	// ASCII two comparisons; fill forgets them.
	cr, wide int
}

func newLineReader(r io.Reader, skip int64) *lineReader {
	return &lineReader{r: r, buf: make([]byte, 64<<10), skip: skip, cr: -1, wide: -1}
}

// next returns the next complete line, valid until the next fill, and the
// chars it used, terminator included; ascii says the line is all ASCII
// (then it is valid UTF-8 and chars is its length in bytes). ok is false
// when more data must be read first.
func (l *lineReader) next() (line []byte, chars int64, ascii, ok bool) {
	l.skipChars()
	if l.skip > 0 {
		return nil, 0, false, false
	}
	data := l.buf[l.start:l.end]
	i := l.lineEnd()
	if i < 0 {
		return nil, 0, false, false
	}
	n := i + 1
	if data[i] == '\r' {
		if i+1 >= len(data) {
			return nil, 0, false, false
		}
		if data[i+1] == '\n' {
			n = i + 2
		}
	}
	ascii = l.wideAt() >= l.start+i
	l.start += n
	if ascii {
		return data[:i], int64(n), true, true
	}
	return data[:i], utf16Len(data[:n]), false, true
}

// lineEnd is the index in buf[start:end] of the first \r or \n, or -1.
func (l *lineReader) lineEnd() int {
	data := l.buf[l.start:l.end]
	if l.cr < l.start {
		l.cr = l.end
		if j := bytes.IndexByte(data, '\r'); j >= 0 {
			l.cr = l.start + j
		}
	}
	nl := bytes.IndexByte(data, '\n')
	if cr := l.cr - l.start; l.cr < l.end && (nl < 0 || cr < nl) {
		return cr
	}
	return nl
}

// wideAt returns the index of the first byte at or after start that is
// not ASCII, or end if there is none.
func (l *lineReader) wideAt() int {
	if l.wide < l.start {
		data := l.buf[l.start:l.end]
		i := asciiPrefix(data)
		for i < len(data) && data[i] < utf8.RuneSelf {
			i++
		}
		l.wide = l.start + i
	}
	return l.wide
}

// skipChars drops buffered data while chars remain to be skipped; a rune
// cut by the end of the buffer waits for the rest.
func (l *lineReader) skipChars() {
	for l.skip > 0 && l.start < l.end {
		data := l.buf[l.start:l.end]
		if !utf8.FullRune(data) {
			return
		}
		r, size := utf8.DecodeRune(data)
		l.start += size
		l.skip -= runeChars(r)
	}
}

// fill reads more data; it returns io.EOF when there is none now.
func (l *lineReader) fill() error {
	l.cr, l.wide = -1, -1
	if l.start > 0 {
		l.end = copy(l.buf, l.buf[l.start:l.end])
		l.start = 0
	}
	if l.end == len(l.buf) {
		if len(l.buf) >= maxLine {
			return fmt.Errorf("a line is longer than %d bytes", maxLine)
		}
		l.buf = append(l.buf, make([]byte, len(l.buf))...)
	}
	n, err := l.r.Read(l.buf[l.end:])
	l.end += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.EOF
	}
	return err
}

// runeChars is how many Java chars (UTF-16 units) a rune takes. An invalid
// byte decodes to one U+FFFD, as Java's decoder replaces it.
func runeChars(r rune) int64 {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// utf16Len is how many Java chars b decodes to.
func utf16Len(b []byte) int64 {
	i := asciiPrefix(b)
	n := int64(i)
	for i < len(b) {
		if b[i] < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		n += runeChars(r)
		i += size
	}
	return n
}

// asciiPrefix is the length of b's leading ASCII bytes, give or take the
// last 32: it tests 32 bytes at a time, then eight.
func asciiPrefix(b []byte) int {
	const hi = 0x8080808080808080
	i := 0
	for ; i+32 <= len(b); i += 32 {
		w := binary.LittleEndian.Uint64(b[i:]) | binary.LittleEndian.Uint64(b[i+8:]) |
			binary.LittleEndian.Uint64(b[i+16:]) | binary.LittleEndian.Uint64(b[i+24:])
		if w&hi != 0 {
			break
		}
	}
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:])&hi != 0 {
			break
		}
	}
	return i
}

// writeDecoded writes a line's bytes as a Java string holds them: each
// invalid byte becomes U+FFFD, as Java's UTF-8 decoder makes it.
func writeDecoded(dst *strings.Builder, b []byte) {
	if i := asciiPrefix(b); i == len(b) || utf8.Valid(b[i:]) {
		dst.Write(b)
		return
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		dst.WriteRune(r)
		i += size
	}
}
