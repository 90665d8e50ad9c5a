package transforms

import (
	"encoding/base64"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/data"
	"github.com/kcd-project/kcd/daemon/connect/internal/java"
)

func init() {
	registerKV(pkg+"Cast", castDef, func(k bool) Transformation { return &cast{side: side(k)} })
}

// MaskField.

var maskFieldDef = connect.ConfigDef{
	{Name: "fields", Type: connect.TypeList, Importance: connect.High, Documentation: "Names of fields to mask.", Validator: nonEmptyList, NullMessage: nullList},
	{Name: "replacement", Type: connect.TypeString, NullDefault: true, Importance: connect.Low,
		Documentation: "Custom value replacement, that will be applied to all 'fields' values (numeric or non-empty string values only).", Validator: nonEmptyString},
	replaceNullKey,
}

type maskField struct {
	side
	fields      map[string]bool
	order       []string
	replacement *string
	replaceNull bool
}

func (t *maskField) Configure(raw map[string]string) error {
	c, err := parseConfig(maskFieldDef, raw)
	if err != nil {
		return err
	}
	t.order = c.list("fields")
	t.fields = set(t.order)
	t.replacement, t.replaceNull = c.str("replacement"), c.bool("replace.null.with.default")
	return nil
}

func (t *maskField) Apply(r *Record) (*Record, error) {
	const purpose = "mask fields"
	v, schema := t.value(r), t.schema(r)
	if schema == nil {
		m, err := requireMap(v, purpose)
		if err != nil {
			return nil, err
		}
		orig := copyJMap(m.keys, m.vals)
		// Java iterates the HashSet of field names.
		names := newJMap(-1)
		for _, f := range t.order {
			names.put(f, nil)
		}
		for _, f := range names.value().Keys {
			mv, err := t.masked(orig.get(f))
			if err != nil {
				return nil, err
			}
			m.put(f, mv)
		}
		return t.with(r, nil, m.value()), nil
	}
	st, err := requireStruct(v, purpose)
	if err != nil {
		return nil, err
	}
	out := data.NewStruct(st.Schema)
	for i := range st.Schema.Fields {
		f := &st.Schema.Fields[i]
		fv := fieldValue(st, f, t.replaceNull)
		if t.fields[f.Name] {
			if fv, err = t.masked(fv); err != nil {
				return nil, err
			}
		}
		if err := put(out, f.Name, fv); err != nil {
			return nil, err
		}
	}
	return t.with(r, schema, out), nil
}

func (t *maskField) masked(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if t.replacement == nil {
		switch v.(type) {
		case bool:
			return false, nil
		case int8:
			return int8(0), nil
		case int16:
			return int16(0), nil
		case int32:
			return int32(0), nil
		case int64, int:
			return int64(0), nil
		case float32:
			return float32(0), nil
		case float64:
			return float64(0), nil
		case data.Decimal:
			return data.NewDecimal(0, 0), nil
		case time.Time:
			return time.UnixMilli(0).UTC(), nil
		case string:
			return "", nil
		}
		if _, ok := data.Elements(v); ok {
			return []any{}, nil
		}
		if _, _, ok := data.Entries(v); ok {
			return map[any]any{}, nil
		}
		return nil, data.Errorf("Cannot mask value of type: %s", javaClass(v))
	}
	s := *t.replacement
	var out any
	var err error
	switch v.(type) {
	case string:
		return s, nil
	case int8:
		var n int64
		n, err = strconv.ParseInt(strings.TrimSpace(s), 10, 8)
		out = int8(n)
	case int16:
		var n int64
		n, err = strconv.ParseInt(strings.TrimSpace(s), 10, 16)
		out = int16(n)
	case int32:
		var n int64
		n, err = strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		out = int32(n)
	case int64, int:
		out, err = strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	case float32:
		var f float64
		f, err = strconv.ParseFloat(strings.TrimSpace(s), 32)
		out = float32(f)
	case float64:
		out, err = strconv.ParseFloat(strings.TrimSpace(s), 64)
	case data.Decimal:
		out, err = data.ParseDecimal(s)
	default:
		return nil, data.Errorf("Cannot mask value of type %s with custom replacement.", javaClass(v))
	}
	if err != nil {
		return nil, data.Errorf("Unable to convert %s (class java.lang.String) to number", s)
	}
	return out, nil
}

