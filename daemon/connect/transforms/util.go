package transforms

import (
	"maps"
	"slices"
	"time"

	"github.com/kcd-project/kcd/daemon/connect/data"
	"github.com/kcd-project/kcd/daemon/connect/internal/java"
)

// side is the part of a record a $Key or $Value variant works on.
type side bool

const (
	keySide   side = true
	valueSide side = false
)

func (s side) schema(r *Record) *data.Schema {
	if s == keySide {
		return r.KeySchema
	}
	return r.ValueSchema
}

func (s side) value(r *Record) any {
	if s == keySide {
		return r.Key
	}
	return r.Value
}

// with returns a copy of r whose operating part is (schema, v).
func (s side) with(r *Record, schema *data.Schema, v any) *Record {
	out := r.clone()
	if s == keySide {
		out.KeySchema, out.Key = schema, v
	} else {
		out.ValueSchema, out.Value = schema, v
	}
	return out
}

// className is the Java class of a Connect value, for messages.
func className(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case int8:
		return "java.lang.Byte"
	case int16:
		return "java.lang.Short"
	case int32:
		return "java.lang.Integer"
	case int64, int:
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
	case data.Decimal:
		return "java.math.BigDecimal"
	case time.Time:
		return "java.util.Date"
	case *data.OrderedMap:
		return "java.util.LinkedHashMap"
	}
	if _, ok := data.Elements(v); ok {
		return "java.util.ArrayList"
	}
	if _, _, ok := data.Entries(v); ok {
		return "java.util.HashMap"
	}
	return "java.lang.Object"
}

// javaClass is how Java prints a Class ("class java.lang.String").
func javaClass(v any) string { return "class " + className(v) }

// schemaType is ConnectSchema.schemaType of a value's class: "" when
// Connect has no type for it.
func schemaType(v any) data.Type {
	switch v.(type) {
	case int8:
		return data.Int8
	case int16:
		return data.Int16
	case int32:
		return data.Int32
	case int64, int:
		return data.Int64
	case float32:
		return data.Float32
	case float64:
		return data.Float64
	case bool:
		return data.Boolean
	case string:
		return data.String
	case []byte:
		return data.Bytes
	case *data.Struct:
		return data.StructT
	}
	if _, ok := data.Elements(v); ok {
		return data.Array
	}
	if _, _, ok := data.Entries(v); ok {
		return data.Map
	}
	return ""
}

func requireMap(v any, purpose string) (*jmap, error) {
	keys, vals, ok := javaEntries(v)
	if !ok {
		return nil, data.Errorf("Only Map objects supported in absence of schema for [%s], found: %s", purpose, className(v))
	}
	return copyJMap(keys, vals), nil
}

func requireStruct(v any, purpose string) (*data.Struct, error) {
	st, ok := v.(*data.Struct)
	if !ok || st == nil {
		return nil, data.Errorf("Only Struct objects supported for [%s], found: %s", purpose, className(v))
	}
	return st, nil
}

func requireStructOrNull(v any, purpose string) (*data.Struct, error) {
	if v == nil {
		return nil, nil
	}
	return requireStruct(v, purpose)
}

// javaEntries returns a map value's entries in the order Java iterates
// them: an *OrderedMap's own, else a HashMap's (as JsonConverter builds).
func javaEntries(v any) (keys, vals []any, ok bool) {
	keys, vals, ok = data.Entries(v)
	if !ok {
		return nil, nil, false
	}
	if _, ordered := v.(*data.OrderedMap); ordered {
		return keys, vals, true
	}
	order := java.MapOrder(keys)
	k2, v2 := make([]any, len(keys)), make([]any, len(keys))
	for n, i := range order {
		k2[n], v2[n] = keys[i], vals[i]
	}
	return k2, v2, true
}

// jmap is a java.util.HashMap: it keeps what its iteration order depends
// on, its table capacity and the insertion order of its keys.
type jmap struct {
	keys, vals []any
	capacity   uint32 // 0: no table yet
	threshold  uint32 // the initial capacity while there is no table
	linked     bool   // a LinkedHashMap: insertion order
	// byString indexes the string keys (JSON objects have only those);
	// other keys are looked up one by one.
	byString map[string]int
}

// newJMap is new HashMap<>(initialCapacity); a negative capacity is the
// default constructor's.
func newJMap(initialCapacity int) *jmap {
	m := &jmap{}
	if initialCapacity >= 0 {
		m.threshold = tableSizeFor(uint32(initialCapacity))
	}
	return m
}

