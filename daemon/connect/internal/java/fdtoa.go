package java

import (
	"math"
	"math/big"
	"math/bits"
)

// This file ports BinaryToASCIIBuffer.dtoa of jdk.internal.math.FloatingDecimal
// as it was from JDK 8 to JDK 18, quirks included: Java's 32- and 64-bit
// wrapping arithmetic and shift masking are kept on purpose. FDBigInteger's
// arithmetic is exact, so math/big stands in for it.

const (
	expShift       = 52
	fractHOB       = int64(1) << expShift
	signifMask     = uint64(1)<<expShift - 1
	expBitMask     = uint64(0x7ff) << expShift
	signBitMask    = uint64(1) << 63
	expOne         = uint64(1023) << expShift
	maxSmallBinExp = 62
	minSmallBinExp = -(63 / 3)
	// javaDigits is the length of FloatingDecimal's digit buffer; the
	// integer fast path fills it from the end.
	javaDigits = 20
)

var (
	long5pow  [27]int64
	small5pow [14]int32
	n5bits    = [...]int{0, 3, 5, 7, 10, 12, 14, 17, 19, 21, 24, 26, 28, 31, 33, 35, 38, 40, 42, 45, 47, 49, 52, 54, 56, 59, 61}
	insigPow2 = [...]int{0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 11, 11, 11, 12, 12, 12, 12, 13, 13, 13, 14, 14, 14, 15, 15, 15, 15, 16, 16, 16, 17, 17, 17, 18, 18, 18, 19}
	bigFive   = big.NewInt(5)
	bigTen    = big.NewInt(10)
)

func init() {
	long5pow[0], small5pow[0] = 1, 1
	for i := 1; i < len(long5pow); i++ {
		long5pow[i] = long5pow[i-1] * 5
	}
	for i := 1; i < len(small5pow); i++ {
		small5pow[i] = small5pow[i-1] * 5
	}
}

// Java masks shift counts to the operand width.
func shl32(x int32, n int) int32 { return x << (uint(n) & 31) }
func shl64(x int64, n int) int64 { return x << (uint(n) & 63) }

// legacy64 fills d as FloatingDecimal.getBinaryToASCIIConverter(double)
// does (f is finite and non-zero).
func (d *decimal) legacy64(f float64) {
	b := math.Float64bits(f)
	d.neg = b&signBitMask != 0
	fract := int64(b & signifMask)
	binExp := int((b & expBitMask) >> expShift)
	var nSig int
	if binExp == 0 {
		lz := bits.LeadingZeros64(uint64(fract))
		shift := lz - (63 - expShift)
		fract <<= shift
		binExp = 1 - shift
		nSig = 64 - lz
	} else {
		fract |= fractHOB
		nSig = expShift + 1
	}
	d.dtoa(binExp-1023, fract, nSig)
}

// legacy32 fills d as FloatingDecimal.getBinaryToASCIIConverter(float)
// does (f is finite and non-zero).
func (d *decimal) legacy32(f float32) {
	const singleExpShift = 23
	b := math.Float32bits(f)
	d.neg = b>>31 != 0
	fract := int32(b & (1<<singleExpShift - 1))
	binExp := int((b >> singleExpShift) & 0xff)
	var nSig int
	if binExp == 0 {
		lz := bits.LeadingZeros32(uint32(fract))
		shift := lz - (31 - singleExpShift)
		fract <<= shift
		binExp = 1 - shift
		nSig = 32 - lz
	} else {
		fract |= 1 << singleExpShift
		nSig = singleExpShift + 1
	}
	d.dtoa(binExp-127, int64(fract)<<(expShift-singleExpShift), nSig)
}

