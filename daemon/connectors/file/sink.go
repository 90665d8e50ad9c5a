package file

import (
	"fmt"
	"io"
	"maps"
	"os"
	"sync"

	"github.com/kcd-project/kcd/daemon/connect"
)

// SinkConnector is FileStreamSinkConnector.
type SinkConnector struct {
	cfg map[string]string
}

func (c *SinkConnector) Version() string              { return sinkVersion() }
func (c *SinkConnector) ConfigDef() connect.ConfigDef { return sinkConfigDef }
func (c *SinkConnector) NewTask() connect.SinkTask    { return &SinkTask{} }
func (c *SinkConnector) Stop() error                  { return nil }

// ValidateFiles is connect.FileUser: file must be allowed by files.
func (c *SinkConnector) ValidateFiles(files *connect.Files, cfg map[string]string) map[string][]string {
	return validateFiles(files, cfg)
}

// Start keeps the config.
func (c *SinkConnector) Start(ctx connect.ConnectorContext, cfg map[string]string) error {
	if err := validate(sinkConfigDef, cfg); err != nil {
		return err
	}
	if err := checkFile(connect.FilesOf(ctx), cfg); err != nil {
		return err
	}
	c.cfg = cfg
	return nil
}

// TaskConfigs returns maxTasks copies of the connector's config.
func (c *SinkConnector) TaskConfigs(maxTasks int) ([]map[string]string, error) {
	out := make([]map[string]string, maxTasks)
	for i := range out {
		out[i] = maps.Clone(c.cfg)
	}
	return out, nil
}

func sinkVersion() string {
	p, _ := connect.Lookup(SinkClass)
	return p.Version
}

// SinkTask is FileStreamSinkTask: it appends "value.toString()\n" per
// record, buffered within a batch of Put.
type SinkTask struct {
	mu       sync.Mutex
	filename string
	file     *os.File // nil for stdout
	w        *lineWriter
}

// lineBuffer is how many bytes of whole lines lineWriter gathers before it
// writes them.
const lineBuffer = 64 << 10

// lineWriter buffers lines and hands them to out only whole: every write
// ends at the end of a line. A process killed between two writes (kill -9)
// leaves the file ending at a line, never in the middle of one, so the
// records replayed after a restart start on a line of their own, as with
// Kafka Connect, whose FileStreamSinkTask writes each line in one call.
// The buffer holds at most lineBuffer bytes plus the line being written.
type lineWriter struct {
	out io.Writer
	buf []byte
}

// newLineWriter returns a lineWriter to out; its buffer is made at the
// first line, so that a task that never gets a record (more tasks than
// partitions) holds none.
func newLineWriter(out io.Writer) *lineWriter {
	return &lineWriter{out: out}
}

// writeLine appends s and a newline to w's buffer, and writes the buffer
// once it is full.
func writeLine[T string | []byte](w *lineWriter, s T) error {
	if w.buf == nil {
		w.buf = make([]byte, 0, lineBuffer)
	}
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\n')
	if len(w.buf) >= lineBuffer {
		return w.flush()
	}
	return nil
}

func (w *lineWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.out.Write(w.buf)
	w.buf = w.buf[:0]
	if cap(w.buf) > 2*lineBuffer {
		// One huge record grew it: do not keep that much.
		w.buf = make([]byte, 0, lineBuffer)
	}
	return err
}

var _ connect.SinkTask = (*SinkTask)(nil)

// Start opens the file for appending (creating it), or takes stdout.
func (t *SinkTask) Start(ctx connect.SinkTaskContext, cfg map[string]string) error {
	files := connect.FilesOf(ctx)
	if err := checkFile(files, cfg); err != nil {
		return err
	}
	t.filename = cfg[FileConfig]
	var out io.Writer = os.Stdout
	if t.filename != "" {
		f, err := files.OpenFile(t.filename, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("couldn't find or create file '%s' for FileStreamSinkTask: %w", t.filename, err)
		}
		t.file, out = f, f
	}
	t.w = newLineWriter(out)
	return nil
}

func (t *SinkTask) Open([]connect.TopicPartition) error  { return nil }
func (t *SinkTask) Close([]connect.TopicPartition) error { return nil }

// Put writes the records' values.
func (t *SinkTask) Put(records []*connect.SinkRecord) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w == nil {
		return fmt.Errorf("put to %s: the task is stopped", t.name())
	}
	for _, r := range records {
		var err error
		switch v := r.Value.(type) {
		case string:
			err = writeLine(t.w, v)
		case []byte:
			err = writeLine(t.w, v)
		default:
			err = writeLine(t.w, JavaString(v))
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", t.name(), err)
		}
	}
	// One write per batch: the file grows as records arrive, as Kafka
	// Connect's does, not only at each offset commit.
	if err := t.w.flush(); err != nil {
		return fmt.Errorf("write %s: %w", t.name(), err)
	}
	return nil
}

// BorrowedSinkRecords is connect.BorrowedSinkRecords: Put writes the
// records' values and keeps nothing of them.
func (t *SinkTask) BorrowedSinkRecords() {}

var _ connect.BorrowedSinkRecords = (*SinkTask)(nil)

// Flush hands what Put wrote to the file.
func (t *SinkTask) Flush(map[connect.TopicPartition]int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w == nil {
		return nil
	}
	if err := t.w.flush(); err != nil {
		return fmt.Errorf("flush %s: %w", t.name(), err)
	}
	return nil
}

// Stop flushes and closes the file.
func (t *SinkTask) Stop() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w == nil {
		return nil
	}
	err := t.w.flush()
	if t.file != nil {
		if cerr := t.file.Close(); err == nil {
			err = cerr
		}
		t.file = nil
	}
	t.w = nil
	return err
}

func (t *SinkTask) name() string {
	if t.filename == "" {
		return "stdout"
	}
	return t.filename
}
