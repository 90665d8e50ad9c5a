package jsonconverter_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/kcd-project/kcd/daemon/connect/data"
)

// writeCase rebuilds the schema and value of a fromConnectData case of
// Capture.java; input is the fixture's "input" (float bits for sweeps).
type writeCase func(input json.RawMessage) (*data.Schema, any, error)

func fixed(s *data.Schema, v any) writeCase {
	return func(json.RawMessage) (*data.Schema, any, error) { return s, v, nil }
}

// Schema helpers, named after Java's SchemaBuilder calls.
func arr(elem *data.Schema) *data.Schema      { return data.ArraySchema(elem) }
func mp(k, v *data.Schema) *data.Schema       { return data.MapSchema(k, v) }
func opt(s *data.Schema) *data.Schema         { c := *s; c.Optional = true; return &c }
func dflt(s *data.Schema, d any) *data.Schema { c := *s; c.Default = d; return &c }

func prim(t data.Type) *data.Schema { return &data.Schema{Type: t} }

var point = data.NewStructSchema().Name("com.example.Point").
	Field("x", data.Int32Schema).Field("y", data.Int32Schema).Build()

func pt(x, y int32) *data.Struct { return data.NewStruct(point).Put("x", x).Put("y", y) }

func day(n int64) time.Time  { return time.UnixMilli(n * 86400000).UTC() }
func msec(n int64) time.Time { return time.UnixMilli(n).UTC() }

func dec(s string) data.Decimal {
	d, err := data.ParseDecimal(s)
	if err != nil {
		panic(err)
	}
	return d
}

func decU(unscaled int64, scale int32) data.Decimal { return data.NewDecimal(unscaled, scale) }

func list(v ...any) []any { return v }

// hm builds a map[any]any from k1, v1, k2, v2….
func hm(kv ...any) map[any]any {
	m := map[any]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func version(v int32) *int32 { return &v }

// bitsSweep rebuilds a sweep of doubles (or floats) from their hex bits.
func bitsSweep(single bool) writeCase {
	return func(in json.RawMessage) (*data.Schema, any, error) {
		var hexes []string
		if err := json.Unmarshal(in, &hexes); err != nil {
			return nil, nil, err
		}
		vals := make([]any, len(hexes))
		for i, h := range hexes {
			u, err := strconv.ParseUint(h, 16, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("bits %q: %w", h, err)
			}
			if single {
				vals[i] = math.Float32frombits(uint32(u))
			} else {
				vals[i] = math.Float64frombits(u)
			}
		}
		if single {
			return arr(data.Float32Schema), vals, nil
		}
		return arr(data.Float64Schema), vals, nil
	}
}

func writeCases() map[string]writeCase {
	c := map[string]writeCase{
		"boolean_true":  fixed(data.BooleanSchema, true),
		"boolean_false": fixed(data.BooleanSchema, false),
		"int8_min":      fixed(data.Int8Schema, int8(math.MinInt8)),
		"int8_max":      fixed(data.Int8Schema, int8(math.MaxInt8)),
		"int16_min":     fixed(data.Int16Schema, int16(math.MinInt16)),
		"int16_max":     fixed(data.Int16Schema, int16(math.MaxInt16)),
		"int32_min":     fixed(data.Int32Schema, int32(math.MinInt32)),
		"int32_max":     fixed(data.Int32Schema, int32(math.MaxInt32)),
		"int32_zero":    fixed(data.Int32Schema, int32(0)),
		"int64_min":     fixed(data.Int64Schema, int64(math.MinInt64)),
		"int64_max":     fixed(data.Int64Schema, int64(math.MaxInt64)),
		"float32_one":   fixed(data.Float32Schema, float32(1)),
		"float64_one":   fixed(data.Float64Schema, 1.0),
		"float64_1e10":  fixed(data.Float64Schema, 1e10),
		"float32_values": fixed(arr(data.Float32Schema), list(float32(0), float32(math.Copysign(0, -1)), float32(1),
			float32(-1.5), float32(0.1), float32(1e-3), float32(9.999e-4), float32(1e7), float32(9999999),
			float32(1e10), float32(math.MaxFloat32), float32(math.SmallestNonzeroFloat32), float32(1.17549435e-38),
			float32(16777216), float32(123456.79), float32(math.Pi), float32(1e-5), float32(100), float32(3.4e38))),
		"float64_values": fixed(arr(data.Float64Schema), list(0.0, math.Copysign(0, -1), 1.0, -1.5, 0.1, 0.001,
			9.99e-4, 1e7, 9999999.0, 1e10, 1e21, 1e22, 1e23, math.MaxFloat64, math.SmallestNonzeroFloat64,
			2.2250738585072014e-308, 9007199254740993.0, 123456789.123, math.Pi, math.E, -2.5e-300, 100.0,
			1234567.0, 12345678.0, 0.5, 1e-5, 2e-3, 4.35, 0.3, 2.0e-7, 5.0e-324)),
		"float64_special":        fixed(arr(data.Float64Schema), list(math.NaN(), math.Inf(1), math.Inf(-1))),
		"float32_special":        fixed(arr(data.Float32Schema), list(float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)))),
		"float64_nan_schemaless": fixed(nil, math.NaN()),
		"float64_sweep":          bitsSweep(false),
		"float32_sweep":          bitsSweep(true),

		"string_simple":  fixed(data.StringSchema, "hello"),
		"string_empty":   fixed(data.StringSchema, ""),
		"string_unicode": fixed(data.StringSchema, "héllo wörld ✓ 𝄞 日本語"),
		"string_escapes": fixed(data.StringSchema, "\u0000\u0001\u0007\b\t\n\u000b\f\r\u001f \u007f"+
			" \"q\" back\\slash /slash <html>&amp; \u2028\u2029 \ufeff end"),
		"bytes_empty": fixed(data.BytesSchema, []byte{}),
		"bytes_small": fixed(data.BytesSchema, []byte{0, 1, 2, 3, 255, 254, 128, 127}),
		"bytes_pad1":  fixed(data.BytesSchema, []byte{0xfb}),
		"bytes_pad2":  fixed(data.BytesSchema, []byte{0xfb, 0xff}),
		"bytes_all": func(json.RawMessage) (*data.Schema, any, error) {
			b := make([]byte, 256)
			for i := range b {
				b[i] = byte(i)
			}
			return data.BytesSchema, b, nil
		},
	}
	for name, wc := range nullAndDefaultCases() {
		c[name] = wc
	}
	for name, wc := range collectionCases() {
		c[name] = wc
	}
	for name, wc := range structCases() {
		c[name] = wc
	}
	for name, wc := range logicalCases() {
		c[name] = wc
	}
	for name, wc := range schemalessCases() {
		c[name] = wc
	}
	return c
}

