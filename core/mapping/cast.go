package mapping

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/lexical"

	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

const (
	roundExact    = contractv1.Rounding_ROUNDING_EXACT
	roundHalfEven = contractv1.Rounding_ROUNDING_HALF_EVEN
	roundHalfUp   = contractv1.Rounding_ROUNDING_HALF_UP
	roundUp       = contractv1.Rounding_ROUNDING_UP
)

// failure is why one value could not be converted; the field plan turns it
// into a RecordError naming the field. It is only built on failure, so a
// successful conversion allocates nothing.
type failure struct {
	code recordv1.ErrorCode
	msg  string
}

// conv is a compiled conversion into one canonical type: the explicit cast
// of a field mapping, or the implicit one that checks a value has the type
// both sides declare. Implicit conversions never change a value's kind
// (a string is never read as a number); explicit ones do what the cast says.
type conv struct {
	to       contractv1.FieldType
	explicit bool
	// layout is the Go time layout; empty means RFC 3339 (fast path).
	layout string
	// unixExp is the power of ten that turns a number in the layout's unit
	// into nanoseconds ("unix" seconds: 9); -1 when the layout is not a
	// unix time.
	unixExp int
	loc     *time.Location
	// scale multiplies numbers; pow10 is its exponent when it is a power of
	// ten, so decimal scaling stays exact.
	scaled  bool
	isPow10 bool
	pow10   int
	scale   float64
	// rounding applies to integer targets; EXACT refuses fractions.
	rounding contractv1.Rounding
}

// unixLayouts are the layouts that read numbers as times since the epoch.
var unixLayouts = map[string]int{"unix": 9, "unix_ms": 6, "unix_us": 3, "unix_ns": 0}

func (c *conv) mismatchCode() recordv1.ErrorCode {
	if c.explicit {
		return recordv1.ErrorCode_ERROR_CODE_CAST_FAILED
	}
	return recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH
}

func (c *conv) fail(format string, args ...any) *failure {
	return &failure{code: c.mismatchCode(), msg: fmt.Sprintf(format, args...)}
}

// convert converts one present source value.
func (c *conv) convert(v record.Value, a *arena) (Value, *failure) {
	if c.to == contractv1.FieldType_FIELD_TYPE_JSON {
		return c.toJSON(v)
	}
	switch v.Kind() {
	case record.KindString:
		return c.fromString(v.Bytes(), a)
	case record.KindNumber:
		if v.Overflow() {
			return Value{}, c.fail("number %s is out of range", clip(v.Bytes()))
		}
		return c.fromNumber(v, a)
	case record.KindBool:
		b, _ := v.Bool()
		return c.fromBool(b)
	case record.KindObject:
		if c.to == contractv1.FieldType_FIELD_TYPE_OBJECT {
			return Value{kind: KindJSON, b: v.Bytes()}, nil
		}
	case record.KindArray:
		if c.to == contractv1.FieldType_FIELD_TYPE_ARRAY {
			return Value{kind: KindJSON, b: v.Bytes()}, nil
		}
	case record.KindRaw:
		return Value{}, &failure{code: recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH,
			msg: fmt.Sprintf("CSV text %q is not a value of the declared type", clip(v.Bytes()))}
	}
	return Value{}, c.fail("%s value cannot become %s", v.Kind(), contract.ShortName(c.to))
}

// toJSON carries a value into a JSON field as it was sent: every JSON
// value is one. CSV text that did not parse as its source field's type
// is no value of that type, so it is not carried.
func (c *conv) toJSON(v record.Value) (Value, *failure) {
	switch v.Kind() {
	case record.KindString:
		return Value{kind: KindString, b: v.Bytes()}, nil
	case record.KindNumber:
		return Value{kind: KindNumber, b: v.Bytes()}, nil
	case record.KindBool:
		b, _ := v.Bool()
		return BoolValue(b), nil
	case record.KindObject, record.KindArray:
		return Value{kind: KindJSON, b: v.Bytes()}, nil
	}
	return Value{}, &failure{code: recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH,
		msg: fmt.Sprintf("CSV text %q is not a value of the declared type", clip(v.Bytes()))}
}

func (c *conv) fromNumber(v record.Value, a *arena) (Value, *failure) {
	switch c.to {
	case contractv1.FieldType_FIELD_TYPE_INT32, contractv1.FieldType_FIELD_TYPE_INT64:
		if i, ok := v.Int(); ok && !c.scaled {
			return c.intRange(i, v.Bytes())
		}
	case contractv1.FieldType_FIELD_TYPE_FLOAT, contractv1.FieldType_FIELD_TYPE_DOUBLE:
		if !c.scaled {
			f, _ := v.Float()
			if c.to == contractv1.FieldType_FIELD_TYPE_FLOAT && !fitsFloat32(f) {
				return Value{}, c.fail("number %s is out of FLOAT range", clip(v.Bytes()))
			}
			// The literal is kept as sent: it already is the canonical text.
			return Value{kind: KindNumber, b: v.Bytes()}, nil
		}
	}
	return c.fromNumberText(v.Bytes(), a)
}

