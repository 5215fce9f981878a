package record

import "strconv"

// AppendJSON appends vals, a record laid out by schema, as one JSON object.
// Declared fields come in declaration order and absent ones are left out;
// OBJECT fields with declared members are rebuilt from their member slots,
// other objects and arrays are copied as received (they were validated on
// decode). Raw CSV text is written as a string. It allocates only when dst
// must grow.
func AppendJSON(dst []byte, schema *Schema, vals []Value) []byte {
	return appendLevel(dst, schema, schema.top, vals)
}

func appendLevel(dst []byte, schema *Schema, lv *level, vals []Value) []byte {
	dst = append(dst, '{')
	first := true
	for _, slot := range lv.slots {
		v := vals[slot]
		if v.kind == KindAbsent {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		f := &schema.fields[slot]
		dst = AppendString(dst, f.Name)
		dst = append(dst, ':')
		if v.kind == KindObject && f.members != nil {
			dst = appendLevel(dst, schema, f.members, vals)
			continue
		}
		dst = AppendValue(dst, v)
	}
	return append(dst, '}')
}

// AppendValue appends one value as JSON. An absent value is written as null.
func AppendValue(dst []byte, v Value) []byte {
	switch v.kind {
	case KindString, KindRaw:
		return appendEscaped(dst, v.b)
	case KindNumber, KindObject, KindArray:
		return append(dst, v.b...)
	case KindBool:
		return strconv.AppendBool(dst, v.n == 1)
	}
	return append(dst, "null"...)
}

// AppendString appends s as a JSON string.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			dst = append(dst, s[start:i]...)
			dst = appendEscape(dst, c)
			start = i + 1
		}
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func appendEscaped(dst, b []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i, c := range b {
		if c < 0x20 || c == '"' || c == '\\' {
			dst = append(dst, b[start:i]...)
			dst = appendEscape(dst, c)
			start = i + 1
		}
	}
	dst = append(dst, b[start:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

func appendEscape(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}