func nullAndDefaultCases() map[string]writeCase {
	optString := dflt(data.OptionalStringSchema, "dflt")
	defaults := data.NewStructSchema().Name("com.example.Defaults").
		Field("b", dflt(data.OptionalBooleanSchema, true)).
		Field("i8", dflt(data.OptionalInt8Schema, int8(-8))).
		Field("i16", dflt(data.OptionalInt16Schema, int16(-16))).
		Field("i32", dflt(data.OptionalInt32Schema, int32(32))).
		Field("i64", dflt(data.OptionalInt64Schema, int64(-64))).
		Field("f32", dflt(data.OptionalFloat32Schema, float32(1.5))).
		Field("f64", dflt(data.OptionalFloat64Schema, 2.5)).
		Field("s", dflt(data.OptionalStringSchema, "str")).
		Field("by", dflt(data.OptionalBytesSchema, []byte{1, 2, 3})).
		Field("arr", dflt(opt(arr(data.Int32Schema)), list(int32(1), int32(2)))).
		Field("map", dflt(opt(mp(data.StringSchema, data.Int32Schema)), hm("a", int32(1)))).
		Field("dec", dflt(data.DecimalSchema(2, true), dec("1.23"))).
		Field("date", dflt(data.DateSchema(true), day(19000))).
		Field("time", dflt(data.TimeSchema(true), msec(45296789))).
		Field("ts", dflt(data.TimestampSchema(true), msec(1709164800123))).
		Build()
	metadata := &data.Schema{Type: data.Int32, Name: "com.example.Id", Version: version(3), Doc: "an id"}
	metadata.SetParameter("b", "2").SetParameter("a", "1").SetParameter("c", "3")
	escapes := &data.Schema{Type: data.String, Name: "n\"ame", Doc: "line1\nline2\t\u00e9"}
	escapes.SetParameter("k\"", "v\\")
	return map[string]writeCase{
		"tombstone":                       fixed(nil, nil),
		"tombstone_schemaless":            fixed(nil, nil),
		"optional_null_int32":             fixed(data.OptionalInt32Schema, nil),
		"optional_null_string":            fixed(data.OptionalStringSchema, nil),
		"optional_null_no_envelope":       fixed(data.OptionalInt32Schema, nil),
		"required_null_error":             fixed(data.Int32Schema, nil),
		"null_schema_value":               fixed(nil, int64(42)),
		"required_null_default":           fixed(dflt(data.Int32Schema, int32(42)), nil),
		"optional_default_null":           fixed(optString, nil),
		"optional_default_null_noreplace": fixed(optString, nil),
		"optional_default_set":            fixed(optString, "given"),
		"required_default_null_noreplace": fixed(dflt(data.Int32Schema, int32(7)), nil),
		"defaults_all":                    fixed(defaults, data.NewStruct(defaults)),
		"defaults_all_noreplace":          fixed(defaults, data.NewStruct(defaults)),
		"defaults_all_numeric":            fixed(defaults, data.NewStruct(defaults)),
		"schema_metadata":                 fixed(metadata, int32(5)),
		"schema_empty_parameters":         fixed(&data.Schema{Type: data.String, Parameters: map[string]string{}}, "x"),
		"schema_metadata_escapes":         fixed(escapes, "x"),
	}
}

