package data

import (
	"math"
	"math/big"
	"strconv"
)

// ParseDecimal parses a decimal as Java's new BigDecimal(String) does,
// keeping the scale the text implies: "1.50" has scale 2, "1E+3" scale -3,
// "-0.0" is zero with scale 1 (BigDecimal has no negative zero).
func ParseDecimal(s string) (Decimal, error) {
	bad := func() (Decimal, error) { return Decimal{}, Errorf("invalid decimal %q", s) }
	i, neg := 0, false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	digits := make([]byte, 0, len(s))
	frac, sawDigit, sawPoint := 0, false, false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits = append(digits, c)
			sawDigit = true
			if sawPoint {
				frac++
			}
		case c == '.' && !sawPoint:
			sawPoint = true
		default:
			goto exponent
		}
	}
exponent:
	if !sawDigit {
		return bad()
	}
	exp := int64(0)
	if i < len(s) {
		if s[i] != 'e' && s[i] != 'E' {
			return bad()
		}
		e, err := strconv.ParseInt(s[i+1:], 10, 64)
		if err != nil {
			return bad()
		}
		exp = e
	}
	scale := int64(frac) - exp
	if exp > math.MaxInt32 || exp < math.MinInt32 || scale > math.MaxInt32 || scale < math.MinInt32 {
		return Decimal{}, Errorf("invalid decimal %q: scale out of range", s)
	}
	u, ok := new(big.Int).SetString(string(digits), 10)
	if !ok {
		return bad()
	}
	if neg {
		u.Neg(u)
	}
	return Decimal{Unscaled: u, Scale: int32(scale)}, nil
}
