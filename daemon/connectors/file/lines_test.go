package file

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// chunkReader returns its data a few random bytes at a time, and io.EOF
// (nothing yet) now and then.
type chunkReader struct {
	data []byte
	rng  *rand.Rand
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 || c.rng.IntN(8) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), 1+c.rng.IntN(64))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// TestLineReaderMatchesPlainSplit compares lineReader, which finds \r and
// non-ASCII bytes once per read, with a plain split of the same data:
// lines ending at \n, \r or \r\n, a last unterminated line (or a last \r)
// held back, chars counted in UTF-16 units.
func TestLineReaderMatchesPlainSplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab\r\n\x80\xe9\xff\xf0\x9f\x98\x80 ")
	for range 2000 {
		data := make([]byte, rng.IntN(400))
		for i := range data {
			if rng.IntN(5) == 0 {
				data[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				data[i] = 'a' + byte(rng.IntN(26))
			}
		}
		type line struct {
			text  string
			chars int64
		}
		var want []line
		for rest := data; ; {
			i := bytes.IndexAny(rest, "\r\n")
			if i < 0 || (rest[i] == '\r' && i+1 == len(rest)) {
				break
			}
			n := i + 1
			if rest[i] == '\r' && rest[i+1] == '\n' {
				n++
			}
			want = append(want, line{string(rest[:i]), int64(len(utf16.Encode([]rune(string(rest[:n])))))})
			rest = rest[n:]
		}
		l := newLineReader(&chunkReader{data: data, rng: rng}, 0)
		var got []line
		for eofs := 0; eofs < 100; {
			text, chars, ascii, ok := l.next()
			if !ok {
				if l.fill() != nil {
					eofs++
				}
				continue
			}
			wantASCII := true
			for _, c := range text {
				wantASCII = wantASCII && c < utf8.RuneSelf
			}
			if ascii != wantASCII {
				t.Fatalf("line %q: ascii %v", text, ascii)
			}
			got = append(got, line{string(text), chars})
		}
		if len(got) != len(want) {
			t.Fatalf("data %q: %d lines, want %d:\n%v\n%v", data, len(got), len(want), got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("data %q: line %d is %v, want %v", data, i, got[i], want[i])
			}
		}
	}
}
