// Package jsonschema converts a JSON Schema of one record (draft 2020-12,
// 2019-09, draft-07 or draft-06) into a Seam contract. Keywords Seam checks
// the same way become field constraints or checks; keywords it cannot check
// are listed in the interop.Report, never dropped silently.
//
// additionalProperties: false on the record becomes the contract's
// additional_fields: QUARANTINE; on a nested object, a check
// additional_fields(OBJECT) that quarantines the record. Each object is
// closed on its own, as in JSON Schema.
//
// JSON Schema and Seam disagree on null: a JSON Schema property that is not
// required may be absent but, unless its type admits null, not null; Seam
// lets an optional field be absent or null alike. Import closes the gap with
// a not_null check on every optional property whose type does not admit
// null, so both refuse the same records.
package jsonschema

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/interop"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// ImportOptions tune Import.
type ImportOptions struct {
	// Source names the document in messages, usually its file name.
	Source string
	// Subject and Owner of the contract; JSON Schema has no word for
	// either. The extension keywords x-seam-subject and x-seam-owner at
	// the schema's root are used when these are empty.
	Subject, Owner string
	// Strict refuses the schema (a *interop.LossError) when any keyword is
	// dropped or approximated.
	Strict bool
}

// Result is the contract and the report of what did not carry over.
type Result struct {
	Contract *contractv1.Contract
	Report   interop.Report
}

// Import converts a JSON Schema document (JSON or YAML) into a contract.
func Import(data []byte, opts ImportOptions) (*Result, error) {
	if opts.Source == "" {
		opts.Source = "jsonschema"
	}
	root, err := interop.Parse(data, opts.Source)
	if err != nil {
		return nil, err
	}
	im := &importer{opts: opts, res: &Result{}, labels: map[string]string{}}
	c, err := im.document(root)
	if err != nil {
		return nil, err
	}
	im.res.Contract = c
	if opts.Strict {
		if err := im.res.Report.Strict(interop.FormatJSONSchema); err != nil {
			return im.res, err
		}
	}
	return im.res, nil
}

type importer struct {
	opts   ImportOptions
	res    *Result
	root   *interop.Value
	labels map[string]string
	checks []*contractv1.Check
	// integer is the first integer property, for the caveat on integers.
	integer *interop.Value
	// refusal is the first part found that Seam cannot express where
	// returning an error at once is not possible.
	refusal error
}

func (im *importer) note(v *interop.Value, kind interop.Kind, format string, args ...any) {
	im.res.Report.Add(v.Path, kind, format, args...)
}

func (im *importer) fail(v *interop.Value, format string, args ...any) error {
	e := &interop.Error{Source: im.opts.Source, Message: fmt.Sprintf(format, args...)}
	if v != nil {
		e.Line, e.Column, e.Path = v.Line, v.Column, v.Path
	}
	return e
}

