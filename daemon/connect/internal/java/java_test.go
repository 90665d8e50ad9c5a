package java

import (
	"math"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connect/data"
)

func TestAppendDouble(t *testing.T) {
	tests := []struct {
		f              float64
		legacy, modern string
	}{
		{0, "0.0", "0.0"},
		{math.Copysign(0, -1), "-0.0", "-0.0"},
		{1, "1.0", "1.0"},
		{100, "100.0", "100.0"},
		{1e7, "1.0E7", "1.0E7"},
		{9999999, "9999999.0", "9999999.0"},
		{0.001, "0.001", "0.001"},
		{9.99e-4, "9.99E-4", "9.99E-4"},
		{1e23, "9.999999999999999E22", "1.0E23"},
		{2e-3, "0.002", "0.002"},
		{5e-324, "4.9E-324", "4.9E-324"},
		{math.MaxFloat64, "1.7976931348623157E308", "1.7976931348623157E308"},
		{-1.5, "-1.5", "-1.5"},
		{math.NaN(), "NaN", "NaN"},
		{math.Inf(-1), "-Infinity", "-Infinity"},
		{4.6609155413725648e16, "4.6609155413725648E16", "4.660915541372565E16"},
	}
	for _, tt := range tests {
		if got := string(AppendDouble(nil, tt.f, Legacy)); got != tt.legacy {
			t.Errorf("legacy %v: %s, want %s", tt.f, got, tt.legacy)
		}
		if got := string(AppendDouble(nil, tt.f, Shortest)); got != tt.modern {
			t.Errorf("shortest %v: %s, want %s", tt.f, got, tt.modern)
		}
	}
}

func TestAppendFloat(t *testing.T) {
	tests := []struct {
		f              float32
		legacy, modern string
	}{
		{1, "1.0", "1.0"},
		{0.1, "0.1", "0.1"},
		{1e10, "1.0E10", "1.0E10"},
		{1.17549435e-38, "1.17549435E-38", "1.1754944E-38"},
		{math.SmallestNonzeroFloat32, "1.4E-45", "1.4E-45"},
		{2.4414062e-4, "2.4414062E-4", "2.4414062E-4"},
	}
	for _, tt := range tests {
		if got := string(AppendFloat(nil, tt.f, Legacy)); got != tt.legacy {
			t.Errorf("legacy %v: %s, want %s", tt.f, got, tt.legacy)
		}
		if got := string(AppendFloat(nil, tt.f, Shortest)); got != tt.modern {
			t.Errorf("shortest %v: %s, want %s", tt.f, got, tt.modern)
		}
	}
}

func TestAppendBigDecimal(t *testing.T) {
	tests := []struct {
		unscaled int64
		scale    int32
		want     string
	}{
		{0, 0, "0"}, {0, 2, "0.00"}, {0, -2, "0E+2"}, {12, -2, "1.2E+3"}, {-5, -2, "-5E+2"},
		{1, 8, "1E-8"}, {10, 8, "1.0E-7"}, {1, 6, "0.000001"}, {123, 2, "1.23"}, {-123, 5, "-0.00123"},
		{100000000, 8, "1.00000000"},
	}
	for _, tt := range tests {
		if got := string(AppendBigDecimal(nil, big.NewInt(tt.unscaled), tt.scale)); got != tt.want {
			t.Errorf("%d scale %d: %s, want %s", tt.unscaled, tt.scale, got, tt.want)
		}
	}
}

// The hashes Java computes for the same values (java.util.Objects#hashCode).
func TestHashCode(t *testing.T) {
	big2, _ := data.ParseDecimal("123456789012345678901234.56")
	tests := []struct {
		v    any
		want int32
	}{
		{"hello", 99162322}, {int64(-1), 0}, {data.NewDecimal(-250, 2), -7748}, {big2, -1365463136},
		{math.Copysign(0, -1), math.MinInt32}, {float32(1.5), 1069547520}, {[]any{int32(1), "a"}, 1089},
		{"𝄞", 1772394}, {time.UnixMilli(1709164800123), -232183306}, {nil, 0}, {true, 1231},
	}
	for _, tt := range tests {
		if got, ok := HashCode(tt.v); !ok || got != tt.want {
			t.Errorf("HashCode(%#v) = %d %v, want %d", tt.v, got, ok, tt.want)
		}
	}
	if _, ok := HashCode([]byte{1}); ok {
		t.Error("byte arrays hash by identity in Java")
	}
}

func TestMapOrder(t *testing.T) {
	keys := []any{"z", "Aa", "b", "BB", "aa", "bb", "a", "c"}
	var got []any
	for _, i := range MapOrder(keys) {
		got = append(got, keys[i])
	}
	// a new HashMap, put Aa BB a aa b bb c z: Java iterates [Aa, BB, aa, bb, a, b, c, z]
	// ("Aa" and "BB" share a hash, and a bucket with "aa" and "bb").
	if want := []any{"Aa", "BB", "aa", "bb", "a", "b", "c", "z"}; !slices.Equal(got, want) {
		t.Fatalf("MapOrder = %v, want %v", got, want)
	}
}

func TestAppendToString(t *testing.T) {
	s := data.NewStructSchema().Field("a", data.Int32Schema).Field("b", data.OptionalStringSchema).
		Field("c", data.Float64Schema).Build()
	tests := []struct {
		v    any
		want string
	}{
		{data.NewStruct(s).Put("a", int32(1)).Put("c", 1e10), "Struct{a=1,c=1.0E10}"},
		{[]any{int64(1), nil, "x"}, "[1, null, x]"},
		{map[any]any{"region": "eu", "channel": "web"}, "{channel=web, region=eu}"},
		{time.UnixMilli(0), "Thu Jan 01 00:00:00 UTC 1970"},
		{data.NewDecimal(12, -2), "1.2E+3"},
		{float32(0.1), "0.1"},
		{[]byte("raw"), "raw"},
	}
	for _, tt := range tests {
		if got := string(AppendToString(nil, tt.v, Legacy)); got != tt.want {
			t.Errorf("%#v: %s, want %s", tt.v, got, tt.want)
		}
	}
}
