package check

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"

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
		f, ok := v.Float()
		return ok && !math.IsInf(f, 0)
	case contractv1.FieldType_FIELD_TYPE_FLOAT:
		f, ok := v.Float()
		return ok && math.Abs(f) <= math.MaxFloat32
	case contractv1.FieldType_FIELD_TYPE_BOOL:
		return v.Kind() == record.KindBool
	case contractv1.FieldType_FIELD_TYPE_TIMESTAMP:
		return v.Kind() == record.KindString && timestampOK(v.Bytes(), layout)
	case contractv1.FieldType_FIELD_TYPE_DATE:
		if layout == "" {
			return v.Kind() == record.KindString && dateOK(v.Bytes())
		}
		return v.Kind() == record.KindString && timestampOK(v.Bytes(), layout)
	case contractv1.FieldType_FIELD_TYPE_UUID:
		return v.Kind() == record.KindString && UUIDShaped(v.Bytes())
	case contractv1.FieldType_FIELD_TYPE_DECIMAL:
		if v.Kind() == record.KindNumber {
			return true
		}
		return v.Kind() == record.KindString && decimalOK(v.Bytes())
	case contractv1.FieldType_FIELD_TYPE_OBJECT:
		return v.Kind() == record.KindObject
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

func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, len(b) > 0
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// dateOK validates YYYY-MM-DD without allocating.
func dateOK(b []byte) bool {
	if len(b) != 10 || b[4] != '-' || b[7] != '-' {
		return false
	}
	y, ok1 := digits(b[:4])
	m, ok2 := digits(b[5:7])
	d, ok3 := digits(b[8:10])
	return ok1 && ok2 && ok3 && m >= 1 && m <= 12 && d >= 1 && d <= daysIn(m, y)
}

// timestampOK validates a timestamp against a Go layout; the default and
// "RFC3339" are checked by hand, which allocates nothing.
func timestampOK(b []byte, layout string) bool {
	if layout == "" || layout == "RFC3339" || layout == time.RFC3339 || layout == time.RFC3339Nano {
		return rfc3339OK(b)
	}
	_, err := time.Parse(layout, string(b))
	return err == nil
}

// rfc3339OK validates YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM).
func rfc3339OK(b []byte) bool {
	if len(b) < 20 || !dateOK(b[:10]) || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return false
	}
	h, ok1 := digits(b[11:13])
	mi, ok2 := digits(b[14:16])
	s, ok3 := digits(b[17:19])
	if !ok1 || !ok2 || !ok3 || h > 23 || mi > 59 || s > 59 {
		return false
	}
	rest := b[19:]
	if rest[0] == '.' {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 1 {
			return false
		}
		rest = rest[i:]
	}
	switch {
	case len(rest) == 1 && rest[0] == 'Z':
		return true
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := digits(rest[1:3])
		om, ok2 := digits(rest[4:6])
		return ok1 && ok2 && oh <= 23 && om <= 59
	}
	return false
}

func isHex(c byte) bool { return (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'f') }

// UUIDShaped reports whether b has the 8-4-4-4-12 hex form of a UUID, in
// either case. The gate uses it to name the shape of unannounced values.
func UUIDShaped(b []byte) bool {
	if len(b) != 36 {
		return false
	}
	for i, c := range b {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHex(c) {
				return false
			}
		}
	}
	return true
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
	_, ok := digits(b[i+1:])
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
