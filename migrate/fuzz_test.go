package migrate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// Seeds of the fuzz tests: records captured from the real internal topics
// (fixtureDir, see its README), and a few hand-written ones of the kinds a
// test cannot make the real worker write (session keys, logger levels).

func seeds(t testing.TB, file string) []fixture {
	b, err := os.ReadFile(filepath.Join(fixtureDir, file))
	if err != nil {
		t.Fatalf("seeds: %v", err)
	}
	var fs []fixture
	if err := json.Unmarshal(b, &fs); err != nil {
		t.Fatalf("seeds %s: %v", file, err)
	}
	if len(fs) == 0 {
		t.Fatalf("seeds %s: none", file)
	}
	return fs
}

func (f fixture) value() ([]byte, bool) {
	if f.Value == nil {
		return nil, true
	}
	return []byte(*f.Value), false
}

func valueOf(v []byte, null bool) []byte {
	if null {
		return nil
	}
	if v == nil {
		return []byte{}
	}
	return v
}

// encodeConfigRecord writes rec as Kafka Connect does: the inverse of
// DecodeConfigRecord for the kinds it decodes fully.
func encodeConfigRecord(t *testing.T, rec ConfigRecord) (string, []byte) {
	key := string(rec.Kind) + "-" + rec.Connector
	var v any
	switch rec.Kind {
	case KindConnector:
		v = map[string]any{"properties": rec.Properties}
	case KindTask:
		key = fmt.Sprintf("%s-%d", key, rec.Task)
		v = map[string]any{"properties": rec.Properties}
	case KindCommit:
		v = map[string]any{"tasks": rec.TaskCount}
	case KindTasksFencing:
		v = map[string]any{"task-count": rec.TaskCount}
	case KindTargetState:
		old := rec.TargetState
		if old == "STOPPED" {
			old = "PAUSED"
		}
		v = map[string]any{"state": old, "state.v2": rec.TargetState}
	case KindRestart:
		v = map[string]any{"include-tasks": rec.IncludeTask, "only-failed": rec.OnlyFailed}
	case KindLoggerLevel:
		key = "logger-cluster-" + rec.Namespace
		v = map[string]any{"level": rec.Level}
	default:
		return "", nil
	}
	if rec.Tombstone {
		return key, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %+v: %v", rec, err)
	}
	return key, b
}

func FuzzDecodeConfigRecord(f *testing.F) {
	for _, s := range seeds(f, "configs.json") {
		v, null := s.value()
		f.Add(s.Key, v, null)
	}
	f.Add("session-key", []byte(`{"key":"c2VjcmV0","algorithm":"HmacSHA256","creation-timestamp":1}`), false)
	f.Add("logger-cluster-org.apache.kafka", []byte(`{"level":"DEBUG"}`), false)
	f.Add("restart-connector-a", []byte(`{"include-tasks":true,"only-failed":true}`), false)
	f.Add("tasks-fencing-a-b", []byte(`{"task-count":3}`), false)
	f.Add("task-a--1", []byte(`{"properties":{}}`), false)
	f.Add("target-state-c", []byte(`{"state":"PAUSED"}`), false)
	f.Fuzz(func(t *testing.T, key string, value []byte, null bool) {
		rec, err := DecodeConfigRecord(key, valueOf(value, null))
		if err != nil {
			return
		}
		if rec.Kind == KindSessionKey {
			return
		}
		// A record that decodes re-encodes to one that decodes the same
		// (the task key of a connector named like "x-1" aside: the
		// number is the last dash's).
		k, v := encodeConfigRecord(t, rec)
		if k == "" {
			t.Fatalf("decoded %q to an unknown kind %q", key, rec.Kind)
		}
		again, err := DecodeConfigRecord(k, v)
		if err != nil {
			t.Fatalf("%q %s decoded to %+v, which re-encodes to %q %s that does not decode: %v", key, value, rec, k, v, err)
		}
		if !reflect.DeepEqual(rec, again) {
			t.Fatalf("round trip of %q %s:\n first %+v\nsecond %+v", key, value, rec, again)
		}
	})
}

