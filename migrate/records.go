// Package migrate reads and writes Kafka Connect's internal topic formats
// (connect-configs, connect-offsets, connect-status) and imports and exports
// a Kafka Connect cluster's metadata.
package migrate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ConfigKind is the kind of a record of the config topic, from its key prefix.
type ConfigKind string

// The kinds of config-topic records, as Kafka Connect names their keys.
const (
	KindConnector    ConfigKind = "connector"
	KindTask         ConfigKind = "task"
	KindCommit       ConfigKind = "commit"
	KindTargetState  ConfigKind = "target-state"
	KindRestart      ConfigKind = "restart-connector"
	KindTasksFencing ConfigKind = "tasks-fencing"
	KindSessionKey   ConfigKind = "session-key"
	KindLoggerLevel  ConfigKind = "logger-cluster"
)

// configPrefixes are tried in the order Kafka Connect's reader tries them.
var configPrefixes = []ConfigKind{KindTargetState, KindConnector, KindTask, KindCommit, KindRestart, KindTasksFencing}

// ConfigRecord is one decoded record of the config topic.
type ConfigRecord struct {
	Kind      ConfigKind
	Connector string // every kind but session-key and logger-cluster
	Task      int    // task records only
	Tombstone bool   // the value was null

	Properties  map[string]*string // connector and task records; a null value stays nil
	TaskCount   int                // commit and tasks-fencing records
	TargetState string             // target-state records: STARTED, PAUSED or STOPPED
	IncludeTask bool               // restart records
	OnlyFailed  bool               // restart records
	Namespace   string             // logger-cluster records
	Level       string             // logger-cluster records
}

// DecodeConfigRecord decodes one record of the config topic.
func DecodeConfigRecord(key string, value []byte) (ConfigRecord, error) {
	rec := ConfigRecord{Tombstone: value == nil}
	switch {
	case key == string(KindSessionKey):
		rec.Kind = KindSessionKey
		return rec, nil // the session key is the old cluster's secret: not carried over, not decoded
	case strings.HasPrefix(key, string(KindLoggerLevel)+"-"):
		rec.Kind = KindLoggerLevel
		rec.Namespace = strings.TrimPrefix(key, string(KindLoggerLevel)+"-")
		if rec.Tombstone {
			return rec, nil
		}
		var v struct{ Level string }
		if err := decodeStrict(value, &v); err != nil {
			return rec, fmt.Errorf("config record %q: %w", key, err)
		}
		rec.Level = v.Level
		return rec, nil
	}
	for _, p := range configPrefixes {
		if strings.HasPrefix(key, string(p)+"-") {
			rec.Kind = p
			rec.Connector = strings.TrimPrefix(key, string(p)+"-")
			break
		}
	}
	if rec.Kind == "" {
		return rec, fmt.Errorf("config record %q: unknown key", key)
	}
	if rec.Kind == KindTask {
		i := strings.LastIndexByte(rec.Connector, '-')
		n, err := strconv.Atoi(rec.Connector[i+1:])
		if i <= 0 || err != nil || n < 0 {
			return rec, fmt.Errorf("config record %q: no task number after the connector name", key)
		}
		rec.Connector, rec.Task = rec.Connector[:i], n
	}
	if rec.Connector == "" {
		return rec, fmt.Errorf("config record %q: empty connector name", key)
	}
	if rec.Tombstone {
		return rec, nil
	}
	if err := rec.decodeValue(value); err != nil {
		return rec, fmt.Errorf("config record %q: %w", key, err)
	}
	return rec, nil
}

func (rec *ConfigRecord) decodeValue(value []byte) error {
	switch rec.Kind {
	case KindConnector, KindTask:
		var v struct {
			Properties map[string]*string `json:"properties"`
		}
		if err := decodeStrict(value, &v); err != nil {
			return err
		}
		if v.Properties == nil {
			return fmt.Errorf("no properties")
		}
		rec.Properties = v.Properties
	case KindCommit:
		var v struct {
			Tasks *json.Number `json:"tasks"`
		}
		if err := decodeStrict(value, &v); err != nil {
			return err
		}
		n, err := intOf(v.Tasks, "tasks")
		rec.TaskCount = n
		return err
	case KindTasksFencing:
		var v struct {
			TaskCount *json.Number `json:"task-count"`
		}
		if err := decodeStrict(value, &v); err != nil {
			return err
		}
		n, err := intOf(v.TaskCount, "task-count")
		rec.TaskCount = n
		return err
	case KindTargetState:
		var v map[string]any
		if err := decodeStrict(value, &v); err != nil {
			return err
		}
		// The reader prefers state.v2 and falls back to state, as Kafka Connect does.
		s, ok := v["state.v2"].(string)
		if !ok {
			s, _ = v["state"].(string)
		}
		switch s {
		case "STARTED", "PAUSED", "STOPPED":
			rec.TargetState = s
		default:
			return fmt.Errorf("unknown target state %q", s)
		}
	case KindRestart:
		var v struct {
			IncludeTasks bool `json:"include-tasks"`
			OnlyFailed   bool `json:"only-failed"`
		}
		if err := decodeStrict(value, &v); err != nil {
			return err
		}
		rec.IncludeTask, rec.OnlyFailed = v.IncludeTasks, v.OnlyFailed
	}
	return nil
}

