package file

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/data"
)

type fakeCtx struct {
	offsets map[string]map[string]any // by filename
}

func (c fakeCtx) Logger() *slog.Logger               { return slog.New(slog.DiscardHandler) }
func (c fakeCtx) OffsetReader() connect.OffsetReader { return c }
func (c fakeCtx) Offset(_ context.Context, p map[string]any) (map[string]any, error) {
	return c.offsets[p[FilenameField].(string)], nil
}

// pollAll polls until no record comes.
func pollAll(t *testing.T, task *SourceTask) []*connect.SourceRecord {
	t.Helper()
	var out []*connect.SourceRecord
	for {
		recs, err := task.Poll(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			return out
		}
		out = append(out, recs...)
	}
}

func startSource(t *testing.T, file string, offsets map[string]map[string]any, extra ...string) *SourceTask {
	t.Helper()
	cfg := map[string]string{FileConfig: file, TopicConfig: "t"}
	for i := 0; i+1 < len(extra); i += 2 {
		cfg[extra[i]] = extra[i+1]
	}
	task := &SourceTask{}
	if err := task.Start(fakeCtx{offsets}, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { task.Stop() })
	return task
}

// The positions are Java chars after each line's terminator: \n, \r and
// \r\n each end a line, and a character outside the BMP counts twice.
func TestSourcePositionsCountJavaChars(t *testing.T) {
	file := filepath.Join(t.TempDir(), "in.txt")
	content := "a\nbé\r\nc😀d\re\n\nlast-without-newline"
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	// One line a Poll: each is the last of its Poll, which has an offset.
	recs := pollAll(t, startSource(t, file, nil, BatchSizeConfig, "1"))
	want := []struct {
		line string
		pos  int64
	}{{"a", 2}, {"bé", 6}, {"c😀d", 11}, {"e", 13}, {"", 14}}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d", len(recs), len(want))
	}
	for i, w := range want {
		r := recs[i]
		if r.Value != w.line || r.SourceOffset[PositionField] != w.pos || r.SourcePartition[FilenameField] != file || r.Topic != "t" || r.ValueSchema != data.StringSchema {
			t.Errorf("record %d: %q %v %v, want %q at %d", i, r.Value, r.SourceOffset, r.SourcePartition, w.line, w.pos)
		}
	}
}

// A task restarted from a stored position goes on with the next line; a
// \r at the end of the data waits to see whether \n follows.
func TestSourceResumesAndWaitsForTerminator(t *testing.T) {
	file := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(file, []byte("one\ntwö😀\nthree\r"), 0o644); err != nil {
		t.Fatal(err)
	}
	offsets := map[string]map[string]any{file: {PositionField: json.Number("4")}}
	task := startSource(t, file, offsets, BatchSizeConfig, "1")
	recs := pollAll(t, task)
	if len(recs) != 1 || recs[0].Value != "twö😀" || recs[0].SourceOffset[PositionField] != int64(10) {
		t.Fatalf("after resume: %+v", recs)
	}
	f, _ := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("\nfour\n")
	f.Close()
	recs = pollAll(t, task)
	if len(recs) != 2 || recs[0].Value != "three" || recs[0].SourceOffset[PositionField] != int64(17) || recs[1].Value != "four" {
		t.Fatalf("after append: %v %v", recs[0].Value, recs[0].SourceOffset)
	}
}

func TestSourceBatchSizeAndMissingFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "later.txt")
	task := startSource(t, file, nil, BatchSizeConfig, "3")
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if recs, err := task.Poll(ctx); err != nil || len(recs) != 0 {
		t.Fatalf("missing file: %v %v", recs, err)
	}
	os.WriteFile(file, []byte(strings.Repeat("x\n", 7)), 0o644)
	var sizes []int
	for {
		recs, err := task.Poll(t.Context())
		if err != nil || len(recs) == 0 {
			break
		}
		sizes = append(sizes, len(recs))
	}
	if len(sizes) != 3 || sizes[0] != 3 || sizes[1] != 3 || sizes[2] != 1 {
		t.Errorf("batches %v", sizes)
	}
}