func FuzzDecodeOffsetRecord(f *testing.F) {
	for _, s := range seeds(f, "offsets.json") {
		v, null := s.value()
		f.Add([]byte(s.Key), v, null)
	}
	f.Add([]byte(`["c", {"b":1.50, "a":[1,{"x":null}]}]`), []byte(`{"o":12345678901234567890}`), false)
	f.Add([]byte(`["c",{}]`), []byte(`{}`), false)
	f.Fuzz(func(t *testing.T, key, value []byte, null bool) {
		rec, err := DecodeOffsetRecord(key, valueOf(value, null))
		if err != nil {
			return
		}
		if rec.Connector == "" || rec.Partition == nil || (rec.Offset == nil) != null {
			t.Fatalf("decoded %s %s to %+v", key, value, rec)
		}
		// The canonical form decodes to the same partition, and is its
		// own canonical form: one identity per logical partition.
		canon, err := canonicalJSON(rec.Partition)
		if err != nil {
			t.Fatalf("canonical form of %s: %v", key, err)
		}
		k, err := json.Marshal([]any{rec.Connector, json.RawMessage(canon)})
		if err != nil {
			t.Fatal(err)
		}
		var ov []byte
		if !null {
			if ov, err = json.Marshal(rec.Offset); err != nil {
				t.Fatal(err)
			}
		}
		again, err := DecodeOffsetRecord(k, ov)
		if err != nil {
			t.Fatalf("re-encoded %s %s does not decode: %v", k, ov, err)
		}
		canon2, _ := canonicalJSON(again.Partition)
		if again.Connector != rec.Connector || canon2 != canon || !reflect.DeepEqual(again.Offset, rec.Offset) {
			t.Fatalf("round trip of %s %s:\n first %+v\nsecond %+v", key, value, rec, again)
		}
	})
}

func FuzzDecodeStatusRecord(f *testing.F) {
	for _, s := range seeds(f, "status.json") {
		v, null := s.value()
		f.Add(s.Key, v, null)
	}
	f.Add("status-task-a-b-7", []byte(`{"state":"FAILED","trace":"x\ny","worker_id":"h:1","generation":9223372036854775807}`), false)
	f.Fuzz(func(t *testing.T, key string, value []byte, null bool) {
		rec, err := DecodeStatusRecord(key, valueOf(value, null))
		if err != nil || rec.IsTopic {
			return
		}
		if rec.Connector == "" {
			t.Fatalf("decoded %q without a connector: %+v", key, rec)
		}
		k := "status-connector-" + rec.Connector
		if rec.Task >= 0 {
			k = fmt.Sprintf("status-task-%s-%d", rec.Connector, rec.Task)
		}
		var v []byte
		if !rec.Tombstone {
			var trace *string
			if rec.Trace != "" {
				trace = &rec.Trace
			}
			v, err = json.Marshal(map[string]any{"state": rec.State, "trace": trace, "worker_id": rec.WorkerID, "generation": rec.Generation})
			if err != nil {
				t.Fatal(err)
			}
		}
		again, err := DecodeStatusRecord(k, v)
		if err != nil {
			t.Fatalf("%q %s decoded to %+v, which re-encodes to %q %s that does not decode: %v", key, value, rec, k, v, err)
		}
		if !reflect.DeepEqual(rec, again) {
			t.Fatalf("round trip of %q %s:\n first %+v\nsecond %+v", key, value, rec, again)
		}
	})
}

// fuzzRecord is one record of FuzzAccumulate's input.
type fuzzRecord struct {
	topic      string // c, o or s
	part       int32
	key, value []byte
	ts         int64
}

// parseFuzzRecords reads lines "topic partition key\tvalue", "-" for a
// null value; a record's timestamp is its line number mod 5, so that
// timestamps tie and go back.
func parseFuzzRecords(in string) []fuzzRecord {
	var recs []fuzzRecord
	for i, l := range strings.Split(in, "\n") {
		var topic string
		var part int32
		if _, err := fmt.Sscanf(l, "%s %d ", &topic, &part); err != nil {
			continue
		}
		_, rest, _ := strings.Cut(l, " ")
		_, rest, _ = strings.Cut(rest, " ")
		k, v, _ := strings.Cut(rest, "\t")
		r := fuzzRecord{topic: topic, part: part & 3, key: []byte(k), ts: int64(i % 5)}
		if v != "-" {
			r.value = []byte(v)
		}
		recs = append(recs, r)
	}
	return recs
}

// accumulate folds recs in their order; offsets count per topic partition.
func accumulate(recs []fuzzRecord) *Cluster {
	acc := newAccumulator(DefaultTopics(), nil)
	next := map[string]int64{}
	for _, r := range recs {
		k := fmt.Sprint(r.topic, r.part)
		where := at{Partition: r.part, Offset: next[k], Timestamp: r.ts}
		next[k]++
		switch r.topic {
		case "c":
			acc.configRecord(where, r.key, r.value)
		case "o":
			acc.offsetRecord(where, r.key, r.value)
		case "s":
			acc.statusRecord(where, r.key, r.value)
		}
	}
	return acc.cluster()
}

