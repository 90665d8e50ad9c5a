// Package herdertest gives tests of the herder and of the REST API a
// metadata store and fake connector plugins.
package herdertest

import (
	"errors"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/raft/fsm"
)

// Class names of the fake plugins Register adds.
const (
	SourceClass    = "test.kcd.herder.FakeSourceConnector"
	SinkClass      = "test.kcd.herder.FakeSinkConnector"
	CheckedClass   = "test.kcd.herder.CheckedSourceConnector"
	PluginVersion  = "1.2.3"
	SourceTopicKey = "topic"
)

var once sync.Once

// Register adds the fake plugins (once per process):
//
//   - SourceClass: a source with "topic" (required), "batch.size" (INT,
//     default 2000, at least 1) and "file" (default "").
//   - SinkClass: a sink with "file" (default "").
//   - CheckedClass: a source like SourceClass that also checks its config
//     (ConfigValidator: "file" must not be "/forbidden") and its offsets
//     (connect.OffsetAlterer: "position" must be a non-negative number).
func Register() {
	once.Do(func() {
		connect.Register(connect.Plugin{Class: SourceClass, Type: connect.PluginSource, Version: PluginVersion,
			New: func() connect.Connector { return &fakeSource{} }})
		connect.Register(connect.Plugin{Class: SinkClass, Type: connect.PluginSink, Version: PluginVersion,
			New: func() connect.Connector { return &fakeSink{} }})
		connect.Register(connect.Plugin{Class: CheckedClass, Type: connect.PluginSource, Version: PluginVersion,
			New: func() connect.Connector { return &checkedSource{} }})
	})
}

// Store returns an empty Connect store on a local (single-node) store,
// closed at the end of the test.
func Store(t testing.TB) *connectstore.Store {
	t.Helper()
	l, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), fsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return connectstore.New(l)
}

type base struct{}

func (base) Version() string                                         { return PluginVersion }
func (base) Start(connect.ConnectorContext, map[string]string) error { return nil }
func (base) TaskConfigs(int) ([]map[string]string, error)            { return nil, nil }
func (base) Stop() error                                             { return nil }

type fakeSource struct{ base }

func (fakeSource) ConfigDef() connect.ConfigDef {
	return connect.ConfigDef{
		{Name: "file", Type: connect.TypeString, Default: connect.Default(""), Importance: connect.High, Documentation: "Source filename."},
		{Name: SourceTopicKey, Type: connect.TypeString, Importance: connect.High, Documentation: "The topic to publish data to"},
		{Name: "batch.size", Type: connect.TypeInt, Default: connect.Default("2000"), Importance: connect.Low, Documentation: "Batch size.",
			Validator: func(v string) error {
				if n, _ := strconv.Atoi(v); n < 1 {
					return errors.New("Value must be at least 1")
				}
				return nil
			}},
	}
}
func (fakeSource) NewTask() connect.SourceTask { return nil }

type fakeSink struct{ base }

func (fakeSink) ConfigDef() connect.ConfigDef {
	return connect.ConfigDef{
		{Name: "file", Type: connect.TypeString, Default: connect.Default(""), Importance: connect.High, Documentation: "Destination filename."},
	}
}
func (fakeSink) NewTask() connect.SinkTask { return nil }

type checkedSource struct{ fakeSource }

func (checkedSource) ValidateConfig(cfg map[string]string) map[string][]string {
	if cfg["file"] == "/forbidden" {
		return map[string][]string{"file": {"file /forbidden is not allowed"}}
	}
	return nil
}

func (c checkedSource) AlterOffsets(cfg map[string]string, offsets []connect.PartitionOffset) (bool, error) {
	for _, o := range offsets {
		if err := c.checkOffset(cfg, o.Partition, o.Offset); err != nil {
			return false, err
		}
	}
	return true, nil
}

func (checkedSource) checkOffset(_ map[string]string, partition, offset map[string]any) error {
	if _, ok := partition["filename"]; !ok {
		return errors.New("Partition objects should contain the key 'filename'")
	}
	if offset == nil {
		return nil
	}
	pos, ok := offset["position"]
	if !ok {
		return errors.New("Offset objects should contain the key 'position'")
	}
	n, err := strconv.ParseInt(toString(pos), 10, 64)
	if err != nil {
		return errors.New("The value for the 'position' key in the offset is expected to be a Long value")
	}
	if n < 0 {
		return errors.New("The value for the 'position' key in the offset should be a non-negative value")
	}
	return nil
}

func toString(v any) string {
	if s, ok := v.(interface{ String() string }); ok {
		return s.String()
	}
	if s, ok := v.(string); ok {
		return "\"" + s + "\"" // a string is not a Long
	}
	return "x"
}