func collectionCases() map[string]writeCase {
	str, i32 := data.StringSchema, data.Int32Schema
	return map[string]writeCase{
		"array_int32":                 fixed(arr(i32), list(int32(1), int32(2), int32(3))),
		"array_empty":                 fixed(arr(i32), list()),
		"array_optional_elements":     fixed(arr(data.OptionalInt32Schema), list(int32(1), nil, int32(3))),
		"array_nested":                fixed(arr(arr(str)), list(list("a"), list(), list("b", "c"))),
		"array_of_structs":            fixed(arr(point), list(pt(1, 2), pt(3, 4))),
		"array_required_null_element": fixed(arr(i32), list(int32(1), nil)),
		"array_optional_null":         fixed(opt(arr(i32)), nil),

		"map_string_keys_one": fixed(mp(str, i32), hm("a", int32(1))),
		"map_string_keys_many": fixed(mp(str, i32), hm("alpha", int32(1), "beta", int32(2), "delta", int32(4),
			"epsilon", int32(5), "eta", int32(7), "gamma", int32(3), "iota", int32(9), "kappa", int32(10),
			"lambda", int32(11), "mu", int32(12), "nu", int32(13), "theta", int32(8), "xi", int32(14), "zeta", int32(6))),
		"map_string_keys_collide": fixed(mp(str, i32), hm("Aa", int32(1), "AaAa", int32(2), "AaBB", int32(3),
			"BB", int32(4), "BBAa", int32(5), "BBBB", int32(6))),
		"map_int_keys": fixed(mp(i32, str), hm(int32(-3), "minus three", int32(1), "one", int32(2), "two",
			int32(100000), "big")),
		"map_empty_string_keys": fixed(mp(str, i32), hm()),
		"map_empty_int_keys":    fixed(mp(i32, i32), hm()),
		"map_of_maps": fixed(mp(str, mp(data.Int64Schema, data.BooleanSchema)),
			hm("x", hm(int64(1), true, int64(2), false), "y", hm())),
		"map_struct_values":   fixed(mp(str, point), hm("p", pt(1, 2), "q", pt(-1, 0))),
		"map_optional_values": fixed(mp(str, data.OptionalStringSchema), hm("a", nil, "b", "x")),
		"map_boolean_keys":    fixed(mp(data.BooleanSchema, data.Int8Schema), hm(false, int8(0), true, int8(1))),
		"map_int64_keys": fixed(mp(data.Int64Schema, str), hm(int64(math.MinInt64), "min", int64(-1), "minus one",
			int64(0), "zero", int64(42), "answer", int64(math.MaxInt64), "max")),
		"map_float64_keys": fixed(mp(data.Float64Schema, str), hm(math.Copysign(0, -1), "b", 0.1, "d", 1.5, "a",
			1e10, "c")),
		"map_decimal_keys": fixed(mp(data.DecimalSchema(2, false), str), hm(dec("-2.50"), "b", dec("0.00"), "z",
			dec("1.00"), "a", dec("123456789012345678901234.56"), "c")),
		"map_date_keys":   fixed(mp(data.DateSchema(false), str), hm(day(0), "epoch", day(19000), "later")),
		"map_struct_keys": fixed(mp(point, str), hm(pt(1, 2), "p")),
	}
}

