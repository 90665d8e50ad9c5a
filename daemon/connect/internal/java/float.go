package java

import (
	"math"
	"strconv"
)

// FloatFormat selects which JDK's Double.toString and Float.toString to
// reproduce. Both round-trip exactly; they differ in the digits chosen for
// about 1% of doubles and 10% of floats (JDK 17 prints 1e23 as
// 9.999999999999999E22, JDK 19+ as 1.0E23).
type FloatFormat int

const (
	// Legacy is the FloatingDecimal algorithm of JDK 8 to 18, which Kafka
	// Connect 3.x and Kafka Connect 4.x on JDK 17 use.
	Legacy FloatFormat = iota
	// Shortest is the algorithm of JDK 19 and later (JDK-4511638): the
	// shortest decimal that rounds to the value, with at least two digits.
	Shortest
)

// AppendDouble appends Double.toString(f).
func AppendDouble(dst []byte, f float64, ff FloatFormat) []byte {
	if s, ok := special(f); ok {
		return append(dst, s...)
	}
	var d decimal
	if ff == Legacy {
		d.legacy64(f)
	} else {
		d.shortest(f, 64)
	}
	return d.appendJava(dst)
}

// AppendFloat appends Float.toString(f).
func AppendFloat(dst []byte, f float32, ff FloatFormat) []byte {
	if s, ok := special(float64(f)); ok {
		return append(dst, s...)
	}
	var d decimal
	if ff == Legacy {
		d.legacy32(f)
	} else {
		d.shortest(float64(f), 32)
	}
	return d.appendJava(dst)
}

func special(f float64) (string, bool) {
	switch {
	case math.IsNaN(f):
		return "NaN", true
	case math.IsInf(f, 1):
		return "Infinity", true
	case math.IsInf(f, -1):
		return "-Infinity", true
	case f == 0 && math.Signbit(f):
		return "-0.0", true
	case f == 0:
		return "0.0", true
	}
	return "", false
}

// decimal is ±0.d1d2…dn × 10^exp, the digits as ASCII.
type decimal struct {
	neg    bool
	digits []byte
	exp    int
	buf    [32]byte
}

// shortest fills d with the JDK 19+ choice: among the shortest decimals
// that round to f (at least two digits long when one would do), the
// closest to f, ties to an even last digit.
func (d *decimal) shortest(f float64, bitSize int) {
	d.neg = f < 0
	a := math.Abs(f)
	s := strconv.AppendFloat(d.buf[:0], a, 'e', -1, bitSize)
	digits, exp := splitE(s)
	// strconv's shortest is not always the closest of that length, and a
	// one-digit result may have a closer two-digit neighbour: take the
	// correctly rounded decimal of that length when it still round-trips.
	var alt [32]byte
	s2 := strconv.AppendFloat(alt[:0], a, 'e', max(len(digits)-1, 1), bitSize)
	if v, err := strconv.ParseFloat(string(s2), bitSize); err == nil && v == a {
		dg, e := splitE(s2)
		for len(dg) > 1 && dg[len(dg)-1] == '0' {
			dg = dg[:len(dg)-1]
		}
		n := copy(d.buf[:], dg)
		digits, exp = d.buf[:n], e
	}
	d.digits, d.exp = digits, exp+1
}

// splitE splits strconv's "d.ddde±xx" into its digits (in place) and the
// exponent.
func splitE(s []byte) ([]byte, int) {
	i := 0
	for s[i] != 'e' {
		i++
	}
	exp, _ := strconv.Atoi(string(s[i+1:]))
	digits := s[:0]
	for _, c := range s[:i] {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	return digits, exp
}

// appendJava formats d as Double.toString does: plain notation for
// 10^-3 ≤ |v| < 10^7, computerized scientific notation otherwise, always
// with a digit after the point. This is FloatingDecimal's getChars.
func (d *decimal) appendJava(dst []byte) []byte {
	if d.neg {
		dst = append(dst, '-')
	}
	n, e := len(d.digits), d.exp
	switch {
	case e > 0 && e < 8:
		k := min(n, e)
		dst = append(dst, d.digits[:k]...)
		if k < e {
			for range e - k {
				dst = append(dst, '0')
			}
			return append(dst, '.', '0')
		}
		dst = append(dst, '.')
		if k < n {
			return append(dst, d.digits[k:]...)
		}
		return append(dst, '0')
	case e <= 0 && e > -3:
		dst = append(dst, '0', '.')
		for range -e {
			dst = append(dst, '0')
		}
		return append(dst, d.digits...)
	default:
		dst = append(dst, d.digits[0], '.')
		if n > 1 {
			dst = append(dst, d.digits[1:]...)
		} else {
			dst = append(dst, '0')
		}
		dst = append(dst, 'E')
		return strconv.AppendInt(dst, int64(e-1), 10)
	}
}
