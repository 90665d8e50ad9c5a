package file

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// TestLineEndMatchesPlainSearch compares lineEnd's word-at-a-time scan with
// the plain definition on lines that put \r, \n and non-ASCII bytes at
// every place relative to the eight-byte words.
func TestLineEndMatchesPlainSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab\r\n\x80\xe9\xff ")
	for range 20000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			if rng.IntN(4) == 0 {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				b[i] = 'a' + byte(rng.IntN(26))
			}
		}
		want := bytes.IndexAny(b, "\r\n")
		upto := b
		if want >= 0 {
			upto = b[:want]
		}
		wantASCII := true
		for _, c := range upto {
			wantASCII = wantASCII && c < utf8.RuneSelf
		}
		got, ascii := lineEnd(b)
		if got != want || (want >= 0 && ascii != wantASCII) {
			t.Fatalf("lineEnd(%q) = %d, %v; want %d, %v", b, got, ascii, want, wantASCII)
		}
	}
}
