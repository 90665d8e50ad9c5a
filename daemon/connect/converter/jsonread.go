package converter

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/kcd-project/kcd/daemon/connect/data"
	"github.com/kcd-project/kcd/daemon/connect/internal/java"
)

// toConnect converts a JSON value of schema s (nil: infer it) to Connect
// data, as JsonConverter.convertToConnect does, with errors where Java
// would coerce a mismatched value.
func (c *JSONConverter) toConnect(s *data.Schema, n *node) (any, error) {
	if s == nil {
		return c.inferred(n)
	}
	if n == nil || n.kind == kNull || n.kind == kMissing {
		switch {
		case s.Default != nil && c.replaceNull:
			return s.Default, nil
		case s.Optional:
			return nil, nil
		}
		return nil, data.Errorf("Invalid null value for required %s field", s.Type)
	}
	switch s.Name {
	case data.DecimalName:
		return readDecimal(s, n)
	case data.DateName, data.TimeName, data.TimestampName:
		return readTime(s, n)
	}
	switch s.Type {
	case data.Boolean:
		if n.kind != kBool {
			return nil, mismatch(s, n, "a boolean")
		}
		return n.b, nil
	case data.Int8, data.Int16, data.Int32, data.Int64:
		return readInt(s, n)
	case data.Float32, data.Float64:
		return readFloat(s, n)
	case data.String:
		if n.kind != kString {
			return nil, mismatch(s, n, "a string")
		}
		return n.str, nil
	case data.Bytes:
		if n.kind != kString {
			return nil, mismatch(s, n, "a base64 string")
		}
		b, err := decodeBase64(n.str)
		if err != nil {
			return nil, data.Errorf("Invalid bytes field: %w", err)
		}
		return b, nil
	case data.Array:
		if n.kind != kArray {
			return nil, mismatch(s, n, "an array")
		}
		return c.array(s.ValueSchema, n)
	case data.Map:
		return c.mapValue(s, n)
	case data.StructT:
		return c.structValue(s, n)
	}
	return nil, data.Errorf("Unknown schema type: %s", s.Type)
}

func mismatch(s *data.Schema, n *node, want string) error {
	return data.Errorf("Invalid value for %s schema: expected %s but found %s", s.Type, want, n.kind)
}

// inferred converts a value without a schema: integers to int64, other
// numbers to float64, objects to maps of strings, arrays to []any.
func (c *JSONConverter) inferred(n *node) (any, error) {
	switch n.kind {
	case kNull, kMissing:
		return nil, nil
	case kBool:
		return n.b, nil
	case kString:
		return n.str, nil
	case kNumber:
		if n.integral {
			v, err := strconv.ParseInt(n.str, 10, 64)
			if err != nil {
				return nil, data.Errorf("Numeric value (%s) out of range of int64", n.str)
			}
			return v, nil
		}
		return parseFloat(n.str, 64), nil
	case kArray:
		return c.array(nil, n)
	case kObject:
		vals := make([]any, len(n.keys))
		for i := range n.keys {
			v, err := c.inferred(&n.elems[i])
			if err != nil {
				return nil, err
			}
			vals[i] = v
		}
		return hashMapOf(n.keys, vals), nil
	}
	return nil, data.Errorf("Unknown schema type: %s", n.kind)
}

func (c *JSONConverter) array(elem *data.Schema, n *node) ([]any, error) {
	out := make([]any, len(n.elems))
	for i := range n.elems {
		v, err := c.toConnect(elem, &n.elems[i])
		if err != nil {
			return nil, data.Errorf("element %d: %w", i, err)
		}
		out[i] = v
	}
	return out, nil
}