// Cast.

var castDef = connect.ConfigDef{
	{Name: "spec", Type: connect.TypeList, Importance: connect.High,
		Documentation: "List of fields and the type to cast them to of the form field1:type,field2:type to cast fields of Maps or Structs. A single type to cast the entire value. Valid types are int8, int16, int32, int64, float32, float64, boolean, and string. Note that binary fields can only be cast to string.",
		Validator: func(v string) error {
			if len(parseList(v)) == 0 {
				return wholeMessage(configErrorf("Must specify at least one field to cast."))
			}
			_, _, err := parseCastSpec(parseList(v))
			return wholeMessage(err)
		},
		NullMessage: "Must specify at least one field to cast."},
	replaceNullKey,
}

var castOutputs = []data.Type{data.Int8, data.Int16, data.Int32, data.Int64, data.Float32, data.Float64, data.Boolean, data.String}

func castOutput(s string) (data.Type, error) {
	t := data.Type(strings.ToUpper(strings.TrimSpace(s)))
	switch t {
	case data.Int8, data.Int16, data.Int32, data.Int64, data.Float32, data.Float64, data.Boolean, data.String:
		return t, nil
	case data.Bytes, data.Array, data.Map, data.StructT:
		return "", configErrorf("Cast transformation does not support casting to %s; supported types are [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]", t)
	}
	// Kafka Connect's message, with the cause in the place of the value.
	return "", configErrorf("Invalid value java.lang.IllegalArgumentException: No enum constant org.apache.kafka.connect.data.Schema.Type.%s for configuration Invalid type found in casting spec: %s", t, strings.TrimSpace(s))
}

// parseCastSpec returns the whole-value type, or the casts by field in
// the order given.
func parseCastSpec(spec []string) (whole data.Type, fields []fieldCast, err error) {
	for _, m := range spec {
		parts := strings.Split(m, ":")
		switch len(parts) {
		case 1:
			if whole, err = castOutput(parts[0]); err != nil {
				return "", nil, err
			}
		case 2:
			t, err := castOutput(parts[1])
			if err != nil {
				return "", nil, err
			}
			fields = append(fields, fieldCast{parts[0], t})
		default:
			return "", nil, configErrorf("Invalid cast mapping: %s", m)
		}
	}
	if whole != "" && len(spec) > 1 {
		return "", nil, configErrorf("Cast transformations that specify a type to cast the entire value to may ony specify a single cast in their spec")
	}
	return whole, fields, nil
}

type fieldCast struct {
	field string
	to    data.Type
}

type cast struct {
	side
	whole       data.Type
	casts       []fieldCast
	replaceNull bool
}

func (t *cast) Configure(raw map[string]string) error {
	c, err := parseConfig(castDef, raw)
	if err != nil {
		return err
	}
	if t.whole, t.casts, err = parseCastSpec(c.list("spec")); err != nil {
		return err
	}
	t.replaceNull = c.bool("replace.null.with.default")
	return nil
}

func (t *cast) castOf(name string) data.Type {
	var out data.Type
	for _, c := range t.casts {
		if c.field == name {
			out = c.to
		}
	}
	return out
}

