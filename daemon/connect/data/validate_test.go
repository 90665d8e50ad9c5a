package data

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	point := NewStructSchema().Name("Point").Field("x", Int32Schema).Field("y", OptionalInt32Schema).Build()
	samePoint := NewStructSchema().Name("Point").Field("x", Int32Schema).Field("y", OptionalInt32Schema).Build()
	otherPoint := NewStructSchema().Name("Point").Field("x", Int64Schema).Build()
	withDefault := NewStructSchema().Field("d", &Schema{Type: Int32, Default: int32(1)}).Build()
	tests := []struct {
		name   string
		schema *Schema
		value  any
		err    string // "" for valid
	}{
		{"int8", Int8Schema, int8(1), ""},
		{"int32 given int64", Int32Schema, int64(1), "Invalid Go value for schema with type INT32: int64 for value"},
		{"int given for int64", Int64Schema, 1, "with type INT64: int for value"},
		{"float32", Float32Schema, float32(1), ""},
		{"bytes", BytesSchema, []byte{1}, ""},
		{"string given bytes", StringSchema, []byte("x"), "with type STRING: []uint8"},
		{"required null", StringSchema, nil, "Invalid value: null used for required value, schema type: STRING"},
		{"optional null", OptionalStringSchema, nil, ""},
		{"no schema", nil, struct{}{}, ""},
		{"array", ArraySchema(Int32Schema), []any{int32(1), int32(2)}, ""},
		{"typed slice", ArraySchema(StringSchema), []string{"a"}, ""},
		{"array element", ArraySchema(Int32Schema), []any{int32(1), "x"},
			"with type INT32: string for element of array value"},
		{"array null element", ArraySchema(Int32Schema), []any{nil},
			"null used for required element of array value"},
		{"array without element schema", &Schema{Type: Array}, []any{1}, "No schema defined for element of array value"},
		{"bytes are not an array", ArraySchema(Int8Schema), []byte{1}, "with type ARRAY: []uint8"},
		{"map", MapSchema(StringSchema, Int64Schema), map[any]any{"a": int64(1)}, ""},
		{"typed map", MapSchema(StringSchema, Int64Schema), map[string]int64{"a": 1}, ""},
		{"map key", MapSchema(StringSchema, Int64Schema), map[any]any{int32(1): int64(1)},
			"with type STRING: int32 for key of map value"},
		{"map value", MapSchema(StringSchema, Int64Schema), map[any]any{"a": "b"},
			"with type INT64: string for value of map value"},
		{"struct", point, NewStruct(point).Put("x", int32(1)), ""},
		{"struct of an equal schema", point, NewStruct(samePoint).Put("x", int32(1)), ""},
		{"struct of another schema", point, NewStruct(otherPoint).Put("x", int64(1)), "Struct schemas do not match."},
		{"struct field", point, NewStruct(point).Put("x", "1"), `with type INT32: string for field: "x"`},
		{"struct required field unset", point, NewStruct(point), `null used for required field: "x"`},
		{"struct required field with default unset", withDefault, NewStruct(withDefault), ""},
		{"nil struct", point, (*Struct)(nil), "null used for required value"},
		{"struct short values", point, &Struct{Schema: point, Values: []any{int32(1)}}, "Struct has 1 values for the 2 fields"},
		{"decimal", DecimalSchema(2, false), NewDecimal(1, 2), ""},
		{"decimal given bytes", DecimalSchema(2, false), []byte{1},
			`schema "org.apache.kafka.connect.data.Decimal" with type BYTES: []uint8`},
		{"date", DateSchema(false), time.Unix(0, 0), ""},
		{"date given int32", DateSchema(false), int32(1), "with type INT32: int32"},
		{"timestamp", TimestampSchema(true), time.Now(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.schema, tt.value)
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("want an error with %q, got %v", tt.err, err)
			case err != nil && !IsDataError(err):
				t.Fatalf("%v is not a *DataError", err)
			}
		})
	}
}

func TestStructValidateBadIndex(t *testing.T) {
	s := &Schema{Type: StructT, Fields: []Field{{Name: "a", Schema: Int32Schema}, {Name: "b", Schema: Int32Schema}}}
	err := (&Struct{Schema: s, Values: []any{int32(1), int32(2)}}).Validate()
	if err == nil || !strings.Contains(err.Error(), `"b" has index 0 but is at position 1`) {
		t.Fatalf("got %v", err)
	}
}
