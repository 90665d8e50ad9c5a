package javahost

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// decodeStd is what decodeFlat must agree with: encoding/json, UseNumber.
func decodeStd(b []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	err := d.Decode(&m)
	return m, err
}

var flatCases = []string{
	`{"offset":123}`,
	`{"cluster":"src","topic":"t-1","partition":3}`,
	` { "a" : -0.5e+10 , "b":true,"c":false,"d":null } `,
	`{}`,
	`{"lsn":24023128,"txId":555,"ts_usec":1733300000000000,"snapshot":"INITIAL","last_snapshot_record":false}`,
	`{"dup":1,"dup":2}`,
	`{"ü":"ñ"}`,
	`{"esc":"a\"b"}`,
	`{"nested":{"a":1}}`,
	`{"arr":[1,2]}`,
	`{"n":01}`,
	`{"n":1.}`,
	`{"n":-}`,
	`{"n":1e}`,
	`{"a":1}x`,
	`{"a":1,}`,
	`{"a" 1}`,
	`{"a":tru}`,
	`{"bad":"` + "\xff" + `"}`,
	`{"ctl":"` + "\x01" + `"}`,
	`null`,
	`[1]`,
	``,
	`{"a":1`,
}

func TestDecodeFlatAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range flatCases {
		checkFlat(t, []byte(c))
	}
	// The fast path takes what offsets look like.
	for _, c := range flatCases[:7] {
		if _, ok := decodeFlat([]byte(c)); !ok {
			t.Errorf("decodeFlat(%q) fell back", c)
		}
	}
}

func FuzzDecodeFlat(f *testing.F) {
	for _, c := range flatCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkFlat(t, b) })
}

// checkFlat: whenever decodeFlat answers, encoding/json gives the same map.
func checkFlat(t *testing.T, b []byte) {
	got, ok := decodeFlat(b)
	if !ok {
		return
	}
	want, err := decodeStd(b)
	if err != nil {
		t.Fatalf("decodeFlat(%q) = %v, encoding/json fails: %v", b, got, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeFlat(%q) = %#v, encoding/json %#v", b, got, want)
	}
}

func TestPartitionCacheSharesOneMapPerPartition(t *testing.T) {
	c := partitionCache{}
	a, aJSON, err := c.decode([]byte(`{"topic":"t","partition":1}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := c.decode([]byte(`{"topic":"t","partition":1}`))
	other, _, _ := c.decode([]byte(`{"topic":"t","partition":2}`))
	if aJSON != `{"topic":"t","partition":1}` {
		t.Errorf("the host's bytes: %s", aJSON)
	}
	if reflect.ValueOf(a).UnsafePointer() != reflect.ValueOf(b).UnsafePointer() {
		t.Error("two records of one partition got two maps")
	}
	if reflect.DeepEqual(a, other) {
		t.Error("two partitions decoded alike")
	}
	for i := range maxCachedPartitions + 10 {
		if _, _, err := c.decode([]byte(`{"p":` + string(rune('0'+i%10)) + `,"i":` + itoa(i) + `}`)); err != nil {
			t.Fatal(err)
		}
	}
	if len(c) > maxCachedPartitions {
		t.Errorf("cache holds %d partitions, over its bound %d", len(c), maxCachedPartitions)
	}
	if _, _, err := c.decode([]byte(`{"bad"`)); err == nil {
		t.Error("a malformed partition decoded")
	}
}

func itoa(i int) string { return string(jsonInt(i)) }

func jsonInt(i int) []byte { b, _ := json.Marshal(i); return b }

func BenchmarkDecodeOffset(b *testing.B) {
	in := []byte(`{"offset":123456789}`)
	b.Run("flat", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeJSONMap(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeStd(in); err != nil {
				b.Fatal(err)
			}
		}
	})
}
