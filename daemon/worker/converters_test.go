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
// booleans into a per-batch buffer with appendSimpleHeader, which
// FromConnectData uses too: the bytes are the converter's, and the
// buffer's earlier contents are kept.
func TestAppendSimpleHeaderMatchesConverter(t *testing.T) {
	var c simpleHeaderConverter
	for _, tc := range []struct {
		v    any
		want string
	}{
		{true, "true"}, {false, "false"}, {int8(-128), "-128"}, {int16(300), "300"}, {int32(7), "7"},
		{int64(1 << 40), "1099511627776"}, {int64(-1), "-1"}, {int(-3), "-3"},
		{float32(1.5), "1.5"}, {float32(0.1), "0.1"}, {float64(0.1), "0.1"}, {1e21, "1e+21"},
		{math.Inf(-1), "-Inf"}, {math.NaN(), "NaN"},
	} {
		got, ok := appendSimpleHeader([]byte("prefix"), tc.v)
		if !ok || string(got) != "prefix"+tc.want {
			t.Errorf("appendSimpleHeader(%T %v) = %q (ok %v), want prefix%q", tc.v, tc.v, got, ok, tc.want)
		}
		if b, err := c.FromConnectData("t", nil, tc.v); err != nil || string(b) != tc.want {
			t.Errorf("FromConnectData(%T %v) = %q, %v, want %q", tc.v, tc.v, b, err, tc.want)
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

// A sink reads header bytes in place with the simple header converter,
// to the same values as ToConnectData.
func TestSimpleHeaderConverterShared(t *testing.T) {
	var c simpleHeaderConverter
	for _, b := range [][]byte{nil, {}, []byte("42"), {0xff}} {
		ws, wv, _ := c.ToConnectData("t", b)
		gs, gv, _ := c.ToConnectDataShared("t", b)
		if ws != gs || wv != gv {
			t.Errorf("%q: shared %v %#v, want %v %#v", b, gs, gv, ws, wv)
		}
	}
	var _ sharedReader = simpleHeaderConverter{}
	var _ sharedReader = &converter.StringConverter{}
}