// dtoa is BinaryToASCIIBuffer.dtoa with isCompatibleFormat = true.
func (d *decimal) dtoa(binExp int, fractBits int64, nSignificantBits int) {
	tailZeros := bits.TrailingZeros64(uint64(fractBits))
	nFractBits := expShift + 1 - tailZeros
	nTinyBits := max(0, nFractBits-binExp-1)
	if binExp <= maxSmallBinExp && binExp >= minSmallBinExp &&
		nTinyBits < len(long5pow) && nFractBits+n5bits[nTinyBits] < 64 && nTinyBits == 0 {
		insignificant := 0
		if binExp > nSignificantBits {
			insignificant = insignificantDigitsForPow2(binExp - nSignificantBits - 1)
		}
		if binExp >= expShift {
			fractBits = shl64(fractBits, binExp-expShift)
		} else {
			fractBits = int64(uint64(fractBits) >> (expShift - binExp))
		}
		d.developLongDigits(0, fractBits, insignificant)
		return
	}

	decExp := estimateDecExp(fractBits, binExp)
	b5 := max(0, -decExp)
	b2 := b5 + nTinyBits + binExp
	s5 := max(0, decExp)
	s2 := s5 + nTinyBits
	m5 := b5
	m2 := b2 - nSignificantBits

	fractBits = int64(uint64(fractBits) >> tailZeros)
	b2 -= nFractBits - 1
	common2 := min(b2, s2)
	b2 -= common2
	s2 -= common2
	m2 -= common2
	if nFractBits == 1 {
		m2--
	}
	if m2 < 0 {
		b2 -= m2
		s2 -= m2
		m2 = 0
	}

	bBits := nFractBits + b2 + n5bitsOr(b5)
	tenSBits := s2 + 1 + n5bitsOr(s5+1)
	var (
		digits             = d.buf[:0]
		low, high          bool
		lowDigitDifference int64
	)
	// emit appends the first digit, or drops a leading zero when the
	// estimate of decExp was one too high.
	first := func(q int) {
		if q == 0 && !high {
			decExp--
		} else {
			digits = append(digits, byte('0'+q))
		}
		if decExp < -3 || decExp >= 8 {
			high, low = false, false
		}
	}
	switch {
	case bBits < 32 && tenSBits < 32:
		b := shl32(int32(fractBits)*small5pow[b5], b2)
		s := shl32(small5pow[s5], s2)
		m := shl32(small5pow[m5], m2)
		tens := s * 10
		q := b / s
		b = 10 * (b % s)
		m *= 10
		low, high = b < m, b+m > tens
		first(int(q))
		for !low && !high {
			q = b / s
			b = 10 * (b % s)
			m *= 10
			if m > 0 {
				low, high = b < m, b+m > tens
			} else {
				low, high = true, true
			}
			digits = append(digits, byte('0'+q))
		}
		lowDigitDifference = int64(b<<1 - tens)
	case bBits < 64 && tenSBits < 64:
		b := shl64(fractBits*long5pow[b5], b2)
		s := shl64(long5pow[s5], s2)
		m := shl64(long5pow[m5], m2)
		tens := s * 10
		q := b / s
		b = 10 * (b % s)
		m *= 10
		low, high = b < m, b+m > tens
		first(int(q))
		for !low && !high {
			q = b / s
			b = 10 * (b % s)
			m *= 10
			if m > 0 {
				low, high = b < m, b+m > tens
			} else {
				low, high = true, true
			}
			digits = append(digits, byte('0'+q))
		}
		lowDigitDifference = b<<1 - tens
	default:
		s := pow52(s5, s2)
		b := pow52(b5, b2)
		b.Mul(b, big.NewInt(fractBits))
		m := pow52(m5+1, m2+1)
		tenS := pow52(s5+1, s2+1)
		var q, sum big.Int
		quoRem := func() int {
			q.QuoRem(b, s, b)
			b.Mul(b, bigTen)
			return int(q.Int64())
		}
		qd := quoRem()
		low = b.Cmp(m) < 0
		high = tenS.Cmp(sum.Add(b, m)) <= 0
		first(qd)
		for !low && !high {
			qd = quoRem()
			m.Mul(m, bigTen)
			low = b.Cmp(m) < 0
			high = tenS.Cmp(sum.Add(b, m)) <= 0
			digits = append(digits, byte('0'+qd))
		}
		if high && low {
			b.Lsh(b, 1)
			lowDigitDifference = int64(b.Cmp(tenS))
		}
	}
	d.exp = decExp + 1
	d.digits = digits
	if high {
		if !low || lowDigitDifference > 0 ||
			(lowDigitDifference == 0 && digits[len(digits)-1]&1 != 0) {
			d.roundup()
		}
	}
}

func n5bitsOr(i int) int {
	if i < len(n5bits) {
		return n5bits[i]
	}
	return i * 3
}

// pow52 is 5^p5 × 2^p2.
func pow52(p5, p2 int) *big.Int {
	v := new(big.Int).Exp(bigFive, big.NewInt(int64(p5)), nil)
	return v.Lsh(v, uint(p2))
}

func insignificantDigitsForPow2(p2 int) int {
	if p2 > 1 && p2 < len(insigPow2) {
		return insigPow2[p2]
	}
	return 0
}

// developLongDigits is the easy case: all significant bits are in lvalue.
func (d *decimal) developLongDigits(decExponent int, lvalue int64, insignificant int) {
	if insignificant != 0 {
		pow10 := long5pow[insignificant] << insignificant
		residue := lvalue % pow10
		lvalue /= pow10
		decExponent += insignificant
		if residue >= pow10>>1 {
			lvalue++
		}
	}
	i := javaDigits - 1
	c := lvalue % 10
	lvalue /= 10
	for c == 0 {
		decExponent++
		c = lvalue % 10
		lvalue /= 10
	}
	for lvalue != 0 {
		d.buf[i] = byte('0' + c)
		i--
		decExponent++
		c = lvalue % 10
		lvalue /= 10
	}
	d.buf[i] = byte('0' + c)
	d.exp = decExponent + 1
	d.digits = d.buf[i:javaDigits]
}

// roundup adds one to the last digit; a carry out of the first digit
// leaves "1" followed by zeros and a larger exponent.
func (d *decimal) roundup() {
	i := len(d.digits) - 1
	q := d.digits[i]
	if q == '9' {
		for q == '9' && i > 0 {
			d.digits[i] = '0'
			i--
			q = d.digits[i]
		}
		if q == '9' {
			d.exp++
			d.digits[0] = '1'
			return
		}
	}
	d.digits[i] = q + 1
}

// estimateDecExp estimates floor(log10(v)) as FloatingDecimal does, with
// the same double arithmetic (the explicit conversions stop Go from fusing
// a multiply and an add, which Java never does).
func estimateDecExp(fractBits int64, binExp int) int {
	d2 := math.Float64frombits(expOne | uint64(fractBits)&signifMask)
	d := float64(float64((d2-1.5)*0.289529654)+0.176091259) + float64(float64(binExp)*0.301029995663981)
	dBits := math.Float64bits(d)
	exponent := int((dBits&expBitMask)>>expShift) - 1023
	isNegative := dBits&signBitMask != 0
	switch {
	case exponent >= 0 && exponent < 52:
		mask := signifMask >> exponent
		r := int(int32(((dBits & signifMask) | uint64(fractHOB)) >> (expShift - exponent)))
		if isNegative {
			if mask&dBits == 0 {
				return -r
			}
			return -r - 1
		}
		return r
	case exponent < 0:
		if dBits&^signBitMask == 0 || !isNegative {
			return 0
		}
		return -1
	default:
		return int(d)
	}
}
