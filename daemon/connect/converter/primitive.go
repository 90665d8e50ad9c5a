package converter

import (
	"encoding/binary"
	"math"

	"github.com/kcd-project/kcd/daemon/connect/data"
)

// The class names of Kafka Connect's primitive converters.
const (
	BooleanClass = "org.apache.kafka.connect.converters.BooleanConverter"
	ShortClass   = "org.apache.kafka.connect.converters.ShortConverter"
	IntegerClass = "org.apache.kafka.connect.converters.IntegerConverter"
	LongClass    = "org.apache.kafka.connect.converters.LongConverter"
	FloatClass   = "org.apache.kafka.connect.converters.FloatConverter"
	DoubleClass  = "org.apache.kafka.connect.converters.DoubleConverter"
)

func init() {
	Register(BooleanClass, func() Converter { return BooleanConverter{} })
	Register(ShortClass, func() Converter { return shortConverter })
	Register(IntegerClass, func() Converter { return integerConverter })
	Register(LongClass, func() Converter { return longConverter })
	Register(FloatClass, func() Converter { return floatConverter })
	Register(DoubleClass, func() Converter { return doubleConverter })
}

// BooleanConverter is Kafka Connect's
// org.apache.kafka.connect.converters.BooleanConverter: one byte, 1 for
// true and 0 for false (Kafka's BooleanSerializer).
type BooleanConverter struct{}

// Configure accepts any settings; there are none.
func (BooleanConverter) Configure(map[string]string, bool) error { return nil }

// FromConnectData writes a bool of a BOOLEAN schema or none.
func (BooleanConverter) FromConnectData(_ string, schema *data.Schema, value any) ([]byte, error) {
	if schema != nil && schema.Type != data.Boolean {
		return nil, data.Errorf("Invalid schema type for BooleanConverter: %s", schema.Type)
	}
	switch v := value.(type) {
	case nil:
		return nil, nil
	case bool:
		if v {
			return []byte{1}, nil
		}
		return []byte{0}, nil
	}
	return nil, data.Errorf("BooleanConverter is not compatible with objects of type class %s", javaClass(value))
}

// ToConnectData reads one byte, 0 or 1, as an optional BOOLEAN.
func (BooleanConverter) ToConnectData(_ string, b []byte) (*data.Schema, any, error) {
	switch {
	case b == nil:
		return data.OptionalBooleanSchema, nil, nil
	case len(b) != 1:
		return nil, nil, data.Errorf("Failed to deserialize boolean: Size of data received by BooleanDeserializer is not 1")
	case b[0] == 0:
		return data.OptionalBooleanSchema, false, nil
	case b[0] == 1:
		return data.OptionalBooleanSchema, true, nil
	}
	return nil, nil, data.Errorf("Failed to deserialize boolean: Unexpected byte received by BooleanDeserializer: %d", int8(b[0]))
}

// NumberConverter is Kafka Connect's NumberConverter, behind its
// ShortConverter, IntegerConverter, LongConverter, FloatConverter and
// DoubleConverter: the number big-endian in 2, 4 or 8 bytes, floats as
// their IEEE 754 bits (Kafka's ShortSerializer ... DoubleSerializer). The
// value must be of the converter's own type (int16 for ShortConverter);
// the schema is not looked at, as in Kafka Connect.
type NumberConverter struct {
	typeName string // Kafka Connect's, for messages: "short", "integer"...
	deser    string // Kafka's deserializer, for messages
	schema   *data.Schema
	size     int
	put      func(b []byte, v any) bool
	get      func(b []byte) any
}

var (
	shortConverter = &NumberConverter{"short", "ShortDeserializer", data.OptionalInt16Schema, 2,
		func(b []byte, v any) bool {
			n, ok := v.(int16)
			binary.BigEndian.PutUint16(b, uint16(n))
			return ok
		},
		func(b []byte) any { return int16(binary.BigEndian.Uint16(b)) }}
	integerConverter = &NumberConverter{"integer", "IntegerDeserializer", data.OptionalInt32Schema, 4,
		func(b []byte, v any) bool {
			n, ok := v.(int32)
			binary.BigEndian.PutUint32(b, uint32(n))
			return ok
		},
		func(b []byte) any { return int32(binary.BigEndian.Uint32(b)) }}
	longConverter = &NumberConverter{"long", "LongDeserializer", data.OptionalInt64Schema, 8,
		func(b []byte, v any) bool {
			n, ok := v.(int64)
			binary.BigEndian.PutUint64(b, uint64(n))
			return ok
		},
		func(b []byte) any { return int64(binary.BigEndian.Uint64(b)) }}
	floatConverter = &NumberConverter{"float", "FloatDeserializer", data.OptionalFloat32Schema, 4,
		func(b []byte, v any) bool {
			f, ok := v.(float32)
			binary.BigEndian.PutUint32(b, math.Float32bits(f))
			return ok
		},
		func(b []byte) any { return math.Float32frombits(binary.BigEndian.Uint32(b)) }}
	doubleConverter = &NumberConverter{"double", "DoubleDeserializer", data.OptionalFloat64Schema, 8,
		func(b []byte, v any) bool {
			f, ok := v.(float64)
			binary.BigEndian.PutUint64(b, math.Float64bits(f))
			return ok
		},
		func(b []byte) any { return math.Float64frombits(binary.BigEndian.Uint64(b)) }}
)

// Configure accepts any settings; there are none. A NumberConverter holds
// no state, so one instance serves every task.
func (*NumberConverter) Configure(map[string]string, bool) error { return nil }

// FromConnectData writes value, which must be of the converter's type.
func (c *NumberConverter) FromConnectData(_ string, _ *data.Schema, value any) ([]byte, error) {
	if value == nil {
		return nil, nil
	}
	b := make([]byte, c.size)
	if !c.put(b, value) {
		return nil, data.Errorf("Failed to serialize to %s (was class %s): ", c.typeName, javaClass(value))
	}
	return b, nil
}

// ToConnectData reads the converter's type as an optional value of it.
func (c *NumberConverter) ToConnectData(_ string, b []byte) (*data.Schema, any, error) {
	if b == nil {
		return c.schema, nil, nil
	}
	if len(b) != c.size {
		return nil, nil, data.Errorf("Failed to deserialize %s: Size of data received by %s is not %d", c.typeName, c.deser, c.size)
	}
	return c.schema, c.get(b), nil
}

// javaClass is the Java class Kafka Connect would hold for a Go value of
// its data model, for messages.
func javaClass(v any) string {
	switch v.(type) {
	case int8:
		return "java.lang.Byte"
	case int16:
		return "java.lang.Short"
	case int32:
		return "java.lang.Integer"
	case int64:
		return "java.lang.Long"
	case float32:
		return "java.lang.Float"
	case float64:
		return "java.lang.Double"
	case bool:
		return "java.lang.Boolean"
	case string:
		return "java.lang.String"
	case []byte:
		return "[B"
	case *data.Struct:
		return "org.apache.kafka.connect.data.Struct"
	}
	return "java.lang.Object"
}
