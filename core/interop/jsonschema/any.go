package jsonschema

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/interop"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// A schema without one type (no type, or a list of types) becomes a JSON
// field, which holds a value of any JSON type. Each constraint applies to
// the values of its kind only, as in JSON Schema: min and max of the field
// bound numbers, its pattern and lengths bound strings, items describe the
// elements of arrays and fields the members of objects; the rest (the
// admitted types, exclusive bounds, multiples, counts of elements, allowed
// values, required members) become CEL checks guarded by the value's type.

// celTypes are CEL's names of the types of JSON values as a check sees
// them: numbers are doubles.
var celTypes = map[string]string{"string": "string", "number": "double", "boolean": "bool", "object": "map", "array": "list"}

// typeCond is a CEL condition that x has one of the JSON Schema types
// (integer: a number without a fraction); no types is false (only null).
func typeCond(x string, types []string) string {
	var conds []string
	for _, t := range types {
		switch t {
		case "integer":
			if !slices.Contains(types, "number") {
				conds = append(conds, "(type("+x+") == double && int("+x+") == "+x+")")
			}
		default:
			conds = append(conds, "type("+x+") == "+celTypes[t])
		}
	}
	if len(conds) == 0 {
		return "false"
	}
	return strings.Join(conds, " || ")
}

// when guards a CEL condition on x so that it holds for values of another
// CEL type than t.
func when(x, t, cond string) string { return "type(" + x + ") != " + t + " || (" + cond + ")" }

// anyField converts a schema whose values may have several types: types
// are the admitted ones (nil: every type), nullable whether null is one.
func (im *importer) anyField(o *interop.Object, v *interop.Value, f *contractv1.Field, path string, types []string, nullable, items bool, enumV, constV *interop.Value) (bool, error) {
	f.Type = contractv1.FieldType_FIELD_TYPE_JSON
	if !items {
		im.jsonPaths[path] = true
	}
	for _, t := range types {
		if t != "integer" && celTypes[t] == "" {
			return false, im.fail(o.V.Get("type"), "unknown type %q; JSON Schema's types are string, integer, number, boolean, object, array and null", t)
		}
	}
	name := checkName(path)
	if types != nil && !(slices.Contains(types, "number") && len(types) == 5) {
		if err := im.celCheck(o.V.Get("type"), path, name+"_type", func(x string) string { return typeCond(x, types) },
			fmt.Sprintf("JSON Schema: %s has type %s", path, strings.Join(types, ", "))); err != nil {
			return false, err
		}
	}
	// Numbers.
	if err := im.anyBounds(o, f, path); err != nil {
		return false, err
	}
	// Strings.
	if fv := o.Take("format"); fv != nil {
		s, _ := fv.Scalar()
		if s != "ipv4" {
			return false, im.fail(fv, "format %q on %s, whose values are not all strings: Seam checks formats on fields of type string only; add \"type\": \"string\"", s, path)
		}
		f.Pattern = ipv4Pattern
	}
	if p := o.Take("pattern"); p != nil {
		s, _ := p.Scalar()
		re, err := translatePattern(s)
		if err != nil {
			return false, im.fail(p, "pattern %q: %v", s, err)
		}
		if f.Pattern == "" {
			f.Pattern = re
		} else if err := im.celCheck(p, path, name+"_pattern", func(x string) string { return when(x, "string", x+".matches("+strconv.Quote(re)+")") }, "JSON Schema: "+path+" matches "+s); err != nil {
			return false, err
		}
	}
	for _, key := range []string{"minLength", "maxLength", "minItems", "maxItems"} {
		lv, n, err := im.count(o, key)
		switch {
		case err != nil:
			return false, err
		case lv == nil:
			continue
		}
		switch key {
		case "minLength":
			f.MinLength = &n
		case "maxLength":
			f.MaxLength = &n
		default:
			op := map[string]string{"minItems": ">=", "maxItems": "<="}[key]
			if err := im.boundCheck(lv, path, name, key, func(x string) string { return when(x, "list", "size("+x+") "+op+" "+strconv.FormatInt(n, 10)) }); err != nil {
				return false, err
			}
		}
	}
	// Arrays.
	if it := o.Take("items"); it != nil {
		switch {
		case items:
			return false, im.fail(it, "arrays of arrays are not supported; Seam's array elements are single values or objects")
		case it.Kind == interop.Bool && it.Text == "true":
		case it.Kind == interop.Bool:
			if err := im.celCheck(it, path, name+"_items", func(x string) string { return when(x, "list", "size("+x+") == 0") }, "JSON Schema: "+path+" has items: false"); err != nil {
				return false, err
			}
		default:
			el, null, err := im.fieldOf(it, "", path+contract.ItemsSuffix, false, true)
			if err != nil {
				return false, err
			}
			f.Items = el
			if !null {
				if err := im.celCheck(it, path, name+"_items_not_null", func(x string) string { return when(x, "list", x+".all(e, e != null)") }, "JSON Schema: the elements of "+path+" are not null"); err != nil {
					return false, err
				}
			}
		}
	}
	// Objects.
	props, req, ap := o.Take("properties"), o.Take("required"), o.Take("additionalProperties")
	if items && (props != nil || req != nil || ap != nil) {
		return false, im.fail(v, "the members of objects inside arrays are not checked: the gate checks each element of %s, not its members", strings.TrimSuffix(path, contract.ItemsSuffix))
	}
	if props == nil {
		props = &interop.Value{Kind: interop.Map}
	}
	if props.Kind != interop.Map {
		return false, im.fail(props, "want properties as a mapping, got %s", props.Kind)
	}
	fields, undeclared, err := im.members(props, req, path)
	if err != nil {
		return false, err
	}
	f.Fields = fields
	if ap != nil {
		var declared []string
		for _, m := range f.Fields {
			declared = append(declared, m.GetName())
		}
		if _, err := im.additional(ap, path, declared, undeclared); err != nil {
			return false, err
		}
	}
	// Allowed values.
	if enumV != nil || constV != nil {
		src, vals := enumV, []*interop.Value(nil)
		if enumV != nil {
			vals = enumV.Items
		} else {
			src, vals = constV, []*interop.Value{constV}
		}
		nullable = false
		var lits []string
		for _, val := range vals {
			if val.Kind == interop.Null {
				nullable = true
				continue
			}
			lits = append(lits, celValue(val))
		}
		if err := im.celCheck(src, path, name+"_allowed", func(x string) string {
			switch len(lits) {
			case 0:
				return "false"
			case 1:
				return x + " == " + lits[0]
			}
			return x + " in [" + strings.Join(lits, ", ") + "]"
		}, "JSON Schema: the allowed values of "+path); err != nil {
			return false, err
		}
	}
	return nullable, nil
}