func (im *importer) document(root *interop.Value) (*contractv1.Contract, error) {
	im.root = root
	o := interop.NewObject(root)
	if v := o.Take("$schema"); v != nil {
		s, _ := v.Scalar()
		switch {
		case strings.Contains(s, "2020-12"), strings.Contains(s, "2019-09"), strings.Contains(s, "draft-07"), strings.Contains(s, "draft-06"):
		default:
			return nil, im.fail(v, "$schema %q is not a draft Seam reads; use draft 2020-12 (or 2019-09, draft-07, draft-06)", s)
		}
	}
	subject, owner := im.opts.Subject, im.opts.Owner
	if v := o.Take("x-seam-subject"); v != nil && subject == "" {
		subject, _ = v.Scalar()
	}
	if v := o.Take("x-seam-owner"); v != nil && owner == "" {
		owner, _ = v.Scalar()
	}
	if subject == "" {
		return nil, im.fail(root, "JSON Schema does not name a subject; give one (seam contract import --subject shop.orders) or the root keyword x-seam-subject")
	}
	if owner == "" {
		return nil, im.fail(root, "JSON Schema does not name an owner; give one (--owner team-checkout) or the root keyword x-seam-owner")
	}
	for _, key := range []string{"$id", "title"} {
		if v := o.Take(key); v != nil {
			if s, ok := v.Scalar(); ok && s != "" {
				label := "jsonschema." + strings.TrimPrefix(key, "$")
				im.labels[label] = s
				im.note(v, interop.Kept, "kept as label %s", label)
			}
		}
	}
	o.Take("$defs")
	o.Take("definitions")
	c := &contractv1.Contract{Subject: subject, Owner: owner}
	if v := o.Take("description"); v != nil {
		c.Description, _ = v.Scalar()
	}
	if v := o.Take("type"); v != nil {
		if s, _ := v.Scalar(); s != "object" {
			return nil, im.fail(v, "a record schema has type object, not %s", v.Text)
		}
	}
	props := o.Take("properties")
	if props == nil || props.Kind != interop.Map || len(props.Keys) == 0 {
		return nil, im.fail(root, "the schema has no properties; a Seam contract lists the record's fields")
	}
	fields, undeclared, err := im.members(props, o.Take("required"), "")
	if err != nil {
		return nil, err
	}
	c.Fields = fields
	if v := o.Take("additionalProperties"); v != nil && im.additional(o, v, "", undeclared) {
		c.AdditionalFields = contractv1.AdditionalFields_ADDITIONAL_FIELDS_QUARANTINE
	}
	if im.refusal != nil {
		return nil, im.refusal
	}
	im.rest(o, "")
	if im.integer != nil {
		im.note(im.integer, interop.Caveat, "JSON Schema integers become Seam INT64 (INT32 for format int32), which take integer literals within 64 bits only: "+
			"a value written with a fraction or an exponent (12.0, 1e3), or beyond 64 bits where the schema does not bound it, passes a JSON Schema validator and fails here; every other value gets the same verdict")
	}
	if len(im.labels) > 0 {
		c.Labels = im.labels
	}
	slices.SortStableFunc(im.checks, func(a, b *contractv1.Check) int { return strings.Compare(a.GetName(), b.GetName()) })
	c.Checks = im.checks
	if problems := contract.Validate(c); len(problems) > 0 {
		return nil, im.fail(root, "the schema does not make a valid Seam contract: %v", problems)
	}
	if _, err := check.Compile(c); err != nil {
		return nil, im.fail(root, "the checks made from the schema do not compile: %v", err)
	}
	return c, nil
}

// additional reads additionalProperties v of the object o at path ("" for
// the record) and reports whether Seam closes the object: false closes
// it, unless some of its properties have no Seam field (undeclared), since
// Seam would then refuse records carrying them that the schema accepts.
func (im *importer) additional(o *interop.Object, v *interop.Value, path string, undeclared []string) bool {
	switch {
	case v.Kind == interop.Bool && v.Text == "false":
	case v.Kind == interop.Bool, v.Kind == interop.Map && len(v.Keys) == 0:
		return false // true and {} let every other member pass
	default:
		im.refusal = im.fail(v, "a schema for additional properties: Seam declares the members it checks and cannot check the others against a schema; list them under properties, or use additionalProperties: false or true")
		return false
	}
	if len(undeclared) > 0 {
		im.note(v, interop.Approximated, "undeclared fields are not refused here: properties %s have no Seam field, so closing the object would refuse records the schema accepts",
			strings.Join(undeclared, ", "))
		return false
	}
	if o.Has("patternProperties") {
		im.note(v, interop.Approximated, "properties that match patternProperties are refused as undeclared fields")
	}
	if path != "" {
		im.addCheck(&contractv1.Check{Name: checkName(path) + "_additional_fields", Rule: "additional_fields(" + path + ")",
			Description: "JSON Schema: " + path + " has additionalProperties: false"})
	}
	return true
}

