// Package shape names what a value looks like. It is the one classifier of
// Seam: the gate counts a field's values by shape to tell an unannounced
// change, inference names the shapes of held values, and a one_of check
// lists shapes a field may take. They all use the names of this package,
// so a shape an alert names is a shape a one_of check accepts.
//
// A value has one shape, the most specific of:
//
//	empty      ""
//	uuid       8-4-4-4-12 hex digits
//	digits     digits only: "12345", "00012345"
//	decimal    a number written out with a sign or a point: "-7", "100.00", "1.5e3"
//	date       YYYY-MM-DD
//	timestamp  RFC 3339
//	email      local@domain.tld
//	hex        at least 8 hex digits with a letter among them: "deadbeef"
//	TEMPLATE   fixed text with runs of digits: "ACC-{digits:8}", "name-{digits}"
//	string     any other text
//	number, boolean, object, array   JSON values of that type
//
// In a template a run of digits is written {digits} (one or more digits)
// unless it starts with a zero: a zero-padded run keeps its width,
// {digits:N}. So sequential names keep their shape as they grow
// ("name-99999" and "name-100000" are both "name-{digits}"), and a
// zero-padded code keeps its width ("VH-000042" is "VH-{digits:6}").
package shape

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/seamdata/seam/core/lexical"
	"github.com/seamdata/seam/core/record"
)

// The named shapes.
const (
	Empty     = "empty"
	UUID      = "uuid"
	Digits    = "digits"
	Decimal   = "decimal"
	Date      = "date"
	Timestamp = "timestamp"
	Email     = "email"
	Hex       = "hex"
	String    = "string"
	Number    = "number"
	Integer   = "integer"
	Boolean   = "boolean"
	Object    = "object"
	Array     = "array"
)

// MaxTemplateLen bounds the text a template is read from: longer text is
// prose, not a code.
const MaxTemplateLen = 64

// Of names the shape of v. A value that is absent or null has the name of
// its kind ("absent", "null"), which is no shape.
func Of(v record.Value) string { return string(Append(nil, v)) }

// Append appends the name of v's shape to buf. It allocates nothing
// beyond growing buf.
func Append(buf []byte, v record.Value) []byte {
	switch v.Kind() {
	case record.KindString, record.KindRaw:
		return AppendText(buf, v.Bytes())
	case record.KindNumber:
		return append(buf, Number...)
	case record.KindBool:
		return append(buf, Boolean...)
	case record.KindObject:
		return append(buf, Object...)
	case record.KindArray:
		return append(buf, Array...)
	}
	return append(buf, v.Kind().String()...)
}

// OfText names the shape of a string.
func OfText(s string) string { return string(AppendText(nil, []byte(s))) }

// AppendText appends the name of the shape of the string b to buf.
func AppendText(buf, b []byte) []byte {
	switch {
	case len(b) == 0:
		return append(buf, Empty...)
	case lexical.IsUUID(b):
		return append(buf, UUID...)
	case IsDigits(b):
		return append(buf, Digits...)
	case IsDecimal(b):
		// How many digits a decimal has is its value, not its shape.
		return append(buf, Decimal...)
	case lexical.ParseDate(b):
		return append(buf, Date...)
	case lexical.ValidRFC3339(b):
		return append(buf, Timestamp...)
	case IsEmail(b):
		return append(buf, Email...)
	case isHexWord(b):
		return append(buf, Hex...)
	}
	if t, ok := AppendTemplate(buf, b); ok {
		return t
	}
	return append(buf, String...)
}

