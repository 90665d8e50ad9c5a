package data

import (
	"bytes"
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestTwosComplement(t *testing.T) {
	tests := []struct {
		v    string
		want []byte
	}{
		{"0", []byte{0}}, {"1", []byte{1}}, {"127", []byte{0x7f}}, {"128", []byte{0, 0x80}},
		{"-1", []byte{0xff}}, {"-128", []byte{0x80}}, {"-129", []byte{0xff, 0x7f}},
		{"255", []byte{0, 0xff}}, {"-256", []byte{0xff, 0}}, {"-32768", []byte{0x80, 0}},
		{"-9223372036854775808", []byte{0x80, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		v, _ := new(big.Int).SetString(tt.v, 10)
		got := TwosComplement(v)
		if !bytes.Equal(got, tt.want) {
			t.Errorf("TwosComplement(%s) = %x, want %x", tt.v, got, tt.want)
		}
		if back := FromTwosComplement(got); back.Cmp(v) != 0 {
			t.Errorf("FromTwosComplement(%x) = %s, want %s", got, back, tt.v)
		}
	}
}

func TestDecimalBytes(t *testing.T) {
	s := DecimalSchema(2, false)
	b, err := DecimalToBytes(s, NewDecimal(-12345, 2))
	if err != nil {
		t.Fatal(err)
	}
	d, err := DecimalFromBytes(s, b)
	if err != nil || !Equal(d, NewDecimal(-12345, 2)) {
		t.Fatalf("round trip: %v %v", d, err)
	}
	if _, err := DecimalToBytes(s, NewDecimal(1, 1)); err == nil ||
		!strings.Contains(err.Error(), "Schema has scale 2, value has scale 1.") {
		t.Fatalf("scale mismatch: %v", err)
	}
	if _, err := DecimalFromBytes(s, nil); err == nil {
		t.Fatal("empty bytes read")
	}
	if _, err := DecimalScale(&Schema{Type: Bytes, Name: DecimalName}); err == nil ||
		!strings.Contains(err.Error(), "scale parameter not found") {
		t.Fatalf("no scale: %v", err)
	}
	if _, err := DecimalScale(&Schema{Parameters: map[string]string{"scale": "x"}}); err == nil {
		t.Fatal("bad scale read")
	}
}

func TestDecimalString(t *testing.T) {
	tests := map[string]Decimal{
		"0": {}, "0.00": NewDecimal(0, 2), "-0.05": NewDecimal(-5, 2), "1.50": NewDecimal(150, 2),
		"1200": NewDecimal(12, -2), "-123": NewDecimal(-123, 0), "12.3": NewDecimal(123, 1),
	}
	for want, d := range tests {
		if got := d.String(); got != want {
			t.Errorf("%v.String() = %q, want %q", d, got, want)
		}
	}
}

func TestParseDecimal(t *testing.T) {
	tests := []struct {
		in       string
		unscaled string
		scale    int32
	}{
		{"1.50", "150", 2}, {"-0.0", "0", 1}, {"5", "5", 0}, {"1e3", "1", -3}, {"1.5E+2", "15", -1},
		{"-1.23e-4", "-123", 6}, {"007", "7", 0}, {".5", "5", 1}, {"5.", "5", 0}, {"+2", "2", 0},
	}
	for _, tt := range tests {
		d, err := ParseDecimal(tt.in)
		if err != nil {
			t.Errorf("ParseDecimal(%q): %v", tt.in, err)
			continue
		}
		if d.Unscaled.String() != tt.unscaled || d.Scale != tt.scale {
			t.Errorf("ParseDecimal(%q) = %s scale %d, want %s scale %d", tt.in, d.Unscaled, d.Scale, tt.unscaled, tt.scale)
		}
	}
	for _, bad := range []string{"", "-", ".", "e5", "1e", "1e+", "1x", "1.2.3", "1e99999999999", "1e-2147483649"} {
		if _, err := ParseDecimal(bad); err == nil {
			t.Errorf("ParseDecimal(%q) succeeded", bad)
		}
	}
}

func TestDates(t *testing.T) {
	if got := DateFromDays(19000); !got.Equal(time.Date(2022, 1, 8, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("DateFromDays = %v", got)
	}
	if d, err := DateToDays(time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)); err != nil || d != -1 {
		t.Fatalf("DateToDays = %d %v", d, err)
	}
	if _, err := DateToDays(time.Date(2024, 1, 1, 0, 0, 0, 1, time.UTC)); err == nil {
		t.Fatal("a date with nanoseconds")
	}
	if ms, err := TimeToMillis(time.UnixMilli(86400000)); err != nil || ms != 86400000 {
		t.Fatalf("TimeToMillis = %d %v", ms, err)
	}
	if _, err := TimeToMillis(time.UnixMilli(-1)); err == nil {
		t.Fatal("a time before the epoch")
	}
	if _, err := TimeFromMillis(86400001); err == nil {
		t.Fatal("a time after the first day")
	}
	if got := TimestampToMillis(TimestampFromMillis(-62135596800000)); got != -62135596800000 {
		t.Fatalf("timestamp round trip = %d", got)
	}
}

func TestParameters(t *testing.T) {
	s := (&Schema{Type: String}).SetParameter("b", "1").SetParameter("a", "2").SetParameter("b", "3")
	s.Parameters["c"] = "4" // set directly: written after the ordered ones
	if got := strings.Join(s.ParameterKeys(), ","); got != "b,a,c" {
		t.Fatalf("ParameterKeys = %s", got)
	}
	if s.Parameters["b"] != "3" {
		t.Fatal("SetParameter did not replace")
	}
}