var annotations = map[string]string{
	"title":                 "titles are annotations; Seam keeps descriptions only",
	"examples":              "Seam keeps no example values",
	"default":               "defaults belong to the mapping in Seam (mapping.fields.*.default), not the source contract",
	"$comment":              "comments are not kept",
	"readOnly":              "Seam has no read-only fields",
	"writeOnly":             "Seam has no write-only fields",
	"deprecated":            "Seam does not mark fields deprecated; deprecate contract versions instead",
	"allOf":                 "combinations of schemas are not checked",
	"anyOf":                 "combinations of schemas are not checked",
	"oneOf":                 "combinations of schemas are not checked",
	"not":                   "negated schemas are not checked",
	"if":                    "conditional schemas are not checked",
	"then":                  "conditional schemas are not checked",
	"else":                  "conditional schemas are not checked",
	"patternProperties":     "properties matched by pattern are not checked",
	"propertyNames":         "property name rules are not checked",
	"minProperties":         "property counts are not checked",
	"maxProperties":         "property counts are not checked",
	"dependentRequired":     "dependent requirements are not checked",
	"dependentSchemas":      "dependent schemas are not checked",
	"dependencies":          "dependencies are not checked",
	"uniqueItems":           "uniqueness of array elements is not checked",
	"contains":              "contains is not checked",
	"minContains":           "contains is not checked",
	"maxContains":           "contains is not checked",
	"prefixItems":           "tuple schemas are not checked",
	"unevaluatedProperties": "unevaluated properties are not checked",
	"unevaluatedItems":      "unevaluated items are not checked",
	"contentEncoding":       "content encodings are not checked",
	"contentMediaType":      "content media types are not checked",
}

// rest reports every keyword of o not handled.
func (im *importer) rest(o *interop.Object, field string) {
	for _, r := range o.Rest() {
		key := interop.Key(r)
		why, ok := annotations[key]
		if !ok {
			why = fmt.Sprintf("keyword %q is not one Seam reads", key)
		}
		im.note(r, interop.Dropped, "%s", why)
	}
}

// resolve follows a local $ref ("#/$defs/x", "#/definitions/x").
func (im *importer) resolve(v *interop.Value) (*interop.Value, error) {
	for hops := 0; ; hops++ {
		ref := v.Get("$ref")
		if ref == nil {
			return v, nil
		}
		if hops > 32 {
			return nil, im.fail(ref, "$ref chain longer than 32 links (a cycle?)")
		}
		s, _ := ref.Scalar()
		var target *interop.Value
		for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
			if name, ok := strings.CutPrefix(s, prefix); ok {
				target = im.root.Get(strings.TrimSuffix(prefix[2:], "/")).Get(name)
			}
		}
		if target == nil {
			return nil, im.fail(ref, "$ref %q does not resolve; Seam follows references into $defs or definitions of the same document", s)
		}
		if len(v.Keys) > 1 {
			im.note(v, interop.Dropped, "keywords beside $ref are not read")
		}
		v = target
	}
}

// members converts an object's properties; required lists the members that
// must be present. undeclared names the properties that got no field.
func (im *importer) members(props, required *interop.Value, prefix string) (out []*contractv1.Field, undeclared []string, err error) {
	req := map[string]bool{}
	if required != nil {
		if required.Kind != interop.List {
			return nil, nil, im.fail(required, "want required as a list of property names, got %s", required.Kind)
		}
		for _, r := range required.Items {
			s, _ := r.Scalar()
			if props.Get(s) == nil {
				im.note(r, interop.Dropped, "required property %q is not declared in properties; Seam checks declared fields", s)
			}
			req[s] = true
		}
	}
	for i, name := range props.Keys {
		f, err := im.field(props.Vals[i], name, joinPath(prefix, name), req[name], false)
		if err != nil {
			return nil, nil, err
		}
		if f != nil {
			out = append(out, f)
		} else {
			undeclared = append(undeclared, name)
		}
	}
	return out, undeclared, nil
}

