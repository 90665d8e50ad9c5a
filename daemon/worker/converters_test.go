package worker

import (
	"math"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connect/converter"
)

// testConverters is what the node will pass as Config.Converters.
func testConverters(class string) (Converter, error) { return converter.New(class) }

// The source loop formats the simple header converter's numbers and
// booleans into a per-batch buffer: the bytes must be the converter's,
// and the buffer's earlier contents kept.
func TestAppendSimpleHeaderMatchesConverter(t *testing.T) {
	var c simpleHeaderConverter
	for _, v := range []any{true, false, int8(-128), int16(300), int32(7), int64(1 << 40), int64(-1), int(-3),
		float32(1.5), float32(0.1), float64(0.1), 1e21, math.Inf(-1), math.NaN()} {
		want, err := c.FromConnectData("t", nil, v)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendSimpleHeader([]byte("prefix"), v)
		if !ok || string(got) != "prefix"+string(want) {
			t.Errorf("%T %v: %q (ok %v), want prefix%q", v, v, got, ok, want)
		}
	}
	// Everything else is left to FromConnectData: nil stays a null
	// header, an empty string an empty one, []byte is not copied.
	for _, v := range []any{nil, "", "x", []byte("b"), time.Second} {
		if got, ok := appendSimpleHeader([]byte("prefix"), v); ok || string(got) != "prefix" {
			t.Errorf("%T %v: appended %q", v, v, got)
		}
	}
}
