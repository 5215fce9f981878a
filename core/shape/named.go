package shape

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/seamdata/seam/core/lexical"
	"github.com/seamdata/seam/core/record"
)

// text reports a string value: a JSON string, or CSV text that did not
// parse as its column's type.
func text(v record.Value) bool {
	return v.Kind() == record.KindString || v.Kind() == record.KindRaw
}

// sets are the named shapes as sets of values, as a one_of check reads
// them. Every value Of names a shape is in that shape's set; a few sets
// hold more than the values named so: number holds integers, string every
// text, decimal and hex also digits, hex also short hex words.
var sets = map[string]func(v record.Value) bool{
	Empty:     func(v record.Value) bool { return text(v) && len(v.Bytes()) == 0 },
	UUID:      func(v record.Value) bool { return text(v) && lexical.IsUUID(v.Bytes()) },
	Digits:    func(v record.Value) bool { return text(v) && IsDigits(v.Bytes()) },
	Decimal:   func(v record.Value) bool { return text(v) && decimalText(v.Bytes()) },
	Date:      func(v record.Value) bool { return text(v) && lexical.ParseDate(v.Bytes()) },
	Timestamp: func(v record.Value) bool { return text(v) && lexical.ValidRFC3339(v.Bytes()) },
	Email:     func(v record.Value) bool { return text(v) && IsEmail(v.Bytes()) },
	Hex:       func(v record.Value) bool { return text(v) && isHexText(v.Bytes()) },
	String:    text,
	Number:    func(v record.Value) bool { return v.Kind() == record.KindNumber },
	Integer:   func(v record.Value) bool { return v.IsInt() },
	Boolean:   func(v record.Value) bool { return v.Kind() == record.KindBool },
	Object:    func(v record.Value) bool { return v.Kind() == record.KindObject },
	Array:     func(v record.Value) bool { return v.Kind() == record.KindArray },
}

// Named returns the set of values a named shape holds, and false for a
// name that is no named shape (a template is compiled with Compile).
func Named(name string) (func(v record.Value) bool, bool) {
	m, ok := sets[name]
	return m, ok
}

// Names lists the named shapes, sorted.
func Names() []string {
	names := make([]string, 0, len(sets))
	for n := range sets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Matcher returns the set of values a shape holds, named or a template,
// with an error naming what is wrong with a template.
func Matcher(name string) (func(v record.Value) bool, error) {
	if m, ok := sets[name]; ok {
		return m, nil
	}
	pat, err := CompileTemplate(name)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, fmt.Errorf("template %q: %v", name, err)
	}
	return func(v record.Value) bool { return text(v) && re.Match(v.Bytes()) }, nil
}

// templateClasses are the placeholders of a template.
var templateClasses = map[string]string{"digits": "[0-9]", "hex": "[0-9a-fA-F]", "alpha": "[A-Za-z]", "alnum": "[A-Za-z0-9]", "any": "."}

// CompileTemplate turns a template into an anchored RE2 pattern: literal
// text, with {digits:8}, {hex:4}, {alpha:2}, {alnum:6} standing for
// exactly that many such characters, {digits} (and the others without a
// count) for one or more, and {any} for any text. "ACC-{digits:8}" matches
// "ACC-00012345"; "name-{digits}" matches "name-7" and "name-100000".
func CompileTemplate(tmpl string) (string, error) {
	if tmpl == "" {
		return "", fmt.Errorf("empty template; write literal text with placeholders such as \"ACC-{digits:8}\"")
	}
	var b strings.Builder
	b.WriteString("^")
	rest := tmpl
	for rest != "" {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			if strings.IndexByte(rest, '}') >= 0 {
				return "", fmt.Errorf("template %q has a '}' without '{'", tmpl)
			}
			b.WriteString(regexp.QuoteMeta(rest))
			break
		}
		if strings.IndexByte(rest[:open], '}') >= 0 {
			return "", fmt.Errorf("template %q has a '}' without '{'", tmpl)
		}
		b.WriteString(regexp.QuoteMeta(rest[:open]))
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return "", fmt.Errorf("template %q: placeholder %q is not closed with '}'", tmpl, rest[open:])
		}
		ph := rest[open+1 : open+end]
		rest = rest[open+end+1:]
		name, count, hasCount := strings.Cut(ph, ":")
		class, ok := templateClasses[name]
		if !ok {
			return "", fmt.Errorf("template %q: unknown placeholder {%s}; use {digits}, {hex}, {alpha}, {alnum} or {any}, with an optional count such as {digits:8}", tmpl, ph)
		}
		switch {
		case !hasCount:
			if name == "any" {
				b.WriteString(".*")
			} else {
				b.WriteString(class + "+")
			}
		default:
			n, err := strconv.Atoi(count)
			if err != nil || n < 1 || n > 1000 || name == "any" {
				return "", fmt.Errorf("template %q: {%s} needs a count from 1 to 1000 such as {%s:8}", tmpl, ph, name)
			}
			fmt.Fprintf(&b, "%s{%d}", class, n)
		}
	}
	b.WriteString("$")
	return b.String(), nil
}
