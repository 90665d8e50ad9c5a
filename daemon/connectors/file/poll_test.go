package file

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/daemon/connect"
)

// writeLines writes n lines of 100 bytes.
func writeLines(tb testing.TB, n int) string {
	tb.Helper()
	var b strings.Builder
	pad := strings.Repeat("x", 88)
	for i := range n {
		fmt.Fprintf(&b, "%012d%s\n", i, pad)
	}
	f := filepath.Join(tb.TempDir(), "in.txt")
	if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return f
}

// As the runtime polls one batch ahead, two batches are out at once: a
// Poll reuses only the memory of records given back, never of those
// still out, whose records keep their values.
func TestSourceRecyclesWithTwoBatchesOut(t *testing.T) {
	task := startSource(t, writeLines(t, 40), nil, BatchSizeConfig, "10")
	poll := func() []*connect.SourceRecord {
		recs, err := task.Poll(t.Context())
		if err != nil || len(recs) != 10 {
			t.Fatalf("Poll: %d records, %v", len(recs), err)
		}
		return recs
	}
	a := poll()
	b := poll() // a still out
	if b[0] == a[0] {
		t.Fatal("the second Poll reused the records of the first, still out")
	}
	task.RecycleRecords(a)
	c := poll() // b still out
	if c[0] != a[0] {
		t.Error("the third Poll did not reuse the records given back")
	}
	if v := b[0].Value.(string); !strings.HasPrefix(v, "000000000010") {
		t.Errorf("a record still out changed: %q", v)
	}
	task.RecycleRecords(c)
	task.RecycleRecords(b)
	d := poll()
	if d[0] != b[0] && d[0] != c[0] {
		t.Error("the fourth Poll reused neither batch given back")
	}
	if v := d[9].Value.(string); !strings.HasPrefix(v, "000000000039") {
		t.Errorf("last line %q", v)
	}
}

// BenchmarkSourcePoll polls lines of 100 bytes, 2000 a Poll, giving each
// batch back before the Poll after next, as the runtime does: ns and
// allocations per line.
func BenchmarkSourcePoll(b *testing.B) {
	const lines = 200_000
	file := writeLines(b, lines)
	var task *SourceTask
	var out [][]*connect.SourceRecord
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if n%lines == 0 {
			if task != nil {
				task.Stop()
			}
			task = &SourceTask{}
			if err := task.Start(fakeCtx{}, map[string]string{FileConfig: file, TopicConfig: "t"}); err != nil {
				b.Fatal(err)
			}
			out = out[:0]
		}
		if len(out) == 2 {
			task.RecycleRecords(out[0])
			out = out[1:]
		}
		recs, err := task.Poll(b.Context())
		if err != nil || len(recs) == 0 {
			b.Fatalf("Poll: %d records, %v", len(recs), err)
		}
		out = append(out, recs)
		n += len(recs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/line")
}