func (c *JSONConverter) mapValue(s *data.Schema, n *node) (any, error) {
	ks, vs := s.KeySchema, s.ValueSchema
	if ks == nil || ks.Type == data.String {
		if n.kind != kObject {
			return nil, data.Errorf("Maps with string fields should be encoded as JSON objects, but found %s", n.kind)
		}
		vals := make([]any, len(n.keys))
		for i, k := range n.keys {
			v, err := c.toConnect(vs, &n.elems[i])
			if err != nil {
				return nil, data.Errorf("value of %q: %w", k, err)
			}
			vals[i] = v
		}
		return hashMapOf(n.keys, vals), nil
	}
	if n.kind != kArray {
		return nil, data.Errorf("Maps with non-string fields should be encoded as JSON array of tuples, but found %s", n.kind)
	}
	switch ks.Type {
	case data.Bytes, data.Array, data.Map:
		if ks.Name == "" {
			return nil, data.Errorf("Maps with %s keys cannot be read into Go maps", ks.Type)
		}
	}
	m := make(map[any]any, len(n.elems))
	for i := range n.elems {
		e := &n.elems[i]
		if e.kind != kArray {
			return nil, data.Errorf("Found invalid map entry instead of array tuple: %s", e.kind)
		}
		if len(e.elems) != 2 {
			return nil, data.Errorf("Found invalid map entry, expected length 2 but found :%d", len(e.elems))
		}
		k, err := c.toConnect(ks, &e.elems[0])
		if err != nil {
			return nil, data.Errorf("key of entry %d: %w", i, err)
		}
		v, err := c.toConnect(vs, &e.elems[1])
		if err != nil {
			return nil, data.Errorf("value of entry %d: %w", i, err)
		}
		if !hashable(k) {
			return nil, data.Errorf("Maps with %T keys cannot be read into Go maps", k)
		}
		m[k] = v
	}
	return m, nil
}

func hashable(k any) bool {
	switch k.(type) {
	case []byte, []any, map[any]any:
		return false
	}
	return true
}

func (c *JSONConverter) structValue(s *data.Schema, n *node) (any, error) {
	if n.kind != kObject {
		return nil, data.Errorf("Structs should be encoded as JSON objects, but found %s", n.kind)
	}
	st := &data.Struct{Schema: s, Values: make([]any, len(s.Fields))}
	for i := range s.Fields {
		f := &s.Fields[i]
		v, err := c.toConnect(f.Schema, n.get(f.Name))
		if err != nil {
			return nil, data.Errorf("field %q: %w", f.Name, err)
		}
		st.Values[i] = v
	}
	return st, nil
}

var intBits = map[data.Type]int{data.Int8: 8, data.Int16: 16, data.Int32: 32, data.Int64: 64}

// readInt reads an integer of an INT8…INT64 schema; a literal with a
// fraction or an exponent is taken when its value is a whole number.
func readInt(s *data.Schema, n *node) (any, error) {
	if n.kind != kNumber {
		return nil, mismatch(s, n, "a number")
	}
	bitSize := intBits[s.Type]
	v, err := integralValue(n, bitSize)
	if err != nil {
		return nil, data.Errorf("Invalid value for %s schema: %w", s.Type, err)
	}
	switch s.Type {
	case data.Int8:
		return int8(v), nil
	case data.Int16:
		return int16(v), nil
	case data.Int32:
		return int32(v), nil
	}
	return v, nil
}

// integralValue is the value of a number literal that must be a whole
// number fitting in bitSize bits.
func integralValue(n *node, bitSize int) (int64, error) {
	if n.integral {
		v, err := strconv.ParseInt(n.str, 10, bitSize)
		if err != nil {
			return 0, data.Errorf("%s is out of range", n.str)
		}
		return v, nil
	}
	d, err := data.ParseDecimal(n.str)
	if err != nil {
		return 0, err
	}
	u := d.Unscaled
	if u.Sign() == 0 {
		return 0, nil
	}
	digits := u.String()
	scale := int64(d.Scale)
	for scale > 0 && digits[len(digits)-1] == '0' {
		digits, scale = digits[:len(digits)-1], scale-1
	}
	if scale > 0 {
		return 0, data.Errorf("%s is not a whole number", n.str)
	}
	if -scale > 20 {
		return 0, data.Errorf("%s is out of range", n.str)
	}
	v, err := strconv.ParseInt(digits+strings.Repeat("0", int(-scale)), 10, bitSize)
	if err != nil {
		return 0, data.Errorf("%s is out of range", n.str)
	}
	return v, nil
}

