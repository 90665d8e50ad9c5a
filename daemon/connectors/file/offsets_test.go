package file

import (
	"encoding/json"
	"testing"

	"github.com/kcd-project/kcd/daemon/connect"
)

// The FileStream source refuses offsets as Kafka Connect's does, with its
// messages; resets always pass.
func TestSourceAlterOffsets(t *testing.T) {
	cfg := map[string]string{FileConfig: "/tmp/in.txt", "topic": "t"}
	part := map[string]any{FilenameField: "/tmp/in.txt"}
	for _, tc := range []struct {
		name      string
		cfg       map[string]string
		partition map[string]any
		offset    map[string]any
		want      string
	}{
		{"position", cfg, part, map[string]any{PositionField: json.Number("5")}, ""},
		{"reset", cfg, map[string]any{"garbage": 1}, nil, ""},
		{"zero", cfg, part, map[string]any{PositionField: json.Number("0")}, ""},
		{"seven", cfg, part, map[string]any{PositionField: "seven"}, "The value for the 'position' key in the offset is expected to be a Long value"},
		{"string number", cfg, part, map[string]any{PositionField: "5"}, "The value for the 'position' key in the offset is expected to be a Long value"},
		{"fraction", cfg, part, map[string]any{PositionField: json.Number("5.5")}, "The value for the 'position' key in the offset is expected to be a Long value"},
		{"negative", cfg, part, map[string]any{PositionField: json.Number("-1")}, "The value for the 'position' key in the offset should be a non-negative value"},
		{"no position", cfg, part, map[string]any{}, "Offset objects should either be null or contain the key 'position'"},
		{"no filename", cfg, map[string]any{"file": "/tmp/in.txt"}, map[string]any{PositionField: json.Number("5")}, "Partition objects should contain the key 'filename'"},
		{"stdin", map[string]string{"topic": "t"}, part, nil, "Offsets cannot be modified if the 'file' configuration is unspecified. This is because stdin is used for input and offsets are not tracked."},
	} {
		confirmed, err := (&SourceConnector{}).AlterOffsets(tc.cfg, []connect.PartitionOffset{{Partition: tc.partition, Offset: tc.offset}})
		switch {
		case tc.want == "" && (err != nil || !confirmed):
			t.Errorf("%s: %v, %v; want confirmed", tc.name, confirmed, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
	if ok, err := (&SinkConnector{}).AlterOffsets(nil, nil); !ok || err != nil {
		t.Errorf("sink: %v, %v; want confirmed", ok, err)
	}
}
