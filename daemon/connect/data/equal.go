package data

import (
	"bytes"
	"maps"
	"math"
	"time"
)

// Equal reports whether two schemas are equal as Kafka Connect's
// ConnectSchema.equals says: same type, optionality, name, version, doc,
// default (by Equal), parameters, fields (name, index and schema), key and
// value schemas. A nil and an empty Parameters are equal; ParameterOrder
// does not count, as LinkedHashMap.equals ignores order.
func (s *Schema) Equal(o *Schema) bool { return schemaEqual(s, o, nil) }

// comparing is the pairs of schemas being compared further up: a schema
// whose default is a struct of that schema refers to itself, and the
// comparison assumes such a pair equal when it meets it again.
type comparing []struct{ a, b *Schema }

func schemaEqual(s, o *Schema, seen comparing) bool {
	if s == o {
		return true
	}
	if s == nil || o == nil {
		return false
	}
	for _, p := range seen {
		if p.a == s && p.b == o {
			return true
		}
	}
	seen = append(seen, struct{ a, b *Schema }{s, o})
	if s.Type != o.Type || s.Optional != o.Optional || s.Name != o.Name || s.Doc != o.Doc ||
		!equalVersion(s.Version, o.Version) || !maps.Equal(s.Parameters, o.Parameters) ||
		len(s.Fields) != len(o.Fields) {
		return false
	}
	for i := range s.Fields {
		a, b := &s.Fields[i], &o.Fields[i]
		if a.Name != b.Name || a.Index != b.Index || !schemaEqual(a.Schema, b.Schema, seen) {
			return false
		}
	}
	return schemaEqual(s.KeySchema, o.KeySchema, seen) && schemaEqual(s.ValueSchema, o.ValueSchema, seen) &&
		valueEqual(s.Default, o.Default, seen)
}

func equalVersion(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Equal reports whether two values are equal as their Kafka Connect
// counterparts' equals methods say: numbers of the same type and value
// (floats by bits, so NaN equals NaN and 0.0 does not equal -0.0), bytes
// by content, decimals by unscaled value and scale (1.0 is not 1.00),
// times by instant, structs by schema and values, arrays and maps by
// elements (a []string and an []any of the same strings are equal).
func Equal(a, b any) bool { return valueEqual(a, b, nil) }

func valueEqual(a, b any, seen comparing) bool {
	if isNil(a) || isNil(b) {
		return isNil(a) && isNil(b)
	}
	switch a := a.(type) {
	case float32:
		b, ok := b.(float32)
		return ok && math.Float32bits(a) == math.Float32bits(b)
	case float64:
		b, ok := b.(float64)
		return ok && math.Float64bits(a) == math.Float64bits(b)
	case []byte:
		b, ok := b.([]byte)
		return ok && bytes.Equal(a, b)
	case Decimal:
		b, ok := b.(Decimal)
		return ok && a.Scale == b.Scale && a.unscaled().Cmp(b.unscaled()) == 0
	case time.Time:
		b, ok := b.(time.Time)
		return ok && a.Equal(b)
	case *Struct:
		b, ok := b.(*Struct)
		if !ok || !schemaEqual(a.Schema, b.Schema, seen) || len(a.Values) != len(b.Values) {
			return false
		}
		for i := range a.Values {
			if !valueEqual(a.Values[i], b.Values[i], seen) {
				return false
			}
		}
		return true
	}
	if ea, ok := Elements(a); ok {
		eb, ok := Elements(b)
		if !ok || len(ea) != len(eb) {
			return false
		}
		for i := range ea {
			if !valueEqual(ea[i], eb[i], seen) {
				return false
			}
		}
		return true
	}
	if ka, va, ok := Entries(a); ok {
		kb, vb, ok := Entries(b)
		return ok && equalEntries(ka, va, kb, vb, seen)
	}
	return comparableEqual(a, b)
}

// equalEntries matches every entry of a with an equal entry of b: through
// an index when b's keys are all of simple comparable types, else by
// trying every pair.
func equalEntries(ka, va, kb, vb []any, seen comparing) bool {
	if len(ka) != len(kb) {
		return false
	}
	index := make(map[any]int, len(kb))
	for j, k := range kb {
		hk, ok := indexKey(k)
		if !ok {
			index = nil
			break
		}
		index[hk] = j
	}
	if index != nil {
		for i, k := range ka {
			hk, ok := indexKey(k)
			if !ok {
				return false
			}
			j, found := index[hk]
			if !found || !valueEqual(va[i], vb[j], seen) {
				return false
			}
		}
		return true
	}
	used := make([]bool, len(kb))
outer:
	for i := range ka {
		for j := range kb {
			if !used[j] && valueEqual(ka[i], kb[j], seen) && valueEqual(va[i], vb[j], seen) {
				used[j] = true
				continue outer
			}
		}
		return false
	}
	return true
}

type (
	float32Key uint32
	float64Key uint64
)

// indexKey returns a map key standing for k under Equal, for the types
// that have one.
func indexKey(k any) (any, bool) {
	switch k := k.(type) {
	case string, bool, int8, int16, int32, int64, int, uint8, uint16, uint32, uint64, uint:
		return k, true
	case float32:
		return float32Key(math.Float32bits(k)), true
	case float64:
		return float64Key(math.Float64bits(k)), true
	}
	return nil, false
}

// comparableEqual compares values of the remaining (comparable) types;
// a non-comparable value is never equal.
func comparableEqual(a, b any) (eq bool) {
	defer func() {
		if recover() != nil {
			eq = false
		}
	}()
	return a == b
}