func TestSourceConnectorOneTask(t *testing.T) {
	c := &SourceConnector{}
	if err := c.Start(nil, map[string]string{FileConfig: "/x"}); err == nil {
		t.Error("start without topic succeeded")
	}
	cfg := map[string]string{FileConfig: "/x", TopicConfig: "t"}
	if err := c.Start(nil, cfg); err != nil {
		t.Fatal(err)
	}
	tcs, _ := c.TaskConfigs(5)
	if len(tcs) != 1 || tcs[0][FileConfig] != "/x" {
		t.Errorf("task configs %v", tcs)
	}
	if p, ok := connect.Lookup("FileStreamSource"); !ok || p.Class != SourceClass || p.Type != connect.PluginSource {
		t.Errorf("alias: %+v", p)
	}
	if p, ok := connect.Lookup("FileStreamSinkConnector"); !ok || p.Class != SinkClass {
		t.Errorf("alias: %+v", p)
	}
}

func TestSinkAppendsValues(t *testing.T) {
	file := filepath.Join(t.TempDir(), "out.txt")
	os.WriteFile(file, []byte("existing\n"), 0o644)
	c := &SinkConnector{}
	c.Start(nil, map[string]string{FileConfig: file, "topics": "t"})
	tcs, _ := c.TaskConfigs(3)
	if len(tcs) != 3 {
		t.Fatalf("task configs %v", tcs)
	}
	task := &SinkTask{}
	if err := task.Start(nil, tcs[0]); err != nil {
		t.Fatal(err)
	}
	s := data.NewStructSchema().Field("a", data.Int32Schema).Field("b", data.OptionalStringSchema).Field("c", data.Float64Schema).Build()
	vals := []any{"line", int64(42), true, nil, 1.5, data.NewStruct(s).Put("a", int32(1)).Put("c", 2.0)}
	var recs []*connect.SinkRecord
	for _, v := range vals {
		recs = append(recs, &connect.SinkRecord{Value: v})
	}
	if err := task.Put(recs); err != nil {
		t.Fatal(err)
	}
	if err := task.Flush(nil); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(file)
	want := "existing\nline\n42\ntrue\nnull\n1.5\nStruct{a=1,c=2.0}\n"
	if string(got) != want {
		t.Errorf("file:\n%s\nwant:\n%s", got, want)
	}
	if err := task.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestJavaString(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{nil, "null"},
		{"s", "s"},
		{int8(-3), "-3"},
		{int32(7), "7"},
		{int64(1) << 60, "1152921504606846976"},
		{false, "false"},
		{1.0, "1.0"},
		{100.0, "100.0"},
		{0.1, "0.1"},
		{0.001, "0.001"},
		{0.0001, "1.0E-4"},
		{1234567.0, "1234567.0"},
		{1e7, "1.0E7"},
		{1.5e10, "1.5E10"},
		{-2.5e-5, "-2.5E-5"},
		{math.MaxFloat64, "1.7976931348623157E308"},
		{math.NaN(), "NaN"},
		{math.Inf(-1), "-Infinity"},
		{math.Copysign(0, -1), "-0.0"},
		{float32(0.1), "0.1"},
		{float32(1e10), "1.0E10"},
		{[]any{"a", int32(1), nil}, "[a, 1, null]"},
		{map[any]any{"b": int32(2), "a": "x"}, "{a=x, b=2}"},
		{[]string{"x", "y"}, "[x, y]"},
		{[]byte("raw"), "raw"},
	}
	for _, tt := range tests {
		if got := JavaString(tt.v); got != tt.want {
			t.Errorf("JavaString(%#v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

// writeCalls records every Write it is given.
type writeCalls struct{ calls [][]byte }

func (w *writeCalls) Write(p []byte) (int, error) {
	w.calls = append(w.calls, append([]byte{}, p...))
	return len(p), nil
}

// A batch larger than the buffer reaches the file in several writes, each
// ending at a line: a process killed between two of them leaves no torn
// line for the replayed records to be glued to.
func TestSinkWritesWholeLines(t *testing.T) {
	out := &writeCalls{}
	task := &SinkTask{w: newLineWriter(out)}
	var recs []*connect.SinkRecord
	var want strings.Builder
	for i := range 10000 {
		v := fmt.Sprintf("line-%06d-%s", i, strings.Repeat("x", i%37))
		want.WriteString(v + "\n")
		recs = append(recs, &connect.SinkRecord{Value: v})
	}
	recs = append(recs, &connect.SinkRecord{Value: []byte(strings.Repeat("y", 3*lineBuffer))})
	want.WriteString(strings.Repeat("y", 3*lineBuffer) + "\n")
	if err := task.Put(recs); err != nil {
		t.Fatal(err)
	}
	if len(out.calls) < 5 {
		t.Fatalf("%d writes for %d bytes: want several", len(out.calls), want.Len())
	}
	var got []byte
	for i, c := range out.calls {
		if len(c) == 0 || c[len(c)-1] != '\n' {
			t.Fatalf("write %d of %d (%d bytes) does not end at a line: ...%q", i, len(out.calls), len(c), c[max(0, len(c)-20):])
		}
		if len(c) > lineBuffer+64 && !bytes.HasSuffix(c, []byte("yyyy\n")) {
			t.Errorf("write %d holds %d bytes: beyond the buffer", i, len(c))
		}
		got = append(got, c...)
	}
	if string(got) != want.String() {
		t.Errorf("the writes hold %d bytes, want %d", len(got), want.Len())
	}
	if cap(task.w.buf) > 2*lineBuffer {
		t.Errorf("the buffer kept %d bytes after a huge record", cap(task.w.buf))
	}
}

// Invalid UTF-8 reads as U+FFFD per bad byte (Java's decoder), counted as
// one char each; a line past the ASCII fast path keeps its runes.
func TestSourceDecodesAsJava(t *testing.T) {
	file := filepath.Join(t.TempDir(), "in.txt")
	long := strings.Repeat("a", 17) + "é"
	if err := os.WriteFile(file, []byte("x\xffy\n"+long+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	recs := pollAll(t, startSource(t, file, nil, BatchSizeConfig, "1"))
	if len(recs) != 2 || recs[0].Value != "x\uFFFDy" || recs[0].SourceOffset[PositionField] != int64(4) ||
		recs[1].Value != long || recs[1].SourceOffset[PositionField] != int64(4+19) {
		t.Fatalf("records %+v", recs)
	}
}

// Records handed back by RecycleRecords serve the next Poll; their values
// and offsets, which may still be in flight, are new; all Polls share one
// partition map.
func TestSourceRecyclesRecords(t *testing.T) {
	file := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(file, []byte("a\nb\nc\nd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	task := startSource(t, file, nil, BatchSizeConfig, "2")
	first, err := task.Poll(t.Context())
	if err != nil || len(first) != 2 {
		t.Fatalf("first poll: %v %v", first, err)
	}
	r0, v0, off0, part0 := first[0], first[0].Value, first[1].SourceOffset, first[1].SourcePartition
	task.RecycleRecords(first)
	second, err := task.Poll(t.Context())
	if err != nil || len(second) != 2 {
		t.Fatalf("second poll: %v %v", second, err)
	}
	if second[0] != r0 {
		t.Errorf("the second poll did not reuse the first one's records")
	}
	if v0 != "a" || off0[PositionField] != int64(4) || second[0].Value != "c" || second[1].SourceOffset[PositionField] != int64(8) {
		t.Errorf("values and offsets: %v %v, then %v %v", v0, off0, second[0].Value, second[1].SourceOffset)
	}
	if fmt.Sprintf("%p", second[1].SourcePartition) != fmt.Sprintf("%p", part0) {
		t.Errorf("records do not share their partition map")
	}
}

// Of a Poll's lines, every offsetEvery-th and the last carry their
// offset, all with the one partition; the others carry none.
func TestSourceOffsetEveryChunk(t *testing.T) {
	file := filepath.Join(t.TempDir(), "in.txt")
	n := 2*offsetEvery + 44
	if err := os.WriteFile(file, []byte(strings.Repeat("ab\n", n)), 0o644); err != nil {
		t.Fatal(err)
	}
	recs, err := startSource(t, file, nil).Poll(t.Context())
	if err != nil || len(recs) != n {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	for i, r := range recs {
		carries := i%offsetEvery == offsetEvery-1 || i == n-1
		switch {
		case carries && (r.SourceOffset[PositionField] != int64(3*(i+1)) || r.SourcePartition[FilenameField] != file):
			t.Errorf("line %d: offset %v %v, want position %d", i, r.SourcePartition, r.SourceOffset, 3*(i+1))
		case !carries && (r.SourceOffset != nil || r.SourcePartition != nil):
			t.Errorf("line %d carries an offset: %v", i, r.SourceOffset)
		}
	}
}
