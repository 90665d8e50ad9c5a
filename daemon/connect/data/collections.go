package data

import "reflect"

// Elements returns the elements of an ARRAY value: v itself for []any, a
// copy for any other slice type but []byte. ok is false for anything else
// (a nil []any is an empty array; a nil interface is not an array).
func Elements(v any) (elems []any, ok bool) {
	switch v := v.(type) {
	case []any:
		return v, true
	case []byte, nil:
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		return nil, false
	}
	elems = make([]any, rv.Len())
	for i := range elems {
		elems[i] = rv.Index(i).Interface()
	}
	return elems, true
}

// Entries returns the keys and values of a MAP value (map[any]any or any
// other map type) in Go's iteration order, which is random; an
// *OrderedMap's in its own order. ok is false
// when v is not a map.
func Entries(v any) (keys, values []any, ok bool) {
	switch m := v.(type) {
	case *OrderedMap:
		if m == nil {
			return nil, nil, false
		}
		return append([]any(nil), m.Keys...), append([]any(nil), m.Values...), true
	case map[any]any:
		keys, values = make([]any, 0, len(m)), make([]any, 0, len(m))
		for k, v := range m {
			keys, values = append(keys, k), append(values, v)
		}
		return keys, values, true
	case map[string]any:
		keys, values = make([]any, 0, len(m)), make([]any, 0, len(m))
		for k, v := range m {
			keys, values = append(keys, k), append(values, v)
		}
		return keys, values, true
	case nil:
		return nil, nil, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map {
		return nil, nil, false
	}
	keys, values = make([]any, 0, rv.Len()), make([]any, 0, rv.Len())
	for it := rv.MapRange(); it.Next(); {
		keys, values = append(keys, it.Key().Interface()), append(values, it.Value().Interface())
	}
	return keys, values, true
}

// isNil tells whether v is nil or a nil pointer, map or slice that stands
// for a null (a typed nil *Struct is a null struct).
func isNil(v any) bool {
	if v == nil {
		return true
	}
	if st, ok := v.(*Struct); ok {
		return st == nil
	}
	return false
}

// OrderedMap is a MAP value whose entries iterate in the order given, as
// a Java LinkedHashMap does (or a HashMap whose order is known): the
// converters write it in that order. Keys are distinct.
type OrderedMap struct {
	Keys, Values []any
}

// Get returns the value of key k, and whether it is present.
func (m *OrderedMap) Get(k any) (any, bool) {
	for i, key := range m.Keys {
		if key == k {
			return m.Values[i], true
		}
	}
	return nil, false
}
