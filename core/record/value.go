// Package record decodes raw batches (JSON, NDJSON, CSV, structpb objects)
// into records laid out by a compiled contract schema, and encodes them back
// to JSON. It is the one place where source bytes are parsed, so every later
// step (checks, mapping) works on typed values without parsing again.
package record

import (
	"math"
	"strconv"
)

// Kind is the JSON shape of a decoded value.
type Kind uint8

// The kinds a Value can have. KindAbsent is the zero value so a fresh record
// has every field absent until the decoder fills it.
const (
	// KindAbsent means the field did not appear in the record.
	KindAbsent Kind = iota
	// KindNull is an explicit JSON null.
	KindNull
	// KindString is a JSON string; Bytes holds its unescaped UTF-8 content.
	KindString
	// KindNumber is a JSON number; Bytes holds its literal text.
	KindNumber
	// KindBool is true or false.
	KindBool
	// KindObject is a JSON object; Bytes holds its raw JSON text.
	KindObject
	// KindArray is a JSON array; Bytes holds its raw JSON text.
	KindArray
	// KindRaw is CSV text that does not parse as the declared type. It is kept
	// as sent so the type check can name it; it is never coerced or nulled.
	KindRaw
)

var kindNames = [...]string{"absent", "null", "string", "number", "bool", "object", "array", "text"}

// String names the kind for error messages.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Flags on number values.
const (
	flagInt      uint8 = 1 << iota // integer literal (no fraction or exponent) that fits int64
	flagOverflow                   // integer literal outside int64, or a float outside float64
)

// Value is one decoded field value. It is a small struct held inline in a
// record's value slice; Bytes refers into the batch's input (or the decoder's
// arena for unescaped strings), so decoding allocates nothing per value.
// Values are read-only: callers must not modify Bytes.
type Value struct {
	kind  Kind
	flags uint8
	// n holds an int64, the bits of a float64, a bool (0/1), or an array's
	// element count, depending on kind.
	n uint64
	b []byte
}

// Kind reports the value's shape.
func (v Value) Kind() Kind { return v.kind }

// Present reports whether the value is neither absent nor null.
func (v Value) Present() bool { return v.kind > KindNull }

// Bytes returns the unescaped content of a string, the literal text of a
// number, the raw JSON of an object or array, or the CSV text of a raw value.
func (v Value) Bytes() []byte { return v.b }

// Str returns Bytes as a new string (it allocates).
func (v Value) Str() string { return string(v.b) }

// IsInt reports whether a number was written as an integer literal that fits
// int64.
func (v Value) IsInt() bool { return v.kind == KindNumber && v.flags&flagInt != 0 }

// Overflow reports whether a number does not fit its representation: an
// integer literal outside int64 or a literal outside float64's range.
func (v Value) Overflow() bool { return v.kind == KindNumber && v.flags&flagOverflow != 0 }

// Int returns the value of an integer number and whether it was one.
func (v Value) Int() (int64, bool) {
	if !v.IsInt() {
		return 0, false
	}
	return int64(v.n), true
}

// Float returns a number as float64 (exactly for floats, rounded for integers
// beyond 2^53) and whether the value is a number.
func (v Value) Float() (float64, bool) {
	if v.kind != KindNumber {
		return 0, false
	}
	if v.flags&flagInt != 0 {
		return float64(int64(v.n)), true
	}
	return math.Float64frombits(v.n), true
}

// Bool returns the value of a boolean and whether the value is one.
func (v Value) Bool() (bool, bool) { return v.n == 1, v.kind == KindBool }

// Len returns the element count of an array.
func (v Value) Len() int {
	if v.kind != KindArray {
		return 0
	}
	return int(v.n)
}

// StringValue returns a string value referring to b.
func StringValue(b []byte) Value { return Value{kind: KindString, b: b} }

// BoolValue returns a boolean value.
func BoolValue(x bool) Value {
	v := Value{kind: KindBool}
	if x {
		v.n = 1
	}
	return v
}

// NullValue returns an explicit null.
func NullValue() Value { return Value{kind: KindNull} }

// Equal reports whether two values have the same kind and content. Numbers
// compare by value when both are integers or both are floats, and by text
// otherwise; objects and arrays compare by raw JSON text.
func (v Value) Equal(w Value) bool {
	if v.kind != w.kind {
		return false
	}
	switch v.kind {
	case KindAbsent, KindNull:
		return true
	case KindBool:
		return v.n == w.n
	case KindNumber:
		if v.flags != w.flags {
			return false
		}
		if v.flags&flagOverflow != 0 {
			return string(v.b) == string(w.b)
		}
		return v.n == w.n
	default:
		return string(v.b) == string(w.b)
	}
}

// Elements calls fn with each element of an array value, in order, until fn
// returns false. Nested objects and arrays come as raw values. The array was
// validated on decode, so only an array that did not come from a decoder
// can fail.
func Elements(v Value, fn func(i int, e Value) bool) error {
	if v.kind != KindArray {
		return nil
	}
	s := scanner{data: v.b, maxDepth: DefaultMaxDepth << 10, arena: &arena{}}
	s.pos++ // '['
	for i := 0; ; i++ {
		s.ws()
		if s.peek() == ']' {
			return nil
		}
		start := s.pos
		var e Value
		switch s.peek() {
		case '{', '[':
			n, err := s.skip(0)
			if err != nil {
				return err
			}
			e = Value{kind: KindObject, b: s.data[start:s.pos]}
			if s.data[start] == '[' {
				e = Value{kind: KindArray, n: uint64(n), b: s.data[start:s.pos]}
			}
		default:
			var err *scanError
			if e, err = s.scalar(); err != nil {
				return err
			}
		}
		if !fn(i, e) {
			return nil
		}
		s.ws()
		if s.peek() == ',' {
			s.pos++
		}
	}
}