// FuzzAccumulate feeds records of all three topics and checks what the
// result always holds, and that it does not depend on the order the topic
// partitions are read in (records of one partition keep their order).
func FuzzAccumulate(f *testing.F) {
	var seed bytes.Buffer
	// A few records of each topic. The fuzzer minimizes each new input
	// for up to a minute: run it with -fuzzminimizetime 1s.
	add := func(topic string, fs []fixture) {
		for i, s := range fs[:min(len(fs), 6)] {
			v := "-"
			if s.Value != nil {
				v = *s.Value
			}
			fmt.Fprintf(&seed, "%s %d %s\t%s\n", topic, i%3, s.Key, v)
		}
	}
	add("c", seeds(f, "configs.json"))
	add("o", seeds(f, "offsets.json"))
	add("s", seeds(f, "status.json"))
	f.Add(seed.String())
	f.Add("c 0 connector-a\t{\"properties\":{}}\no 0 [\"a\",{\"f\":1}]\t{\"p\":1}\no 1 [\"a\", {\"f\":1}]\t{\"p\":2}\no 2 [\"a\",{\"f\" :1}]\t-\n")
	f.Fuzz(func(t *testing.T, in string) {
		recs := parseFuzzRecords(in)
		c := accumulate(recs)
		if !sort.SliceIsSorted(c.Connectors, func(i, j int) bool { return c.Connectors[i].Name < c.Connectors[j].Name }) {
			t.Fatal("connectors not sorted")
		}
		for _, conn := range c.Connectors {
			if conn.Inconsistent && len(conn.Tasks) != 0 || !conn.Inconsistent && len(conn.Tasks) != conn.TaskCount {
				t.Fatalf("%s: %d tasks, count %d, inconsistent %v", conn.Name, len(conn.Tasks), conn.TaskCount, conn.Inconsistent)
			}
			if _, orphan := c.Orphans[conn.Name]; orphan {
				t.Fatalf("%s is live and an orphan", conn.Name)
			}
			for _, o := range conn.SourceOffsets {
				if o.Offset == nil || o.Partition == nil || len(o.Key) == 0 {
					t.Fatalf("%s: offset %+v", conn.Name, o)
				}
			}
			switch conn.Target {
			case "STARTED", "PAUSED", "STOPPED":
			default:
				t.Fatalf("%s: target %q", conn.Name, conn.Target)
			}
		}
		// Partition by partition, highest first, instead of as given.
		other := slices.Clone(recs)
		sort.SliceStable(other, func(i, j int) bool {
			if other[i].topic != other[j].topic {
				return other[i].topic < other[j].topic
			}
			return other[i].part > other[j].part
		})
		// The config topic has one partition in Kafka Connect; with more,
		// its order is the read order, so compare only when it has one.
		onePart := true
		for _, r := range recs {
			onePart = onePart && (r.topic != "c" || r.part == recs[0].part)
		}
		if a, b := jsonOf(t, c), jsonOf(t, accumulate(other)); onePart && a != b {
			t.Fatalf("the result depends on the read order:\n%s\n%s", a, b)
		}
	})
}

// canary is a secret the fuzz targets below put in a value: no error may
// show it.
const canary = "kcd-canary-secret-fuzz"

// FuzzParseProperties reads any .properties text followed by a secret:
// no error shows the secret, and what parses is written back (as Java's
// Properties.store) to text that reads back the same.
func FuzzParseProperties(f *testing.F) {
	f.Add("bootstrap.servers=localhost:9092\nsasl.mechanism = PLAIN\n# comment\n! other\nkey\\ with\\ blanks:v\\\n  continued\n")
	f.Add("\uFEFFa\\u00e9=\\t\\n\\\\\nb\n:\n=\n\\")
	f.Add("a=\\u12")
	f.Add("\xe9=\xff")
	f.Fuzz(func(t *testing.T, text string) {
		in := text + "\nssl.key.password=" + canary + "\n"
		props, err := ParseProperties([]byte(in))
		if err != nil {
			if strings.Contains(err.Error(), canary) && !strings.Contains(text, canary) {
				t.Fatalf("error shows a value: %v", err)
			}
			return
		}
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(props)) {
			b.WriteString(javaEscape(k, true) + "=" + javaEscape(props[k], false) + "\n")
		}
		again, err := ParseProperties([]byte(b.String()))
		if err != nil || !reflect.DeepEqual(props, again) {
			t.Fatalf("%q reads as %q, written as %q, which reads as %q (%v)", in, props, b.String(), again, err)
		}
	})
}

// FuzzParseJAAS reads any sasl.jaas.config text around a quoted password:
// it never panics, and no error shows the password.
func FuzzParseJAAS(f *testing.F) {
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" `, `;`)
	f.Add(`x required /* c */ `, ` // c`+"\n"+` other='\101\n' ;`)
	f.Add(`x optional a=`, `b=c`)
	f.Fuzz(func(t *testing.T, before, after string) {
		in := before + `password="` + canary + `"` + after
		e, err := parseJAAS(in)
		if err != nil {
			if strings.Contains(err.Error(), canary) && !strings.Contains(before+after, canary) {
				t.Fatalf("%q: error shows a value: %v", in, err)
			}
			return
		}
		if e.Module == "" || e.Flag == "" {
			t.Fatalf("%q parsed to %+v", in, e)
		}
	})
}
