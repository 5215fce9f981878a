package mapping

import (
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	"math"
	"strconv"
)

// decimal is a number as sent, mant × 10^exp, so scaling by powers of ten
// and rounding to integers are exact: 12.34 × 100 is 1234, not
// 1233.9999999999998.
type decimal struct {
	neg  bool
	mant uint64
	exp  int
}

// parseDecimal reads a JSON number literal (also the text of a numeric
// string). ok is false for text that is not a number; big is true for a
// number with more significant digits than uint64 holds: d then keeps only
// the leading digits, so callers read such text with strconv instead.
func parseDecimal(b []byte) (d decimal, ok, big bool) {
	i := 0
	if i < len(b) && b[i] == '-' {
		d.neg = true
		i++
	}
	start := i
	digits := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if !d.push(b[i]) {
			big = true
			d.exp++ // the digit is dropped, its place value kept
		}
		digits++
	}
	if i == start {
		return d, false, false
	}
	if digits > 1 && b[start] == '0' {
		return d, false, false // JSON forbids leading zeros; "007" is not a number
	}
	if i < len(b) && b[i] == '.' {
		i++
		fs := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if !d.push(b[i]) {
				big = true
				continue
			}
			d.exp--
		}
		if i == fs {
			return d, false, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		es := i
		e := 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if e < 100000 {
				e = e*10 + int(b[i]-'0')
			}
		}
		if i == es {
			return d, false, false
		}
		if eneg {
			e = -e
		}
		d.exp += e
	}
	if i != len(b) {
		return d, false, false
	}
	if d.mant == 0 {
		// A zero keeps its scale (0.0000000000 stays so, as a numeric
		// column prints it), but not a positive exponent.
		d.exp = min(d.exp, 0)
		if d.exp < -maxDecimalExp {
			d.exp = 0
		}
	}
	return d, true, big
}

// push appends one digit to the mantissa; it reports false when the digit
// does not fit (only zeros after the point are then dropped exactly).
func (d *decimal) push(c byte) bool {
	x := uint64(c - '0')
	if d.mant > (math.MaxUint64-x)/10 {
		return false
	}
	d.mant = d.mant*10 + x
	return true
}

// pow10u are the powers of ten that fit uint64.
var pow10u = func() (t [20]uint64) {
	t[0] = 1
	for i := 1; i < len(t); i++ {
		t[i] = t[i-1] * 10
	}
	return t
}()

// float returns d as the nearest float64.
func (d decimal) float() float64 {
	var f float64
	switch {
	case d.mant == 0:
		f = 0
	case d.mant < 1<<53 && d.exp >= 0 && d.exp <= 22:
		f = float64(d.mant) * math.Pow10(d.exp)
	case d.mant < 1<<53 && d.exp < 0 && d.exp >= -22:
		f = float64(d.mant) / math.Pow10(-d.exp)
	default:
		abs := d
		abs.neg = false // the sign is applied below
		f, _ = strconv.ParseFloat(string(abs.appendText(nil)), 64)
	}
	if d.neg {
		f = -f
	}
	return f
}

// appendText writes d as a plain decimal literal ("-12.34", "1200").
func (d decimal) appendText(dst []byte) []byte {
	if d.neg && d.mant != 0 {
		dst = append(dst, '-')
	}
	digits := strconv.AppendUint(nil, d.mant, 10)
	switch {
	case d.exp >= 0:
		dst = append(dst, digits...)
		for range d.exp {
			dst = append(dst, '0')
		}
	case -d.exp < len(digits):
		point := len(digits) + d.exp
		dst = append(dst, digits[:point]...)
		dst = append(dst, '.')
		dst = append(dst, digits[point:]...)
	default:
		dst = append(dst, '0', '.')
		for range -d.exp - len(digits) {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	}
	return dst
}

// toInt rounds d to an integer by mode. ok is false when the mode is EXACT
// and d has a fraction, or when the result does not fit int64 (inexact
// names which).
func (d decimal) toInt(mode contractv1.Rounding) (v int64, ok, inexact bool) {
	q := d.mant
	if d.exp > 0 {
		if d.exp >= len(pow10u) || q > math.MaxUint64/pow10u[d.exp] {
			return 0, false, false
		}
		q *= pow10u[d.exp]
	} else if d.exp < 0 {
		var r, p uint64
		if -d.exp >= len(pow10u) {
			// mant < 2^64 < 10^20, so the value is below 0.2: no integer part.
			q, r, p = 0, d.mant, 0
		} else {
			p = pow10u[-d.exp]
			q, r = d.mant/p, d.mant%p
		}
		if r != 0 {
			switch mode {
			case roundExact:
				return 0, false, true
			case roundUp:
				q++
			case roundHalfUp:
				if p != 0 && r >= p-r {
					q++
				}
			case roundHalfEven:
				if p != 0 && (r > p-r || (r == p-r && q%2 == 1)) {
					q++
				}
			}
		}
	}
	if d.neg {
		if q > 1<<63 {
			return 0, false, false
		}
		return -int64(q), true, false
	}
	if q > math.MaxInt64 {
		return 0, false, false
	}
	return int64(q), true, false
}

// roundFloat rounds f to an integer by mode, for scales that are not powers
// of ten. ok is false as for decimal.toInt.
func roundFloat(f float64, mode contractv1.Rounding) (v int64, ok, inexact bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false, false
	}
	t := math.Trunc(f)
	if t != f {
		switch mode {
		case roundExact:
			return 0, false, true
		case roundUp:
			t += math.Copysign(1, f)
		case roundHalfUp:
			t = math.Round(f)
		case roundHalfEven:
			t = math.RoundToEven(f)
		}
	}
	if t < -(1<<63) || t >= 1<<63 {
		return 0, false, false
	}
	return int64(t), true, false
}
