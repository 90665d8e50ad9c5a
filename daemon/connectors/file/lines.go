package file

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
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
}

func newLineReader(r io.Reader, skip int64) *lineReader {
	return &lineReader{r: r, buf: make([]byte, 64<<10), skip: skip}
}

// next returns the next complete line, valid until the next fill, and the
// chars it used, terminator included; ok is false when more data must be
// read first.
func (l *lineReader) next() (line []byte, chars int64, ok bool) {
	l.skipChars()
	if l.skip > 0 {
		return nil, 0, false
	}
	data := l.buf[l.start:l.end]
	i := lineEnd(data)
	if i < 0 {
		return nil, 0, false
	}
	n := i + 1
	if data[i] == '\r' {
		if i+1 >= len(data) {
			return nil, 0, false
		}
		if data[i+1] == '\n' {
			n = i + 2
		}
	}
	l.start += n
	return data[:i], utf16Len(data[:n]), true
}

// lineEnd is the index of the first \r or \n in b, or -1: two vectorized
// searches rather than bytes.IndexAny's byte at a time.
func lineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	upto := b
	if i >= 0 {
		upto = b[:i]
	}
	if j := bytes.IndexByte(upto, '\r'); j >= 0 {
		return j
	}
	return i
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
// last word: it tests eight bytes at a time.
func asciiPrefix(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:])&0x8080808080808080 != 0 {
			break
		}
	}
	return i
}

// appendDecoded appends a line's bytes as a Java string holds them: each
// invalid byte becomes U+FFFD, as Java's UTF-8 decoder makes it.
func appendDecoded(dst, b []byte) []byte {
	if i := asciiPrefix(b); i == len(b) || utf8.Valid(b[i:]) {
		return append(dst, b...)
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		dst = utf8.AppendRune(dst, r)
		i += size
	}
	return dst
}
