package data

import (
	"math/big"
	"strconv"
	"strings"
)

// Decimal is a value of the logical Decimal type: Unscaled × 10^-Scale, as
// Java's BigDecimal. A nil Unscaled is zero.
type Decimal struct {
	Unscaled *big.Int
	Scale    int32
}

// NewDecimal returns unscaled × 10^-scale.
func NewDecimal(unscaled int64, scale int32) Decimal {
	return Decimal{Unscaled: big.NewInt(unscaled), Scale: scale}
}

func (d Decimal) unscaled() *big.Int {
	if d.Unscaled == nil {
		return new(big.Int)
	}
	return d.Unscaled
}

// String renders the decimal in plain notation (BigDecimal.toPlainString):
// "-1.50", "1200" for 12 with scale -2.
func (d Decimal) String() string {
	u := d.unscaled()
	digits := new(big.Int).Abs(u).String()
	sign := ""
	if u.Sign() < 0 {
		sign = "-"
	}
	switch {
	case d.Scale <= 0:
		if u.Sign() == 0 {
			return "0"
		}
		return sign + digits + strings.Repeat("0", -int(d.Scale))
	case len(digits) > int(d.Scale):
		i := len(digits) - int(d.Scale)
		return sign + digits[:i] + "." + digits[i:]
	default:
		return sign + "0." + strings.Repeat("0", int(d.Scale)-len(digits)) + digits
	}
}

func one() *int32 { v := int32(1); return &v }

// DecimalSchema is the schema of decimals with scale.
func DecimalSchema(scale int32, optional bool) *Schema {
	return &Schema{Type: Bytes, Name: DecimalName, Version: one(), Optional: optional,
		Parameters:     map[string]string{DecimalScaleParam: strconv.Itoa(int(scale))},
		ParameterOrder: []string{DecimalScaleParam}}
}

// DateSchema is the schema of dates (INT32 days since the epoch).
func DateSchema(optional bool) *Schema {
	return &Schema{Type: Int32, Name: DateName, Version: one(), Optional: optional}
}

// TimeSchema is the schema of times of day (INT32 milliseconds since midnight).
func TimeSchema(optional bool) *Schema {
	return &Schema{Type: Int32, Name: TimeName, Version: one(), Optional: optional}
}

// TimestampSchema is the schema of instants (INT64 milliseconds since the epoch).
func TimestampSchema(optional bool) *Schema {
	return &Schema{Type: Int64, Name: TimestampName, Version: one(), Optional: optional}
}
