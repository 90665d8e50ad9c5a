package java

import "math/big"

// AppendBigDecimal appends BigDecimal.toString() of unscaled × 10^-scale:
// plain notation when the scale is not negative and the adjusted exponent
// is at least -6, scientific notation ("1.23E+4", "1E-10") otherwise.
func AppendBigDecimal(dst []byte, unscaled *big.Int, scale int32) []byte {
	var coeffBuf [40]byte
	var coeff []byte
	if unscaled == nil {
		coeff = append(coeffBuf[:0], '0')
	} else {
		if unscaled.Sign() < 0 {
			dst = append(dst, '-')
		}
		coeff = new(big.Int).Abs(unscaled).Append(coeffBuf[:0], 10)
	}
	if scale == 0 {
		return append(dst, coeff...)
	}
	n := len(coeff)
	adjusted := -int64(scale) + int64(n-1)
	if scale > 0 && adjusted >= -6 {
		pad := int(scale) - n
		if pad >= 0 {
			dst = append(dst, '0', '.')
			for range pad {
				dst = append(dst, '0')
			}
			return append(dst, coeff...)
		}
		dst = append(dst, coeff[:-pad]...)
		dst = append(dst, '.')
		return append(dst, coeff[-pad:]...)
	}
	dst = append(dst, coeff[0])
	if n > 1 {
		dst = append(dst, '.')
		dst = append(dst, coeff[1:]...)
	}
	if adjusted != 0 {
		dst = append(dst, 'E')
		if adjusted > 0 {
			dst = append(dst, '+')
		}
		dst = appendInt(dst, adjusted)
	}
	return dst
}

func appendInt(dst []byte, v int64) []byte {
	return big.NewInt(v).Append(dst, 10)
}
