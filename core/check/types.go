package check

import (
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/seamdata/seam/core/lexical"

	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// typeOK reports whether a present value has the declared type. Integer
// types take only integer literals: 12.0 in an INT64 field fails, because a
// source that writes a fraction is sending a different type, and the gate
// never coerces. Strings never pass as numbers ("123" fails INT64).
func typeOK(t contractv1.FieldType, layout string, items contractv1.FieldType, v record.Value) bool {
	switch t {
	case contractv1.FieldType_FIELD_TYPE_STRING:
		return v.Kind() == record.KindString
	case contractv1.FieldType_FIELD_TYPE_INT64:
		return v.IsInt()
	case contractv1.FieldType_FIELD_TYPE_INT32:
		i, ok := v.Int()
		return ok && i >= math.MinInt32 && i <= math.MaxInt32
	case contractv1.FieldType_FIELD_TYPE_DOUBLE:
		if nonFinite(v) {
			return true
		}
		f, ok := v.Float()
		return ok && !math.IsInf(f, 0)
	case contractv1.FieldType_FIELD_TYPE_FLOAT:
		if nonFinite(v) {
			return true
		}
		// Judged as a float32: the largest real a database prints
		// (3.4028235e38) is a little above MaxFloat32 as a float64, and
		// rounds to it.
		f, ok := v.Float()
		return ok && fitsFloat32(f)
	case contractv1.FieldType_FIELD_TYPE_BOOL:
		return v.Kind() == record.KindBool
	case contractv1.FieldType_FIELD_TYPE_TIMESTAMP:
		return v.Kind() == record.KindString && timestampOK(v.Bytes(), layout)
	case contractv1.FieldType_FIELD_TYPE_DATE:
		if layout == "" {
			return v.Kind() == record.KindString && lexical.ParseDate(v.Bytes())
		}
		return v.Kind() == record.KindString && timestampOK(v.Bytes(), layout)
	case contractv1.FieldType_FIELD_TYPE_UUID:
		return v.Kind() == record.KindString && lexical.IsUUID(v.Bytes())
	case contractv1.FieldType_FIELD_TYPE_DECIMAL:
		if v.Kind() == record.KindNumber {
			return true
		}
		return v.Kind() == record.KindString && decimalOK(v.Bytes())
	case contractv1.FieldType_FIELD_TYPE_OBJECT:
		return v.Kind() == record.KindObject
	case contractv1.FieldType_FIELD_TYPE_JSON:
		// Any value; the elements of an array have the items' type.
		if v.Kind() == record.KindRaw {
			return false
		}
		if v.Kind() != record.KindArray {
			return true
		}
		fallthrough
	case contractv1.FieldType_FIELD_TYPE_ARRAY:
		if v.Kind() != record.KindArray {
			return false
		}
		if items == contractv1.FieldType_FIELD_TYPE_UNSPECIFIED {
			return true
		}
		ok := true
		err := record.Elements(v, func(_ int, e record.Value) bool {
			ok = !e.Present() || typeOK(items, "", contractv1.FieldType_FIELD_TYPE_UNSPECIFIED, e)
			return ok
		})
		return ok && err == nil
	}
	return true
}

// nonFinite reports whether v is one of the strings "NaN", "Infinity" and
// "-Infinity", which stand for FLOAT and DOUBLE values JSON numbers cannot
// carry (lexical.NonFiniteName). A number that overflows is not one: a
// DOUBLE of 1e400 is out of range, not infinite.
func nonFinite(v record.Value) bool {
	if v.Kind() != record.KindString {
		return false
	}
	_, ok := lexical.ParseNonFinite(v.Bytes())
	return ok
}

// describe names a value's shape for messages, quoting short text.
func describe(v record.Value) string {
	switch v.Kind() {
	case record.KindString, record.KindRaw:
		b := v.Bytes()
		if len(b) > 40 {
			return "string " + strconv.Quote(string(b[:40])+"…")
		}
		return "string " + strconv.Quote(string(b))
	case record.KindNumber:
		switch {
		case v.IsInt():
			return "integer " + string(v.Bytes())
		case v.Overflow():
			return "out-of-range number " + string(v.Bytes())
		}
		return "number " + string(v.Bytes())
	case record.KindBool:
		return "boolean " + string(record.AppendValue(nil, v))
	}
	return v.Kind().String()
}

// timestampOK validates a timestamp against a Go layout; the default and
// "RFC3339" are core/lexical's, which allocates nothing in the usual form.
func timestampOK(b []byte, layout string) bool {
	if layout == "" || layout == "RFC3339" || layout == time.RFC3339 || layout == time.RFC3339Nano {
		return lexical.ValidRFC3339(b)
	}
	_, err := time.Parse(layout, string(b))
	return err == nil
}

// decimalOK validates -?digits(.digits)? for decimals sent as strings.
func decimalOK(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == 0 {
		return false
	}
	if i == len(b) {
		return true
	}
	if b[i] != '.' || i+1 == len(b) {
		return false
	}
	_, ok := lexical.Digits(b[i+1:])
	return ok
}

// numeric returns a value's number for range checks: numbers, and decimals
// sent as strings.
func numeric(v record.Value) (float64, bool) {
	if f, ok := v.Float(); ok {
		return f, true
	}
	if v.Kind() == record.KindString && decimalOK(v.Bytes()) {
		f, err := strconv.ParseFloat(string(v.Bytes()), 64)
		return f, err == nil
	}
	return 0, false
}

// inRange tests lo <= v <= hi (NaN bounds are open). Integers compare
// exactly, also beyond 2^53.
func inRange(v record.Value, lo, hi float64) bool {
	if i, ok := v.Int(); ok {
		return intAtLeast(i, lo) && intAtMost(i, hi)
	}
	if v.Kind() == record.KindString {
		if f, ok := lexical.ParseNonFinite(v.Bytes()); ok {
			// An infinity compares as one; NaN is outside every range
			// that has a bound.
			if math.IsNaN(f) {
				return math.IsNaN(lo) && math.IsNaN(hi)
			}
			return !(f < lo) && !(f > hi)
		}
	}
	f, ok := numeric(v)
	if !ok {
		return true // not a number: the type check reports it
	}
	return !(f < lo) && !(f > hi)
}

func intAtLeast(i int64, lo float64) bool {
	if math.IsNaN(lo) || lo <= math.MinInt64 {
		return true
	}
	if lo >= math.MaxInt64 {
		return false
	}
	return i >= int64(math.Ceil(lo))
}

func intAtMost(i int64, hi float64) bool {
	if math.IsNaN(hi) || hi >= math.MaxInt64 {
		return true
	}
	if hi < math.MinInt64 {
		return false
	}
	return i <= int64(math.Floor(hi))
}

// length is a string's length in characters or an array's in elements.
func length(v record.Value) (int64, bool) {
	switch v.Kind() {
	case record.KindString:
		return int64(utf8.RuneCount(v.Bytes())), true
	case record.KindArray:
		return int64(v.Len()), true
	}
	return 0, false
}

// decimalFits says why a DECIMAL value (a number, or its string form) has
// more digits than precision and scale allow, or "" when it fits. Leading
// zeros of the integer part and trailing zeros of the fraction are not
// digits of the value: 0.50 fits DECIMAL(2,1).
func decimalFits(v record.Value, precision, scale int32) string {
	b := v.Bytes()
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		b = b[1:]
	}
	exp := 0
	for i, c := range b {
		if c == 'e' || c == 'E' {
			e, err := strconv.Atoi(string(b[i+1:]))
			if err != nil || e > maxExponent || e < -maxExponent {
				return "its exponent is out of reach"
			}
			b, exp = b[:i], e
			break
		}
	}
	ip, fp := b, []byte(nil)
	for i, c := range b {
		if c == '.' {
			ip, fp = b[:i], b[i+1:]
			break
		}
	}
	for len(fp) > 0 && fp[len(fp)-1] == '0' {
		fp = fp[:len(fp)-1]
	}
	// The significant digits, and where the point falls among them.
	point := len(ip) + exp
	lead := 0
	for lead < len(ip) && ip[lead] == '0' {
		lead++
	}
	n := len(ip) + len(fp)
	if lead == len(ip) {
		// No integer digits: the fraction's leading zeros are not
		// significant either, but they keep the point where it is.
		z := 0
		for z < len(fp) && fp[z] == '0' {
			z++
		}
		if z == len(fp) {
			return "" // zero fits every DECIMAL
		}
		lead += z
	}
	point -= lead
	n -= lead
	intDigits, fracDigits := max(point, 0), max(n-point, 0)
	switch {
	case fracDigits > int(scale):
		return fmt.Sprintf("%d digits after the point, at most %d", fracDigits, scale)
	case intDigits > int(precision-scale):
		return fmt.Sprintf("%d digits before the point, at most %d", intDigits, precision-scale)
	}
	return ""
}

// maxExponent bounds the exponent decimalFits reads.
const maxExponent = 100_000

// fitsFloat32 reports whether f rounds to a finite float32.
func fitsFloat32(f float64) bool { return !math.IsInf(float64(float32(f)), 0) }
