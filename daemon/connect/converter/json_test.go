package converter

import (
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/kcd-project/kcd/daemon/connect/data"
)

var schemaless = map[string]string{"schemas.enable": "false"}

// TestSchemalessGoValues covers the Go values that have no Java
// counterpart but are written as Java writes the closest one.
func TestSchemalessGoValues(t *testing.T) {
	c := configured(t, schemaless)
	tests := []struct {
		value any
		want  string
	}{
		{map[string]any{"partition": 0, "topic": "t"}, `{"partition":0,"topic":"t"}`}, // java.util.HashMap order
		{[]any{"connector", map[string]any{"file": "/tmp/x"}}, `["connector",{"file":"/tmp/x"}]`},
		{[]string{"a", "b"}, `["a","b"]`},
		{map[string]string{"k": "v"}, `{"k":"v"}`},
		{map[int]string{1: "a"}, `[[1,"a"]]`},
		{uint64(math.MaxUint64), `18446744073709551615`},
		{int(-7), `-7`},
		{float32(0.1), `0.1`},
		{map[any]any{}, `{}`},
		{[]any{}, `[]`},
	}
	for _, tt := range tests {
		if got := mustWrite(t, c, nil, tt.value); got != tt.want {
			t.Errorf("%#v: got %s, want %s", tt.value, got, tt.want)
		}
	}
}

func TestTypedCollectionsWithSchemas(t *testing.T) {
	c := configured(t, schemaless)
	if got := mustWrite(t, c, data.ArraySchema(data.StringSchema), []string{"x"}); got != `["x"]` {
		t.Errorf("[]string: %s", got)
	}
	if got := mustWrite(t, c, data.MapSchema(data.StringSchema, data.Int64Schema), map[string]int64{"a": 1}); got != `{"a":1}` {
		t.Errorf("map[string]int64: %s", got)
	}
}

// TestBadValuesFailCleanly checks that values that do not fit their schema
// are errors, never panics.
func TestBadValuesFailCleanly(t *testing.T) {
	point := data.NewStructSchema().Field("x", data.Int32Schema).Build()
	tests := []struct {
		name   string
		schema *data.Schema
		value  any
		err    string
	}{
		{"short struct", point, &data.Struct{Schema: point}, "Struct has 0 values for the 1 fields"},
		{"struct without schema", point, &data.Struct{}, "Mismatching schema."},
		{"field without schema", &data.Schema{Type: data.StructT, Fields: []data.Field{{Name: "a"}}},
			&data.Struct{Values: []any{1}}, `Field "a" of STRUCT has no schema`},
		{"unknown type", &data.Schema{Type: "DATE"}, 1, "Couldn't translate unsupported schema type DATE."},
		{"map without key schema", &data.Schema{Type: data.Map}, map[any]any{"a": 1}, "has no key schema"},
		{"string for int", data.Int32Schema, "1", "Invalid type for INT32: string"},
		{"struct for map", data.MapSchema(data.StringSchema, data.StringSchema), 5, "Invalid type for MAP: int"},
		{"non-string key", data.MapSchema(data.StringSchema, data.StringSchema), map[any]any{1: "a"},
			"Invalid type for STRING: int"},
		{"decimal of a time", data.DecimalSchema(2, false), "1.00", "expected Decimal but was string"},
		{"time of a decimal", data.DateSchema(false), data.NewDecimal(1, 0), "expected time.Time but was data.Decimal"},
		{"decimal without scale", &data.Schema{Type: data.Bytes, Name: data.DecimalName}, data.NewDecimal(1, 0),
			"scale parameter not found"},
		{"channel", nil, make(chan int), "Go type chan int does not have corresponding schema type."},
		{"nested error", point, data.NewStruct(point), `field "x": Conversion error: null value`},
	}
	c := NewJSON()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.FromConnectData("t", tt.schema, tt.value)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("got %v, want an error with %q", err, tt.err)
			}
			if !data.IsDataError(err) {
				t.Fatalf("%T is not a DataError", err)
			}
		})
	}
}

func TestNilDecimalIsZero(t *testing.T) {
	c := configured(t, map[string]string{"decimal.format": "NUMERIC", "schemas.enable": "false"})
	if got := mustWrite(t, c, data.DecimalSchema(0, false), data.Decimal{}); got != "0" {
		t.Fatalf("got %s", got)
	}
}

