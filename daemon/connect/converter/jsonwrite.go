package converter

import (
	"math"
	"strconv"
	"time"

	"github.com/kcd-project/kcd/daemon/connect/data"
	"github.com/kcd-project/kcd/daemon/connect/internal/java"
)

// appendValue appends the JSON of value, as JsonConverter.convertToJson
// builds it and Jackson prints it.
func (c *JSONConverter) appendValue(dst []byte, s *data.Schema, v any) ([]byte, error) {
	if isNull(v) {
		switch {
		case s == nil:
			return append(dst, "null"...), nil
		case s.Default != nil && c.replaceNull:
			return c.appendValue(dst, s, s.Default)
		case s.Optional:
			return append(dst, "null"...), nil
		}
		return nil, data.Errorf("Conversion error: null value for field that is required and has no default value")
	}
	if s == nil {
		return c.appendSchemaless(dst, v)
	}
	switch s.Name {
	case data.DecimalName:
		return c.appendDecimal(dst, s, v)
	case data.DateName, data.TimeName, data.TimestampName:
		return appendTime(dst, s, v)
	}
	ok := true
	switch s.Type {
	case data.Int8:
		var n int8
		n, ok = v.(int8)
		dst = strconv.AppendInt(dst, int64(n), 10)
	case data.Int16:
		var n int16
		n, ok = v.(int16)
		dst = strconv.AppendInt(dst, int64(n), 10)
	case data.Int32:
		var n int32
		n, ok = v.(int32)
		dst = strconv.AppendInt(dst, int64(n), 10)
	case data.Int64:
		var n int64
		n, ok = v.(int64)
		dst = strconv.AppendInt(dst, n, 10)
	case data.Float32:
		var f float32
		f, ok = v.(float32)
		dst = c.appendFloat(dst, float64(f), true)
	case data.Float64:
		var f float64
		f, ok = v.(float64)
		dst = c.appendFloat(dst, f, false)
	case data.Boolean:
		var b bool
		b, ok = v.(bool)
		dst = strconv.AppendBool(dst, b)
	case data.String:
		var str string
		str, ok = v.(string)
		dst = appendJSONString(dst, str)
	case data.Bytes:
		var b []byte
		b, ok = v.([]byte)
		dst = appendBase64(dst, b)
	case data.Array:
		elems, isList := data.Elements(v)
		if !isList {
			break
		}
		return c.appendArray(dst, s.ValueSchema, elems)
	case data.Map:
		return c.appendMap(dst, s, v)
	case data.StructT:
		return c.appendStruct(dst, s, v)
	default:
		return nil, data.Errorf("Couldn't convert %v to JSON.", v)
	}
	if !ok {
		return nil, data.Errorf("Invalid type for %s: %T", s.Type, v)
	}
	return dst, nil
}

// appendSchemaless appends a value without a schema: its type is the one
// its Go type stands for. Go's other integer types are taken as numbers.
func (c *JSONConverter) appendSchemaless(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case int8:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int16:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case uint8:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint16:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint32:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint64:
		return strconv.AppendUint(dst, v, 10), nil
	case uint:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case float32:
		return c.appendFloat(dst, float64(v), true), nil
	case float64:
		return c.appendFloat(dst, v, false), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case string:
		return appendJSONString(dst, v), nil
	case []byte:
		return appendBase64(dst, v), nil
	case *data.Struct:
		return nil, data.Errorf("Mismatching schema.")
	case []any:
		return c.appendArray(dst, nil, v)
	}
	if elems, ok := data.Elements(v); ok {
		return c.appendArray(dst, nil, elems)
	}
	if _, _, ok := data.Entries(v); ok {
		return c.appendMap(dst, nil, v)
	}
	return nil, data.Errorf("Go type %T does not have corresponding schema type.", v)
}

// appendFloat appends a float or double as Jackson does: Java's toString,
// and NaN and the infinities as strings.
func (c *JSONConverter) appendFloat(dst []byte, f float64, single bool) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		dst = append(dst, '"')
		dst = java.AppendDouble(dst, f, c.floatFormat)
		return append(dst, '"')
	}
	if single {
		return java.AppendFloat(dst, float32(f), c.floatFormat)
	}
	return java.AppendDouble(dst, f, c.floatFormat)
}

