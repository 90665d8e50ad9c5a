package data

import (
	"math/big"
	"strconv"
)

// Decimal is a value of the logical Decimal type: Unscaled × 10^-Scale.
type Decimal struct {
	Unscaled *big.Int
	Scale    int32
}

// String renders the decimal in plain notation.
func (d Decimal) String() string {
	if d.Unscaled == nil {
		return "0"
	}
	r := new(big.Rat).SetFrac(d.Unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil))
	if d.Scale <= 0 {
		return r.FloatString(0)
	}
	return r.FloatString(int(d.Scale))
}

func one() *int32 { v := int32(1); return &v }

// DecimalSchema is the schema of decimals with scale.
func DecimalSchema(scale int32, optional bool) *Schema {
	return &Schema{Type: Bytes, Name: DecimalName, Version: one(), Optional: optional,
		Parameters: map[string]string{DecimalScaleParam: strconv.Itoa(int(scale))}}
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
