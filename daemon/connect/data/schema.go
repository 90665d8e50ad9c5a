// Package data is Kafka Connect's data model in Go: schemas (primitive,
// struct, array, map; optional, default, name, version, doc, parameters;
// the logical types Decimal, Date, Time and Timestamp) and the values they
// describe.
//
// Values are plain Go values:
//
//	int8, int16, int32, int64   INT8 … INT64
//	float32, float64            FLOAT32, FLOAT64
//	bool, string, []byte        BOOLEAN, STRING, BYTES
//	[]any                       ARRAY
//	map[any]any, *OrderedMap    MAP (keys of a STRING key schema are strings)
//	*Struct                     STRUCT
//	Decimal                     the logical Decimal
//	time.Time                   the logical Date, Time and Timestamp
//	nil                         a null of an optional schema
//
// ARRAY also accepts any other slice type but []byte ([]string, []int32…),
// and MAP any other map type (map[string]any…), as Kafka Connect accepts any
// List and Map; converters that read data produce []any, and map[any]any
// or, for JSON objects, *OrderedMap in the order Java's HashMap iterates.
//
// Validate checks a value against its schema, Equal and (*Schema).Equal
// compare as Kafka Connect's equals methods do, and errors about data are
// *DataError, Kafka Connect's DataException, with its messages.
//
// Schemas are shared: once a schema is in use (by a record, a converter's
// cache, a Struct), do not modify it.
package data

import (
	"fmt"
	"strings"
)

// Type is a schema type, named as Kafka Connect's Schema.Type.
type Type string

// The schema types.
const (
	Int8    Type = "INT8"
	Int16   Type = "INT16"
	Int32   Type = "INT32"
	Int64   Type = "INT64"
	Float32 Type = "FLOAT32"
	Float64 Type = "FLOAT64"
	Boolean Type = "BOOLEAN"
	String  Type = "STRING"
	Bytes   Type = "BYTES"
	Array   Type = "ARRAY"
	Map     Type = "MAP"
	StructT Type = "STRUCT"
)

// IsPrimitive tells whether t is neither array, map nor struct.
func (t Type) IsPrimitive() bool { return t != Array && t != Map && t != StructT }

// Names of the logical types, as in Kafka Connect.
const (
	DecimalName   = "org.apache.kafka.connect.data.Decimal"
	DateName      = "org.apache.kafka.connect.data.Date"
	TimeName      = "org.apache.kafka.connect.data.Time"
	TimestampName = "org.apache.kafka.connect.data.Timestamp"
	// DecimalScaleParam is the Decimal schema parameter holding the scale.
	DecimalScaleParam = "scale"
)

// Schema describes a value. A nil *Schema means "no schema" (schemaless
// data), as a null Schema does in Kafka Connect.
type Schema struct {
	Type       Type
	Optional   bool
	Default    any // a value of this schema, or nil
	Name       string
	Version    *int32
	Doc        string
	Parameters map[string]string
	// ParameterOrder optionally lists the keys of Parameters in the order
	// Kafka Connect keeps them (insertion order), which converters write;
	// keys missing from it follow in sorted order. SetParameter keeps it.
	ParameterOrder []string

	Fields      []Field // STRUCT
	KeySchema   *Schema // MAP
	ValueSchema *Schema // MAP values, ARRAY elements
}

// Field is one field of a struct schema.
type Field struct {
	Name   string
	Index  int
	Schema *Schema
}

// Field returns the field called name, or nil.
func (s *Schema) Field(name string) *Field {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}

// String renders the schema compactly for messages.
func (s *Schema) String() string {
	if s == nil {
		return "<no schema>"
	}
	var b strings.Builder
	if s.Name != "" {
		fmt.Fprintf(&b, "%s:", s.Name)
	}
	b.WriteString(string(s.Type))
	if s.Optional {
		b.WriteString("?")
	}
	return b.String()
}

// Builder helpers for the common schemas.
func primitive(t Type, optional bool) *Schema { return &Schema{Type: t, Optional: optional} }

// Predefined schemas, as Kafka Connect's Schema.*_SCHEMA constants. Treat
// them as read-only.
var (
	Int8Schema            = primitive(Int8, false)
	Int16Schema           = primitive(Int16, false)
	Int32Schema           = primitive(Int32, false)
	Int64Schema           = primitive(Int64, false)
	Float32Schema         = primitive(Float32, false)
	Float64Schema         = primitive(Float64, false)
	BooleanSchema         = primitive(Boolean, false)
	StringSchema          = primitive(String, false)
	BytesSchema           = primitive(Bytes, false)
	OptionalInt8Schema    = primitive(Int8, true)
	OptionalInt16Schema   = primitive(Int16, true)
	OptionalInt32Schema   = primitive(Int32, true)
	OptionalInt64Schema   = primitive(Int64, true)
	OptionalFloat32Schema = primitive(Float32, true)
	OptionalFloat64Schema = primitive(Float64, true)
	OptionalBooleanSchema = primitive(Boolean, true)
	OptionalStringSchema  = primitive(String, true)
	OptionalBytesSchema   = primitive(Bytes, true)
)

// Struct is a value of a STRUCT schema: one value per field, by index.
type Struct struct {
	Schema *Schema
	Values []any
}

// NewStruct returns an empty struct of schema s.
func NewStruct(s *Schema) *Struct { return &Struct{Schema: s, Values: make([]any, len(s.Fields))} }

// Put sets field name; it panics on an unknown field, as Kafka Connect's
// Struct.put throws, because that is a programming error of the connector.
func (st *Struct) Put(name string, v any) *Struct {
	f := st.Schema.Field(name)
	if f == nil {
		panic(fmt.Sprintf("data: %s is not a field of %s", name, st.Schema))
	}
	st.Values[f.Index] = v
	return st
}

// Get returns field name's value (nil when unset or unknown).
func (st *Struct) Get(name string) any {
	if f := st.Schema.Field(name); f != nil {
		return st.Values[f.Index]
	}
	return nil
}

// StructBuilder builds struct schemas field by field.
type StructBuilder struct{ s *Schema }

// NewStructSchema starts a struct schema.
func NewStructSchema() *StructBuilder { return &StructBuilder{s: &Schema{Type: StructT}} }

// Field adds a field.
func (b *StructBuilder) Field(name string, s *Schema) *StructBuilder {
	b.s.Fields = append(b.s.Fields, Field{Name: name, Index: len(b.s.Fields), Schema: s})
	return b
}

// Name sets the schema name.
func (b *StructBuilder) Name(n string) *StructBuilder { b.s.Name = n; return b }

// Optional makes the schema optional.
func (b *StructBuilder) Optional() *StructBuilder { b.s.Optional = true; return b }

// Build returns the schema.
func (b *StructBuilder) Build() *Schema { return b.s }
