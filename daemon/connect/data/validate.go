package data

import (
	"fmt"
	"time"
)

// Validate checks that value is valid for schema, as Kafka Connect's
// ConnectSchema.validateValue does: the Go type matches the schema type
// (or the logical type: Decimal, time.Time), nulls only where the schema
// is optional, array elements and map keys and values against their
// schemas, structs of an equal schema whose fields are valid (a required
// field may be null when it has a default). A nil schema accepts anything:
// the data is schemaless.
func Validate(schema *Schema, value any) error {
	if schema == nil {
		return nil
	}
	return validate(schema, value, "value")
}

func validate(s *Schema, v any, location string) error {
	if isNil(v) {
		if !s.Optional {
			return Errorf("Invalid value: null used for required %s, schema type: %s", location, s.Type)
		}
		return nil
	}
	if !typeMatches(s, v) {
		msg := "Invalid Go value for schema"
		if s.Name != "" {
			msg += fmt.Sprintf(" %q", s.Name)
		}
		return Errorf("%s with type %s: %T for %s", msg, s.Type, v, location)
	}
	switch s.Type {
	case StructT:
		st, ok := v.(*Struct)
		if !ok { // a logical type named on a STRUCT schema
			return nil
		}
		if !st.Schema.Equal(s) {
			return Errorf("Struct schemas do not match.")
		}
		return st.Validate()
	case Array:
		elems, ok := Elements(v)
		if !ok {
			return nil
		}
		loc := "element of array " + location
		if s.ValueSchema == nil {
			return Errorf("No schema defined for %s", loc)
		}
		for _, e := range elems {
			if err := validate(s.ValueSchema, e, loc); err != nil {
				return err
			}
		}
	case Map:
		keys, vals, ok := Entries(v)
		if !ok {
			return nil
		}
		kloc, vloc := "key of map "+location, "value of map "+location
		switch {
		case s.KeySchema == nil:
			return Errorf("No schema defined for %s", kloc)
		case s.ValueSchema == nil:
			return Errorf("No schema defined for %s", vloc)
		}
		for i := range keys {
			if err := validate(s.KeySchema, keys[i], kloc); err != nil {
				return err
			}
			if err := validate(s.ValueSchema, vals[i], vloc); err != nil {
				return err
			}
		}
	}
	return nil
}

// typeMatches tells whether v's Go type is the one of schema s: that of
// its logical type when s is named after one, else that of its type.
func typeMatches(s *Schema, v any) bool {
	switch s.Name {
	case DecimalName:
		_, ok := v.(Decimal)
		return ok
	case DateName, TimeName, TimestampName:
		_, ok := v.(time.Time)
		return ok
	}
	var ok bool
	switch s.Type {
	case Int8:
		_, ok = v.(int8)
	case Int16:
		_, ok = v.(int16)
	case Int32:
		_, ok = v.(int32)
	case Int64:
		_, ok = v.(int64)
	case Float32:
		_, ok = v.(float32)
	case Float64:
		_, ok = v.(float64)
	case Boolean:
		_, ok = v.(bool)
	case String:
		_, ok = v.(string)
	case Bytes:
		_, ok = v.([]byte)
	case Array:
		_, ok = Elements(v)
	case Map:
		_, _, ok = Entries(v)
	case StructT:
		_, ok = v.(*Struct)
	}
	return ok
}

// Validate checks the struct's values against its schema's fields, as
// Kafka Connect's Struct.validate does.
func (st *Struct) Validate() error {
	if st.Schema == nil || st.Schema.Type != StructT {
		return Errorf("Not a struct schema: %s", st.Schema)
	}
	if len(st.Values) != len(st.Schema.Fields) {
		return Errorf("Struct has %d values for the %d fields of its schema", len(st.Values), len(st.Schema.Fields))
	}
	for i, f := range st.Schema.Fields {
		if f.Schema == nil {
			return Errorf("No schema defined for field: %q", f.Name)
		}
		if f.Index != i {
			return Errorf("Field %q has index %d but is at position %d of its schema", f.Name, f.Index, i)
		}
		v := st.Values[i]
		if isNil(v) && (f.Schema.Optional || f.Schema.Default != nil) {
			continue
		}
		if err := validate(f.Schema, v, fmt.Sprintf("field: %q", f.Name)); err != nil {
			return err
		}
	}
	return nil
}
