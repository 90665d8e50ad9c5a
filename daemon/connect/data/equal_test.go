package data

import (
	"math"
	"math/big"
	"testing"
	"time"
)

func TestEqual(t *testing.T) {
	point := NewStructSchema().Field("x", Int32Schema).Build()
	samePoint := NewStructSchema().Field("x", Int32Schema).Build()
	nan := math.NaN()
	tests := []struct {
		name string
		a, b any
		want bool
	}{
		{"nils", nil, nil, true},
		{"nil struct and nil", (*Struct)(nil), nil, true},
		{"same ints", int32(1), int32(1), true},
		{"ints of different types", int32(1), int64(1), false},
		{"NaN equals NaN", nan, nan, true},
		{"0.0 and -0.0", 0.0, math.Copysign(0, -1), false},
		{"bytes", []byte{1, 2}, []byte{1, 2}, true},
		{"empty and nil bytes", []byte{}, []byte(nil), true},
		{"decimal scale counts", NewDecimal(10, 1), NewDecimal(100, 2), false},
		{"decimals", NewDecimal(-5, 2), Decimal{Unscaled: big.NewInt(-5), Scale: 2}, true},
		{"nil decimal is zero", Decimal{}, NewDecimal(0, 0), true},
		{"times by instant", time.Unix(1, 0), time.Unix(1, 0).In(time.FixedZone("x", 3600)), true},
		{"structs of equal schemas", NewStruct(point).Put("x", int32(1)), NewStruct(samePoint).Put("x", int32(1)), true},
		{"structs with other values", NewStruct(point).Put("x", int32(1)), NewStruct(point).Put("x", int32(2)), false},
		{"lists of other types", []any{"a"}, []string{"a"}, true},
		{"lists", []any{int32(1)}, []any{int32(1), int32(2)}, false},
		{"maps", map[any]any{"a": 1.5}, map[string]any{"a": 1.5}, true},
		{"maps with other values", map[any]any{"a": 1.5}, map[any]any{"a": 2.5}, false},
		{"maps with decimal keys", map[any]any{NewDecimal(1, 0): "x"}, map[any]any{NewDecimal(1, 0): "x"}, true},
		{"map and list", map[any]any{}, []any{}, false},
		{"struct and nil", NewStruct(point), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Equal(tt.a, tt.b); got != tt.want {
				t.Fatalf("Equal = %v, want %v", got, tt.want)
			}
			if got := Equal(tt.b, tt.a); got != tt.want {
				t.Fatalf("Equal reversed = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSchemaEqual(t *testing.T) {
	a := DecimalSchema(2, true)
	b := &Schema{Type: Bytes, Optional: true, Name: DecimalName, Version: new(int32(1)),
		Parameters: map[string]string{"scale": "2"}}
	if !a.Equal(b) {
		t.Fatal("equal decimal schemas differ")
	}
	b.Parameters["scale"] = "3"
	if a.Equal(b) {
		t.Fatal("schemas with other parameters are equal")
	}
	if !(&Schema{Type: String}).Equal(&Schema{Type: String, Parameters: map[string]string{}}) {
		t.Fatal("nil and empty parameters differ")
	}
	if (&Schema{Type: Int32, Default: int32(1)}).Equal(&Schema{Type: Int32, Default: int32(2)}) {
		t.Fatal("schemas with other defaults are equal")
	}
	if (&Schema{Type: Int32}).Equal(nil) || !(*Schema)(nil).Equal(nil) {
		t.Fatal("nil schemas")
	}
	s1 := NewStructSchema().Field("a", Int32Schema).Field("b", StringSchema).Build()
	s2 := NewStructSchema().Field("b", StringSchema).Field("a", Int32Schema).Build()
	if s1.Equal(s2) {
		t.Fatal("field order does not count")
	}
}

func TestSelfReferentialStructDefault(t *testing.T) {
	mk := func() *Schema {
		s := NewStructSchema().Field("a", Int32Schema).Build()
		s.Default = NewStruct(s).Put("a", int32(1))
		return s
	}
	if !mk().Equal(mk()) {
		t.Fatal("equal schemas with struct defaults differ")
	}
}