func (t *cast) Apply(r *Record) (*Record, error) {
	const purpose = "cast types"
	v, schema := t.value(r), t.schema(r)
	if v == nil {
		return r, nil
	}
	if schema == nil {
		if t.whole != "" {
			cv, err := castValue(nil, v, t.whole)
			if err != nil {
				return nil, err
			}
			return t.with(r, nil, cv), nil
		}
		m, err := requireMap(v, purpose)
		if err != nil {
			return nil, err
		}
		orig := copyJMap(m.keys, m.vals)
		// Java iterates its HashMap of casts.
		casts := newJMap(-1)
		for _, c := range t.casts {
			casts.put(c.field, c.to)
		}
		cm := casts.value()
		for i, k := range cm.Keys {
			cv, err := castValue(nil, orig.get(k), cm.Values[i].(data.Type))
			if err != nil {
				return nil, err
			}
			m.put(k, cv)
		}
		return t.with(r, nil, m.value()), nil
	}
	ns, err := t.schemaFor(schema)
	if err != nil {
		return nil, err
	}
	if t.whole != "" {
		cv, err := castValue(schema, v, t.whole)
		if err != nil {
			return nil, err
		}
		return t.with(r, ns, cv), nil
	}
	st, err := requireStruct(v, purpose)
	if err != nil {
		return nil, err
	}
	out := data.NewStruct(ns)
	for i := range st.Schema.Fields {
		f := &st.Schema.Fields[i]
		fv := fieldValue(st, f, t.replaceNull)
		if to := t.castOf(f.Name); to != "" {
			if fv, err = castValue(f.Schema, fv, to); err != nil {
				return nil, err
			}
		}
		if err := put(out, f.Name, fv); err != nil {
			return nil, err
		}
	}
	return t.with(r, ns, out), nil
}

func (t *cast) schemaFor(s *data.Schema) (*data.Schema, error) {
	var ns *data.Schema
	if t.whole != "" {
		ns = copySchemaBasics(s, &data.Schema{Type: t.whole})
	} else {
		ns = copySchemaBasics(s, structSchema())
		for _, f := range s.Fields {
			to := t.castOf(f.Name)
			if to == "" {
				addField(ns, f.Name, f.Schema)
				continue
			}
			fs := &data.Schema{Type: to, Optional: f.Schema.Optional}
			if f.Schema.Default != nil {
				d, err := castValue(f.Schema, f.Schema.Default, to)
				if err != nil {
					return nil, err
				}
				fs.Default = d
			}
			addField(ns, f.Name, fs)
		}
	}
	if s.Optional {
		ns.Optional = true
	}
	if s.Default != nil {
		d, err := castValue(s, s.Default, ns.Type)
		if err != nil {
			return nil, err
		}
		ns.Default = d
	}
	return ns, nil
}

// castValue is Cast.castValueToType.
func castValue(schema *data.Schema, v any, to data.Type) (any, error) {
	if v == nil {
		return nil, nil
	}
	var from data.Type
	if schema == nil {
		from = schemaType(v)
	} else {
		from = schema.Type
	}
	if from == "" {
		return nil, data.Errorf("Cast transformation was passed a value of type %s which is not supported by Connect's data API", javaClass(v))
	}
	switch from {
	case data.Array, data.Map, data.StructT:
		return nil, data.Errorf("Cast transformation does not support casting from %s; supported types are [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING, BYTES]", from)
	}
	if schema != nil && schema.Name != "" && to != data.String {
		if tm, ok := v.(time.Time); ok {
			switch schema.Name {
			case data.DateName:
				d, err := data.DateToDays(tm)
				if err != nil {
					return nil, err
				}
				v = d
			case data.TimeName:
				ms, err := data.TimeToMillis(tm)
				if err != nil {
					return nil, err
				}
				v = ms
			case data.TimestampName:
				v = data.TimestampToMillis(tm)
			}
		}
	}
	outOfRange := func() error {
		return data.Errorf("Value (%s) was out of range for requested data type", javaToString(v))
	}
	switch to {
	case data.Int8, data.Int16, data.Int32, data.Int64:
		var n int64
		switch x := v.(type) {
		case bool:
			if x {
				n = 1
			}
		case string:
			bits := map[data.Type]int{data.Int8: 8, data.Int16: 16, data.Int32: 32, data.Int64: 64}[to]
			p, err := strconv.ParseInt(x, 10, bits)
			if err != nil {
				return nil, outOfRange()
			}
			n = p
		default:
			var ok bool
			if n, ok = javaIntValue(v, to); !ok {
				return nil, data.Errorf("Unexpected type in Cast transformation: %s", javaClass(v))
			}
		}
		switch to {
		case data.Int8:
			return int8(n), nil
		case data.Int16:
			return int16(n), nil
		case data.Int32:
			return int32(n), nil
		}
		return n, nil
	case data.Float32, data.Float64:
		var f float64
		switch x := v.(type) {
		case bool:
			if x {
				f = 1
			}
		case string:
			bits := 64
			if to == data.Float32 {
				bits = 32
			}
			p, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimRight(x, "fFdD")), bits)
			if err != nil {
				return nil, outOfRange()
			}
			f = p
		default:
			var ok bool
			if f, ok = javaFloatValue(v); !ok {
				return nil, data.Errorf("Unexpected type in Cast transformation: %s", javaClass(v))
			}
		}
		if to == data.Float32 {
			return float32(f), nil
		}
		return f, nil
	case data.Boolean:
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			return strings.EqualFold(x, "true"), nil
		}
		n, ok := javaIntValue(v, data.Int64)
		if !ok {
			return nil, data.Errorf("Unexpected type in Cast transformation: %s", javaClass(v))
		}
		return n != 0, nil
	case data.String:
		switch x := v.(type) {
		case time.Time:
			return javaDateString(x), nil
		case []byte:
			return base64.StdEncoding.EncodeToString(x), nil
		}
		return javaToString(v), nil
	}
	return nil, data.Errorf("%s is not supported in the Cast transformation.", to)
}

