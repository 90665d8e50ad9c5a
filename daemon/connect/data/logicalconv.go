package data

import (
	"math"
	"math/big"
	"strconv"
	"time"
)

// The conversions between logical values and their underlying
// representation, as Kafka Connect's Decimal, Date, Time and Timestamp
// classes do them (fromLogical / toLogical), with their error messages.

const millisPerDay = 24 * 60 * 60 * 1000

// DecimalScale returns the scale parameter of a Decimal schema.
func DecimalScale(s *Schema) (int32, error) {
	v, ok := s.Parameters[DecimalScaleParam]
	if !ok {
		return 0, Errorf("Invalid Decimal schema: scale parameter not found.")
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, Errorf("Invalid scale parameter found in Decimal schema: %w", err)
	}
	return int32(n), nil
}

// DecimalToBytes returns the big-endian two's-complement bytes of d's
// unscaled value (BigInteger.toByteArray), after checking that d has the
// schema's scale.
func DecimalToBytes(s *Schema, d Decimal) ([]byte, error) {
	scale, err := DecimalScale(s)
	if err != nil {
		return nil, err
	}
	if d.Scale != scale {
		return nil, Errorf("Decimal value has mismatching scale for given Decimal schema. Schema has scale %d, value has scale %d.", scale, d.Scale)
	}
	return TwosComplement(d.unscaled()), nil
}

// DecimalFromBytes reads a Decimal of the schema's scale from the
// big-endian two's-complement bytes of its unscaled value.
func DecimalFromBytes(s *Schema, b []byte) (Decimal, error) {
	scale, err := DecimalScale(s)
	if err != nil {
		return Decimal{}, err
	}
	if len(b) == 0 {
		return Decimal{}, Errorf("Zero length BigInteger")
	}
	return Decimal{Unscaled: FromTwosComplement(b), Scale: scale}, nil
}

// TwosComplement returns the shortest big-endian two's-complement form of
// v, as Java's BigInteger.toByteArray: 0 is [0], 128 is [0 128], -1 [255].
func TwosComplement(v *big.Int) []byte {
	switch v.Sign() {
	case 0:
		return []byte{0}
	case 1:
		b := v.Bytes()
		if b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -v-1 has the bits of v's two's complement inverted.
	m := new(big.Int).Neg(v)
	m.Sub(m, big.NewInt(1))
	n := m.BitLen()/8 + 1
	b := make([]byte, n)
	m.FillBytes(b)
	for i := range b {
		b[i] = ^b[i]
	}
	return b
}

// FromTwosComplement reads a big-endian two's-complement integer (b is not
// empty).
func FromTwosComplement(b []byte) *big.Int {
	v := new(big.Int).SetBytes(b)
	if b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}

// DateToDays returns the days since the epoch of a date: an instant at
// midnight UTC.
func DateToDays(t time.Time) (int32, error) {
	u := t.UTC()
	if u.Hour() != 0 || u.Minute() != 0 || u.Second() != 0 || u.Nanosecond() != 0 {
		return 0, Errorf("Kafka Connect Date type should not have any time fields set to non-zero values.")
	}
	days := u.UnixMilli() / millisPerDay
	if days < math.MinInt32 || days > math.MaxInt32 {
		return 0, Errorf("Date %s is out of the range of Kafka Connect's Date type", u.Format(time.DateOnly))
	}
	return int32(days), nil
}

// DateFromDays returns midnight UTC of the day days after the epoch.
func DateFromDays(days int32) time.Time {
	return time.UnixMilli(int64(days) * millisPerDay).UTC()
}

// TimeToMillis returns the milliseconds since midnight of a time of day:
// an instant of 1970-01-01 UTC (86400000, the end of the day, included).
func TimeToMillis(t time.Time) (int32, error) {
	ms := t.UnixMilli()
	if ms < 0 || ms > millisPerDay {
		return 0, Errorf("Kafka Connect Time type should not have any date fields set to non-zero values.")
	}
	return int32(ms), nil
}

// TimeFromMillis returns the instant ms milliseconds after the epoch,
// which must be within the first day.
func TimeFromMillis(ms int32) (time.Time, error) {
	if ms < 0 || ms > millisPerDay {
		return time.Time{}, Errorf("Time values must use number of milliseconds greater than 0 and less than 86400000")
	}
	return time.UnixMilli(int64(ms)).UTC(), nil
}

// TimestampToMillis returns the milliseconds since the epoch (rounded
// down, as java.util.Date keeps milliseconds).
func TimestampToMillis(t time.Time) int64 { return t.UnixMilli() }

// TimestampFromMillis returns the instant ms milliseconds after the epoch,
// in UTC.
func TimestampFromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