func structCases() map[string]writeCase {
	flat := data.NewStructSchema().Name("com.example.Flat").
		Field("b", data.BooleanSchema).Field("i8", data.Int8Schema).Field("i16", data.Int16Schema).
		Field("i32", data.Int32Schema).Field("i64", data.Int64Schema).
		Field("f32", data.Float32Schema).Field("f64", data.Float64Schema).
		Field("s", data.StringSchema).Field("by", data.BytesSchema).Build()
	inner := data.NewStructSchema().Name("com.example.Inner").Optional().
		Field("label", data.OptionalStringSchema).Build()
	outer := data.NewStructSchema().Name("com.example.Outer").
		Field("id", data.Int64Schema).Field("inner", inner).Field("missing", inner).
		Field("points", arr(point)).Build()
	optFields := data.NewStructSchema().Field("a", data.OptionalStringSchema).Field("b", data.OptionalInt64Schema).Build()
	order := data.NewStructSchema().Field("z", data.Int32Schema).Field("a", data.Int32Schema).
		Field("m", data.Int32Schema).Build()
	names := data.NewStructSchema().Field("ünïcödé", data.Int32Schema).Field("with space", data.Int32Schema).
		Field("quote\"d", data.Int32Schema).Build()
	supp := data.NewStructSchema().Name("n𝄞").Doc("d𝄞").Field("clef 𝄞", data.StringSchema).
		Field("m", mp(data.StringSchema, data.StringSchema)).Build()
	meta := data.NewStructSchema().Name("com.example.Meta").Version(2).Doc("documented").
		Parameter("p", "q").Field("v", data.Int32Schema).Build()
	other := data.NewStructSchema().Name("com.example.Point").Field("x", data.Int32Schema).Build()
	pointCopy := data.NewStructSchema().Name("com.example.Point").
		Field("x", data.Int32Schema).Field("y", data.Int32Schema).Build()
	return map[string]writeCase{
		"struct_flat": fixed(flat, data.NewStruct(flat).Put("b", true).Put("i8", int8(8)).Put("i16", int16(16)).
			Put("i32", int32(32)).Put("i64", int64(64)).Put("f32", float32(3.25)).Put("f64", -6.5).
			Put("s", "text").Put("by", []byte{9, 8, 7})),
		"struct_nested": fixed(outer, data.NewStruct(outer).Put("id", int64(1)).
			Put("inner", data.NewStruct(inner).Put("label", "in")).Put("points", list(pt(5, 6)))),
		"struct_optional_fields_unset": fixed(optFields, data.NewStruct(optFields)),
		"struct_field_order": fixed(order, data.NewStruct(order).Put("a", int32(1)).Put("m", int32(2)).
			Put("z", int32(3))),
		"struct_optional_null": fixed(inner, nil),
		"struct_field_names": fixed(names, data.NewStruct(names).Put("ünïcödé", int32(1)).
			Put("with space", int32(2)).Put("quote\"d", int32(3))),
		"supplementary_characters": fixed(supp, data.NewStruct(supp).Put("clef 𝄞", "𝄞").
			Put("m", hm("a", "𝄞", "𝄞", "x"))),
		"struct_metadata":             fixed(meta, data.NewStruct(meta).Put("v", int32(1))),
		"struct_schema_mismatch":      fixed(other, pt(1, 2)),
		"struct_equal_schema":         fixed(pointCopy, pt(7, 8)),
		"struct_required_field_unset": fixed(point, data.NewStruct(point).Put("x", int32(1))),
		"wrong_type_error":            fixed(data.Int32Schema, int64(5)),
	}
}

