package logstore

import (
	"os"
	"path/filepath"
	"testing"
)

// zeroFrom skips holes and preallocated space unread, and still finds
// every non-zero byte after them.
func TestZeroFromAcrossHoles(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const size = 16 << 20
	if err := preallocate(f, size/2); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil { // a hole after the preallocated half
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("head"), 0); err != nil {
		t.Fatal(err)
	}
	check := func(off int64, want bool) {
		t.Helper()
		if got, err := zeroFrom(f, off, size); err != nil || got != want {
			t.Fatalf("zeroFrom(%d) = %v, %v; want %v", off, got, err, want)
		}
	}
	check(4, true)
	check(2, false)
	for _, at := range []int64{4, 1<<20 - 1, 5<<20 + 3, 9<<20 + 7, size - 1} {
		if _, err := f.WriteAt([]byte{1}, at); err != nil {
			t.Fatal(err)
		}
		check(4, false)
		check(at, false)
		check(at+1, true)
		if _, err := f.WriteAt([]byte{0}, at); err != nil {
			t.Fatal(err)
		}
		check(4, true)
	}
}
