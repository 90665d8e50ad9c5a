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

	mu       sync.Mutex // Poll against Stop
	stream   io.ReadCloser
	lines    *lineReader
	position int64 // chars up to the end of the last line returned
	stdin    bool
	warned   bool
	stopped  bool
}

var _ connect.SourceTask = (*SourceTask)(nil)

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
// there are none.
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
	var recs []*connect.SourceRecord
	for len(recs) < t.batchSize {
		line, chars, ok := t.lines.next()
		if ok {
			recs = append(recs, t.record(line, chars))
			continue
		}
		err := t.lines.fill()
		if err == nil {
			continue
		}
		if !errors.Is(err, io.EOF) {
			return recs, fmt.Errorf("read %s: %w", t.name(), err)
		}
		if len(recs) == 0 {
			t.mu.Unlock()
			wait(ctx, pollWait)
			t.mu.Lock()
		}
		break
	}
	return recs, nil
}

func (t *SourceTask) record(line string, chars int64) *connect.SourceRecord {
	r := &connect.SourceRecord{
		Topic:       t.topic,
		ValueSchema: data.StringSchema,
		Value:       line,
		Timestamp:   time.Now(),
	}
	if !t.stdin {
		t.position += chars
		r.SourcePartition = map[string]any{FilenameField: t.filename}
		r.SourceOffset = map[string]any{PositionField: t.position}
	}
	return r
}

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
