package migrate

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestEncodeConfigRecordRoundTrips(t *testing.T) {
	s := func(v string) *string { return &v }
	recs := []ConfigRecord{
		{Kind: KindConnector, Connector: "my-conn", Properties: map[string]*string{"name": s("my-conn"), "x": nil, "q": s("a\"b\\c\n<é>\u2028\x01")}},
		{Kind: KindTask, Connector: "my-conn", Task: 10, Properties: map[string]*string{"task.class": s("T")}},
		{Kind: KindCommit, Connector: "c", TaskCount: 3},
		{Kind: KindTargetState, Connector: "c", TargetState: "STARTED"},
		{Kind: KindTargetState, Connector: "c", TargetState: "PAUSED"},
		{Kind: KindTargetState, Connector: "c", TargetState: "STOPPED"},
		{Kind: KindRestart, Connector: "c", IncludeTask: true},
		{Kind: KindTasksFencing, Connector: "c", TaskCount: 2},
		{Kind: KindLoggerLevel, Namespace: "org.apache", Level: "DEBUG"},
		{Kind: KindConnector, Connector: "gone", Tombstone: true},
		{Kind: KindTargetState, Connector: "gone", Tombstone: true},
	}
	for _, want := range recs {
		key, value, err := EncodeConfigRecord(want)
		if err != nil {
			t.Errorf("%+v: %v", want, err)
			continue
		}
		got, err := DecodeConfigRecord(key, value)
		if err != nil {
			t.Errorf("%s %s: %v", key, value, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s:\n got %+v\nwant %+v", key, value, got, want)
		}
	}
}

func TestEncodeConfigRecordBytes(t *testing.T) {
	s := func(v string) *string { return &v }
	cases := []struct {
		rec        ConfigRecord
		key, value string
	}{
		// STOPPED is PAUSED for workers before 3.5, as Kafka Connect writes it.
		{ConfigRecord{Kind: KindTargetState, Connector: "c", TargetState: "STOPPED"}, "target-state-c", `{"state":"PAUSED","state.v2":"STOPPED"}`},
		{ConfigRecord{Kind: KindTargetState, Connector: "c", TargetState: "PAUSED"}, "target-state-c", `{"state":"PAUSED","state.v2":"PAUSED"}`},
		{ConfigRecord{Kind: KindCommit, Connector: "a-b", TaskCount: 0}, "commit-a-b", `{"tasks":0}`},
		{ConfigRecord{Kind: KindTask, Connector: "a-b", Task: 1, Properties: map[string]*string{"b": s("<&>"), "a": nil}}, "task-a-b-1", `{"properties":{"a":null,"b":"<&>"}}`},
	}
	for _, c := range cases {
		key, value, err := EncodeConfigRecord(c.rec)
		if err != nil || key != c.key || string(value) != c.value {
			t.Errorf("%+v: got %s %s %v, want %s %s", c.rec, key, value, err, c.key, c.value)
		}
	}
	for _, bad := range []ConfigRecord{
		{Kind: KindSessionKey},
		{Kind: KindTargetState, Connector: "c", TargetState: "SLEEPING"},
		{Kind: KindConnector},
		{Kind: KindCommit, Connector: "c", TaskCount: -1},
		{Kind: "other", Connector: "c"},
	} {
		if k, v, err := EncodeConfigRecord(bad); err == nil {
			t.Errorf("%+v encoded as %s %s", bad, k, v)
		}
	}
}

func TestEncodeOffsetRoundTrips(t *testing.T) {
	partition := map[string]any{"filename": "/tmp/ä \"x\"\t<y>", "n": json.Number("12345678901234567890"), "ok": true}
	offset := map[string]any{"position": json.Number("42"), "f": json.Number("1.5E300"), "s": nil}
	key, err := EncodeOffsetKey("my-src", partition)
	if err != nil {
		t.Fatal(err)
	}
	// Jackson's bytes: compact, no HTML escapes, UTF-8 as is.
	if want := `["my-src",{"filename":"/tmp/ä \"x\"\t<y>","n":12345678901234567890,"ok":true}]`; string(key) != want {
		t.Errorf("key %s, want %s", key, want)
	}
	value, err := EncodeOffsetValue(offset)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := DecodeOffsetRecord(key, value)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Connector != "my-src" || !reflect.DeepEqual(rec.Partition, partition) || !reflect.DeepEqual(rec.Offset, offset) {
		t.Errorf("round trip: %+v", rec)
	}
	if v, err := EncodeOffsetValue(nil); v != nil || err != nil {
		t.Errorf("tombstone: %q %v", v, err)
	}
	if _, err := EncodeOffsetKey("c", map[string]any{"p": json.Number("1x")}); err == nil {
		t.Error("a bad number was encoded")
	}
	if _, err := EncodeOffsetKey("c", map[string]any{"p": struct{}{}}); err == nil {
		t.Error("a struct was encoded")
	}
}

func TestEncodeNumbersAsJava(t *testing.T) {
	for f, want := range map[float64]string{1: "1.0", 0.5: "0.5", 1e10: "1.0E10", 1.5e-5: "1.5E-5", -2: "-2.0", 1234567.25: "1234567.25"} {
		if got := string(appendJavaDouble(nil, f)); got != want {
			t.Errorf("%v: %s, want %s", f, got, want)
		}
	}
	b, _ := appendJSON(nil, map[string]any{"i": 7, "l": int64(-8), "s": "\x7f\x1f"})
	if want := "{\"i\":7,\"l\":-8,\"s\":\"\x7f\\u001F\"}"; string(b) != want {
		t.Errorf("%s, want %s", b, want)
	}
}

func FuzzEncodeOffsetRoundTrips(f *testing.F) {
	f.Add("local-file-source", "filename", "/tmp/test.txt", "12345678901234")
	f.Add("c\"\\", "k\x00\u2028", "<é>\n\t", "-1.5E-300")
	f.Fuzz(func(t *testing.T, connector, key, value, number string) {
		if connector == "" {
			return
		}
		partition := map[string]any{key: value}
		offset := map[string]any{"v": value}
		if validNumber(number) {
			offset["n"] = json.Number(number)
		}
		k, err := EncodeOffsetKey(connector, partition)
		if err != nil {
			t.Fatal(err)
		}
		v, err := EncodeOffsetValue(offset)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := DecodeOffsetRecord(k, v)
		if err != nil {
			t.Fatalf("%s %s: %v", k, v, err)
		}
		valid := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
		wantOffset := map[string]any{"v": valid(value)}
		if n, ok := offset["n"]; ok {
			wantOffset["n"] = n
		}
		if rec.Connector != valid(connector) || !reflect.DeepEqual(rec.Partition, map[string]any{valid(key): valid(value)}) || !reflect.DeepEqual(rec.Offset, wantOffset) {
			t.Errorf("%s %s: decoded %+v", k, v, rec)
		}
	})
}
