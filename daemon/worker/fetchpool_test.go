package worker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A slab comes back empty with room for what was asked, whatever the
// pool holds; slabs franz-go grew itself are not kept.
func TestRecordSlabs(t *testing.T) {
	p := &recordSlabs{}
	for _, n := range []int{0, 1, 2, 3, 100, 128, 129, 1 << maxSlabClass, 1<<maxSlabClass + 1} {
		s := p.GetRecords(n)
		if len(s) != 0 || cap(s) < n {
			t.Fatalf("GetRecords(%d): len %d cap %d", n, len(s), cap(s))
		}
		p.PutRecords(s)
		if s := p.GetRecords(n); len(s) != 0 || cap(s) < n {
			t.Fatalf("GetRecords(%d) after a Put: len %d cap %d", n, len(s), cap(s))
		}
	}
	p.PutRecords(make([]kgo.Record, 0, 100)) // not a power of two
	if s := p.GetRecords(100); cap(s) != 128 {
		t.Fatalf("GetRecords(100): cap %d, want 128", cap(s))
	}
}
