package file

import (
	"bufio"
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

// Start keeps the config.
func (c *SinkConnector) Start(_ connect.ConnectorContext, cfg map[string]string) error {
	if err := validate(sinkConfigDef, cfg); err != nil {
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
	w        *bufio.Writer
}

var _ connect.SinkTask = (*SinkTask)(nil)

// Start opens the file for appending (creating it), or takes stdout.
func (t *SinkTask) Start(_ connect.SinkTaskContext, cfg map[string]string) error {
	t.filename = cfg[FileConfig]
	var out io.Writer = os.Stdout
	if t.filename != "" {
		f, err := os.OpenFile(t.filename, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("couldn't find or create file '%s' for FileStreamSinkTask: %w", t.filename, err)
		}
		t.file, out = f, f
	}
	t.w = bufio.NewWriterSize(out, 64<<10)
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
		switch v := r.Value.(type) {
		case string:
			t.w.WriteString(v)
		case []byte:
			t.w.Write(v)
		default:
			t.w.WriteString(JavaString(v))
		}
		if err := t.w.WriteByte('\n'); err != nil {
			return fmt.Errorf("write %s: %w", t.name(), err)
		}
	}
	// One write per batch: the file grows as records arrive, as Kafka
	// Connect's does, not only at each offset commit.
	if err := t.w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", t.name(), err)
	}
	return nil
}

// Flush hands what Put wrote to the file.
func (t *SinkTask) Flush(map[connect.TopicPartition]int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w == nil {
		return nil
	}
	if err := t.w.Flush(); err != nil {
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
	err := t.w.Flush()
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
