package migrate

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/internal/connectjson"
)

// carriedKey is o.Key when it can go with o to kcd and back: at most
// api.MaxSourceOffsetKey bytes of UTF-8 that decode to connector's
// partition o.Partition (kcd refuses other keys); else "", and the key is
// encoded again when it is written.
func carriedKey(connector string, o SourceOffset) string {
	if len(o.Key) == 0 || len(o.Key) > api.MaxSourceOffsetKey || !utf8.Valid(o.Key) {
		return ""
	}
	rec, err := DecodeOffsetRecord(o.Key, nil)
	if err != nil || rec.Connector != connector || jsonForm(rec.Partition) != jsonForm(o.Partition) {
		return ""
	}
	return string(o.Key)
}

// The encoders write what Kafka Connect's internal JsonConverter
// (schemas.enable=false, Jackson underneath) writes: compact JSON, fields
// of a record in its schema's order, non-ASCII text as UTF-8, and only '"',
// '\' and control characters escaped, characters beyond U+FFFF as their
// escaped UTF-16 surrogates. Kafka Connect writes a map's keys in its Java
// map's order, which a reader cannot know: the fields of a source
// partition (an offset's key) are written in the order of a java.util.HashMap
// (javaHashMapOrder), which most connectors build; other maps sorted.
// SourceOffset.Key keeps the key bytes Kafka Connect wrote, where known.

// EncodeConfigRecord encodes rec as a record of the config topic: its key,
// and its value (nil for a tombstone). DecodeConfigRecord reads it back.
func EncodeConfigRecord(rec ConfigRecord) (key string, value []byte, err error) {
	if rec.Kind != KindSessionKey && rec.Kind != KindLoggerLevel && rec.Connector == "" {
		return "", nil, fmt.Errorf("config record %s: no connector name", rec.Kind)
	}
	switch rec.Kind {
	case KindConnector, KindTargetState, KindCommit, KindRestart, KindTasksFencing:
		key = string(rec.Kind) + "-" + rec.Connector
	case KindTask:
		if rec.Task < 0 {
			return "", nil, fmt.Errorf("config record task-%s-%d: negative task number", rec.Connector, rec.Task)
		}
		key = "task-" + rec.Connector + "-" + strconv.Itoa(rec.Task)
	case KindLoggerLevel:
		key = string(KindLoggerLevel) + "-" + rec.Namespace
	case KindSessionKey:
		return "", nil, fmt.Errorf("config record session-key: not encoded (the key is the old cluster's secret)")
	default:
		return "", nil, fmt.Errorf("config record: unknown kind %q", rec.Kind)
	}
	if rec.Tombstone {
		return key, nil, nil
	}
	var b []byte
	switch rec.Kind {
	case KindConnector, KindTask:
		b = append(b, `{"properties":{`...)
		for i, k := range sortedKeys(rec.Properties) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			if v := rec.Properties[k]; v != nil {
				b = appendString(b, *v)
			} else {
				b = append(b, "null"...)
			}
		}
		b = append(b, "}}"...)
	case KindTargetState:
		// Kafka Connect writes STOPPED as state PAUSED, so that workers older
		// than 3.5 (which know no state.v2) pause the connector.
		old := rec.TargetState
		switch rec.TargetState {
		case "STARTED", "PAUSED":
		case "STOPPED":
			old = "PAUSED"
		default:
			return "", nil, fmt.Errorf("config record %q: unknown target state %q", key, rec.TargetState)
		}
		b = append(b, `{"state":`...)
		b = appendString(b, old)
		b = append(b, `,"state.v2":`...)
		b = appendString(b, rec.TargetState)
		b = append(b, '}')
	case KindCommit, KindTasksFencing:
		if rec.TaskCount < 0 {
			return "", nil, fmt.Errorf("config record %q: negative task count %d", key, rec.TaskCount)
		}
		field := `{"tasks":`
		if rec.Kind == KindTasksFencing {
			field = `{"task-count":`
		}
		b = append(b, field...)
		b = strconv.AppendInt(b, int64(rec.TaskCount), 10)
		b = append(b, '}')
	case KindRestart:
		b = append(b, `{"include-tasks":`...)
		b = strconv.AppendBool(b, rec.IncludeTask)
		b = append(b, `,"only-failed":`...)
		b = strconv.AppendBool(b, rec.OnlyFailed)
		b = append(b, '}')
	case KindLoggerLevel:
		b = append(b, `{"level":`...)
		b = appendString(b, rec.Level)
		b = append(b, '}')
	}
	return key, b, nil
}