func joinPath(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// schemaTypes reads "type": one type or a list, and whether null is allowed.
func (im *importer) schemaTypes(v *interop.Value) (types []string, nullable bool, err error) {
	if v == nil {
		return nil, false, nil
	}
	switch v.Kind {
	case interop.String:
		types = []string{v.Text}
	case interop.List:
		for _, it := range v.Items {
			types = append(types, it.Text)
		}
	default:
		return nil, false, im.fail(v, "want type as a name or a list of names, got %s", v.Kind)
	}
	types = slices.DeleteFunc(types, func(s string) bool {
		if s == "null" {
			nullable = true
			return true
		}
		return false
	})
	if slices.Contains(types, "integer") && slices.Contains(types, "number") {
		types = slices.DeleteFunc(types, func(s string) bool { return s == "integer" })
	}
	return types, nullable, nil
}

// emailPattern is how format email is checked.
const emailPattern = `^[^@\s]+@[^@\s]+\.[^@\s]+$`

// ipv4Pattern is how format ipv4 is checked.
const ipv4Pattern = `^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$`

// field converts one property schema; nil when the property cannot be
// declared (reported).
func (im *importer) field(raw *interop.Value, name, path string, required, items bool) (*contractv1.Field, error) {
	if raw.Kind == interop.Bool {
		im.note(raw, interop.Dropped, "a boolean schema for %s is not checked; give it a type", path)
		return nil, nil
	}
	if raw.Kind != interop.Map {
		return nil, im.fail(raw, "want a schema (a mapping), got %s", raw.Kind)
	}
	v, err := im.resolve(raw)
	if err != nil {
		return nil, err
	}
	o := interop.NewObject(v)
	o.Take("$ref")
	typesV := o.Take("type")
	types, nullable, err := im.schemaTypes(typesV)
	if err != nil {
		return nil, err
	}
	enumV, constV := o.Take("enum"), o.Take("const")
	if len(types) == 0 {
		switch {
		case typesV != nil && nullable:
			return nil, im.fail(typesV, "property %s allows null only; Seam has no field that must be null", path)
		case enumV != nil || constV != nil:
			t, null, err := im.literalType(enumV, constV, path)
			if err != nil {
				return nil, err
			}
			types, nullable = []string{t}, null
		case o.Has("properties"):
			return nil, im.fail(v.Get("properties"), "property %s has properties but no type: JSON Schema lets values of every other type pass (properties constrain objects only), and a Seam field has one type; add \"type\": \"object\"", path)
		case o.Has("items"):
			return nil, im.fail(v.Get("items"), "property %s has items but no type: JSON Schema lets values of every other type pass (items constrain arrays only), and a Seam field has one type; add \"type\": \"array\"", path)
		default:
			return nil, im.fail(v, "property %s has no type: JSON Schema lets any value pass, and a Seam field has one type", path)
		}
	}
	if len(types) > 1 {
		return nil, im.fail(typesV, "property %s admits several types (%s); a Seam field has one", path, strings.Join(types, ", "))
	}
	f := &contractv1.Field{Name: name}
	if items {
		f.Name = ""
	}
	if d := o.Take("description"); d != nil {
		f.Description, _ = d.Scalar()
	}
	top := !items && !strings.Contains(path, ".") && !strings.Contains(path, contract.ItemsSuffix)
	ruleName := checkName(path)
	switch types[0] {
	case "string":
		f.Type = contractv1.FieldType_FIELD_TYPE_STRING
		if fv := o.Take("format"); fv != nil {
			switch s, _ := fv.Scalar(); s {
			case "date-time":
				f.Type, f.Layout = contractv1.FieldType_FIELD_TYPE_TIMESTAMP, "RFC3339"
			case "date":
				f.Type = contractv1.FieldType_FIELD_TYPE_DATE
			case "uuid":
				f.Type = contractv1.FieldType_FIELD_TYPE_UUID
			case "email", "idn-email":
				f.Pattern = emailPattern
				im.note(fv, interop.Approximated, "email addresses are checked with the pattern %s, looser than RFC 5321", emailPattern)
			case "ipv4":
				f.Pattern = ipv4Pattern
			default:
				im.note(fv, interop.Dropped, "format %q is not checked by Seam", s)
			}
		}
		str := f.Type == contractv1.FieldType_FIELD_TYPE_STRING
		if p := o.Take("pattern"); p != nil {
			s, _ := p.Scalar()
			_, err := regexp.Compile(s)
			switch {
			case err != nil:
				im.note(p, interop.Dropped, "pattern %q is not an RE2 expression Seam can check: %v", s, err)
			case !str:
				im.note(p, interop.Dropped, "a pattern on a %s field is not checked", contract.ShortName(f.GetType()))
			case f.Pattern != "":
				im.note(p, interop.Dropped, "a pattern beside format is not checked")
			default:
				f.Pattern = s
			}
		}
		for _, key := range []string{"minLength", "maxLength"} {
			lv := o.Take(key)
			if lv == nil {
				continue
			}
			n, ok := lv.Int()
			if !ok || n < 0 {
				return nil, im.fail(lv, "want a whole number of 0 or more, got %q", lv.Text)
			}
			if !str {
				im.note(lv, interop.Dropped, "%s of a %s field is not checked", key, contract.ShortName(f.GetType()))
				continue
			}
			if key == "minLength" {
				f.MinLength = &n
			} else {
				f.MaxLength = &n
			}
		}
	case "integer":
		if im.integer == nil {
			im.integer = v
		}
		f.Type = contractv1.FieldType_FIELD_TYPE_INT64
		if fv := o.Take("format"); fv != nil {
			if s, _ := fv.Scalar(); s == "int32" {
				f.Type = contractv1.FieldType_FIELD_TYPE_INT32
			} else if s != "int64" {
				im.note(fv, interop.Dropped, "format %q is not checked by Seam", s)
			}
		}
		if err := im.bounds(o, f, path, top, true); err != nil {
			return nil, err
		}
	case "number":
		f.Type = contractv1.FieldType_FIELD_TYPE_DOUBLE
		if fv := o.Take("format"); fv != nil {
			switch s, _ := fv.Scalar(); s {
			case "float":
				f.Type = contractv1.FieldType_FIELD_TYPE_FLOAT
			case "double":
			default:
				im.note(fv, interop.Dropped, "format %q is not checked by Seam", s)
			}
		}
		if err := im.bounds(o, f, path, top, false); err != nil {
			return nil, err
		}
	case "boolean":
		f.Type = contractv1.FieldType_FIELD_TYPE_BOOL
	case "object":
		f.Type = contractv1.FieldType_FIELD_TYPE_OBJECT
		props := o.Take("properties")
		req := o.Take("required")
		ap := o.Take("additionalProperties")
		if props == nil || props.Kind != interop.Map || len(props.Keys) == 0 {
			if ap != nil && !(ap.Kind == interop.Bool && ap.Text == "true") {
				return nil, im.fail(ap, "object %s lists no properties, and Seam cannot check additionalProperties without them", path)
			}
			break // any object: Seam's OBJECT without fields
		}
		if items {
			o.Take("properties")
			im.note(v, interop.Approximated, "the gate checks that each element of the array is an object, not its members")
		}
		var undeclared []string
		f.Fields, undeclared, err = im.members(props, req, path)
		if err != nil {
			return nil, err
		}
		switch {
		case ap == nil:
		case items || strings.Contains(path, contract.ItemsSuffix):
			if ap.Kind == interop.Bool && ap.Text == "false" {
				im.note(ap, interop.Approximated, "undeclared members of array elements are not refused: the gate does not look inside the elements")
			} else if ap.Kind != interop.Bool && !(ap.Kind == interop.Map && len(ap.Keys) == 0) {
				return nil, im.fail(ap, "a schema for additional properties: Seam declares the members it checks and cannot check the others against a schema; list them under properties, or use additionalProperties: false or true")
			}
		default:
			im.additional(o, ap, path, undeclared)
		}
	case "array":
		f.Type = contractv1.FieldType_FIELD_TYPE_ARRAY
		if items {
			return nil, im.fail(v, "arrays of arrays are not supported; Seam's array elements are single values or objects")
		}
		it := o.Take("items")
		if it == nil || it.Kind != interop.Map {
			return nil, im.fail(v, "array %s needs items with a type", path)
		}
		f.Items, err = im.field(it, "", path+contract.ItemsSuffix, false, true)
		if err != nil {
			return nil, err
		}
		if f.Items == nil {
			return nil, im.fail(it, "array %s needs items with a type Seam can check", path)
		}
		for _, key := range []string{"minItems", "maxItems"} {
			lv := o.Take(key)
			if lv == nil {
				continue
			}
			n, ok := lv.Int()
			if !ok || n < 0 {
				return nil, im.fail(lv, "want a whole number of 0 or more, got %q", lv.Text)
			}
			if key == "minItems" {
				f.MinLength = &n
			} else {
				f.MaxLength = &n
			}
		}
	default:
		return nil, im.fail(typesV, "unknown type %q", types[0])
	}
	if err := im.literals(f, enumV, constV, path, top, &nullable); err != nil {
		return nil, err
	}
	if items && hasConstraints(f) {
		im.note(v, interop.Approximated, "the gate checks the type of each array element, not its constraints")
	}
	if items && !nullable {
		im.note(v, interop.Approximated, "null elements pass Seam's element type check")
	}
	switch {
	case items:
	case required && nullable:
		im.note(v, interop.Approximated, "%s is required but may be null: Seam treats null as absent, so the field is optional here", path)
	case required:
		f.Required = true
	case strings.Contains(path, contract.ItemsSuffix):
		// A member of an array element: the gate does not look inside
		// elements, which the element's note already says.
	case !nullable:
		im.addCheck(&contractv1.Check{Name: ruleName + "_not_null", Rule: "not_null(" + path + ")",
			Description: "JSON Schema: " + path + " may be absent but not null"})
	}
	im.rest(o, path)
	return f, nil
}

func hasConstraints(f *contractv1.Field) bool {
	return f.GetPattern() != "" || len(f.GetEnum()) > 0 || f.Min != nil || f.Max != nil || f.MinLength != nil || f.MaxLength != nil
}

// literalType is the type of a property that only lists its values
// (enum or const without type), and whether null is among them. In JSON
// Schema 1 and 1.0 are the same number, so numbers are DOUBLE; values of
// several types, and objects and lists, have no Seam field type.
func (im *importer) literalType(enumV, constV *interop.Value, path string) (string, bool, error) {
	var vals []*interop.Value
	if enumV != nil {
		vals = append(vals, enumV.Items...)
	}
	if constV != nil {
		vals = append(vals, constV)
	}
	kind, null := interop.Null, false
	for _, v := range vals {
		switch v.Kind {
		case interop.Null:
			null = true
			continue
		case interop.Map, interop.List:
			return "", false, im.fail(v, "allowed value of %s is %s; Seam compares single values (text, numbers, booleans)", path, v.Kind)
		}
		if kind != interop.Null && kind != v.Kind {
			return "", false, im.fail(v, "allowed values of %s are of several types (%s and %s); a Seam field has one", path, kind, v.Kind)
		}
		kind = v.Kind
	}
	switch kind {
	case interop.String:
		return "string", null, nil
	case interop.Number:
		return "number", null, nil
	case interop.Bool:
		return "boolean", null, nil
	}
	src := constV
	if src == nil {
		src = enumV
	}
	return "", false, im.fail(src, "%s allows null only; Seam has no field that must be null", path)
}

// addCheck appends a generated check, numbering its name when another
// took it ("a.b" and "a_b" both give a_b_not_null).
func (im *importer) addCheck(c *contractv1.Check) {
	base := c.Name
	for i := 2; slices.ContainsFunc(im.checks, func(o *contractv1.Check) bool { return o.GetName() == c.Name }); i++ {
		c.Name = fmt.Sprintf("%s_%d", base, i)
	}
	im.checks = append(im.checks, c)
}

var checkNameRE = regexp.MustCompile(`[^a-z0-9_]+`)

func checkName(path string) string {
	s := checkNameRE.ReplaceAllString(strings.ToLower(strings.ReplaceAll(path, contract.ItemsSuffix, "_items")), "_")
	s = strings.Trim(s, "_")
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "f_" + s
	}
	return s
}