// javaIntValue is Number.byteValue … longValue of a number, as Java
// narrows it (floating point saturates to int or long, then truncates).
func javaIntValue(v any, to data.Type) (int64, bool) {
	var f float64
	isFloat := false
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case int:
		return int64(x), true
	case float32:
		f, isFloat = float64(x), true
	case float64:
		f, isFloat = x, true
	case data.Decimal:
		u := x.Unscaled
		if u == nil {
			return 0, true
		}
		q := new(big.Int).Set(u)
		if x.Scale > 0 {
			q.Quo(q, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(x.Scale)), nil))
		} else if x.Scale < 0 {
			q.Mul(q, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-x.Scale)), nil))
		}
		// BigInteger.longValue: the low 64 bits.
		lo := new(big.Int).And(q, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
		return int64(lo), true
	default:
		return 0, false
	}
	if isFloat {
		if to == data.Int64 {
			return d2l(f), true
		}
		return int64(d2i(f)), true
	}
	return 0, false
}

func d2i(f float64) int32 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	}
	return int32(f)
}

func d2l(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

func javaFloatValue(v any) (float64, bool) {
	switch x := v.(type) {
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case float32:
		return float64(x), true
	case float64:
		return x, true
	case data.Decimal:
		f, _ := strconv.ParseFloat(x.String(), 64)
		return f, true
	}
	return 0, false
}

// javaToString is toString() of a Connect value.
func javaToString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int8:
		return strconv.FormatInt(int64(x), 10)
	case int16:
		return strconv.FormatInt(int64(x), 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case float32:
		return string(java.AppendFloat(nil, x, java.Legacy))
	case float64:
		return string(java.AppendDouble(nil, x, java.Legacy))
	case data.Decimal:
		return string(java.AppendBigDecimal(nil, x.Unscaled, x.Scale))
	case time.Time:
		return x.UTC().Format("Mon Jan 02 15:04:05 UTC 2006")
	}
	return className(v)
}

// javaDateString is Values.dateFormatFor(d).format(d): a time of day
// before the first day's end, a date at midnight, else a timestamp.
func javaDateString(t time.Time) string {
	ms := t.UnixMilli()
	const day = 24 * 60 * 60 * 1000
	t = t.UTC()
	switch {
	case ms < day:
		return t.Format("15:04:05.000")
	case ms%day == 0:
		return t.Format("2006-01-02")
	}
	return t.Format("2006-01-02T15:04:05.000Z")
}
