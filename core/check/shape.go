package check

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/seamdata/seam/core/lexical"
	"github.com/seamdata/seam/core/record"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Shape is one form a field's values may take, as a one_of check lists
// them: a named shape (uuid, integer, …), a template such as
// "ACC-{digits:8}", or "declared", the field's own declaration.
type Shape struct {
	// Name is the shape as the rule writes it: "uuid", "ACC-{digits:8}".
	Name string
	// Declared is true for the field's declared type and constraints.
	Declared bool
	match    func(v record.Value) bool
}

// Match reports whether v has the shape. The declared shape is decided by
// the plan (it needs the field), so Match reports false for it.
func (s Shape) Match(v record.Value) bool {
	return s.match != nil && s.match(v)
}

// namedShapes are the shapes a one_of check may name without quotes.
var namedShapes = map[string]func(v record.Value) bool{
	"uuid":    func(v record.Value) bool { return v.Kind() == record.KindString && lexical.IsUUID(v.Bytes()) },
	"integer": func(v record.Value) bool { return v.IsInt() },
	"number":  func(v record.Value) bool { return v.Kind() == record.KindNumber },
	"digits":  func(v record.Value) bool { _, ok := digitsOnly(v); return ok },
	"hex":     func(v record.Value) bool { return v.Kind() == record.KindString && hexOnly(v.Bytes()) },
	"date":    func(v record.Value) bool { return v.Kind() == record.KindString && lexical.ParseDate(v.Bytes()) },
	"timestamp": func(v record.Value) bool {
		if v.Kind() != record.KindString {
			return false
		}
		return lexical.ValidRFC3339(v.Bytes())
	},
	"email":   func(v record.Value) bool { return v.Kind() == record.KindString && emailShaped(v.Bytes()) },
	"string":  func(v record.Value) bool { return v.Kind() == record.KindString },
	"boolean": func(v record.Value) bool { return v.Kind() == record.KindBool },
}

// ShapeNames lists the shapes a one_of check may name, "declared" first.
func ShapeNames() []string {
	names := make([]string, 0, len(namedShapes)+1)
	for n := range namedShapes {
		names = append(names, n)
	}
	slices.Sort(names)
	return append([]string{"declared"}, names...)
}

func digitsOnly(v record.Value) ([]byte, bool) {
	if v.Kind() != record.KindString {
		return nil, false
	}
	b := v.Bytes()
	_, ok := digits(b)
	return b, ok && len(b) > 0
}

func hexOnly(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9') && !(c|0x20 >= 'a' && c|0x20 <= 'f') {
			return false
		}
	}
	return len(b) > 0
}

// emailShaped is local@domain.tld without spaces: a shape, not validation.
func emailShaped(b []byte) bool {
	s := string(b)
	at := strings.IndexByte(s, '@')
	if at <= 0 || strings.Count(s, "@") != 1 || strings.ContainsAny(s, " \t\r\n") {
		return false
	}
	dot := strings.LastIndexByte(s[at:], '.')
	return dot > 1 && at+dot < len(s)-1
}

// templateClasses are the placeholders of a shape template.
var templateClasses = map[string]string{"digits": "[0-9]", "hex": "[0-9a-fA-F]", "alpha": "[A-Za-z]", "alnum": "[A-Za-z0-9]", "any": "."}

// CompileTemplate turns a shape template into an anchored RE2 pattern:
// literal text, with {digits:8}, {hex:4}, {alpha:2}, {alnum:6} standing for
// exactly that many such characters, {digits} (and the others without a
// count) for one or more, and {any} for any text. "ACC-{digits:8}" matches
// "ACC-00012345".
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

// parseShape resolves one shape argument of a one_of check.
func parseShape(a arg) (Shape, error) {
	switch {
	case a.ident == "declared":
		return Shape{Name: "declared", Declared: true}, nil
	case a.ident != "":
		m, ok := namedShapes[a.ident]
		if !ok {
			return Shape{}, fmt.Errorf("column %d: unknown shape %q; use one of %s, or a template in quotes such as \"ACC-{digits:8}\"",
				a.col, a.ident, strings.Join(ShapeNames(), ", "))
		}
		return Shape{Name: a.ident, match: m}, nil
	case a.isStr:
		pat, err := CompileTemplate(a.str)
		if err != nil {
			return Shape{}, fmt.Errorf("column %d: %v", a.col, err)
		}
		re, err := newMatcher(pat)
		if err != nil {
			return Shape{}, fmt.Errorf("column %d: template %q: %v", a.col, a.str, err)
		}
		return Shape{Name: a.str, match: func(v record.Value) bool {
			return v.Kind() == record.KindString && re.Match(v.Bytes())
		}}, nil
	}
	return Shape{}, fmt.Errorf("column %d: expected a shape such as uuid or \"ACC-{digits:8}\", found %s", a.col, a)
}

// oneOf compiles one_of(field, shape, ...): the field's values must have one
// of the shapes, and the field's implied value checks (type, pattern, enum,
// range, length, identifier format) stop failing on their own: together
// they are the shape "declared", which passes only when all of them do.
func (c *compiler) oneOf(where string, call *call, ch Check, slot int) {
	if len(call.args) < 2 {
		c.errorf(where+".rule", "column 1: one_of takes a field and at least one shape, such as one_of(account_ref, declared, uuid)")
		return
	}
	fp := &c.p.fields[slot]
	if fp.oneOf >= 0 {
		c.errorf(where+".rule", "column %d: field %q already has a one_of check (%s); list every shape in one", call.args[0].col, fp.path, c.p.checks[fp.oneOf].Name)
		return
	}
	seen := map[string]bool{}
	for _, a := range call.args[1:] {
		sh, err := parseShape(a)
		if err != nil {
			c.errorf(where+".rule", "%v", err)
			return
		}
		if seen[sh.Name] {
			c.errorf(where+".rule", "column %d: shape %s is listed twice", a.col, sh.Name)
			return
		}
		seen[sh.Name] = true
		ch.Shapes = append(ch.Shapes, sh)
	}
	ch.Code = recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH
	fp.oneOf = c.add(ch)
}

// shapeNames renders a one_of check's shapes for messages, the declared
// one as what the field declares.
func shapeNames(fp *fieldPlan, shapes []Shape) string {
	parts := make([]string, len(shapes))
	for i, s := range shapes {
		if s.Declared {
			parts[i] = "the declared " + typeName(fp.typ)
			if fp.pattern != nil {
				parts[i] += " matching " + fp.pattern.String()
			}
			continue
		}
		parts[i] = s.Name
	}
	return strings.Join(parts, " or ")
}