func (c *JSONConverter) appendArray(dst []byte, elem *data.Schema, elems []any) ([]byte, error) {
	dst = append(dst, '[')
	var err error
	for i, e := range elems {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = c.appendValue(dst, elem, e); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

// appendMap appends a map in the order a java.util.HashMap holding it
// iterates: as a JSON object when its keys are strings (by schema, or all
// of them without one), else as an array of [key, value] pairs.
func (c *JSONConverter) appendMap(dst []byte, s *data.Schema, v any) ([]byte, error) {
	keys, vals, ok := data.Entries(v)
	if !ok {
		return nil, data.Errorf("Invalid type for MAP: %T", v)
	}
	var ks, vs *data.Schema
	objectMode := true
	if s != nil {
		if s.KeySchema == nil {
			return nil, data.Errorf("Map schema %s has no key schema", s)
		}
		ks, vs = s.KeySchema, s.ValueSchema
		objectMode = ks.Type == data.String
	} else {
		for _, k := range keys {
			if _, isString := k.(string); !isString {
				objectMode = false
				break
			}
		}
	}
	var err error
	if objectMode {
		dst = append(dst, '{')
	} else {
		dst = append(dst, '[')
	}
	order := java.MapOrder(keys)
	if _, ordered := v.(*data.OrderedMap); ordered {
		for i := range order {
			order[i] = i
		}
	}
	for n, i := range order {
		if n > 0 {
			dst = append(dst, ',')
		}
		if objectMode {
			name, err := c.objectKey(ks, keys[i])
			if err != nil {
				return nil, err
			}
			dst = appendJSONString(dst, name)
			dst = append(dst, ':')
		} else {
			dst = append(dst, '[')
			if dst, err = c.appendValue(dst, ks, keys[i]); err != nil {
				return nil, err
			}
			dst = append(dst, ',')
		}
		if dst, err = c.appendValue(dst, vs, vals[i]); err != nil {
			return nil, err
		}
		if !objectMode {
			dst = append(dst, ']')
		}
	}
	if objectMode {
		return append(dst, '}'), nil
	}
	return append(dst, ']'), nil
}

// objectKey is the member name of a map key of a string key schema (or of
// no schema): the string, or for a null its default or "null".
func (c *JSONConverter) objectKey(ks *data.Schema, k any) (string, error) {
	if str, ok := k.(string); ok {
		return str, nil
	}
	if isNull(k) && ks != nil {
		if ks.Default != nil && c.replaceNull {
			return c.objectKey(nil, ks.Default)
		}
		if ks.Optional {
			return "null", nil
		}
		return "", data.Errorf("Conversion error: null value for field that is required and has no default value")
	}
	return "", data.Errorf("Invalid type for STRING: %T", k)
}

func (c *JSONConverter) appendStruct(dst []byte, s *data.Schema, v any) ([]byte, error) {
	st, ok := v.(*data.Struct)
	if !ok {
		return nil, data.Errorf("Invalid type for STRUCT: %T", v)
	}
	if st.Schema != s && !st.Schema.Equal(s) {
		return nil, data.Errorf("Mismatching schema.")
	}
	if len(st.Values) != len(s.Fields) {
		return nil, data.Errorf("Struct has %d values for the %d fields of its schema", len(st.Values), len(s.Fields))
	}
	dst = append(dst, '{')
	var err error
	for i := range s.Fields {
		f := &s.Fields[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, f.Name)
		dst = append(dst, ':')
		if dst, err = c.appendValue(dst, f.Schema, st.Values[i]); err != nil {
			return nil, data.Errorf("field %q: %w", f.Name, err)
		}
	}
	return append(dst, '}'), nil
}

func (c *JSONConverter) appendDecimal(dst []byte, s *data.Schema, v any) ([]byte, error) {
	d, ok := v.(data.Decimal)
	if !ok {
		return nil, data.Errorf("Invalid type for Decimal, expected Decimal but was %T", v)
	}
	if c.decimalNumeric {
		return java.AppendBigDecimal(dst, d.Unscaled, d.Scale), nil
	}
	b, err := data.DecimalToBytes(s, d)
	if err != nil {
		return nil, err
	}
	return appendBase64(dst, b), nil
}

func appendTime(dst []byte, s *data.Schema, v any) ([]byte, error) {
	t, ok := v.(time.Time)
	var kind string
	switch s.Name {
	case data.DateName:
		kind = "Date"
	case data.TimeName:
		kind = "Time"
	default:
		kind = "Timestamp"
	}
	if !ok {
		return nil, data.Errorf("Invalid type for %s, expected time.Time but was %T", kind, v)
	}
	var n int64
	switch s.Name {
	case data.DateName:
		days, err := data.DateToDays(t)
		if err != nil {
			return nil, err
		}
		n = int64(days)
	case data.TimeName:
		ms, err := data.TimeToMillis(t)
		if err != nil {
			return nil, err
		}
		n = int64(ms)
	default:
		n = data.TimestampToMillis(t)
	}
	return strconv.AppendInt(dst, n, 10), nil
}