// fromNumberText converts a number given as its JSON literal.
func (c *conv) fromNumberText(text []byte, a *arena) (Value, *failure) {
	switch c.to {
	case contractv1.FieldType_FIELD_TYPE_INT32, contractv1.FieldType_FIELD_TYPE_INT64:
		return c.decimalInt(text)
	case contractv1.FieldType_FIELD_TYPE_FLOAT, contractv1.FieldType_FIELD_TYPE_DOUBLE:
		return c.decimalFloat(text)
	case contractv1.FieldType_FIELD_TYPE_DECIMAL:
		return c.decimalText(text, a)
	}
	if !c.explicit {
		return Value{}, c.fail("number %s cannot become %s", clip(text), contract.ShortName(c.to))
	}
	switch c.to {
	case contractv1.FieldType_FIELD_TYPE_STRING:
		return Value{kind: KindString, b: text}, nil
	case contractv1.FieldType_FIELD_TYPE_BOOL:
		switch string(text) {
		case "0":
			return BoolValue(false), nil
		case "1":
			return BoolValue(true), nil
		}
		return Value{}, c.fail("number %s is not a boolean; only 0 and 1 cast to BOOL", clip(text))
	case contractv1.FieldType_FIELD_TYPE_TIMESTAMP:
		if c.unixExp >= 0 {
			return c.unixTime(text, a)
		}
		return Value{}, c.fail("number %s is not a time; set cast.layout to unix, unix_ms, unix_us or unix_ns", clip(text))
	}
	return Value{}, c.fail("number %s cannot become %s", clip(text), contract.ShortName(c.to))
}

func (c *conv) fromString(b []byte, a *arena) (Value, *failure) {
	switch c.to {
	case contractv1.FieldType_FIELD_TYPE_FLOAT, contractv1.FieldType_FIELD_TYPE_DOUBLE:
		if f, ok := lexical.ParseNonFinite(b); ok {
			// NaN and the infinities travel as strings (lexical.NonFiniteName): a
			// FLOAT or DOUBLE field holds them without a cast.
			if c.scaled {
				f *= c.scale
			}
			return FloatValue(f), nil
		}
	case contractv1.FieldType_FIELD_TYPE_STRING:
		return Value{kind: KindString, b: b}, nil
	case contractv1.FieldType_FIELD_TYPE_UUID:
		return c.uuid(b, a)
	case contractv1.FieldType_FIELD_TYPE_TIMESTAMP:
		if c.unixExp >= 0 {
			return c.unixTime(b, a)
		}
		return c.timestamp(b, a)
	case contractv1.FieldType_FIELD_TYPE_DATE:
		return c.date(b, a)
	case contractv1.FieldType_FIELD_TYPE_DECIMAL:
		return c.decimalText(b, a)
	}
	if !c.explicit {
		return Value{}, c.fail("string %q cannot become %s without a cast", clip(b), contract.ShortName(c.to))
	}
	switch c.to {
	case contractv1.FieldType_FIELD_TYPE_INT32, contractv1.FieldType_FIELD_TYPE_INT64,
		contractv1.FieldType_FIELD_TYPE_FLOAT, contractv1.FieldType_FIELD_TYPE_DOUBLE:
		// An explicit cast reads the string as the text of a number.
		return c.fromNumberText(b, a)
	case contractv1.FieldType_FIELD_TYPE_BOOL:
		switch string(b) {
		case "true", "TRUE", "True", "1":
			return BoolValue(true), nil
		case "false", "FALSE", "False", "0":
			return BoolValue(false), nil
		}
		return Value{}, c.fail("string %q is not a boolean; send true, false, 1 or 0", clip(b))
	}
	return Value{}, c.fail("string %q cannot become %s", clip(b), contract.ShortName(c.to))
}

func (c *conv) fromBool(b bool) (Value, *failure) {
	switch c.to {
	case contractv1.FieldType_FIELD_TYPE_BOOL:
		return BoolValue(b), nil
	}
	if c.explicit {
		n := int64(0)
		if b {
			n = 1
		}
		switch c.to {
		case contractv1.FieldType_FIELD_TYPE_INT32, contractv1.FieldType_FIELD_TYPE_INT64:
			return IntValue(n), nil
		case contractv1.FieldType_FIELD_TYPE_STRING:
			return Value{kind: KindString, b: []byte(strconv.FormatBool(b))}, nil
		}
	}
	return Value{}, c.fail("boolean %t cannot become %s", b, contract.ShortName(c.to))
}