// literal renders a number bound for a CEL expression over a field of the
// given type.
func literal(x float64, integer bool) string {
	if integer {
		return strconv.FormatInt(int64(x), 10)
	}
	s := strconv.FormatFloat(x, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// bounds reads minimum, maximum, the exclusive bounds (numbers in 2020-12
// and draft-07, booleans in draft-04 style) and multipleOf.
func (im *importer) bounds(o *interop.Object, f *contractv1.Field, path string, top, integer bool) error {
	num := func(key string) (*float64, *interop.Value, error) {
		v := o.Take(key)
		if v == nil {
			return nil, nil, nil
		}
		if v.Kind == interop.Bool {
			return nil, v, nil
		}
		x, ok := v.Float()
		if !ok {
			return nil, nil, im.fail(v, "want a number, got %s", v.Kind)
		}
		return &x, v, nil
	}
	lo, _, err := num("minimum")
	if err != nil {
		return err
	}
	hi, _, err := num("maximum")
	if err != nil {
		return err
	}
	f.Min, f.Max = lo, hi
	for _, ex := range []struct {
		key string
		min bool
	}{{"exclusiveMinimum", true}, {"exclusiveMaximum", false}} {
		x, v, err := num(ex.key)
		if err != nil {
			return err
		}
		if v != nil && v.Kind == interop.Bool {
			// draft-04 style: the bound itself is minimum or maximum.
			if v.Text == "true" {
				b := f.Min
				if !ex.min {
					b = f.Max
				}
				if b == nil {
					return im.fail(v, "%s: true needs the matching bound", ex.key)
				}
				x = b
				if ex.min {
					f.Min = nil
				} else {
					f.Max = nil
				}
			} else {
				continue
			}
		}
		if x == nil {
			continue
		}
		op := "<"
		if ex.min {
			op = ">"
		}
		switch {
		case integer && *x == math.Trunc(*x) && math.Abs(*x) < 1<<53:
			b := *x - 1
			if ex.min {
				b = *x + 1
			}
			if ex.min && (f.Min == nil || b > *f.Min) {
				f.Min = &b
			}
			if !ex.min && (f.Max == nil || b < *f.Max) {
				f.Max = &b
			}
		case top:
			im.addCheck(&contractv1.Check{Name: checkName(path) + "_" + strings.ToLower(ex.key),
				Rule: fmt.Sprintf("cel(dyn(%s) == null || %s %s %s)", path, path, op, literal(*x, integer))})
		default:
			if ex.min {
				f.Min = x
			} else {
				f.Max = x
			}
			im.note(v, interop.Approximated, "%s %g of nested field %s is checked inclusively", ex.key, *x, path)
		}
	}
	if v := o.Take("multipleOf"); v != nil {
		x, ok := v.Float()
		switch {
		case !ok || x <= 0:
			return im.fail(v, "multipleOf must be a number above 0")
		case integer && top && x == math.Trunc(x):
			im.addCheck(&contractv1.Check{Name: checkName(path) + "_multiple_of",
				Rule: fmt.Sprintf("cel(dyn(%s) == null || %s %% %s == 0)", path, path, literal(x, true))})
		default:
			im.note(v, interop.Dropped, "multipleOf is checked only for whole multiples of top-level integer fields")
		}
	}
	return nil
}

// literals applies enum and const.
func (im *importer) literals(f *contractv1.Field, enumV, constV *interop.Value, path string, top bool, nullable *bool) error {
	var vals []*interop.Value
	if enumV != nil {
		if enumV.Kind != interop.List || len(enumV.Items) == 0 {
			return im.fail(enumV, "want enum as a non-empty list, got %s", enumV.Kind)
		}
		vals = enumV.Items
	}
	if constV != nil {
		if enumV != nil {
			im.note(constV, interop.Dropped, "const beside enum is not checked")
		} else {
			vals = []*interop.Value{constV}
		}
	}
	if len(vals) == 0 {
		return nil
	}
	var strs, lits []string
	allStrings := true
	sawNull := false
	for _, v := range vals {
		switch v.Kind {
		case interop.Null:
			sawNull = true
		case interop.String:
			strs = append(strs, v.Text)
			lits = append(lits, strconv.Quote(v.Text))
		case interop.Number:
			allStrings = false
			x, _ := v.Float()
			lits = append(lits, literal(x, f.GetType() == contractv1.FieldType_FIELD_TYPE_INT64 || f.GetType() == contractv1.FieldType_FIELD_TYPE_INT32))
		case interop.Bool:
			allStrings = false
			lits = append(lits, v.Text)
		default:
			return im.fail(v, "enum values that are lists or objects are not supported")
		}
	}
	if !sawNull {
		// JSON Schema: a value outside the enum fails even when the type
		// admits null.
		*nullable = false
	}
	src := enumV
	if src == nil {
		src = constV
	}
	switch {
	case len(lits) == 0:
	case f.GetType() == contractv1.FieldType_FIELD_TYPE_STRING && allStrings:
		f.Enum = strs
	case top:
		im.addCheck(&contractv1.Check{Name: checkName(path) + "_allowed",
			Rule: fmt.Sprintf("cel(dyn(%s) == null || %s in [%s])", path, path, strings.Join(lits, ", "))})
	default:
		im.note(src, interop.Dropped, "allowed values of the nested %s field %s are not checked", contract.ShortName(f.GetType()), path)
	}
	return nil
}
