package file

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/kcd-project/kcd/daemon/connect"
)

// AlterOffsets is FileStreamSourceConnector.alterOffsets: offsets can only
// change when a file is configured (stdin has none), and each new offset
// is a non-negative whole "position" of a partition with a "filename".
// Resets pass unchecked, so that garbage can be cleaned up. The messages
// are Kafka Connect's.
func (c *SourceConnector) AlterOffsets(cfg map[string]string, offsets []connect.PartitionOffset) (bool, error) {
	if cfg[FileConfig] == "" {
		return false, errors.New("Offsets cannot be modified if the '" + FileConfig + "' configuration is unspecified. " +
			"This is because stdin is used for input and offsets are not tracked.")
	}
	for _, o := range offsets {
		if o.Offset == nil {
			continue
		}
		pos, ok := o.Offset[PositionField]
		if !ok {
			return false, errors.New("Offset objects should either be null or contain the key '" + PositionField + "'")
		}
		n, ok := javaLong(pos)
		if !ok {
			return false, errors.New("The value for the '" + PositionField + "' key in the offset is expected to be a Long value")
		}
		if n < 0 {
			return false, errors.New("The value for the '" + PositionField + "' key in the offset should be a non-negative value")
		}
		if o.Partition == nil {
			return false, errors.New("Partition objects cannot be null")
		}
		if _, ok := o.Partition[FilenameField]; !ok {
			return false, errors.New("Partition objects should contain the key '" + FilenameField + "'")
		}
	}
	return true, nil // the task checks the position against the file when it starts
}

// AlterOffsets is FileStreamSinkConnector.alterOffsets: a file sink keeps
// no offsets of its own, so any change is confirmed.
func (c *SinkConnector) AlterOffsets(map[string]string, []connect.PartitionOffset) (bool, error) {
	return true, nil
}

// javaLong tells whether v is what Kafka Connect reads as a Long from a
// JSON offset: a whole number within 64 bits (not a string, not 5.0).
func javaLong(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := strconv.ParseInt(n.String(), 10, 64)
		return i, err == nil
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	}
	return 0, false
}

var (
	_ connect.OffsetAlterer = (*SourceConnector)(nil)
	_ connect.OffsetAlterer = (*SinkConnector)(nil)
)