func readFloat(s *data.Schema, n *node) (any, error) {
	bitSize := 64
	if s.Type == data.Float32 {
		bitSize = 32
	}
	var f float64
	switch {
	case n.kind == kNumber:
		f = parseFloat(n.str, bitSize)
	case n.kind == kString && (n.str == "NaN" || n.str == "Infinity" || n.str == "-Infinity"):
		f, _ = strconv.ParseFloat(n.str, 64)
	default:
		return nil, mismatch(s, n, "a number")
	}
	if bitSize == 32 {
		return float32(f), nil
	}
	return f, nil
}

// parseFloat reads a number literal as Jackson (through BigDecimal) does:
// rounded to nearest, ±Inf beyond the range, and no negative zero for a
// literal zero ("-0.0"), as BigDecimal has none.
func parseFloat(lit string, bitSize int) float64 {
	f, _ := strconv.ParseFloat(lit, bitSize)
	if f == 0 && isZeroLiteral(lit) {
		return 0
	}
	return f
}

func isZeroLiteral(lit string) bool {
	for i := 0; i < len(lit); i++ {
		switch c := lit[i]; {
		case c == 'e' || c == 'E':
			return true
		case c >= '1' && c <= '9':
			return false
		}
	}
	return true
}

func readDecimal(s *data.Schema, n *node) (any, error) {
	switch n.kind {
	case kNumber:
		d, err := data.ParseDecimal(n.str)
		if err != nil {
			return nil, data.Errorf("Invalid value for Decimal field: %w", err)
		}
		return d, nil
	case kString:
		b, err := decodeBase64(n.str)
		if err == nil {
			var d data.Decimal
			if d, err = data.DecimalFromBytes(s, b); err == nil {
				return d, nil
			}
		}
		return nil, data.Errorf("Invalid bytes for Decimal field: %w", err)
	}
	return nil, data.Errorf("Invalid type for Decimal, underlying representation should be numeric or bytes but was %s", n.kind)
}

func readTime(s *data.Schema, n *node) (any, error) {
	switch s.Name {
	case data.DateName, data.TimeName:
		name := "Date"
		if s.Name == data.TimeName {
			name = "Time"
		}
		if n.kind != kNumber || !n.integral {
			return nil, data.Errorf("Invalid type for %s, underlying representation should be integer but was %s", name, n.kind)
		}
		v, err := strconv.ParseInt(n.str, 10, 32)
		if err != nil {
			return nil, data.Errorf("Invalid type for %s, underlying representation should be integer but was %s (%s does not fit in an int32)", name, n.kind, n.str)
		}
		if s.Name == data.DateName {
			return data.DateFromDays(int32(v)), nil
		}
		return data.TimeFromMillis(int32(v))
	}
	if n.kind != kNumber || !n.integral {
		return nil, data.Errorf("Invalid type for Timestamp, underlying representation should be integral but was %s", n.kind)
	}
	v, err := strconv.ParseInt(n.str, 10, 64)
	if err != nil {
		return nil, data.Errorf("Invalid value for Timestamp: %s is out of range", n.str)
	}
	return data.TimestampFromMillis(v), nil
}

// hashMapOf returns the entries of a JSON object in the order the
// java.util.HashMap Kafka Connect's JsonConverter reads it into iterates
// them: by bucket of a default-sized table grown by the puts, keys of one
// bucket in document order; a repeated key keeps its first place and its
// last value, as HashMap.put does.
func hashMapOf(keys []string, vals []any) *data.OrderedMap {
	m := &data.OrderedMap{Keys: make([]any, 0, len(keys)), Values: make([]any, 0, len(keys))}
	index := make(map[string]int, len(keys))
	for i, k := range keys {
		if j, dup := index[k]; dup {
			m.Values[j] = vals[i]
			continue
		}
		index[k] = len(m.Keys)
		m.Keys, m.Values = append(m.Keys, k), append(m.Values, vals[i])
	}
	capacity := uint32(16)
	for uint32(len(m.Keys)) > capacity/4*3 {
		capacity <<= 1
	}
	buckets := make([]uint32, len(m.Keys))
	order := make([]int, len(m.Keys))
	for i, k := range m.Keys {
		buckets[i], _ = java.Bucket(k, capacity)
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(buckets[a], buckets[b]) })
	out := &data.OrderedMap{Keys: make([]any, len(order)), Values: make([]any, len(order))}
	for n, i := range order {
		out.Keys[n], out.Values[n] = m.Keys[i], m.Values[i]
	}
	return out
}