// copyJMap is new HashMap<>(m) of a map iterating keys, vals in order
// (JDK 17's sizing).
func copyJMap(keys, vals []any) *jmap {
	m := &jmap{}
	if n := len(keys); n > 0 {
		m.threshold = tableSizeFor(uint32(float32(n)/0.75 + 1))
	}
	for i := range keys {
		m.put(keys[i], vals[i])
	}
	return m
}

func tableSizeFor(c uint32) uint32 {
	n := uint32(1)
	for n < c {
		n <<= 1
	}
	return n
}

func (m *jmap) index(k any) int {
	if ks, ok := k.(string); ok {
		if i, ok := m.byString[ks]; ok {
			return i
		}
		return -1
	}
	for i, key := range m.keys {
		if _, isString := key.(string); !isString && data.Equal(key, k) {
			return i
		}
	}
	return -1
}

func (m *jmap) get(k any) any {
	if i := m.index(k); i >= 0 {
		return m.vals[i]
	}
	return nil
}

func (m *jmap) put(k, v any) {
	if i := m.index(k); i >= 0 {
		m.vals[i] = v
		return
	}
	if m.capacity == 0 {
		m.capacity = 16
		if m.threshold > 0 {
			m.capacity = m.threshold
		}
	}
	if ks, ok := k.(string); ok {
		if m.byString == nil {
			m.byString = map[string]int{}
		}
		m.byString[ks] = len(m.keys)
	}
	m.keys, m.vals = append(m.keys, k), append(m.vals, v)
	if uint32(len(m.keys)) > uint32(float32(m.capacity)*0.75) {
		m.capacity <<= 1
	}
}

func (m *jmap) remove(k any) {
	if i := m.index(k); i >= 0 {
		m.keys = slices.Delete(m.keys, i, i+1)
		m.vals = slices.Delete(m.vals, i, i+1)
		clear(m.byString)
		for j, key := range m.keys {
			if ks, ok := key.(string); ok {
				m.byString[ks] = j
			}
		}
	}
}

// value returns the map as a Connect value iterating as Java's would.
func (m *jmap) value() *data.OrderedMap {
	order := make([]int, len(m.keys))
	for i := range order {
		order[i] = i
	}
	if !m.linked && m.capacity > 0 {
		buckets := make([]uint32, len(m.keys))
		for i, k := range m.keys {
			buckets[i], _ = java.Bucket(k, m.capacity)
		}
		slices.SortStableFunc(order, func(a, b int) int { return int(buckets[a]) - int(buckets[b]) })
	}
	out := &data.OrderedMap{Keys: make([]any, len(order)), Values: make([]any, len(order))}
	for n, i := range order {
		out.Keys[n], out.Values[n] = m.keys[i], m.vals[i]
	}
	return out
}

// copySchemaBasics is SchemaUtil.copySchemaBasics: name, version, doc and
// parameters of src on dst (not optionality, not the default).
func copySchemaBasics(src, dst *data.Schema) *data.Schema {
	dst.Name, dst.Version, dst.Doc = src.Name, src.Version, src.Doc
	if src.Parameters != nil {
		dst.Parameters = maps.Clone(src.Parameters)
		dst.ParameterOrder = slices.Clone(src.ParameterOrder)
	}
	return dst
}

func structSchema() *data.Schema { return &data.Schema{Type: data.StructT} }

func addField(s *data.Schema, name string, fs *data.Schema) {
	s.Fields = append(s.Fields, data.Field{Name: name, Index: len(s.Fields), Schema: fs})
}

// fieldGet is Struct.get(field): the field's default when it is null.
func fieldGet(st *data.Struct, f *data.Field) any {
	v := st.Values[f.Index]
	if v == nil && f.Schema.Default != nil {
		return f.Schema.Default
	}
	return v
}

// fieldValue is get (with defaults) or getWithoutDefault.
func fieldValue(st *data.Struct, f *data.Field, replaceNullWithDefault bool) any {
	if replaceNullWithDefault {
		return fieldGet(st, f)
	}
	return st.Values[f.Index]
}

// put is Struct.put: the value is checked against the field's schema.
func put(st *data.Struct, name string, v any) error {
	f := st.Schema.Field(name)
	if f == nil {
		return data.Errorf("%s is not a valid field name", name)
	}
	if err := data.Validate(f.Schema, v); err != nil {
		if v == nil && !f.Schema.Optional && f.Schema.Default == nil {
			return data.Errorf("Invalid value: null used for required field: \"%s\", schema type: %s", name, f.Schema.Type)
		}
		return err
	}
	st.Values[f.Index] = v
	return nil
}

func optionalCopy(s *data.Schema, optional bool) *data.Schema {
	c := *s
	c.Optional = optional
	return &c
}