// EncodeOffsetKey encodes the key of a source offset as Kafka Connect's
// OffsetStorageWriter does: ["<connector>",{<partition>}].
func EncodeOffsetKey(connector string, partition map[string]any) ([]byte, error) {
	if connector == "" {
		return nil, fmt.Errorf("offset key: empty connector name")
	}
	if partition == nil {
		return nil, fmt.Errorf("offset key of %s: no partition", connector)
	}
	b := []byte{'['}
	b = appendString(b, connector)
	b = append(b, ',', '{')
	for i, k := range javaHashMapOrder(sortedKeys(partition)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendJSON(b, partition[k]); err != nil {
			return nil, fmt.Errorf("offset key of %s: partition: %s: %w", connector, k, err)
		}
	}
	return append(b, '}', ']'), nil
}

// javaHashMapOrder orders keys as a java.util.HashMap that took them in the
// given order iterates them: by bucket, (String.hashCode, spread as
// h^(h>>>16)) & (table size-1), where the table is the default 16 doubled
// while the entries exceed 3/4 of it; within a bucket in insertion order.
// A map built otherwise (LinkedHashMap, TreeMap, Map.of) or whose bucket
// holds 8 keys or more (which the HashMap resizes or turns into a tree)
// may iterate otherwise.
func javaHashMapOrder(keys []string) []string {
	size := 16
	for len(keys) > size*3/4 {
		size *= 2
	}
	bucket := func(k string) int {
		h := javaStringHash(k)
		return int((h ^ int32(uint32(h)>>16)) & int32(size-1))
	}
	out := slices.Clone(keys)
	slices.SortStableFunc(out, func(a, b string) int { return bucket(a) - bucket(b) })
	return out
}

// javaStringHash is Java's String.hashCode: over the UTF-16 code units,
// h = 31*h + c with int overflow.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// EncodeOffsetValue encodes a source offset; a nil offset is a tombstone
// (nil), which deletes the partition's offset.
func EncodeOffsetValue(offset map[string]any) ([]byte, error) {
	if offset == nil {
		return nil, nil
	}
	b, err := appendJSON(nil, offset)
	if err != nil {
		return nil, fmt.Errorf("offset value: %w", err)
	}
	return b, nil
}

// jsonForm is v in the encoders' form: two decoded values are the
// same JSON when their canonical forms are equal.
func jsonForm(v any) string {
	b, err := appendJSON(nil, v)
	if err != nil {
		return "!" + err.Error()
	}
	return string(b)
}

func appendJSON(b []byte, v any) ([]byte, error) {
	var err error
	switch v := v.(type) {
	case nil:
		b = append(b, "null"...)
	case bool:
		b = strconv.AppendBool(b, v)
	case string:
		b = appendString(b, v)
	case json.Number:
		if !validNumber(string(v)) {
			return nil, fmt.Errorf("%q is not a JSON number", string(v))
		}
		b = append(b, v...)
	case int:
		b = strconv.AppendInt(b, int64(v), 10)
	case int32:
		b = strconv.AppendInt(b, int64(v), 10)
	case int64:
		b = strconv.AppendInt(b, v, 10)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%v is not a JSON number", v)
		}
		b = appendJavaDouble(b, v)
	case map[string]any:
		b = append(b, '{')
		for i, k := range sortedKeys(v) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			if b, err = appendJSON(b, v[k]); err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
		}
		b = append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSON(b, e); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	default:
		return nil, fmt.Errorf("%T is not a JSON value Kafka Connect writes", v)
	}
	return b, nil
}

// appendString writes s as Jackson does (connectjson.AppendString).
func appendString(b []byte, s string) []byte { return connectjson.AppendString(b, s) }

// appendJavaDouble writes f as Java's Double.toString does (which Jackson
// uses): "1.0", "0.5", "1.0E10", "1.0E-5".
func appendJavaDouble(b []byte, f float64) []byte {
	if a := math.Abs(f); a == 0 || (a >= 1e-3 && a < 1e7) {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return append(b, s...)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // d[.ddd]e±XX
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	n, _ := strconv.Atoi(exp)
	return append(append(append(b, mant...), 'E'), strconv.Itoa(n)...)
}

func validNumber(s string) bool {
	var v any
	return s != "" && strings.TrimSpace(s) == s && json.Unmarshal([]byte(s), &v) == nil && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9'))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
