package shape

import (
	"bytes"
	"strconv"

	"github.com/seamdata/seam/core/lexical"
)

// v1Text is how the gate named a string's shape before core/shape (its
// services/gate/shape.go at version 1 of the names), kept as the reference
// the reading of stored version-1 names is tested against.
func v1Text(b []byte) string { return string(v1AppendText(nil, b)) }

func v1AppendText(buf, b []byte) []byte {
	switch {
	case len(b) == 0:
		return append(buf, "empty string"...)
	case lexical.IsUUID(b):
		return append(buf, "uuid"...)
	case v1AllDigits(b):
		return append(buf, "digit string"...)
	case v1IsDecimal(b):
		return append(buf, "decimal string"...)
	case lexical.ParseDate(b):
		return append(buf, "date"...)
	}
	if lexical.ValidRFC3339(b) {
		return append(buf, "timestamp"...)
	}
	if v1IsEmail(b) {
		return append(buf, "email"...)
	}
	if v1IsHex(b) {
		return append(buf, "hex"...)
	}
	if t, ok := v1AppendTemplate(buf, b); ok {
		return t
	}
	return append(buf, "text"...)
}

func v1AppendTemplate(buf, b []byte) ([]byte, bool) {
	if len(b) > 40 {
		return buf, false
	}
	start := len(buf)
	digits := 0
	seen := false
	flush := func() {
		if digits > 0 {
			buf = append(buf, "{digits:"...)
			buf = strconv.AppendInt(buf, int64(digits), 10)
			buf = append(buf, '}')
			digits = 0
		}
	}
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			digits++
			seen = true
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c == '-', c == '_', c == '.', c == '/', c == ':', c == '#':
			flush()
			buf = append(buf, c)
		default:
			return buf[:start], false
		}
	}
	flush()
	if !seen {
		return buf[:start], false
	}
	return buf, true
}

// isDecimal reports a decimal number written out: an optional sign,
// digits, a point and digits, an optional exponent ("-12.50", "1.5e3").
// Digits alone are a digit string.
func v1IsDecimal(b []byte) bool {
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		b = b[1:]
	}
	intPart := 0
	for intPart < len(b) && b[intPart] >= '0' && b[intPart] <= '9' {
		intPart++
	}
	if intPart == 0 || intPart == len(b) || b[intPart] != '.' {
		return false
	}
	b = b[intPart+1:]
	frac := 0
	for frac < len(b) && b[frac] >= '0' && b[frac] <= '9' {
		frac++
	}
	if frac == 0 {
		return false
	}
	b = b[frac:]
	if len(b) == 0 {
		return true
	}
	if b[0] != 'e' && b[0] != 'E' {
		return false
	}
	b = b[1:]
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		b = b[1:]
	}
	return len(b) > 0 && v1AllDigits(b)
}

func v1IsEmail(b []byte) bool {
	at := bytes.IndexByte(b, '@')
	return at > 0 && bytes.IndexByte(b[at+1:], '.') > 0 && bytes.IndexByte(b, ' ') < 0 && bytes.Count(b, []byte("@")) == 1
}

// isHex reports a hex string of at least 8 digits with letters and digits
// both (all digits is a digit string, all letters a word).
func v1IsHex(b []byte) bool {
	if len(b) < 8 {
		return false
	}
	var letters, digits bool
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			digits = true
		case c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
			letters = true
		default:
			return false
		}
	}
	return letters && digits
}

func v1AllDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}
