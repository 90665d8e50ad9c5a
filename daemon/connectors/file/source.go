package file

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/data"
)

// SourceConnector is FileStreamSourceConnector.
type SourceConnector struct {
	cfg map[string]string
}

func (c *SourceConnector) Version() string                                      { return sourceVersion() }
func (c *SourceConnector) ConfigDef() connect.ConfigDef                         { return sourceConfigDef }
func (c *SourceConnector) NewTask() connect.SourceTask                          { return &SourceTask{} }
func (c *SourceConnector) Stop() error                                          { return nil }
func (c *SourceConnector) ValidateConfig(map[string]string) map[string][]string { return nil }

// ValidateFiles is connect.FileUser: file must be allowed by files.
func (c *SourceConnector) ValidateFiles(files *connect.Files, cfg map[string]string) map[string][]string {
	return validateFiles(files, cfg)
}

// Start keeps the config; it fails on a config the ConfigDef refuses, or
// whose file the confinement does not allow.
func (c *SourceConnector) Start(ctx connect.ConnectorContext, cfg map[string]string) error {
	if err := validate(sourceConfigDef, cfg); err != nil {
		return err
	}
	if err := checkFile(connect.FilesOf(ctx), cfg); err != nil {
		return err
	}
	c.cfg = cfg
	return nil
}

// TaskConfigs returns one task, whose config is the connector's: a file is
// read by one reader.
func (c *SourceConnector) TaskConfigs(int) ([]map[string]string, error) {
	return []map[string]string{maps.Clone(c.cfg)}, nil
}

func sourceVersion() string {
	p, _ := connect.Lookup(SourceClass)
	return p.Version
}

// pollWait is how long Poll waits for data that is not there yet.
const pollWait = 250 * time.Millisecond

// SourceTask is FileStreamSourceTask.
type SourceTask struct {
	ctx       connect.SourceTaskContext
	files     *connect.Files // nil: any path
	filename  string
	topic     string
	batchSize int

	mu        sync.Mutex // Poll against Stop
	stream    io.ReadCloser
	lines     *lineReader
	position  int64          // chars up to the end of the last line returned
	partition map[string]any // every record's source partition: read-only
	stdin     bool
	warned    bool
	stopped   bool

	// Poll's buffers: where each line ends in the Poll's text, the
	// position after it, and the size of the last Poll's text. The records of the Polls the runtime has not given back
	// (out), and spare batches it is done with, whose memory the next
	// Polls reuse. The runtime polls one batch ahead while it sends the
	// last, so two batches are out at once (connect.SourceRecordRecycler).
	textSize  int
	ends      []int
	positions []int64
	out       [maxOut]recordBatch
	spare     []recordBatch
}

// maxOut is how many batches the task remembers as out: the runtime's two.
// A batch forgotten is never reused, only collected.
const maxOut = 2

// recordBatch is the memory of a Poll's records: one allocation for the
// structs, one for the slice of pointers to them.
type recordBatch struct {
	recs []*connect.SourceRecord
	slab []connect.SourceRecord
}

var (
	_ connect.SourceTask           = (*SourceTask)(nil)
	_ connect.SourceRecordRecycler = (*SourceTask)(nil)
)

// Start reads the config; the file is opened by the first Poll, so that a
// task may wait for its file to appear.
func (t *SourceTask) Start(ctx connect.SourceTaskContext, cfg map[string]string) error {
	t.ctx = ctx
	t.files = connect.FilesOf(ctx)
	if err := checkFile(t.files, cfg); err != nil {
		return err
	}
	t.filename = cfg[FileConfig]
	t.topic = cfg[TopicConfig]
	if t.topic == "" {
		return errors.New("FileStreamSourceTask config missing topic setting")
	}
	t.batchSize = DefaultBatchSize
	if v, ok := cfg[BatchSizeConfig]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return fmt.Errorf("invalid FileStreamSourceTask configuration: %s=%q", BatchSizeConfig, v)
		}
		t.batchSize = n
	}
	if t.filename == "" {
		t.stdin = true
		t.stream = newAsyncReader(os.Stdin)
		t.lines = newLineReader(t.stream, 0)
	}
	return nil
}

