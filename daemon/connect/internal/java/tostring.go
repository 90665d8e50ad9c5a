package java

import (
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/kcd-project/kcd/daemon/connect/data"
)

// DateLayout is java.util.Date.toString's format in a UTC JVM.
const DateLayout = "Mon Jan 02 15:04:05 MST 2006"

// AppendToString appends String.valueOf(v) of v's Java counterpart, as
// StringConverter writes it: Struct{a=1,b=x} (null fields left out),
// [1, 2] for lists, {k=v} for maps in HashMap order, Double.toString and
// BigDecimal.toString for numbers, Date.toString in UTC for times.
// []byte is appended as is: Java would print an identity ("[B@1b6d3586"),
// which no reader can use.
func AppendToString(dst []byte, v any, ff FloatFormat) []byte {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...)
	case string:
		return append(dst, v...)
	case []byte:
		return append(dst, v...)
	case bool:
		return strconv.AppendBool(dst, v)
	case int8:
		return strconv.AppendInt(dst, int64(v), 10)
	case int16:
		return strconv.AppendInt(dst, int64(v), 10)
	case int32:
		return strconv.AppendInt(dst, int64(v), 10)
	case int64:
		return strconv.AppendInt(dst, v, 10)
	case int:
		return strconv.AppendInt(dst, int64(v), 10)
	case float32:
		return AppendFloat(dst, v, ff)
	case float64:
		return AppendDouble(dst, v, ff)
	case data.Decimal:
		return AppendBigDecimal(dst, v.Unscaled, v.Scale)
	case time.Time:
		return v.UTC().AppendFormat(dst, DateLayout)
	case *data.Struct:
		return appendStruct(dst, v, ff)
	case fmt.Stringer:
		return append(dst, v.String()...)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		dst = append(dst, '[')
		for i := range rv.Len() {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = AppendToString(dst, rv.Index(i).Interface(), ff)
		}
		return append(dst, ']')
	case reflect.Map:
		keys := make([]any, 0, rv.Len())
		vals := make([]any, 0, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			keys = append(keys, it.Key().Interface())
			vals = append(vals, it.Value().Interface())
		}
		dst = append(dst, '{')
		for n, i := range MapOrder(keys) {
			if n > 0 {
				dst = append(dst, ", "...)
			}
			dst = AppendToString(dst, keys[i], ff)
			dst = append(dst, '=')
			dst = AppendToString(dst, vals[i], ff)
		}
		return append(dst, '}')
	}
	return fmt.Append(dst, v)
}

func appendStruct(dst []byte, st *data.Struct, ff FloatFormat) []byte {
	if st == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, "Struct{"...)
	first := true
	for i, v := range st.Values {
		if v == nil || st.Schema == nil || i >= len(st.Schema.Fields) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, st.Schema.Fields[i].Name...)
		dst = append(dst, '=')
		dst = AppendToString(dst, v, ff)
	}
	return append(dst, '}')
}