// OffsetRecord is one decoded record of the offsets topic.
type OffsetRecord struct {
	Connector string
	// Partition and Offset keep JSON numbers as json.Number so that they are
	// written back exactly as read.
	Partition map[string]any
	Offset    map[string]any // nil for a tombstone
	// RawKey is the key as stored: Kafka Connect indexes offsets by these bytes.
	RawKey []byte
}

// DecodeOffsetRecord decodes one record of the offsets topic: the key is
// ["<connector>",{<source partition>}], the value the source offset.
func DecodeOffsetRecord(key, value []byte) (OffsetRecord, error) {
	rec := OffsetRecord{RawKey: key}
	var k []json.RawMessage
	if err := decodeStrict(key, &k); err != nil {
		return rec, fmt.Errorf("offset key %s: %w", key, err)
	}
	if len(k) != 2 {
		return rec, fmt.Errorf("offset key %s: want [connector, partition], got %d elements", key, len(k))
	}
	if err := decodeStrict(k[0], &rec.Connector); err != nil || rec.Connector == "" {
		return rec, fmt.Errorf("offset key %s: first element is not a connector name", key)
	}
	if err := decodeStrict(k[1], &rec.Partition); err != nil || rec.Partition == nil {
		return rec, fmt.Errorf("offset key %s: second element is not a partition map", key)
	}
	if value == nil {
		return rec, nil
	}
	if err := decodeStrict(value, &rec.Offset); err != nil || rec.Offset == nil {
		return rec, fmt.Errorf("offset value %s for key %s: not an offset map", value, key)
	}
	return rec, nil
}

// StatusRecord is one decoded connector or task record of the status topic.
type StatusRecord struct {
	Connector  string
	Task       int  // -1 for a connector status
	IsTopic    bool // a status-topic-… record (active topic tracking)
	Topic      string
	Tombstone  bool
	State      string
	Trace      string
	WorkerID   string
	Generation int64
}

// DecodeStatusRecord decodes one record of the status topic.
func DecodeStatusRecord(key string, value []byte) (StatusRecord, error) {
	rec := StatusRecord{Task: -1, Tombstone: value == nil}
	switch {
	case strings.HasPrefix(key, "status-connector-"):
		rec.Connector = strings.TrimPrefix(key, "status-connector-")
	case strings.HasPrefix(key, "status-task-"):
		rest := strings.TrimPrefix(key, "status-task-")
		i := strings.LastIndexByte(rest, '-')
		n, err := strconv.Atoi(rest[i+1:])
		if i <= 0 || err != nil || n < 0 {
			return rec, fmt.Errorf("status record %q: no task number after the connector name", key)
		}
		rec.Connector, rec.Task = rest[:i], n
	case strings.HasPrefix(key, "status-topic-"):
		rest := strings.TrimPrefix(key, "status-topic-")
		i := strings.LastIndex(rest, ":connector-")
		if i < 0 {
			return rec, fmt.Errorf("status record %q: no connector in topic status key", key)
		}
		rec.IsTopic, rec.Topic, rec.Connector = true, rest[:i], rest[i+len(":connector-"):]
		return rec, nil
	default:
		return rec, fmt.Errorf("status record %q: unknown key", key)
	}
	if rec.Connector == "" {
		return rec, fmt.Errorf("status record %q: empty connector name", key)
	}
	if rec.Tombstone {
		return rec, nil
	}
	var v struct {
		State      string       `json:"state"`
		Trace      *string      `json:"trace"`
		WorkerID   string       `json:"worker_id"`
		Generation *json.Number `json:"generation"`
	}
	if err := decodeStrict(value, &v); err != nil {
		return rec, fmt.Errorf("status record %q: %w", key, err)
	}
	switch v.State {
	case "UNASSIGNED", "RUNNING", "PAUSED", "FAILED", "DESTROYED", "RESTARTING", "STOPPED":
	default:
		return rec, fmt.Errorf("status record %q: unknown state %q", key, v.State)
	}
	rec.State, rec.WorkerID = v.State, v.WorkerID
	if v.Trace != nil {
		rec.Trace = *v.Trace
	}
	if v.Generation != nil {
		g, err := v.Generation.Int64()
		if err != nil {
			return rec, fmt.Errorf("status record %q: generation %s: %w", key, v.Generation, err)
		}
		rec.Generation = g
	}
	return rec, nil
}

// decodeStrict decodes one JSON value, keeping numbers exact and refusing
// trailing data.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("malformed JSON: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("malformed JSON: trailing data")
	}
	return nil
}

func intOf(n *json.Number, field string) (int, error) {
	if n == nil {
		return 0, fmt.Errorf("no %s", field)
	}
	v, err := strconv.Atoi(n.String())
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%s %s is not a count", field, n)
	}
	return v, nil
}
