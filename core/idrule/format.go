// Package idrule validates identifiers against the formats of an idmap
// namespace and compiles the deterministic translation rules between them
// (templates, integers embedded in UUIDs, UUIDv5 derivation, normalization)
// into plain functions the translation hot path calls.
package idrule

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/seamdata/seam/core/lexical"

	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// Status is the outcome of translating one id.
type Status uint8

const (
	// Hit means the id has a translation.
	Hit Status = iota + 1
	// Miss means the id fits its format but has no translation.
	Miss
	// Invalid means the id does not fit its source format.
	Invalid
)

// String names the status for messages.
func (s Status) String() string {
	switch s {
	case Hit:
		return "HIT"
	case Miss:
		return "MISS"
	case Invalid:
		return "INVALID"
	default:
		return "Status(" + strconv.Itoa(int(s)) + ")"
	}
}

// FieldError says which field of a format or rule is wrong and what would
// make it right; the gRPC layer turns it into a BadRequest field violation.
type FieldError struct {
	Field  string // path such as "rule.template.template"
	Reason string
}

// Error implements error.
func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Format is one compiled, named representation of a namespace's ids.
//
// UUID ids are accepted only in canonical form: lowercase hex, 8-4-4-4-12,
// no braces or "urn:uuid:". One UUID spelled two ways would be two different
// keys to every downstream join, so accepting variants would quietly break
// the one-to-one promise; a source that sends upper case gets a STRING format
// and a normalize rule, which makes the conversion explicit.
//
// INT ids are canonical decimal int64: an optional "-" for negatives, no
// "+", no leading zeros, no "-0", no spaces; again so that one number has one
// spelling.
type Format struct {
	name    string
	kind    idmapv1.FormatKind
	pattern *regexp.Regexp
}

// NewFormat compiles f; field paths in errors are relative to prefix (such
// as "namespace.formats[1]").
func NewFormat(prefix string, f *idmapv1.Format) (*Format, error) {
	if f.GetName() == "" {
		return nil, &FieldError{prefix + ".name", "must not be empty"}
	}
	if !validName(f.GetName()) {
		return nil, &FieldError{prefix + ".name", fmt.Sprintf("%q must be 1-63 characters of a-z, 0-9, '-' and '_', starting with a letter", f.GetName())}
	}
	out := &Format{name: f.GetName(), kind: f.GetKind()}
	switch f.GetKind() {
	case idmapv1.FormatKind_FORMAT_KIND_INT, idmapv1.FormatKind_FORMAT_KIND_UUID:
		if f.GetPattern() != "" {
			return nil, &FieldError{prefix + ".pattern", fmt.Sprintf("only STRING formats take a pattern; %s ids have a fixed shape", f.GetKind())}
		}
	case idmapv1.FormatKind_FORMAT_KIND_STRING:
		if f.GetPattern() != "" {
			re, err := regexp.Compile(f.GetPattern())
			if err != nil {
				return nil, &FieldError{prefix + ".pattern", fmt.Sprintf("not an RE2 expression: %v", err)}
			}
			out.pattern = re
		}
	default:
		return nil, &FieldError{prefix + ".kind", fmt.Sprintf("is %s, want FORMAT_KIND_INT, FORMAT_KIND_UUID or FORMAT_KIND_STRING", f.GetKind())}
	}
	return out, nil
}

// validName accepts the names used in "namespace/format" references.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// ValidName reports whether s may name a namespace or format: 1-63
// characters of a-z, 0-9, '-' and '_', starting with a letter.
func ValidName(s string) bool { return validName(s) }

// Name returns the format's name.
func (f *Format) Name() string { return f.name }

// Kind returns the format's value type.
func (f *Format) Kind() idmapv1.FormatKind { return f.kind }

// Valid reports whether id fits the format.
func (f *Format) Valid(id string) bool {
	switch f.kind {
	case idmapv1.FormatKind_FORMAT_KIND_INT:
		_, ok := ParseInt(id)
		return ok
	case idmapv1.FormatKind_FORMAT_KIND_UUID:
		_, ok := ParseUUID(id)
		return ok
	default:
		return id != "" && (f.pattern == nil || f.pattern.MatchString(id))
	}
}

// Check is Valid with a reason, for error messages.
func (f *Format) Check(id string) error {
	if f.Valid(id) {
		return nil
	}
	switch f.kind {
	case idmapv1.FormatKind_FORMAT_KIND_INT:
		return fmt.Errorf("%q is not a %s id: want a canonical decimal int64 (no '+', no leading zeros)", id, f.name)
	case idmapv1.FormatKind_FORMAT_KIND_UUID:
		return fmt.Errorf("%q is not a %s id: want a lowercase UUID such as 0189c5e4-7f6a-7c3e-9b1a-2f4d6e8a0b1c", id, f.name)
	default:
		if id == "" {
			return fmt.Errorf("empty %s id", f.name)
		}
		return fmt.Errorf("%q is not a %s id: it does not match %s", id, f.name, f.pattern)
	}
}

// ParseInt parses a canonical decimal int64: the inverse of
// strconv.FormatInt(v, 10), so each number has exactly one accepted spelling.
func ParseInt(s string) (int64, bool) {
	n := len(s)
	if n == 0 || n > 20 {
		return 0, false
	}
	neg := s[0] == '-'
	digits := s
	if neg {
		digits = s[1:]
	}
	if len(digits) == 0 || len(digits) > 19 || (digits[0] == '0' && len(digits) > 1) || (neg && digits == "0") {
		return 0, false
	}
	var u uint64
	for i := 0; i < len(digits); i++ {
		c := digits[i] - '0'
		if c > 9 {
			return 0, false
		}
		u = u*10 + uint64(c)
	}
	// 19 digits fit in uint64; the sign decides the int64 limit.
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// hexVal maps a lowercase hex digit to its value and everything else to 0xff.
var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
	}
	return t
}()

// uuidHexPos are the offsets of the 16 hex pairs in a canonical UUID.
var uuidHexPos = [16]int{0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34}

// ParseUUID parses a canonical lowercase UUID (8-4-4-4-12).
func ParseUUID(s string) (u [16]byte, ok bool) {
	if bad, upper := lexical.CheckUUID([]byte(s)); bad >= 0 || upper {
		return u, false
	}
	for i, p := range uuidHexPos {
		hi, lo := hexVal[s[p]], hexVal[s[p+1]]
		if hi > 15 || lo > 15 {
			return u, false
		}
		u[i] = hi<<4 | lo
	}
	return u, true
}

const hexDigits = "0123456789abcdef"

// AppendUUID appends the canonical form of u to dst.
func AppendUUID(dst []byte, u [16]byte) []byte {
	for i, b := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[b>>4], hexDigits[b&0xf])
	}
	return dst
}

// FormatUUID returns the canonical form of u.
func FormatUUID(u [16]byte) string {
	var buf [36]byte
	return string(AppendUUID(buf[:0], u))
}
