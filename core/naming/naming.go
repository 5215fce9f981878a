// Package naming is the one rule for the names callers give Seam's
// objects: partitions, batch ids, consumers, subjects and replay ids. A
// name is stored, indexed, compared and shown, so it must be one a person
// can read and type back: valid UTF-8, printable, without control or
// zero-width characters or path separators, without surrounding space,
// and short enough for every store's index.
package naming

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxBytes is the longest name, in bytes.
const MaxBytes = 256

// ViolationPrefix starts the description of a request field refused by
// this rule, so a client (the seam command) knows the input, not the
// call, is at fault.
const ViolationPrefix = "name rule: "

// Describe returns the description of a field violation for err.
func Describe(err error) string { return ViolationPrefix + err.Error() }

// Error is a name that breaks the rule: which field, and which part of the
// rule.
type Error struct {
	Field string
	Value string
	Rule  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s %s", e.Field, quote(e.Value), e.Rule)
}

// quote shows at most 64 bytes of v, escaped.
func quote(v string) string {
	if len(v) > 64 {
		cut := 64
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		return fmt.Sprintf("%q… (%d bytes)", v[:cut], len(v))
	}
	return fmt.Sprintf("%q", v)
}

// Check returns an *Error when value, the name given in field, breaks the
// rule, or nil. An empty name is an error too; callers that allow one
// check for it first.
func Check(field, value string) error {
	return check(field, value, false)
}

// CheckConsumer is Check for consumer names, which may have one or more
// "/" between non-empty parts: an OpenLineage job learned as a consumer is
// named namespace/job.
func CheckConsumer(field, value string) error {
	return check(field, value, true)
}

func check(field, value string, slashes bool) error {
	bad := func(rule string) error { return &Error{Field: field, Value: value, Rule: rule} }
	switch {
	case value == "":
		return bad("is empty; give a name")
	case len(value) > MaxBytes:
		return bad(fmt.Sprintf("is %d bytes long; a name is at most %d bytes", len(value), MaxBytes))
	case !utf8.ValidString(value):
		return bad("is not valid UTF-8")
	case strings.TrimSpace(value) != value:
		return bad("has leading or trailing space; send the name trimmed")
	case value == "." || value == "..":
		return bad(`is "." or ".."; give a name`)
	}
	for i, r := range value {
		switch {
		case r == '\\' || (r == '/' && !slashes):
			return bad(fmt.Sprintf("has a path separator %q at byte %d; a name may not contain / or \\", r, i))
		case !unicode.IsPrint(r) && r != ' ':
			return bad(fmt.Sprintf("has a control, format or zero-width character U+%04X at byte %d; use printable characters only", r, i))
		}
	}
	if slashes {
		for _, part := range strings.Split(value, "/") {
			if part == "" || part == "." || part == ".." || strings.TrimSpace(part) != part {
				return bad(`has an empty, ".", ".." or space-padded part between "/"; name it namespace/job`)
			}
		}
	}
	return nil
}
