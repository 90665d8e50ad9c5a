package migrate

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/kcd-project/kcd/api"
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
	// Jackson's bytes: compact, no HTML escapes, UTF-8 as is, the fields
	// in a HashMap's order (Java 17: filename, ok, n).
	if want := `["my-src",{"filename":"/tmp/ä \"x\"\t<y>","ok":true,"n":12345678901234567890}]`; string(key) != want {
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

// TestEncodeOffsetKeyAsJavaHashMap compares the keys with the bytes Kafka
// Connect 4.3.1's JsonConverter (schemas.enable=false, converter.type=key)
// wrote on Java 17 for ["conn \"x\"", m], m a java.util.HashMap that took
// its keys in sorted order, a value "v-<key>" for keys of even UTF-16
// length and the length (a Long) for the others.
func TestEncodeOffsetKeyAsJavaHashMap(t *testing.T) {
	for _, tc := range []struct {
		keys []string
		want string
	}{
		{[]string{"server", "database"}, `["conn \"x\"",{"server":"v-server","database":"v-database"}]`},
		{[]string{"topic", "partition", "cluster"}, `["conn \"x\"",{"cluster":7,"partition":9,"topic":5}]`},
		{[]string{"é", "ü", "日本", "\U0001F600"}, `["conn \"x\"",{"\uD83D\uDE00":"v-\uD83D\uDE00","é":1,"日本":"v-日本","ü":1}]`},
		{[]string{"server", "database", "task", "sid", "instance", "x"}, `["conn \"x\"",{"server":"v-server","database":"v-database","instance":"v-instance","task":"v-task","x":1,"sid":3}]`},
		// 13 keys: a table of 32.
		{[]string{"k0", "k1", "k10", "k11", "k12", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"},
			`["conn \"x\"",{"k0":"v-k0","k1":"v-k1","k2":"v-k2","k3":"v-k3","k4":"v-k4","k11":3,"k5":"v-k5","k10":3,"k6":"v-k6","k7":"v-k7","k12":3,"k8":"v-k8","k9":"v-k9"}]`},
	} {
		m := map[string]any{}
		for _, k := range tc.keys {
			if n := len(utf16.Encode([]rune(k))); n%2 == 0 {
				m[k] = "v-" + k
			} else {
				m[k] = json.Number(strconv.Itoa(n))
			}
		}
		got, err := EncodeOffsetKey(`conn "x"`, m)
		if err != nil || string(got) != tc.want {
			t.Errorf("%v: %s %v\nwant %s", tc.keys, got, err, tc.want)
		}
	}
	// Keys of one bucket ("Aa" and "BB" hash alike) keep the insertion
	// order, taken as sorted: Java gives Aa BB for that order.
	if got := javaHashMapOrder([]string{"Aa", "BB"}); !slices.Equal(got, []string{"Aa", "BB"}) {
		t.Errorf("one bucket: %v", got)
	}
	for s, want := range map[string]int32{"": 0, "server": -905826493, "Aa": 2112, "BB": 2112, "\U0001F600": 1772899} {
		if got := javaStringHash(s); got != want {
			t.Errorf("hashCode of %q: %d, want %d", s, got, want)
		}
	}
}

// TestCarriedKey: a key carried with an offset is written as
// it is, one that does not decode to the offset's connector and partition
// is not, and without one the key is encoded.
func TestCarriedKey(t *testing.T) {
	part := map[string]any{"server": "s", "database": "d"}
	javaOrder := `["c",{"server":"s","database":"d"}]`
	for _, tc := range []struct {
		key, want string
	}{
		{javaOrder, javaOrder},
		{`["c",{"database":"d","server":"s"}]`, `["c",{"database":"d","server":"s"}]`}, // any order, as stored
		{`["c", {"server":"s","database":"d"}]`, `["c", {"server":"s","database":"d"}]`},
		{`["other",{"server":"s","database":"d"}]`, ""},
		{`["c",{"server":"s"}]`, ""},
		{`["c",{"server":"s","database":"d"}]x`, ""},
		{"[\"c\",{\"server\":\"s\xff\",\"database\":\"d\"}]", ""},
		{`["c",{"server":"` + strings.Repeat("s", api.MaxSourceOffsetKey) + `","database":"d"}]`, ""},
		{"", ""},
	} {
		if got := carriedKey("c", SourceOffset{Partition: part, Key: []byte(tc.key)}); got != tc.want {
			t.Errorf("carriedKey(%.60q) = %.60q, want %q", tc.key, got, tc.want)
		}
	}
}
