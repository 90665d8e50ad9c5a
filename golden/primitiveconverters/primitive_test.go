package primitiveconverters

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/daemon/connect/converter"
	"github.com/kcd-project/kcd/daemon/connect/data"
)

type fixture struct {
	Op     string  `json:"op"`
	Class  string  `json:"class"`
	Value  *string `json:"value"`
	Bytes  *string `json:"bytes"`
	Schema string  `json:"schema"`
	Error  bool    `json:"error"`
}

// kcd's primitive converters write the bytes Kafka Connect's write, read
// back the values Kafka Connect's read, and refuse what Kafka Connect's
// refuse, as key, value and header converters alike.
func TestPrimitiveConvertersMatchKafkaConnect(t *testing.T) {
	f, err := os.Open("testdata/primitive.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		var fx fixture
		if err := json.Unmarshal(sc.Bytes(), &fx); err != nil {
			t.Fatalf("%s: %v", sc.Bytes(), err)
		}
		n++
		c, err := converter.New(fx.Class)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Configure(map[string]string{"converter.type": "value"}, false); err != nil {
			t.Fatal(err)
		}
		switch fx.Op {
		case "write":
			v := goValue(t, fx.Value)
			got, err := c.FromConnectData("t", nil, v)
			if err != nil || !sameBytes(got, fx.Bytes) {
				t.Errorf("%s: write %v: %x, %v; want %v", fx.Class, fx.Value, got, err, show(fx.Bytes))
			}
		case "read":
			var in []byte
			if fx.Bytes != nil {
				in, _ = hex.DecodeString(*fx.Bytes)
				if in == nil {
					in = []byte{}
				}
			}
			schema, v, err := c.ToConnectData("t", in)
			switch {
			case fx.Error:
				if err == nil || !data.IsDataError(err) {
					t.Errorf("%s: read %v: %v, %v; want a data error", fx.Class, show(fx.Bytes), v, err)
				}
			case err != nil:
				t.Errorf("%s: read %v: %v", fx.Class, show(fx.Bytes), err)
			case string(schema.Type) != fx.Schema || !schema.Optional:
				t.Errorf("%s: read %v: schema %v, want optional %s", fx.Class, show(fx.Bytes), schema, fx.Schema)
			case !sameValue(v, goValue(t, fx.Value)):
				t.Errorf("%s: read %v: %#v, want %v", fx.Class, show(fx.Bytes), v, show(fx.Value))
			}
		}
	}
	if err := sc.Err(); err != nil || n < 100 {
		t.Fatalf("read %d fixtures: %v", n, err)
	}
}

// A value of another type is refused, not truncated.
func TestPrimitiveConvertersRefuseOtherTypes(t *testing.T) {
	for class, v := range map[string]any{
		converter.ShortClass: int32(1), converter.IntegerClass: int64(1), converter.LongClass: int32(1),
		converter.FloatClass: float64(1), converter.DoubleClass: float32(1), converter.BooleanClass: "true",
	} {
		c, _ := converter.New(class)
		if b, err := c.FromConnectData("t", nil, v); err == nil || !data.IsDataError(err) {
			t.Errorf("%s took a %T: %x, %v", class, v, b, err)
		}
	}
	if _, err := (converter.BooleanConverter{}).FromConnectData("t", data.OptionalInt32Schema, true); err == nil ||
		err.Error() != "Invalid schema type for BooleanConverter: INT32" {
		t.Errorf("BooleanConverter with an INT32 schema: %v", err)
	}
}

// goValue is a fixture's value ("Integer:5", "f32:3fc00000") as kcd's data
// model holds it.
func goValue(t *testing.T, s *string) any {
	t.Helper()
	if s == nil {
		return nil
	}
	kind, text, _ := strings.Cut(*s, ":")
	var v any
	var err error
	switch kind {
	case "Boolean":
		v, err = strconv.ParseBool(text)
	case "Short":
		var n int64
		n, err = strconv.ParseInt(text, 10, 16)
		v = int16(n)
	case "Integer":
		var n int64
		n, err = strconv.ParseInt(text, 10, 32)
		v = int32(n)
	case "Long":
		v, err = strconv.ParseInt(text, 10, 64)
	case "f32":
		var n uint64
		n, err = strconv.ParseUint(text, 16, 32)
		v = math.Float32frombits(uint32(n))
	case "f64":
		var n uint64
		n, err = strconv.ParseUint(text, 16, 64)
		v = math.Float64frombits(n)
	default:
		t.Fatalf("fixture value %q", *s)
	}
	if err != nil {
		t.Fatalf("fixture value %q: %v", *s, err)
	}
	return v
}

// sameValue compares floats by their bits (NaN, -0).
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float32:
		y, ok := b.(float32)
		return ok && math.Float32bits(x) == math.Float32bits(y)
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	}
	return a == b
}

func sameBytes(got []byte, want *string) bool {
	if want == nil {
		return got == nil
	}
	w, _ := hex.DecodeString(*want)
	return got != nil && bytes.Equal(got, w)
}

func show(s *string) string {
	if s == nil {
		return "null"
	}
	return strconv.Quote(*s)
}