func logicalCases() map[string]writeCase {
	ten30, _ := new(big.Int).SetString("1000000000000000000000000000000", 10)
	values := map[string]struct {
		scale int32
		vals  []any
	}{
		"s0": {0, list(dec("0"), dec("1"), dec("-1"), dec("127"), dec("128"), dec("-128"), dec("-129"), dec("255"),
			dec("256"), dec("32767"), dec("-32768"), dec("9223372036854775807"), dec("-9223372036854775808"),
			data.Decimal{Unscaled: ten30}, data.Decimal{Unscaled: new(big.Int).Neg(ten30)})},
		"s2":    {2, list(dec("0.00"), dec("1.23"), dec("-1.23"), dec("0.01"), dec("-0.01"), dec("12345678901234567890.12"))},
		"s10":   {10, list(decU(1, 10), dec("-1234.5678901234"))},
		"sneg2": {-2, list(decU(12, -2), decU(0, -2), decU(-5, -2))},
	}
	c := map[string]writeCase{}
	for name, v := range values {
		c["decimal_"+name+"_base64"] = fixed(arr(data.DecimalSchema(v.scale, false)), v.vals)
		c["decimal_"+name+"_numeric"] = fixed(arr(data.DecimalSchema(v.scale, false)), v.vals)
	}
	logical := data.NewStructSchema().Name("com.example.Logical").
		Field("date", data.DateSchema(true)).Field("time", data.TimeSchema(true)).
		Field("ts", data.TimestampSchema(true)).Field("dec", data.DecimalSchema(3, true)).
		Field("date_null", data.DateSchema(true)).Field("dec_null", data.DecimalSchema(3, true)).Build()
	logicalValue := data.NewStruct(logical).Put("date", day(19000)).Put("time", msec(1000)).
		Put("ts", msec(1709164800123)).Put("dec", dec("-1.005"))
	for name, wc := range map[string]writeCase{
		"decimal_s8_numeric": fixed(arr(data.DecimalSchema(8, false)),
			list(decU(1, 8), decU(10, 8), decU(100000000, 8), decU(123456789, 8))),
		"decimal_single":                 fixed(data.DecimalSchema(2, false), dec("-12.34")),
		"decimal_numeric_lowercase":      fixed(data.DecimalSchema(2, false), dec("-12.34")),
		"decimal_numeric_scale_mismatch": fixed(data.DecimalSchema(2, false), dec("1.5")),
		"decimal_base64_scale_mismatch":  fixed(data.DecimalSchema(2, false), dec("1.5")),
		"decimal_optional_null":          fixed(data.DecimalSchema(2, true), nil),
		"date_values":                    fixed(arr(data.DateSchema(false)), list(day(0), day(19000), day(-1), day(-25567), day(2932896))),
		"time_values":                    fixed(arr(data.TimeSchema(false)), list(msec(0), msec(45296789), msec(86399999), msec(86400000))),
		"timestamp_values": fixed(arr(data.TimestampSchema(false)), list(msec(0), msec(1709164800123), msec(-1),
			msec(-62135596800000), msec(253402300799999))),
		"date_with_time_error":    fixed(data.DateSchema(false), msec(43200000)),
		"time_out_of_range_error": fixed(data.TimeSchema(false), msec(2*86400000)),
		"struct_logical":          fixed(logical, logicalValue),
		"struct_logical_numeric":  fixed(logical, logicalValue),
	} {
		c[name] = wc
	}
	return c
}

func schemalessCases() map[string]writeCase {
	return map[string]writeCase{
		"schemaless_map": fixed(nil, hm("name", "x", "count", int64(5), "ratio", 1.5, "ok", true, "none", nil,
			"list", list(int64(1), "a"), "nested", hm("k", "v"))),
		"schemaless_primitives": fixed(nil, list(int8(1), int16(2), int32(3), int64(4), float32(1.5), 2.5, true,
			"s", []byte{1, 2}, nil)),
		"schemaless_int_keys":      fixed(nil, hm(int32(1), "a", int32(2), "b")),
		"schemaless_mixed_keys":    fixed(nil, hm("a", int64(1), int64(2), "b")),
		"schemaless_empty_map":     fixed(nil, hm()),
		"schemaless_string":        fixed(nil, "just a string"),
		"schemaless_nested_lists":  fixed(nil, list(list(int64(1), list(int64(2), list())), hm())),
		"schemaless_decimal_error": fixed(nil, dec("1")),
		"schemaless_struct_error":  fixed(nil, pt(1, 2)),
		"schemaless_with_envelope": fixed(nil, hm("a", list(int64(1), int64(2)))),
		"struct_no_envelope":       fixed(point, pt(1, 2)),
	}
}
