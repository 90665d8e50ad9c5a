package migrate

import (
	"context"
	"testing"

	"github.com/kcd-project/kcd/api"
)

// pages is an Exporter over fixed pages, keyed by the name asked after.
type pages map[string]api.Export

func (p pages) Export(_ context.Context, after string, _ int) (api.Export, error) {
	return p[after], nil
}

func TestExport(t *testing.T) {
	ex := pages{
		"": {Connectors: []api.ExportConnector{
			{Name: "b", Target: "STARTED", Config: map[string]string{"topics": "t", "consumer.override.group.id": "g"},
				Tasks:       []map[string]string{{"task.class": "org.example.SinkTask"}},
				SinkOffsets: []api.ImportSinkOffset{{Connector: "b", Topic: "t", Partition: 1, Offset: 7}}},
			{Name: "a", Target: "PAUSED", Config: map[string]string{"file": "/f"}, Tasks: []map[string]string{{"file": "/f"}},
				SourceOffsets: []api.ImportSourceOffset{{Connector: "a", Partition: map[string]any{"filename": "/f"}, Offset: map[string]any{"position": 3}}}},
		}, Next: "b"},
		"b": {Connectors: []api.ExportConnector{
			{Name: "c", Target: "STOPPED", Config: map[string]string{"topics": "t"}, Tasks: []map[string]string{{"task.class": "X"}}},
			{Name: "skip", Target: "STARTED", Config: map[string]string{}},
		}},
	}
	c, err := Export(context.Background(), ex, func(n string) bool { return n != "skip" })
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Connectors) != 3 || c.Connectors[0].Name != "a" || c.Connectors[1].Name != "b" || c.Connectors[2].Name != "c" {
		t.Fatalf("connectors: %+v", c.Connectors)
	}
	a, b, cc := c.Connectors[0], c.Connectors[1], c.Connectors[2]
	if a.TaskCount != 0 || a.Tasks != nil || len(a.SourceOffsets) != 1 || a.SinkGroup != "" {
		t.Errorf("a (task configs without task.class: left for Kafka Connect to generate): %+v", a)
	}
	if b.TaskCount != 1 || b.SinkGroup != "g" || len(b.SinkOffsets) != 1 || b.SinkOffsets[0].Offset != 7 {
		t.Errorf("b: %+v", b)
	}
	if cc.TaskCount != 0 || cc.SinkGroup != "connect-c" {
		t.Errorf("c (stopped: no task configs): %+v", cc)
	}
}