// Poll returns up to batch.size complete lines, waiting a little when
// there are none. A Poll's lines share one string, allocated for it, its
// records one slab (RecycleRecords hands it back), and all records one
// partition map; one line in offsetEvery carries an offset. What a line costs is its boxed
// value.
func (t *SourceTask) Poll(ctx context.Context) ([]*connect.SourceRecord, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return nil, nil
	}
	if t.lines == nil {
		ok, err := t.open(ctx)
		if err != nil || !ok {
			if err == nil {
				t.mu.Unlock()
				wait(ctx, time.Second)
				t.mu.Lock()
			}
			return nil, err
		}
	}
	// The Poll's text: a fresh buffer that its values slice into and
	// nothing writes again (strings.Builder hands its bytes out as the
	// string, without a copy), sized as the last Poll's text.
	var text strings.Builder
	text.Grow(t.textSize)
	ends, positions := t.ends[:0], t.positions[:0]
	var err error
	for len(ends) < t.batchSize {
		line, chars, ascii, ok := t.lines.next()
		if ok {
			if ascii {
				text.Write(line)
			} else {
				writeDecoded(&text, line)
			}
			t.position += chars
			ends, positions = append(ends, text.Len()), append(positions, t.position)
			continue
		}
		if err = t.lines.fill(); err == nil {
			continue
		}
		if !errors.Is(err, io.EOF) {
			err = fmt.Errorf("read %s: %w", t.name(), err)
			break
		}
		err = nil
		if len(ends) == 0 {
			t.mu.Unlock()
			wait(ctx, pollWait)
			t.mu.Lock()
		}
		break
	}
	t.ends, t.positions = ends, positions
	if len(ends) == 0 {
		return nil, err
	}
	// Bounded: a Poll of unusually long lines does not size the next.
	t.textSize = min(text.Len(), maxTextSize)
	return t.records(text.String(), ends, positions), err
}

// maxTextSize is the most line bytes Poll allocates up front.
const maxTextSize = 1 << 20

// offsetEvery: of a Poll's lines, every offsetEvery-th and the last carry
// their source offset, the others none. The runtime commits the offset of
// the last record acknowledged in order that has one, so a restart after
// a crash resends at most offsetEvery-1 more lines than with an offset on
// every line (Kafka Connect resends all since its last offset flush
// anyway), while a map per line was a third of a line's cost. 128 is the
// worker's chunk of records (chunkRecords): a task stopped mid-Poll stops
// between chunks, unless its in-flight budget is full or its lines are
// long enough to end a chunk at its byte limit, and so commits all it
// produced.
const offsetEvery = 128

// records makes the records of a Poll's lines: lines holds them one after
// the other, ends[i] is where line i ends and positions[i] the position
// after it.
func (t *SourceTask) records(lines string, ends []int, positions []int64) []*connect.SourceRecord {
	b := t.batch(len(ends))
	// One clock reading for the Poll: Kafka Connect reads it per line, in
	// milliseconds; the lines of a Poll are read within about one.
	now := time.Now()
	start := 0
	for i, end := range ends {
		r := &b.slab[i]
		b.recs[i] = r
		var part, off map[string]any
		if !t.stdin && (i%offsetEvery == offsetEvery-1 || i == len(ends)-1) {
			part, off = t.partition, map[string]any{PositionField: positions[i]}
		}
		// The whole struct written at once: a recycled record is not
		// cleared first, which during a GC cycle costs a write barrier on
		// each of its pointers twice.
		*r = connect.SourceRecord{SourcePartition: part, SourceOffset: off, Topic: t.topic,
			ValueSchema: data.StringSchema, Value: lines[start:end], Timestamp: now}
		start = end
	}
	// The oldest batch out is forgotten if the runtime kept it longer
	// than it says it does.
	copy(t.out[:], t.out[1:])
	t.out[maxOut-1] = b
	return b.recs
}

