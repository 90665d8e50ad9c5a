package file

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kcd-project/kcd/daemon/connect/data"
)

// JavaString renders a Connect value as Java's String.valueOf does, which
// is what FileStreamSinkTask writes:
//
//	nil                  null
//	string               itself
//	integers, bool       Long.toString, Boolean.toString
//	float64, float32     Double.toString, Float.toString (1.0, 1.0E10, 1.0E-4, NaN, Infinity)
//	*data.Struct         Struct{a=1,b=x} (null fields left out)
//	[]any                [a, b]
//	maps                 {k=v, k2=v2}: sorted by key (Java's HashMap order is not reproducible)
//	data.Decimal         BigDecimal.toString in plain notation
//	time.Time            java.util.Date.toString in the local time zone
//	[]byte               the bytes themselves (Java would print an array id such as [B@1b6d3586)
func JavaString(v any) string {
	var b strings.Builder
	writeJava(&b, v)
	return b.String()
}

func writeJava(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case string:
		b.WriteString(v)
	case []byte:
		b.Write(v)
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case int8:
		b.WriteString(strconv.FormatInt(int64(v), 10))
	case int16:
		b.WriteString(strconv.FormatInt(int64(v), 10))
	case int32:
		b.WriteString(strconv.FormatInt(int64(v), 10))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case int:
		b.WriteString(strconv.Itoa(v))
	case float64:
		b.WriteString(javaFloat(v, 64))
	case float32:
		b.WriteString(javaFloat(float64(v), 32))
	case *data.Struct:
		writeStruct(b, v)
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJava(b, e)
		}
		b.WriteByte(']')
	case map[any]any:
		writeMap(b, v)
	case *data.OrderedMap:
		b.WriteByte('{')
		for i, k := range v.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(JavaString(k))
			b.WriteByte('=')
			writeJava(b, v.Values[i])
		}
		b.WriteByte('}')
	case map[string]any:
		m := make(map[any]any, len(v))
		for k, e := range v {
			m[k] = e
		}
		writeMap(b, m)
	case data.Decimal:
		b.WriteString(v.String())
	case time.Time:
		b.WriteString(v.Local().Format("Mon Jan 02 15:04:05 MST 2006"))
	case fmt.Stringer:
		b.WriteString(v.String())
	default:
		writeReflect(b, v)
	}
}

// writeReflect renders the other slices and maps Connect accepts for
// ARRAY and MAP ([]string, map[string]int32…).
func writeReflect(b *strings.Builder, v any) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		l := make([]any, rv.Len())
		for i := range l {
			l[i] = rv.Index(i).Interface()
		}
		writeJava(b, l)
	case reflect.Map:
		m := make(map[any]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			m[it.Key().Interface()] = it.Value().Interface()
		}
		writeMap(b, m)
	case reflect.Pointer:
		if rv.IsNil() {
			b.WriteString("null")
			return
		}
		writeJava(b, rv.Elem().Interface())
	default:
		fmt.Fprint(b, v)
	}
}

func writeStruct(b *strings.Builder, s *data.Struct) {
	if s == nil {
		b.WriteString("null")
		return
	}
	b.WriteString("Struct{")
	first := true
	for i, v := range s.Values {
		if v == nil || i >= len(s.Schema.Fields) {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(s.Schema.Fields[i].Name)
		b.WriteByte('=')
		writeJava(b, v)
	}
	b.WriteByte('}')
}

func writeMap(b *strings.Builder, m map[any]any) {
	type entry struct {
		k string
		v any
	}
	es := make([]entry, 0, len(m))
	for k, v := range m {
		es = append(es, entry{JavaString(k), v})
	}
	slices.SortFunc(es, func(x, y entry) int { return cmp.Compare(x.k, y.k) })
	b.WriteByte('{')
	for i, e := range es {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(e.k)
		b.WriteByte('=')
		writeJava(b, e.v)
	}
	b.WriteByte('}')
}

// javaFloat is Double.toString (bits 64) or Float.toString (bits 32): the
// shortest digits that read back to the same value, in plain notation for
// magnitudes in [1e-3, 1e7) and as d.dddE±n otherwise.
func javaFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	if a := math.Abs(f); a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'e', -1, bits) // e.g. 1.2345e+10, 1e-05
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}
