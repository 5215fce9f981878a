package mapping

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/seamdata/seam/core/lexical"
	"github.com/seamdata/seam/core/record"
	"google.golang.org/protobuf/types/known/structpb"
)

// Kind is the shape of a canonical value.
type Kind uint8

// The kinds of canonical values. KindAbsent is the zero value: a canonical
// field that was neither produced nor failed is left out of the record.
const (
	KindAbsent Kind = iota
	KindNull
	KindString
	// KindInt is an integer (INT32, INT64).
	KindInt
	// KindFloat is a floating-point number (FLOAT, DOUBLE).
	KindFloat
	// KindNumber is a JSON number literal kept as sent (a DOUBLE or DECIMAL
	// read without conversion), so its text survives unchanged.
	KindNumber
	KindBool
	// KindJSON is an object or array kept as its raw JSON text.
	KindJSON
	// kindPending is an identifier waiting for its idmap answer; i is the
	// id's index in its lookup.
	kindPending
)

var kindNames = [...]string{"absent", "null", "string", "int", "float", "number", "bool", "json", "pending"}

// String names the kind for messages.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one canonical value. It is a small struct kept inline in a
// batch's value slab; b refers into the source batch or the batch's arena.
type Value struct {
	kind Kind
	// n holds an int64, the bits of a float64 or a bool (0/1), by kind; for
	// a pending id, its index in the lookup.
	n uint64
	b []byte
}

// Kind reports the value's shape.
func (v Value) Kind() Kind { return v.kind }

// Present reports whether the value is neither absent nor null.
func (v Value) Present() bool { return v.kind > KindNull }

// Int returns an integer value.
func (v Value) Int() (int64, bool) { return int64(v.n), v.kind == KindInt }

// Float returns a numeric value as float64.
func (v Value) Float() (float64, bool) {
	switch v.kind {
	case KindFloat:
		return math.Float64frombits(v.n), true
	case KindInt:
		return float64(int64(v.n)), true
	case KindNumber:
		f, err := strconv.ParseFloat(string(v.b), 64)
		return f, err == nil
	}
	return 0, false
}

// Bool returns a boolean value.
func (v Value) Bool() (bool, bool) { return v.n == 1, v.kind == KindBool }

// Text returns the content of a string, the literal of a number kept as
// sent, or the raw JSON of an object or array.
func (v Value) Text() []byte { return v.b }

// IntValue returns an integer value.
func IntValue(i int64) Value { return Value{kind: KindInt, n: uint64(i)} }

// FloatValue returns a floating-point value.
func FloatValue(f float64) Value { return Value{kind: KindFloat, n: math.Float64bits(f)} }

// StringValue returns a string value holding s.
func StringValue(s string) Value { return Value{kind: KindString, b: []byte(s)} }

// BoolValue returns a boolean value.
func BoolValue(b bool) Value {
	if b {
		return Value{kind: KindBool, n: 1}
	}
	return Value{kind: KindBool}
}

// AppendJSON appends v as JSON. Absent and pending values are written as
// null; callers leave absent fields out before calling it.
func (v Value) AppendJSON(dst []byte) []byte {
	switch v.kind {
	case KindString:
		return record.AppendValue(dst, record.StringValue(v.b))
	case KindInt:
		return strconv.AppendInt(dst, int64(v.n), 10)
	case KindFloat:
		f := math.Float64frombits(v.n)
		if name := lexical.NonFiniteName(f); name != "" {
			return append(append(append(dst, '"'), name...), '"')
		}
		return appendFloat(dst, f)
	case KindNumber, KindJSON:
		return append(dst, v.b...)
	case KindBool:
		return strconv.AppendBool(dst, v.n == 1)
	}
	return append(dst, "null"...)
}

// appendFloat writes a finite f the way encoding/json does: the shortest
// text that reads back as f, in exponent form only for very large or small
// magnitudes. AppendJSON writes non-finite values as lexical.NonFiniteName's
// strings; casts and expressions never produce them from finite input.
func appendFloat(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9, as encoding/json does.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// Proto returns v as a structpb value. Integers become float64, as JSON
// numbers do in structpb; integers beyond 2^53 lose precision there, which
// is why raw input gets JSON bytes back instead.
func (v Value) Proto() *structpb.Value {
	switch v.kind {
	case KindString:
		return structpb.NewStringValue(string(v.b))
	case KindInt:
		return structpb.NewNumberValue(float64(int64(v.n)))
	case KindFloat:
		f := math.Float64frombits(v.n)
		if name := lexical.NonFiniteName(f); name != "" {
			// structpb numbers cannot be NaN or infinite in JSON either.
			return structpb.NewStringValue(name)
		}
		return structpb.NewNumberValue(f)
	case KindNumber:
		f, _ := v.Float()
		return structpb.NewNumberValue(f)
	case KindBool:
		return structpb.NewBoolValue(v.n == 1)
	case KindJSON:
		return rawProto(v.b)
	}
	return structpb.NewNullValue()
}

// SourceProto returns a decoded source value as a structpb value, for
// previews: the value as the source sent it, before any mapping. An absent
// value is nil.
func SourceProto(v record.Value) *structpb.Value {
	switch v.Kind() {
	case record.KindAbsent:
		return nil
	case record.KindString, record.KindRaw:
		return structpb.NewStringValue(v.Str())
	case record.KindNumber:
		f, _ := v.Float()
		return structpb.NewNumberValue(f)
	case record.KindBool:
		b, _ := v.Bool()
		return structpb.NewBoolValue(b)
	case record.KindObject, record.KindArray:
		return rawProto(v.Bytes())
	}
	return structpb.NewNullValue()
}

// rawProto converts validated raw JSON to a structpb value. The text was
// validated when it was decoded, so a failure here means it was not; the
// text is then shown as a string rather than dropped.
func rawProto(raw []byte) *structpb.Value {
	var x any
	if err := json.Unmarshal(raw, &x); err != nil {
		return structpb.NewStringValue(string(raw))
	}
	pv, err := structpb.NewValue(x)
	if err != nil {
		return structpb.NewStringValue(string(raw))
	}
	return pv
}