// AppendTemplate appends b as a template: its text, with each run of
// digits as {digits}, or as {digits:N} when the run is zero-padded (starts
// with a 0 and has N ≥ 2 digits). Text that is no code (no digit, no fixed
// text, longer than MaxTemplateLen bytes, not UTF-8, or with braces,
// spaces or control characters) leaves buf as it was and returns false.
func AppendTemplate(buf, b []byte) ([]byte, bool) {
	if len(b) > MaxTemplateLen {
		return buf, false
	}
	start := len(buf)
	runs, lits, high := 0, 0, false
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			j := i
			for j < len(b) && b[j] >= '0' && b[j] <= '9' {
				j++
			}
			if c == '0' && j-i > 1 {
				buf = append(buf, "{digits:"...)
				buf = strconv.AppendInt(buf, int64(j-i), 10)
				buf = append(buf, '}')
			} else {
				buf = append(buf, "{digits}"...)
			}
			runs++
			i = j
		case c == '{' || c == '}' || c <= ' ' || c == 0x7f:
			return buf[:start], false
		default:
			buf = append(buf, c)
			high = high || c >= utf8.RuneSelf
			lits++
			i++
		}
	}
	if runs == 0 || lits == 0 || high && !utf8.Valid(b) {
		return buf[:start], false
	}
	return buf, true
}

// Family is a shape's name with the widths of its digit runs erased:
// "E-{digits:10}" and "E-{digits}" are one family. A zero-padded code
// whose numbers outgrow their padding ("E-0999999999", then
// "E-1000000000") stays in its family, so comparing families tells a new
// kind of value from the same codes growing. Named shapes are their own
// family.
func Family(name string) string {
	if !IsTemplate(name) {
		return name
	}
	var b []byte
	for i := 0; i < len(name); {
		if name[i] == '{' {
			if j := bytes.IndexByte([]byte(name[i:]), '}'); j > 0 && bytes.HasPrefix([]byte(name[i:]), []byte("{digits")) {
				b = append(b, "{digits}"...)
				i += j + 1
				continue
			}
		}
		b = append(b, name[i])
		i++
	}
	return string(b)
}

// IsTemplate reports whether a shape name is a template.
func IsTemplate(name string) bool {
	return len(name) > 0 && bytes.IndexByte([]byte(name), '{') >= 0
}

// IsDigits reports a non-empty string of decimal digits.
func IsDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// IsDecimal reports a number written out with a sign or a point: an
// optional sign, digits, an optional point and digits, an optional
// exponent ("-7", "12.50", "1.5e3"). Digits alone are digits, and "1e5"
// without either is no decimal here (hashes look like it).
func IsDecimal(b []byte) bool {
	return decimalText(b) && (b[0] == '-' || b[0] == '+' || bytes.IndexByte(b, '.') >= 0)
}

// decimalText reports [+-]digits[.digits][(e|E)[+-]digits].
func decimalText(b []byte) bool {
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		b = b[1:]
	}
	n := leadingDigits(b)
	if n == 0 {
		return false
	}
	b = b[n:]
	if len(b) > 0 && b[0] == '.' {
		f := leadingDigits(b[1:])
		if f == 0 {
			return false
		}
		b = b[1+f:]
	}
	if len(b) > 0 && (b[0] == 'e' || b[0] == 'E') {
		b = b[1:]
		if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
			b = b[1:]
		}
		e := leadingDigits(b)
		if e == 0 {
			return false
		}
		b = b[e:]
	}
	return len(b) == 0
}

func leadingDigits(b []byte) int {
	n := 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	return n
}

// IsEmail reports local@domain.tld without spaces: a shape, not validation.
func IsEmail(b []byte) bool {
	at := bytes.IndexByte(b, '@')
	if at <= 0 || bytes.Count(b, []byte("@")) != 1 || bytes.ContainsAny(b, " \t\r\n") {
		return false
	}
	dot := bytes.LastIndexByte(b[at:], '.')
	return dot > 1 && at+dot < len(b)-1
}

// isHexWord reports at least 8 hex digits with a letter among them, the
// look of hashes and hex keys (digits alone are digits).
func isHexWord(b []byte) bool {
	if len(b) < 8 {
		return false
	}
	letter := false
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
		case c|0x20 >= 'a' && c|0x20 <= 'f':
			letter = true
		default:
			return false
		}
	}
	return letter
}

// isHexText reports a non-empty string of hex digits only.
func isHexText(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9') && !(c|0x20 >= 'a' && c|0x20 <= 'f') {
			return false
		}
	}
	return len(b) > 0
}