func (c *conv) intRange(i int64, text []byte) (Value, *failure) {
	if c.to == contractv1.FieldType_FIELD_TYPE_INT32 && (i < math.MinInt32 || i > math.MaxInt32) {
		return Value{}, c.fail("%s is out of INT32 range", clip(text))
	}
	return IntValue(i), nil
}

// decimalInt converts number text to an integer, scaled and rounded.
func (c *conv) decimalInt(text []byte) (Value, *failure) {
	d, ok, big := parseDecimal(text)
	if !ok {
		return Value{}, c.fail("%q is not a number", clip(text))
	}
	var (
		i              int64
		fits, inexact  bool
		scaledByFloat  = c.scaled && !c.isPow10
		viaFloat       = big || scaledByFloat
		rounding       = c.rounding
		roundingIsZero = rounding == contractv1.Rounding_ROUNDING_UNSPECIFIED
	)
	if roundingIsZero || !c.explicit {
		rounding = roundExact
	}
	if viaFloat {
		f := d.float()
		if big {
			f, _ = strconv.ParseFloat(string(text), 64)
		}
		if scaledByFloat {
			f *= c.scale
		}
		i, fits, inexact = roundFloat(f, rounding)
	} else {
		if c.scaled {
			d.exp += c.pow10
		}
		i, fits, inexact = d.toInt(rounding)
	}
	switch {
	case inexact:
		return Value{}, c.fail("%s has a fraction but %s is an integer; set cast.rounding to round it", c.scaledText(text), contract.ShortName(c.to))
	case !fits:
		return Value{}, c.fail("%s is out of %s range", c.scaledText(text), contract.ShortName(c.to))
	}
	return c.intRange(i, text)
}

func (c *conv) scaledText(text []byte) string {
	if c.scaled {
		return fmt.Sprintf("%s × %g", clip(text), c.scale)
	}
	return string(clip(text))
}

// decimalFloat converts number text to a float, scaled.
func (c *conv) decimalFloat(text []byte) (Value, *failure) {
	d, ok, big := parseDecimal(text)
	if !ok {
		return Value{}, c.fail("%q is not a number", clip(text))
	}
	var f float64
	if c.isPow10 && !big {
		d.exp += c.pow10
		f = d.float()
	} else {
		f = d.float()
		if big {
			f, _ = strconv.ParseFloat(string(text), 64)
		}
		if c.scaled {
			f *= c.scale
		}
	}
	if math.IsInf(f, 0) || math.IsNaN(f) || c.to == contractv1.FieldType_FIELD_TYPE_FLOAT && !fitsFloat32(f) {
		return Value{}, c.fail("%s is out of %s range", c.scaledText(text), contract.ShortName(c.to))
	}
	return FloatValue(f), nil
}

// decimalText converts number text to the canonical DECIMAL form: a string
// holding the plain decimal, so no precision is lost to float64.
func (c *conv) decimalText(text []byte, a *arena) (Value, *failure) {
	d, ok, big := parseDecimal(text)
	if !ok {
		return Value{}, c.fail("%q is not a decimal number", clip(text))
	}
	if d.exp > maxDecimalExp || d.exp < -maxDecimalExp {
		return Value{}, c.fail("%s has an exponent beyond ±%d; send it without one", clip(text), maxDecimalExp)
	}
	if big {
		if c.scaled {
			return Value{}, c.fail("%s has more significant digits than a scaled DECIMAL cast keeps (19)", clip(text))
		}
		return Value{kind: KindString, b: text}, nil
	}
	if c.scaled {
		if !c.isPow10 {
			return Value{}, c.fail("DECIMAL casts scale only by powers of ten, so no digit is invented")
		}
		d.exp += c.pow10
	}
	buf := a.reserve(24 + max(d.exp, -d.exp))
	return Value{kind: KindString, b: a.commit(d.appendText(buf))}, nil
}

// maxDecimalExp bounds the digits a DECIMAL's text may expand to, so
// "1e99999" cannot turn into a 100 kB string.
const maxDecimalExp = 1000

// unixTime converts a number (or numeric text) in the layout's unit since
// the epoch to a timestamp.
func (c *conv) unixTime(text []byte, a *arena) (Value, *failure) {
	d, ok, big := parseDecimal(text)
	if !ok {
		return Value{}, c.fail("%q is not a number of %s", clip(text), c.layout)
	}
	if big {
		return Value{}, c.fail("%s has more digits than a %s time can hold exactly", clip(text), c.layout)
	}
	d.exp += c.unixExp
	rounding := c.rounding
	if rounding == contractv1.Rounding_ROUNDING_UNSPECIFIED {
		rounding = roundExact
	}
	ns, fits, inexact := d.toInt(rounding)
	switch {
	case inexact:
		return Value{}, c.fail("%s %s has a fraction of a nanosecond; set cast.rounding to round it", clip(text), c.layout)
	case !fits:
		return Value{}, c.fail("%s %s is outside the years 1678 to 2262", clip(text), c.layout)
	}
	return c.appendTime(time.Unix(0, ns), a), nil
}