// batch returns the records for n lines: a spare batch's memory when one
// is large enough.
func (t *SourceTask) batch(n int) recordBatch {
	for len(t.spare) > 0 {
		b := t.spare[len(t.spare)-1]
		t.spare[len(t.spare)-1] = recordBatch{}
		t.spare = t.spare[:len(t.spare)-1]
		if cap(b.recs) >= n {
			// Not cleared: records writes every record whole.
			b.recs, b.slab = b.recs[:n], b.slab[:n]
			return b
		}
	}
	return recordBatch{recs: make([]*connect.SourceRecord, n), slab: make([]connect.SourceRecord, n)}
}

// RecycleRecords takes back the records of a Poll: a later Poll reuses
// their structs (not their values and offsets, which may still be in
// flight: those are new in every Poll).
func (t *SourceTask) RecycleRecords(recs []*connect.SourceRecord) {
	if len(recs) == 0 {
		return
	}
	for i := range t.out {
		b := t.out[i]
		if len(b.recs) == 0 || &recs[0] != &b.recs[0] {
			continue
		}
		t.out[i] = recordBatch{}
		if cap(b.recs) <= maxKeptRecords && len(t.spare) < maxOut {
			t.spare = append(t.spare, b)
		}
		return
	}
}

// maxKeptRecords is the most records RecycleRecords keeps the memory of.
const maxKeptRecords = 1 << 14

// open opens the file and moves past the stored position; ok is false
// while the file does not exist.
func (t *SourceTask) open(ctx context.Context) (bool, error) {
	f, err := t.files.OpenFile(t.filename, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if !t.warned {
			t.ctx.Logger().Warn("couldn't find the file; waiting for it to be created", "file", t.filename)
			t.warned = true
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	off, err := t.ctx.OffsetReader().Offset(ctx, map[string]any{FilenameField: t.filename})
	if err != nil {
		f.Close()
		return false, fmt.Errorf("read the offset of %s: %w", t.filename, err)
	}
	pos, err := position(off)
	if err != nil {
		f.Close()
		return false, err
	}
	t.stream, t.position = f, pos
	t.partition = map[string]any{FilenameField: t.filename}
	t.lines = newLineReader(f, pos)
	t.ctx.Logger().Debug("opened file", "file", t.filename, "position", pos)
	return true, nil
}

// position reads {"position": n} from a stored offset.
func position(off map[string]any) (int64, error) {
	v, ok := off[PositionField]
	if !ok || v == nil {
		return 0, nil
	}
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil && n >= 0 {
			return n, nil
		}
	case int64:
		if v >= 0 {
			return v, nil
		}
	case int:
		if v >= 0 {
			return int64(v), nil
		}
	case float64:
		if v >= 0 && v == math.Trunc(v) && v < 1<<53 {
			return int64(v), nil
		}
	}
	return 0, fmt.Errorf("offset position is the incorrect type: %v (%T)", v, v)
}

// Stop closes the file.
func (t *SourceTask) Stop() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	if t.stream != nil && !t.stdin {
		return t.stream.Close()
	}
	return nil
}

func (t *SourceTask) name() string {
	if t.stdin {
		return "stdin"
	}
	return t.filename
}

func wait(ctx context.Context, d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}

// asyncReader reads a stream that may block (stdin) in a goroutine of its
// own, one bounded chunk at a time, so that Read never blocks: with no data
// ready it returns io.EOF, which Poll takes as "none yet".
type asyncReader struct {
	chunks chan []byte
	rest   []byte
	err    error
}

func newAsyncReader(r io.Reader) *asyncReader {
	a := &asyncReader{chunks: make(chan []byte, 1)}
	go func() {
		for {
			buf := make([]byte, 64<<10)
			n, err := r.Read(buf)
			if n > 0 {
				a.chunks <- buf[:n]
			}
			if err != nil {
				close(a.chunks)
				return
			}
		}
	}()
	return a
}

func (a *asyncReader) Read(p []byte) (int, error) {
	if len(a.rest) == 0 {
		select {
		case c, ok := <-a.chunks:
			if !ok {
				return 0, io.EOF
			}
			a.rest = c
		default:
			return 0, io.EOF
		}
	}
	n := copy(p, a.rest)
	a.rest = a.rest[n:]
	return n, nil
}

func (a *asyncReader) Close() error { return nil }
