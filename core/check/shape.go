package check

import (
	"fmt"
	"strings"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/shape"
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

// ShapeNames lists the shapes a one_of check may name, "declared" first,
// then the named shapes of core/shape, the names alerts and inference use.
func ShapeNames() []string {
	return append([]string{"declared"}, shape.Names()...)
}

// CompileTemplate turns a shape template into an anchored RE2 pattern
// (core/shape.CompileTemplate): "ACC-{digits:8}" matches "ACC-00012345",
// "name-{digits}" matches "name-7" and "name-100000".
func CompileTemplate(tmpl string) (string, error) { return shape.CompileTemplate(tmpl) }

// parseShape resolves one shape argument of a one_of check.
func parseShape(a arg) (Shape, error) {
	switch {
	case a.ident == "declared":
		return Shape{Name: "declared", Declared: true}, nil
	case a.ident != "":
		m, ok := shape.Named(a.ident)
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
			return (v.Kind() == record.KindString || v.Kind() == record.KindRaw) && re.Match(v.Bytes())
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
			parts[i] = "the declared " + contract.ShortName(fp.typ)
			if fp.pattern != nil {
				parts[i] += " matching " + fp.pattern.String()
			}
			continue
		}
		parts[i] = s.Name
	}
	return strings.Join(parts, " or ")
}