func (c *conv) appendTime(t time.Time, a *arena) Value {
	buf := a.reserve(40)
	return Value{kind: KindString, b: a.commit(t.UTC().AppendFormat(buf, time.RFC3339Nano))}
}

// timestamp parses a time string and writes it in the canonical form: RFC
// 3339 in UTC with as many fraction digits as needed.
func (c *conv) timestamp(b []byte, a *arena) (Value, *failure) {
	if c.layout == "" {
		if t, ok := lexical.ParseRFC3339(b); ok {
			if len(b) == len("2006-01-02T15:04:05Z") && b[19] == 'Z' {
				// Already canonical: whole seconds in UTC.
				return Value{kind: KindString, b: b}, nil
			}
			return c.appendTime(t, a), nil
		}
	}
	layout := c.layout
	if layout == "" {
		layout = time.RFC3339Nano
	}
	t, err := time.ParseInLocation(layout, string(b), c.loc)
	if err != nil {
		return Value{}, c.fail("%q is not a time in layout %q: %v", clip(b), layoutName(c.layout), err)
	}
	return c.appendTime(t, a), nil
}

func layoutName(layout string) string {
	if layout == "" {
		return "RFC3339"
	}
	return layout
}

// date parses a date string and writes it as YYYY-MM-DD, the calendar date
// in the cast's zone (a date is not moved to UTC).
func (c *conv) date(b []byte, a *arena) (Value, *failure) {
	layout := c.layout
	if layout == "" {
		layout = time.DateOnly
	}
	t, err := time.ParseInLocation(layout, string(b), c.loc)
	if err != nil {
		return Value{}, c.fail("%q is not a date in layout %q: %v", clip(b), layout, err)
	}
	buf := a.reserve(16)
	return Value{kind: KindString, b: a.commit(t.In(c.loc).AppendFormat(buf, time.DateOnly))}, nil
}

// uuid checks the 8-4-4-4-12 hex form and writes it in lower case.
func (c *conv) uuid(b []byte, a *arena) (Value, *failure) {
	bad, upper := lexical.CheckUUID(b)
	switch {
	case bad == len(b):
		return Value{}, c.fail("%q is not a UUID; expected 36 characters in the 8-4-4-4-12 hex form", clip(b))
	case bad == 8 || bad == 13 || bad == 18 || bad == 23:
		return Value{}, c.fail("%q is not a UUID; expected '-' at position %d", clip(b), bad)
	case bad >= 0:
		return Value{}, c.fail("%q is not a UUID; %q at position %d is not a hex digit", clip(b), b[bad], bad)
	}
	if !upper {
		return Value{kind: KindString, b: b}, nil
	}
	out := a.reserve(36)
	for _, ch := range b {
		if ch >= 'A' && ch <= 'F' {
			ch += 'a' - 'A'
		}
		out = append(out, ch)
	}
	return Value{kind: KindString, b: a.commit(out)}, nil
}

// clip shortens text quoted in messages, so a 10 MB value does not become a
// 10 MB error.
func clip(b []byte) []byte {
	const limit = 64
	if len(b) <= limit {
		return b
	}
	out := make([]byte, 0, limit+3)
	out = append(out, b[:limit]...)
	return append(out, "..."...)
}

// arena holds the canonical text a batch produces (normalised times and
// ids, decimal text). It grows by whole chunks so earlier values never move.
type arena struct{ buf []byte }

const arenaChunk = 16 << 10

// reserve returns an empty slice with capacity n after the used bytes.
func (a *arena) reserve(n int) []byte {
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]byte, 0, max(arenaChunk, n))
	}
	return a.buf[len(a.buf):len(a.buf)]
}

// commit marks b, which was appended to a reserved slice without growing
// past it, as used.
func (a *arena) commit(b []byte) []byte {
	a.buf = a.buf[:len(a.buf)+len(b)]
	return b[:len(b):len(b)]
}

// fitsFloat32 reports whether f rounds to a finite float32: a FLOAT is
// judged as the float32 it will be, so the largest real a database prints
// (3.4028235e38, a little above MaxFloat32 as a float64) passes.
func fitsFloat32(f float64) bool { return !math.IsInf(float64(float32(f)), 0) }