// anyBounds reads the numeric keywords of a JSON field: minimum and
// maximum bound its numbers; exclusive bounds and whole multiples become
// CEL checks on numbers.
func (im *importer) anyBounds(o *interop.Object, f *contractv1.Field, path string) error {
	name := checkName(path)
	for _, b := range []struct {
		key, op string
		lower   bool
		set     bool
	}{{"minimum", ">=", true, true}, {"maximum", "<=", false, true}, {"exclusiveMinimum", ">", true, false}, {"exclusiveMaximum", "<", false, false}} {
		v := o.Take(b.key)
		if v == nil {
			continue
		}
		x, ok := v.Float()
		if !ok {
			return im.fail(v, "want a number, got %s", v.Kind)
		}
		if b.set && b.lower {
			f.Min = &x
			continue
		}
		if b.set {
			f.Max = &x
			continue
		}
		op := b.op
		if err := im.boundCheck(v, path, name, b.key, func(e string) string { return when(e, "double", e+" "+op+" "+literal(x, false)) }); err != nil {
			return err
		}
	}
	v, x, err := im.multipleOf(o)
	switch {
	case err != nil || v == nil:
		return err
	case !integral(x):
		return im.fail(v, "multipleOf %s: Seam checks whole multiples only, since multiples of fractions are not exact in binary floating point", v.Text)
	}
	n := literal(x, true)
	return im.celCheck(v, path, name+"_multiple_of", func(e string) string { return when(e, "double", "int("+e+") == "+e+" && int("+e+") % "+n+" == 0") },
		fmt.Sprintf("JSON Schema: %s is a multiple of %s", path, v.Text))
}