func TestReadTombstoneAndEmpty(t *testing.T) {
	c := NewJSON()
	s, v, err := c.ToConnectData("t", nil)
	if s != nil || v != nil || err != nil {
		t.Fatalf("nil input: %v %v %v", s, v, err)
	}
	if _, _, err := c.ToConnectData("t", []byte{}); err == nil || !strings.Contains(err.Error(), `requires "schema" and "payload"`) {
		t.Fatalf("empty input with schemas: %v", err)
	}
}

func TestSchemaCache(t *testing.T) {
	for _, size := range []string{"0", "1", "1000"} {
		c := configured(t, map[string]string{"schemas.cache.size": size})
		a := data.NewStructSchema().Field("a", data.Int32Schema).Build()
		b := data.NewStructSchema().Field("b", data.StringSchema).Build()
		for range 3 {
			for _, rec := range []struct {
				s    *data.Schema
				v    any
				want string
			}{
				{a, data.NewStruct(a).Put("a", int32(1)), `{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"a"}],"optional":false},"payload":{"a":1}}`},
				{b, data.NewStruct(b).Put("b", "x"), `{"schema":{"type":"struct","fields":[{"type":"string","optional":false,"field":"b"}],"optional":false},"payload":{"b":"x"}}`},
			} {
				got := mustWrite(t, c, rec.s, rec.v)
				if got != rec.want {
					t.Fatalf("cache size %s: got %s", size, got)
				}
				s1, v1, err := c.ToConnectData("t", []byte(got))
				if err != nil || !s1.Equal(rec.s) || !data.Equal(v1, rec.v) {
					t.Fatalf("cache size %s: read %v %v %v", size, s1, v1, err)
				}
			}
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	c := configured(t, map[string]string{"schemas.cache.size": "2"})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				s := data.NewStructSchema().Field("n", data.Int64Schema).Build()
				v := data.NewStruct(s).Put("n", int64(g*1000+i))
				if i%2 == 0 {
					s, v = recordSchema, recordValue()
				}
				b, err := c.FromConnectData("t", s, v)
				if err != nil {
					t.Error(err)
					return
				}
				if _, got, err := c.ToConnectData("t", b); err != nil || !data.Equal(got, v) {
					t.Errorf("round trip: %v %v", got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestSchemaContent(t *testing.T) {
	c := configured(t, map[string]string{"schema.content": `{"type":"array","items":{"type":"int8"}}`})
	s, v, err := c.ToConnectData("t", []byte(`[1,2]`))
	if err != nil || s.Type != data.Array || !data.Equal(v, []any{int8(1), int8(2)}) {
		t.Fatalf("got %v %#v %v", s, v, err)
	}
	// writing still uses the envelope, as in Java
	if got := mustWrite(t, c, data.Int8Schema, int8(1)); got != `{"schema":{"type":"int8","optional":false},"payload":1}` {
		t.Fatalf("write: %s", got)
	}
}

func TestReadErrorsNameTheField(t *testing.T) {
	in := `{"schema":{"type":"struct","fields":[{"type":"array","items":{"type":"struct","fields":[` +
		`{"type":"int16","field":"n"}]},"field":"list"}]},"payload":{"list":[{"n":1},{"n":70000}]}}`
	_, _, err := NewJSON().ToConnectData("t", []byte(in))
	if err == nil || err.Error() != `field "list": element 1: field "n": Invalid value for INT16 schema: 70000 is out of range` {
		t.Fatalf("got %v", err)
	}
}

func TestReadLimits(t *testing.T) {
	c := configured(t, schemaless)
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	if _, _, err := c.ToConnectData("t", []byte(deep)); err == nil || !strings.Contains(err.Error(), "nesting depth (1001)") {
		t.Fatalf("deep input: %v", err)
	}
	huge := `{"schema":{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"0"}},"payload":1e999999999}`
	s, v, err := NewJSON().ToConnectData("t", []byte(huge))
	if err != nil {
		t.Fatal(err)
	}
	out, err := configured(t, map[string]string{"decimal.format": "NUMERIC"}).FromConnectData("t", s, v)
	if err != nil || !strings.HasSuffix(string(out), `"payload":1E+999999999}`) {
		t.Fatalf("huge exponent: %s %v", out, err)
	}
	many := `{"a":1` + strings.Repeat(`,"a":1`, 100000) + `}`
	if _, v, err := c.ToConnectData("t", []byte(many)); err != nil || len(v.(*data.OrderedMap).Keys) != 1 {
		t.Fatalf("repeated names: %v", err)
	}
}
