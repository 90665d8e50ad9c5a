package java

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/kcd-project/kcd/daemon/connect/data"
)

// HashCode returns hashCode() of v's Java counterpart (Long for int64,
// BigDecimal for data.Decimal, java.util.Date for time.Time, List for
// slices, Map for maps), and false when Java's value has no predictable
// hash: byte[] and Struct hash by object identity.
func HashCode(v any) (int32, bool) {
	switch v := v.(type) {
	case nil:
		return 0, true
	case string:
		return stringHash(v), true
	case bool:
		if v {
			return 1231, true
		}
		return 1237, true
	case int8:
		return int32(v), true
	case int16:
		return int32(v), true
	case int32:
		return v, true
	case int64:
		return longHash(v), true
	case int:
		return longHash(int64(v)), true
	case uint8:
		return int32(v), true
	case uint16:
		return int32(v), true
	case uint32:
		return longHash(int64(v)), true
	case uint64:
		return longHash(int64(v)), true
	case uint:
		return longHash(int64(v)), true
	case float32:
		if v != v {
			return 0x7fc00000, true
		}
		return int32(math.Float32bits(v)), true
	case float64:
		if v != v {
			return longHash(0x7ff8000000000000), true
		}
		return longHash(int64(math.Float64bits(v))), true
	case data.Decimal:
		return 31*bigIntegerHash(v.Unscaled) + v.Scale, true
	case time.Time:
		return longHash(v.UnixMilli()), true
	case []byte, *data.Struct:
		return 0, false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		h := int32(1)
		for i := range rv.Len() {
			eh, ok := HashCode(rv.Index(i).Interface())
			if !ok {
				return 0, false
			}
			h = 31*h + eh
		}
		return h, true
	case reflect.Map:
		var h int32
		for it := rv.MapRange(); it.Next(); {
			kh, ok1 := HashCode(it.Key().Interface())
			vh, ok2 := HashCode(it.Value().Interface())
			if !ok1 || !ok2 {
				return 0, false
			}
			h += kh ^ vh
		}
		return h, true
	}
	return 0, false
}

func longHash(v int64) int32 { return int32(v ^ int64(uint64(v)>>32)) }

// stringHash is String.hashCode over the UTF-16 code units of s (invalid
// UTF-8 counts as U+FFFD, as it is written).
func stringHash(s string) int32 {
	var h int32
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + hi
			h = 31*h + lo
			continue
		}
		h = 31*h + r
	}
	return h
}

// bigIntegerHash is BigInteger.hashCode: over the big-endian 32-bit words
// of the magnitude, times the sign.
func bigIntegerHash(v *big.Int) int32 {
	if v == nil || v.Sign() == 0 {
		return 0
	}
	mag := new(big.Int).Abs(v).Bytes()
	var h int32
	for len(mag)%4 != 0 {
		mag = append([]byte{0}, mag...)
	}
	for i := 0; i < len(mag); i += 4 {
		w := uint32(mag[i])<<24 | uint32(mag[i+1])<<16 | uint32(mag[i+2])<<8 | uint32(mag[i+3])
		h = int32(31*int64(h) + int64(w))
	}
	return h * int32(v.Sign())
}

// MapOrder returns the order in which a java.util.HashMap built by putting
// these keys one by one iterates them: by bucket of the spread hash in a
// table sized for len(keys). Keys sharing a bucket come in insertion order
// in Java, which a Go map does not keep: they are taken in their natural
// order (numbers by value, strings lexicographically), which is Java's
// order when the keys were put sorted. When some key has no predictable
// hash, every key is ordered that way.
func MapOrder(keys []any) []int {
	n := len(keys)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	if n < 2 {
		return order
	}
	capacity := uint32(16)
	for uint32(n) > capacity/4*3 {
		capacity <<= 1
	}
	buckets := make([]uint32, n)
	predictable := true
	for i, k := range keys {
		h, ok := HashCode(k)
		predictable = predictable && ok
		u := uint32(h)
		buckets[i] = (u ^ u>>16) & (capacity - 1)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if predictable {
			if c := cmp.Compare(buckets[a], buckets[b]); c != 0 {
				return c
			}
		}
		return compareNatural(keys[a], keys[b])
	})
	return order
}

// compareNatural orders two keys as Java's compareTo would, for keys of
// the same comparable type; other keys are ordered by type and text.
func compareNatural(a, b any) int {
	switch a := a.(type) {
	case string:
		if b, ok := b.(string); ok {
			return cmp.Compare(a, b)
		}
	case bool:
		if b, ok := b.(bool); ok {
			return cmp.Compare(b2i(a), b2i(b))
		}
	case data.Decimal:
		if b, ok := b.(data.Decimal); ok {
			return compareDecimal(a, b)
		}
	case time.Time:
		if b, ok := b.(time.Time); ok {
			return a.Compare(b)
		}
	}
	ra, rb := reflect.ValueOf(a), reflect.ValueOf(b)
	if ra.IsValid() && rb.IsValid() && ra.Type() == rb.Type() {
		switch {
		case ra.CanInt():
			return cmp.Compare(ra.Int(), rb.Int())
		case ra.CanUint():
			return cmp.Compare(ra.Uint(), rb.Uint())
		case ra.CanFloat():
			return compareDouble(ra.Float(), rb.Float())
		}
	}
	return cmp.Compare(sortText(a), sortText(b))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// compareDouble is Double.compare: -0.0 before 0.0, NaN last.
func compareDouble(a, b float64) int {
	if c := cmp.Compare(a, b); c != 0 || a != 0 {
		return c
	}
	return cmp.Compare(b2i(!math.Signbit(a)), b2i(!math.Signbit(b)))
}

// compareDecimal is BigDecimal.compareTo: by value, whatever the scales
// (compared through digits and exponents, never through powers of ten).
func compareDecimal(a, b data.Decimal) int {
	sa, sb := sign(a), sign(b)
	if sa != sb || sa == 0 {
		return cmp.Compare(sa, sb)
	}
	da := strings.TrimRight(new(big.Int).Abs(a.Unscaled).String(), "0")
	db := strings.TrimRight(new(big.Int).Abs(b.Unscaled).String(), "0")
	// |v| = 0.digits × 10^exp, with exp the digit count minus the scale.
	ea := int64(len(new(big.Int).Abs(a.Unscaled).String())) - int64(a.Scale)
	eb := int64(len(new(big.Int).Abs(b.Unscaled).String())) - int64(b.Scale)
	c := cmp.Compare(ea, eb)
	if c == 0 {
		c = cmp.Compare(da, db)
	}
	return c * sa
}

func sign(d data.Decimal) int {
	if d.Unscaled == nil {
		return 0
	}
	return d.Unscaled.Sign()
}

func sortText(v any) string {
	return fmt.Sprintf("%T:", v) + string(AppendToString(nil, v, Legacy))
}

// Bucket returns the bucket of key in a java.util.HashMap table of
// capacity entries (a power of two); ok is false when the key's hash is
// not predictable.
func Bucket(key any, capacity uint32) (bucket uint32, ok bool) {
	h, ok := HashCode(key)
	u := uint32(h)
	return (u ^ u>>16) & (capacity - 1), ok
}
