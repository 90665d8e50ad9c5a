package data

import (
	"slices"
	"sort"
)

// ArraySchema returns a required ARRAY schema of elements elem.
func ArraySchema(elem *Schema) *Schema { return &Schema{Type: Array, ValueSchema: elem} }

// MapSchema returns a required MAP schema.
func MapSchema(key, value *Schema) *Schema {
	return &Schema{Type: Map, KeySchema: key, ValueSchema: value}
}

// SetParameter sets parameter k, remembering the insertion order as Kafka
// Connect's SchemaBuilder.parameter does. It returns s.
func (s *Schema) SetParameter(k, v string) *Schema {
	if s.Parameters == nil {
		s.Parameters = map[string]string{}
	}
	if _, ok := s.Parameters[k]; !ok || !slices.Contains(s.ParameterOrder, k) {
		s.ParameterOrder = append(s.ParameterOrder, k)
	}
	s.Parameters[k] = v
	return s
}

// ParameterKeys returns the keys of Parameters in the order to write them:
// those of ParameterOrder first, then the others sorted.
func (s *Schema) ParameterKeys() []string {
	keys := make([]string, 0, len(s.Parameters))
	for _, k := range s.ParameterOrder {
		if _, ok := s.Parameters[k]; ok && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == len(s.Parameters) {
		return keys
	}
	n := len(keys)
	for k := range s.Parameters {
		if !slices.Contains(keys[:n], k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys[n:])
	return keys
}

// Version sets the schema version.
func (b *StructBuilder) Version(v int32) *StructBuilder { b.s.Version = &v; return b }

// Doc sets the schema documentation.
func (b *StructBuilder) Doc(d string) *StructBuilder { b.s.Doc = d; return b }

// Parameter sets a schema parameter.
func (b *StructBuilder) Parameter(k, v string) *StructBuilder { b.s.SetParameter(k, v); return b }

// Default sets the default value (a *Struct of the built schema).
func (b *StructBuilder) Default(v any) *StructBuilder { b.s.Default = v; return b }
