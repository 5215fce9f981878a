// Package jsonschema converts a JSON Schema of one record (draft 2020-12,
// 2019-09, draft-07 or draft-06) into a Seam contract. Every assertion it
// carries over gives the specification's verdict on every record; a keyword
// whose verdict Seam cannot reproduce exactly refuses the import, naming the
// keyword by its JSON pointer and why. Only annotations (titles, examples,
// defaults, comments, formats that are OpenAPI names) and keywords no
// vocabulary defines, which no validator asserts, are left out with a note;
// ImportOptions.Strict refuses those too.
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
//
// What a field's declaration cannot say (an exclusive bound on a number, a
// multiple, allowed values that are not text, a value that must equal an
// object or a list, elements that must not be null) becomes a CEL check
// that holds when the field is absent or null, so the two rules stay apart
// as in JSON Schema.
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

// ImportOptions tune Import. JSON Schema has no word for a subject or an
// owner: the extension keywords x-seam-subject and x-seam-owner at the
// schema's root are used when Subject and Owner are empty. Strict refuses
// the schema (a *interop.LossError) when an annotation or an unknown
// keyword is left out; assertions Seam cannot check are refused with or
// without it.
type ImportOptions = interop.ImportOptions

// Result is the contract and the report of what did not carry over.
type Result = interop.Result

// Import converts a JSON Schema document (JSON or YAML) into a contract.
// An assertion Seam cannot check exactly is an *interop.Error whose Path is
// the keyword's JSON pointer (RFC 6901).
func Import(data []byte, opts ImportOptions) (*Result, error) {
	if opts.Source == "" {
		opts.Source = "jsonschema"
	}
	root, err := interop.Parse(data, opts.Source)
	if err != nil {
		return nil, err
	}
	im := &importer{opts: opts, res: &Result{}, labels: map[string]string{}, jsonPaths: map[string]bool{}}
	c, err := im.document(root)
	if err != nil {
		return nil, err
	}
	im.res.Contract = c
	return im.res, im.res.Report.StrictIf(opts.Strict, interop.FormatJSONSchema)
}

type importer struct {
	opts   ImportOptions
	res    *Result
	root   *interop.Value
	labels map[string]string
	checks []*contractv1.Check
	// jsonPaths are the fields of type JSON, whose values a check must
	// test for their type before reading members or elements.
	jsonPaths map[string]bool
	// modern is draft 2019-09 or 2020-12, where keywords beside $ref
	// apply too; draft-07 and draft-06 ignore them.
	modern bool
	// integer is the first integer property, for the caveat on integers.
	integer *interop.Value
}

func (im *importer) note(v *interop.Value, kind interop.Kind, format string, args ...any) {
	im.res.Report.Add(v.Path, kind, format, args...)
}

// fail refuses the schema at v, which the error names by its JSON pointer.
func (im *importer) fail(v *interop.Value, format string, args ...any) error {
	e := interop.ErrorAt(im.opts.Source, v, format, args...)
	if v != nil {
		e.Path, _ = pointer(im.root, v, "")
	}
	return e
}

// pointer is the JSON pointer of v in the tree at (RFC 6901: "/" between
// keys, "~0" for "~" and "~1" for "/" in keys).
func pointer(at, v *interop.Value, prefix string) (string, bool) {
	if at == nil {
		return "", false
	}
	if at == v {
		return prefix, true
	}
	switch at.Kind {
	case interop.Map:
		for i, k := range at.Keys {
			k = strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
			if p, ok := pointer(at.Vals[i], v, prefix+"/"+k); ok {
				return p, true
			}
		}
	case interop.List:
		for i, it := range at.Items {
			if p, ok := pointer(it, v, prefix+"/"+strconv.Itoa(i)); ok {
				return p, true
			}
		}
	}
	return "", false
}

func (im *importer) document(root *interop.Value) (*contractv1.Contract, error) {
	im.root = root
	im.modern = true
	o := interop.NewObject(root)
	if v := o.Take("$schema"); v != nil {
		s, _ := v.Scalar()
		switch {
		case strings.Contains(s, "2020-12"), strings.Contains(s, "2019-09"):
		case strings.Contains(s, "draft-07"), strings.Contains(s, "draft-06"):
			im.modern = false
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
	rec := o // the object whose keywords describe the record
	if ref := o.Take("$ref"); ref != nil {
		// A root that refers to its record's schema in $defs, as some
		// generators write it; the root then only names and defines.
		for _, k := range []string{"type", "properties", "required", "additionalProperties"} {
			if v := root.Get(k); v != nil {
				return nil, im.fail(v, "keyword %q beside the root's $ref applies too in draft 2019-09 and later; move it into the referenced schema", k)
			}
		}
		target, err := im.resolve(&interop.Value{Kind: interop.Map, Keys: []string{"$ref"}, Vals: []*interop.Value{ref}})
		if err != nil {
			return nil, err
		}
		if err := im.rest(o); err != nil {
			return nil, err
		}
		rec = interop.NewObject(target)
		if v := rec.Take("description"); v != nil && c.Description == "" {
			c.Description, _ = v.Scalar()
		}
		for _, key := range []string{"title", "$id", "$schema", "$defs", "definitions", "$comment"} {
			rec.Take(key)
		}
	}
	o = rec
	if v := o.Take("type"); v != nil {
		if s, _ := v.Scalar(); s != "object" {
			return nil, im.fail(v, "a record schema has type object, not %s", v.Text)
		}
	}
	props := o.Take("properties")
	if props == nil || props.Kind != interop.Map || len(props.Keys) == 0 {
		return nil, im.fail(o.V, "the schema has no properties; a Seam contract lists the record's fields")
	}
	fields, undeclared, err := im.members(props, o.Take("required"), "")
	if err != nil {
		return nil, err
	}
	c.Fields = fields
	if v := o.Take("additionalProperties"); v != nil {
		closed, err := im.additional(v, "", nil, undeclared)
		if err != nil {
			return nil, err
		}
		if closed {
			c.AdditionalFields = contractv1.AdditionalFields_ADDITIONAL_FIELDS_QUARANTINE
		}
	}
	if err := im.rest(o); err != nil {
		return nil, err
	}
	if im.integer != nil {
		im.note(im.integer, interop.Caveat, "JSON Schema integers become Seam INT64, which take integer literals within 64 bits only: "+
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

// additional reads additionalProperties v of the object at path ("" for
// the record) and reports whether the object is closed by the contract's
// additional_fields (the record) or by a check additional_fields(path).
// declared are the members with a Seam field; undeclared are properties
// the schema lets take any value, so they have
// no Seam field: a nested object is then closed by a CEL check naming
// every member it may have; the record cannot be.
func (im *importer) additional(v *interop.Value, path string, declared, undeclared []string) (bool, error) {
	switch {
	case v.Kind == interop.Bool && v.Text == "false":
	case v.Kind == interop.Bool, v.Kind == interop.Map && len(v.Keys) == 0:
		return false, nil // true and {} let every other member pass
	case v.Kind == interop.Map && path != "" && typeOnly(v):
		// The other members have one of the listed types.
		types, nullable, err := im.schemaTypes(v.Get("type"))
		if err != nil {
			return false, err
		}
		for _, t := range types {
			if t != "integer" && celTypes[t] == "" {
				return false, im.fail(v.Get("type"), "unknown type %q; JSON Schema's types are string, integer, number, boolean, object, array and null", t)
			}
		}
		var names []string
		for _, m := range append(slices.Clone(declared), undeclared...) {
			names = append(names, strconv.Quote(m))
		}
		return false, im.celCheck(v, path, checkName(path)+"_additional_properties", func(f string) string {
			cond := typeCond(f+"[k]", types)
			if nullable {
				cond = f + "[k] == null || " + cond
			}
			return when(f, "map", f+".all(k, k in ["+strings.Join(names, ", ")+"] || "+cond+")")
		}, "JSON Schema: the members of "+path+" not in properties have type "+v.Get("type").Text)
	default:
		return false, im.fail(v, "a schema for additional properties: Seam declares the members it checks and cannot check the others against a schema; list them under properties, or use additionalProperties: false or true")
	}
	switch {
	case len(undeclared) > 0 && path == "":
		return false, im.fail(v, "the record is closed, but properties %s take any value, so they have no Seam field and Seam would refuse them as undeclared; give them a type", strings.Join(undeclared, ", "))
	case len(undeclared) > 0:
		var names []string
		for _, m := range append(slices.Clone(declared), undeclared...) {
			names = append(names, strconv.Quote(m))
		}
		return true, im.celCheck(v, path, checkName(path)+"_additional_fields", func(f string) string { return when(f, "map", f+".all(k, k in ["+strings.Join(names, ", ")+"])") },
			"JSON Schema: "+path+" has additionalProperties: false")
	case path != "":
		im.addCheck(&contractv1.Check{Name: checkName(path) + "_additional_fields", Rule: "additional_fields(" + path + ")",
			Description: "JSON Schema: " + path + " has additionalProperties: false"})
	}
	return true, nil
}

// annotations are keywords no validator asserts: leaving them out changes
// no verdict, so they are noted (and refused only by a strict import).
var annotations = map[string]string{
	"title":            "titles are annotations; Seam keeps descriptions only",
	"examples":         "Seam keeps no example values",
	"default":          "defaults belong to the mapping in Seam (mapping.fields.*.default), not the source contract",
	"$comment":         "comments are not kept",
	"readOnly":         "Seam has no read-only fields",
	"writeOnly":        "Seam has no write-only fields",
	"deprecated":       "Seam does not mark fields deprecated; deprecate contract versions instead",
	"contentEncoding":  "content encodings are annotations in 2020-12 and are not kept",
	"contentMediaType": "content media types are annotations in 2020-12 and are not kept",
	"contentSchema":    "content schemas are annotations in 2020-12 and are not kept",
	"$id":              "identifiers of subschemas are not kept",
	"$anchor":          "anchors are not kept; Seam follows $ref into $defs or definitions",
	"$dynamicAnchor":   "anchors are not kept; Seam follows $ref into $defs or definitions",
	"$schema":          "a subschema's $schema is not read",
	"$vocabulary":      "vocabularies are not read",
	"$defs":            "definitions inside a subschema are not read; Seam follows $ref into the root's $defs or definitions",
	"definitions":      "definitions inside a subschema are not read; Seam follows $ref into the root's $defs or definitions",
}

// unsupported are assertions and applicators whose verdict Seam cannot
// reproduce: a schema using one is refused where it uses it.
var unsupported = map[string]string{
	"allOf":                 "combinations of schemas (allOf) are not checked",
	"anyOf":                 "combinations of schemas (anyOf) are not checked",
	"oneOf":                 "combinations of schemas (oneOf) are not checked",
	"not":                   "negated schemas (not) are not checked",
	"if":                    "conditional schemas (if/then/else) are not checked",
	"then":                  "conditional schemas (if/then/else) are not checked",
	"else":                  "conditional schemas (if/then/else) are not checked",
	"patternProperties":     "properties matched by pattern are not checked",
	"propertyNames":         "rules on property names are not checked",
	"minProperties":         "property counts are not checked",
	"maxProperties":         "property counts are not checked",
	"dependentRequired":     "dependent requirements are not checked",
	"dependentSchemas":      "dependent schemas are not checked",
	"dependencies":          "dependencies are not checked",
	"uniqueItems":           "uniqueness of array elements is not checked",
	"contains":              "contains is not checked",
	"minContains":           "contains is not checked",
	"maxContains":           "contains is not checked",
	"prefixItems":           "tuple schemas (prefixItems) are not checked",
	"additionalItems":       "tuple schemas (additionalItems) are not checked",
	"unevaluatedProperties": "unevaluated properties are not checked",
	"unevaluatedItems":      "unevaluated items are not checked",
	"$dynamicRef":           "dynamic references are not followed; Seam follows $ref into $defs or definitions",
	"$recursiveRef":         "recursive references are not followed; Seam follows $ref into $defs or definitions",
	"$recursiveAnchor":      "recursive references are not followed; Seam follows $ref into $defs or definitions",
	"$ref":                  "a $ref here is not followed; Seam follows $ref in property schemas",
}

// typeSpecific are keywords that apply to values of one JSON type only.
// Left over on a field of another type, they never apply (a validator
// ignores minimum on a string), so they are noted, not refused.
var typeSpecific = map[string]string{
	"properties":           "object",
	"required":             "object",
	"additionalProperties": "object",
	"items":                "array",
	"minItems":             "array",
	"maxItems":             "array",
	"format":               "string",
	"pattern":              "string",
	"minLength":            "string",
	"maxLength":            "string",
	"minimum":              "number",
	"maximum":              "number",
	"exclusiveMinimum":     "number",
	"exclusiveMaximum":     "number",
	"multipleOf":           "number",
}

// rest refuses the first keyword of o not handled that is an assertion and
// notes the others.
func (im *importer) rest(o *interop.Object) error {
	for _, r := range o.Rest() {
		key := interop.Key(r)
		if why, ok := unsupported[key]; ok {
			return im.fail(r, "%s; a JSON Schema validator would refuse records Seam accepts. Remove the keyword, or check the rule in a check of your own after import", why)
		}
		if t, ok := typeSpecific[key]; ok {
			im.note(r, interop.Dropped, "%s applies to %s values only, which this field does not take, so it never applies", key, t)
			continue
		}
		why, ok := annotations[key]
		if !ok {
			why = fmt.Sprintf("keyword %q is not one JSON Schema defines, so validators ignore it, and so does Seam", key)
		}
		im.note(r, interop.Dropped, "%s", why)
	}
	return nil
}

// resolve follows a local $ref ("#/$defs/x", "#/definitions/x"). In draft
// 2019-09 and later the keywords beside $ref apply too: annotations are
// noted, assertions refused. Draft-07 ignores them, as Seam does.
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
		for i, k := range v.Keys {
			switch {
			case k == "$ref":
			case !im.modern:
				im.note(v.Vals[i], interop.Dropped, "keywords beside $ref are ignored in draft-07 and earlier")
			case k == "description":
			case annotations[k] != "":
				im.note(v.Vals[i], interop.Dropped, "%s", annotations[k])
			default:
				return nil, im.fail(v.Vals[i], "keyword %q beside $ref applies too in draft 2019-09 and later, and Seam reads the referenced schema alone; move it into the referenced schema", k)
			}
		}
		v = target
	}
}

// members converts an object's properties; required lists the members that
// must be present. undeclared names the properties that take any value and
// so have no field.
func (im *importer) members(props, required *interop.Value, prefix string) (out []*contractv1.Field, undeclared []string, err error) {
	req := map[string]bool{}
	if required != nil {
		if required.Kind != interop.List {
			return nil, nil, im.fail(required, "want required as a list of property names, got %s", required.Kind)
		}
		for _, r := range required.Items {
			s, _ := r.Scalar()
			if props.Get(s) == nil {
				if prefix == "" {
					return nil, nil, im.fail(r, "required property %q is not declared in properties; it may take any value, and a Seam field has one type: declare it with a type", s)
				}
				if err := im.present(r, prefix, s, true); err != nil {
					return nil, nil, err
				}
				continue
			}
			req[s] = true
		}
	}
	for i, name := range props.Keys {
		if raw := props.Vals[i]; raw.Kind == interop.Bool && raw.Text == "false" && prefix != "" {
			// false: the member must be absent.
			if err := im.present(raw, prefix, name, false); err != nil {
				return nil, nil, err
			}
			undeclared = append(undeclared, name)
			continue
		}
		f, err := im.field(props.Vals[i], name, interop.Join(prefix, name), req[name], false)
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
			if it.Kind != interop.String {
				return nil, false, im.fail(it, "want a type name, got %s", it.Kind)
			}
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
	slices.Sort(types)
	types = slices.Compact(types)
	return types, nullable, nil
}

// ipv4Pattern is how format ipv4 is checked: four decimal octets without
// leading zeros (RFC 2673 section 3.2, as 2020-12 reads it).
const ipv4Pattern = `^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$`

// openAPIFormats are format names of OpenAPI, not JSON Schema: validators
// ignore them, so the field keeps its JSON Schema type.
var openAPIFormats = map[string]bool{"int32": true, "int64": true, "float": true, "double": true}

// annotationOnly reports whether a schema asserts nothing: it is empty,
// or holds annotations and unknown keywords only. Such a property takes
// any value.
func annotationOnly(v *interop.Value) bool {
	for _, k := range v.Keys {
		if k == "type" || k == "enum" || k == "const" || k == "$ref" || unsupported[k] != "" || typeSpecific[k] != "" {
			return false
		}
	}
	return true
}

// field converts one property schema (items: an array's element schema).
// It returns nil for a property that takes any value, and whether null is
// among the values the schema admits.
func (im *importer) field(raw *interop.Value, name, path string, required, items bool) (*contractv1.Field, error) {
	f, _, err := im.fieldOf(raw, name, path, required, items)
	return f, err
}

func (im *importer) fieldOf(raw *interop.Value, name, path string, required, items bool) (*contractv1.Field, bool, error) {
	if raw.Kind == interop.Bool {
		if raw.Text == "true" {
			raw = &interop.Value{Kind: interop.Map, Line: raw.Line, Column: raw.Column}
			return im.fieldOf(raw, name, path, required, items)
		}
		return nil, false, im.fail(raw, "a boolean schema for %s: true takes any value and false none, and a Seam field has one type; give it a type", path)
	}
	if raw.Kind != interop.Map {
		return nil, false, im.fail(raw, "want a schema (a mapping), got %s", raw.Kind)
	}
	v, err := im.resolve(raw)
	if err != nil {
		return nil, false, err
	}
	o := interop.NewObject(v)
	o.Take("$ref")
	typesV := o.Take("type")
	types, nullable, err := im.schemaTypes(typesV)
	if err != nil {
		return nil, false, err
	}
	enumV, constV := o.Take("enum"), o.Take("const")
	if enumV != nil && (enumV.Kind != interop.List || len(enumV.Items) == 0) {
		return nil, false, im.fail(enumV, "want enum as a non-empty list, got %s", enumV.Kind)
	}
	if enumV != nil && constV != nil {
		return nil, false, im.fail(constV, "const beside enum: Seam checks one list of allowed values; keep the one that holds (const, when it is among the enum's values)")
	}
	var itemsType string
	if len(types) == 0 && typesV == nil && (enumV != nil || constV != nil) {
		// Values of one type only: the field has that type.
		if t, it, null, err := im.literalType(enumV, constV, path); err == nil {
			types, nullable, itemsType = []string{t}, null, it
		}
	}
	for i, k := range v.Keys {
		if why, ok := unsupported[k]; ok && k != "$ref" {
			return nil, false, im.fail(v.Vals[i], "%s; a JSON Schema validator would refuse records Seam accepts. Remove the keyword, or check the rule in a check of your own after import", why)
		}
	}
	f := &contractv1.Field{Name: name}
	if items {
		f.Name = ""
	}
	if d := o.Take("description"); d != nil {
		f.Description, _ = d.Scalar()
	}
	if len(types) != 1 {
		// No type or several: a JSON field.
		var admitted []string
		if typesV != nil {
			admitted = append([]string{}, types...)
		} else {
			nullable = true
		}
		null, err := im.anyField(o, v, f, path, admitted, nullable, items, enumV, constV)
		if err != nil {
			return nil, false, err
		}
		return im.finish(o, v, f, path, required, items, null)
	}
	switch types[0] {
	case "string":
		if err := im.stringField(o, f, path); err != nil {
			return nil, false, err
		}
	case "integer":
		if im.integer == nil {
			im.integer = v
		}
		f.Type = contractv1.FieldType_FIELD_TYPE_INT64
		if err := im.numberField(o, f, path, true); err != nil {
			return nil, false, err
		}
	case "number":
		f.Type = contractv1.FieldType_FIELD_TYPE_DOUBLE
		if err := im.numberField(o, f, path, false); err != nil {
			return nil, false, err
		}
	case "boolean":
		f.Type = contractv1.FieldType_FIELD_TYPE_BOOL
	case "object":
		f.Type = contractv1.FieldType_FIELD_TYPE_OBJECT
		props := o.Take("properties")
		req := o.Take("required")
		ap := o.Take("additionalProperties")
		if props == nil || props.Kind != interop.Map || len(props.Keys) == 0 {
			switch {
			case req != nil && req.Kind == interop.List && len(req.Items) > 0:
				return nil, false, im.fail(req, "object %s requires members it does not declare in properties; declare them with a type", path)
			case ap != nil && !(ap.Kind == interop.Bool && ap.Text == "true") && !(ap.Kind == interop.Map && len(ap.Keys) == 0):
				if ap.Kind == interop.Bool && !items && !strings.Contains(path, contract.ItemsSuffix) {
					// false without properties: only the empty object.
					if err := im.celCheck(ap, path, checkName(path)+"_additional_fields", func(f string) string { return "size(" + f + ") == 0" }, "JSON Schema: "+path+" has no properties and additionalProperties: false"); err != nil {
						return nil, false, err
					}
					break
				}
				return nil, false, im.fail(ap, "object %s lists no properties, and Seam cannot check additionalProperties without them", path)
			}
			break // any object: Seam's OBJECT without fields
		}
		if items || strings.Contains(path, contract.ItemsSuffix) {
			return nil, false, im.fail(props, "the members of objects inside arrays are not checked: the gate checks that each element of %s is an object, not its members; declare the array's items as {\"type\": \"object\"} alone", strings.TrimSuffix(path, contract.ItemsSuffix))
		}
		var undeclared []string
		f.Fields, undeclared, err = im.members(props, req, path)
		if err != nil {
			return nil, false, err
		}
		var declared []string
		for _, m := range f.Fields {
			declared = append(declared, m.GetName())
		}
		if ap != nil {
			if _, err := im.additional(ap, path, declared, undeclared); err != nil {
				return nil, false, err
			}
		}
	case "array":
		f.Type = contractv1.FieldType_FIELD_TYPE_ARRAY
		if items {
			return nil, false, im.fail(v, "arrays of arrays are not supported; Seam's array elements are single values or objects")
		}
		if err := im.arrayField(o, v, f, path, itemsType); err != nil {
			return nil, false, err
		}
	default:
		return nil, false, im.fail(typesV, "unknown type %q; JSON Schema's types are string, integer, number, boolean, object, array and null", types[0])
	}
	if err := im.literals(f, enumV, constV, path, &nullable); err != nil {
		return nil, false, err
	}
	return im.finish(o, v, f, path, required, items, nullable)
}

// finish applies what every field schema shares: the element checks of an
// array's items, required and null, and the keywords left over.
func (im *importer) finish(o *interop.Object, v *interop.Value, f *contractv1.Field, path string, required, items, nullable bool) (*contractv1.Field, bool, error) {
	if items && interop.HasConstraints(f) {
		if err := im.elementChecks(v, f, path); err != nil {
			return nil, false, err
		}
	}
	switch {
	case items:
	case required && nullable && strings.Contains(path, "."):
		// A member that must be present and may be null: its presence
		// is checked on the object, where null and absent differ.
		parent, member := path[:strings.LastIndex(path, ".")], path[strings.LastIndex(path, ".")+1:]
		if err := im.present(v, parent, member, true); err != nil {
			return nil, false, err
		}
	case required && nullable:
		return nil, false, im.fail(v, "%s is required but may be null: Seam treats a null field as absent, so it cannot require the member and allow null; make it optional or refuse null", path)
	case required:
		f.Required = true
	case !nullable:
		if strings.Contains(path, contract.ItemsSuffix) {
			return nil, false, im.fail(v, "%s may be absent but not null, which Seam cannot check inside array elements", path)
		}
		im.addCheck(&contractv1.Check{Name: checkName(path) + "_not_null", Rule: "not_null(" + path + ")",
			Description: "JSON Schema: " + path + " may be absent but not null"})
	}
	if err := im.rest(o); err != nil {
		return nil, false, err
	}
	return f, nullable, nil
}

// stringField reads a string's format, pattern and lengths.
func (im *importer) stringField(o *interop.Object, f *contractv1.Field, path string) error {
	f.Type = contractv1.FieldType_FIELD_TYPE_STRING
	var patterns []*interop.Value
	if fv := o.Take("format"); fv != nil {
		switch s, _ := fv.Scalar(); s {
		case "date-time":
			f.Type, f.Layout = contractv1.FieldType_FIELD_TYPE_TIMESTAMP, "RFC3339"
		case "date":
			f.Type = contractv1.FieldType_FIELD_TYPE_DATE
		case "uuid":
			f.Type = contractv1.FieldType_FIELD_TYPE_UUID
		case "ipv4":
			f.Pattern = ipv4Pattern
		default:
			return im.fail(fv, "format %q is not checked by Seam (it checks date-time, date, uuid and ipv4), and a validator that asserts formats would refuse values Seam accepts; "+
				"remove the format (draft 2020-12 makes it an annotation unless a validator asserts it) or replace it by a pattern", s)
		}
	}
	if p := o.Take("pattern"); p != nil {
		patterns = append(patterns, p)
	}
	for _, p := range patterns {
		s, _ := p.Scalar()
		re, err := translatePattern(s)
		if err != nil {
			return im.fail(p, "pattern %q: %v", s, err)
		}
		if f.GetType() == contractv1.FieldType_FIELD_TYPE_STRING && f.Pattern == "" {
			f.Pattern = re
			continue
		}
		if err := im.celCheck(p, path, checkName(path)+"_pattern", func(f string) string { return f + ".matches(" + strconv.Quote(re) + ")" }, "JSON Schema: "+path+" matches "+s); err != nil {
			return err
		}
	}
	if f.GetType() == contractv1.FieldType_FIELD_TYPE_STRING {
		return im.sizeBounds(o, f, "minLength", "maxLength", nil)
	}
	return im.sizeBounds(o, f, "minLength", "maxLength", func(lv *interop.Value, key string, n int64) error {
		op := ">="
		if key == "maxLength" {
			op = "<="
		}
		return im.boundCheck(lv, path, checkName(path), key, func(f string) string { return "size(" + f + ") " + op + " " + strconv.FormatInt(n, 10) })
	})
}

// sizeBounds reads minKey and maxKey, whole numbers of 0 or more, into f's
// MinLength and MaxLength, or hands each to check when f cannot hold them.
func (im *importer) sizeBounds(o *interop.Object, f *contractv1.Field, minKey, maxKey string, check func(lv *interop.Value, key string, n int64) error) error {
	for _, key := range []string{minKey, maxKey} {
		lv, n, err := im.count(o, key)
		if err != nil {
			return err
		}
		switch {
		case lv == nil: // absent
		case check != nil:
			if err := check(lv, key, n); err != nil {
				return err
			}
		case key == minKey:
			f.MinLength = &n
		default:
			f.MaxLength = &n
		}
	}
	return nil
}

// numberField reads the format and the bounds of a number (integer) field.
func (im *importer) numberField(o *interop.Object, f *contractv1.Field, path string, integer bool) error {
	if err := im.numberFormat(o); err != nil {
		return err
	}
	return im.bounds(o, f, path, integer)
}

// numberFormat reads the format of a number: OpenAPI's names are noted
// (validators ignore them), any other refused.
func (im *importer) numberFormat(o *interop.Object) error {
	fv := o.Take("format")
	if fv == nil {
		return nil
	}
	s, _ := fv.Scalar()
	if openAPIFormats[s] {
		im.note(fv, interop.Dropped, "format %q is OpenAPI's, not JSON Schema's: validators ignore it, so the field takes every number of its JSON Schema type", s)
		return nil
	}
	return im.fail(fv, "format %q is not one Seam checks on numbers; remove it", s)
}

// arrayField reads items, minItems and maxItems. itemsType is the element
// type of an array that only lists its values (const or enum).
func (im *importer) arrayField(o *interop.Object, v *interop.Value, f *contractv1.Field, path, itemsType string) error {
	it := o.Take("items")
	switch {
	case it == nil && itemsType != "":
		f.Items = &contractv1.Field{Type: fieldTypes[itemsType]}
	case it == nil || it.Kind == interop.Bool && it.Text == "true" || it.Kind == interop.Map && annotationOnly(it):
		// Elements of any type, null included.
		f.Items = &contractv1.Field{Type: contractv1.FieldType_FIELD_TYPE_JSON}
		if it != nil && it.Kind == interop.Map {
			if err := im.rest(interop.NewObject(it)); err != nil {
				return err
			}
		}
	case it.Kind != interop.Map:
		return im.fail(it, "items: false on array %s: no element is allowed; Seam has no such array, use maxItems: 0", path)
	default:
		items, null, err := im.fieldOf(it, "", path+contract.ItemsSuffix, false, true)
		if err != nil {
			return err
		}
		f.Items = items
		if !null {
			// The gate checks each element's type but lets null
			// elements pass; the schema does not.
			if err := im.celCheck(it, path, checkName(path)+"_items_not_null", func(f string) string { return f + ".all(e, e != null)" }, "JSON Schema: the elements of "+path+" are not null"); err != nil {
				return err
			}
		}
	}
	return im.sizeBounds(o, f, "minItems", "maxItems", nil)
}

var fieldTypes = map[string]contractv1.FieldType{
	"string":  contractv1.FieldType_FIELD_TYPE_STRING,
	"number":  contractv1.FieldType_FIELD_TYPE_DOUBLE,
	"boolean": contractv1.FieldType_FIELD_TYPE_BOOL,
	"object":  contractv1.FieldType_FIELD_TYPE_OBJECT,
}

// literalType is the type of a property that only lists its values (enum
// or const without type), the element type when they are lists, and
// whether null is among them. In JSON Schema 1 and 1.0 are the same
// number, so numbers are DOUBLE; values of several types have no Seam
// field type.
func (im *importer) literalType(enumV, constV *interop.Value, path string) (string, string, bool, error) {
	var vals []*interop.Value
	if enumV != nil {
		vals = append(vals, enumV.Items...)
	}
	if constV != nil {
		vals = append(vals, constV)
	}
	kind, null := interop.Null, false
	elem := interop.Null
	for _, v := range vals {
		if v.Kind == interop.Null {
			null = true
			continue
		}
		if kind != interop.Null && kind != v.Kind {
			return "", "", false, im.fail(v, "allowed values of %s are of several types (%s and %s); a Seam field has one", path, kind, v.Kind)
		}
		kind = v.Kind
		if v.Kind != interop.List {
			continue
		}
		for _, e := range v.Items {
			switch {
			case e.Kind == interop.List:
				return "", "", false, im.fail(e, "allowed value of %s is a list of lists; Seam's array elements are single values or objects", path)
			case e.Kind == interop.Null:
				return "", "", false, im.fail(e, "allowed value of %s is a list with null in it; Seam cannot require a null element", path)
			case elem != interop.Null && elem != e.Kind:
				return "", "", false, im.fail(e, "allowed values of %s are lists of several element types (%s and %s); a Seam array has one", path, elem, e.Kind)
			}
			elem = e.Kind
		}
	}
	names := map[interop.ValueKind]string{interop.String: "string", interop.Number: "number", interop.Bool: "boolean", interop.Map: "object", interop.List: "array"}
	if kind == interop.Null {
		src := constV
		if src == nil {
			src = enumV
		}
		return "", "", false, im.fail(src, "%s allows null only; Seam has no field that must be null", path)
	}
	itemsType := names[elem]
	if kind == interop.List && itemsType == "" {
		itemsType = "string" // only [] is allowed: any element type refuses the others
	}
	return names[kind], itemsType, null, nil
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

var celReserved = map[string]bool{
	"as": true, "break": true, "const": true, "continue": true, "else": true, "false": true, "for": true,
	"function": true, "if": true, "import": true, "in": true, "let": true, "loop": true, "package": true,
	"namespace": true, "null": true, "return": true, "true": true, "var": true, "void": true, "while": true,
}

var celIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// celCheck adds a CEL check on the field at path (dotted, from the record)
// that holds when the field or an object on its way is absent or null, and
// otherwise when expr(path) does. Values of
// nested fields reach CEL as JSON decodes them: numbers are doubles.
func (im *importer) celCheck(at *interop.Value, path, name string, expr func(field string) string, desc string) error {
	if elems, ok := strings.CutSuffix(path, contract.ItemsSuffix); ok && !strings.Contains(elems, contract.ItemsSuffix) {
		// A rule on the elements: every element that is not null obeys
		// it (null elements are the array's own not-null check).
		inner := expr
		expr = func(string) string { return elems + ".all(e, e == null || " + inner("e") + ")" }
		if im.jsonPaths[elems] {
			expr = func(string) string { return when(elems, "list", elems+".all(e, e == null || "+inner("e")+")") }
		}
		path = elems
	} else if strings.Contains(path, contract.ItemsSuffix) {
		return im.fail(at, "this rule on %s is not checked: the gate checks the type of each array element, not the members of objects inside arrays", path)
	}
	parts := strings.Split(path, ".")
	var guards []string
	for i, p := range parts {
		if !celIdent.MatchString(p) || celReserved[p] {
			return im.fail(at, "this rule on %s needs a check expression, and %q cannot be named in one (CEL names are letters, digits and _, not a reserved word); rename the property", path, p)
		}
		sub := strings.Join(parts[:i+1], ".")
		if i > 0 {
			guards = append(guards, "!has("+sub+")")
		}
		guards = append(guards, "dyn("+sub+") == null")
		if i < len(parts)-1 && im.jsonPaths[sub] {
			guards = append(guards, "type("+sub+") != map")
		}
	}
	im.addCheck(&contractv1.Check{Name: name, Rule: "cel(" + strings.Join(guards, " || ") + " || " + expr(path) + ")", Description: desc})
	return nil
}

// elementChecks turns the constraints an array's element schema put on its
// field (pattern, lengths, bounds, text values), which the gate does not
// check on elements, into CEL checks over every element, and clears them.
func (im *importer) elementChecks(at *interop.Value, f *contractv1.Field, path string) error {
	name, array := checkName(path), strings.TrimSuffix(path, contract.ItemsSuffix)
	// g guards a rule on the elements of type t when they may be of any.
	g := func(e, t, cond string) string { return cond }
	if f.GetType() == contractv1.FieldType_FIELD_TYPE_JSON {
		g = when
	}
	var add []func() error
	if p := f.GetPattern(); p != "" {
		add = append(add, func() error {
			return im.celCheck(at, path, name+"_pattern", func(e string) string { return g(e, "string", e+".matches("+strconv.Quote(p)+")") }, "JSON Schema: the elements of "+array+" match "+p)
		})
	}
	// Lengths bound the size of text elements, bounds the value of
	// numbers; bound is the limit as CEL, "" when the field has none.
	for _, b := range []struct{ bound, op, suffix, typ, what string }{
		{intText(f.MinLength), ">=", "_minlength", "string", "lengths"},
		{intText(f.MaxLength), "<=", "_maxlength", "string", "lengths"},
		{floatText(f.Min), ">=", "_minimum", "double", "bounds"},
		{floatText(f.Max), "<=", "_maximum", "double", "bounds"},
	} {
		if b.bound == "" {
			continue
		}
		add = append(add, func() error {
			return im.celCheck(at, path, name+b.suffix, func(e string) string {
				v := e
				if b.typ == "string" {
					v = "size(" + e + ")"
				}
				return g(e, b.typ, v+" "+b.op+" "+b.bound)
			}, "JSON Schema: the "+b.what+" of the elements of "+array)
		})
	}
	if len(f.GetEnum()) > 0 {
		var lits []string
		for _, s := range f.GetEnum() {
			lits = append(lits, strconv.Quote(s))
		}
		add = append(add, func() error {
			return im.celCheck(at, path, name+"_allowed", func(e string) string { return e + " in [" + strings.Join(lits, ", ") + "]" }, "JSON Schema: the allowed values of the elements of "+array)
		})
	}
	for _, a := range add {
		if err := a(); err != nil {
			return err
		}
	}
	f.Pattern, f.MinLength, f.MaxLength, f.Min, f.Max, f.Enum = "", nil, nil, nil, nil, nil
	return nil
}

// intText renders a length for a CEL expression, "" when there is none.
func intText(n *int64) string {
	if n == nil {
		return ""
	}
	return strconv.FormatInt(*n, 10)
}

// floatText renders a bound for a CEL expression, "" when there is none.
func floatText(x *float64) string {
	if x == nil {
		return ""
	}
	return literal(*x, false)
}

// literal renders a number for a CEL expression: an int for an integer
// field at the top level, a double otherwise (nested values are doubles).
func literal(x float64, integer bool) string {
	if integer {
		return strconv.FormatInt(int64(x), 10)
	}
	s := strconv.FormatFloat(x, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	if strings.ContainsAny(s, "eE") && !strings.Contains(s, ".") {
		mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
		s = mant + ".0e" + exp
	}
	return s
}

// celValue renders a JSON value as a CEL literal; numbers are doubles,
// which CEL compares with ints and doubles alike.
func celValue(v *interop.Value) string {
	switch v.Kind {
	case interop.Null:
		return "null"
	case interop.Bool:
		return v.Text
	case interop.Number:
		x, _ := v.Float()
		return literal(x, false)
	case interop.String:
		return strconv.Quote(v.Text)
	case interop.List:
		parts := make([]string, len(v.Items))
		for i, it := range v.Items {
			parts[i] = celValue(it)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	parts := make([]string, len(v.Keys))
	for i, k := range v.Keys {
		parts[i] = strconv.Quote(k) + ": " + celValue(v.Vals[i])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func integral(x float64) bool { return x == math.Trunc(x) && math.Abs(x) < 1<<53 }

// bounds reads minimum, maximum, the exclusive bounds (numbers in 2020-12
// and draft-07, booleans in draft-04 style) and multipleOf. An integer's
// bounds become the whole numbers they admit; a number's exclusive bounds
// become CEL checks, since a field's min and max are inclusive.
func (im *importer) bounds(o *interop.Object, f *contractv1.Field, path string, integer bool) error {
	top := !strings.Contains(path, ".") && !strings.Contains(path, contract.ItemsSuffix)
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
	tighten := func(x float64, lower bool) {
		switch {
		case lower && (f.Min == nil || x > *f.Min):
			f.Min = &x
		case !lower && (f.Max == nil || x < *f.Max):
			f.Max = &x
		}
	}
	lo, loV, err := num("minimum")
	if err != nil {
		return err
	}
	hi, hiV, err := num("maximum")
	if err != nil {
		return err
	}
	for _, b := range []struct {
		x     *float64
		v     *interop.Value
		lower bool
	}{{lo, loV, true}, {hi, hiV, false}} {
		switch {
		case b.x == nil:
		case integer && math.Abs(*b.x) >= 1<<53:
			return im.fail(b.v, "a bound of %s beyond 2^53 is not exact for Seam; bound it by a smaller number", b.v.Text)
		case integer && b.lower:
			tighten(math.Ceil(*b.x), true)
		case integer:
			tighten(math.Floor(*b.x), false)
		default:
			tighten(*b.x, b.lower)
		}
	}
	for _, ex := range []struct {
		key   string
		lower bool
	}{{"exclusiveMinimum", true}, {"exclusiveMaximum", false}} {
		x, v, err := num(ex.key)
		if err != nil {
			return err
		}
		if v != nil && v.Kind == interop.Bool {
			// draft-04 style: the bound itself is minimum or maximum.
			if v.Text != "true" {
				continue
			}
			b, bv := lo, loV
			if !ex.lower {
				b, bv = hi, hiV
			}
			if b == nil {
				return im.fail(v, "%s: true needs the matching bound", ex.key)
			}
			x, v = b, bv
			if ex.lower {
				f.Min = nil
			} else {
				f.Max = nil
			}
			if integer {
				for _, other := range []*float64{lo, hi} {
					if other != nil && other != b {
						if ex.lower {
							tighten(math.Floor(*other), false)
						} else {
							tighten(math.Ceil(*other), true)
						}
					}
				}
			}
		}
		if x == nil {
			continue
		}
		switch {
		case integer && math.Abs(*x) >= 1<<53:
			return im.fail(v, "a bound of %s beyond 2^53 is not exact for Seam; bound it by a smaller number", v.Text)
		case integer && ex.lower:
			tighten(math.Floor(*x)+1, true)
		case integer:
			tighten(math.Ceil(*x)-1, false)
		default:
			op := "<"
			if ex.lower {
				op = ">"
			}
			if err := im.boundCheck(v, path, checkName(path), ex.key, func(f string) string { return f + " " + op + " " + literal(*x, false) }); err != nil {
				return err
			}
		}
	}
	v, x, err := im.multipleOf(o)
	switch {
	case err != nil || v == nil:
		return err
	case integer && integral(x):
		expr := func(f string) string {
			if !top {
				f = "int(" + f + ")"
			}
			return f + " % " + literal(x, true) + " == 0"
		}
		return im.celCheck(v, path, checkName(path)+"_multiple_of", expr, fmt.Sprintf("JSON Schema: %s is a multiple of %s", path, v.Text))
	default:
		return im.fail(v, "multipleOf %s on a %s: Seam checks whole multiples of integers only, since multiples of fractions are not exact in binary floating point", v.Text, map[bool]string{true: "integer", false: "number"}[integer])
	}
}

// count takes key, a whole number of 0 or more; v is nil when it is absent.
func (im *importer) count(o *interop.Object, key string) (v *interop.Value, n int64, err error) {
	v = o.Take(key)
	if v == nil {
		return nil, 0, nil
	}
	n, ok := v.Int()
	if !ok || n < 0 {
		return nil, 0, im.fail(v, "want a whole number of 0 or more, got %q", v.Text)
	}
	return v, n, nil
}

// multipleOf takes multipleOf, a number above 0; v is nil when it is
// absent.
func (im *importer) multipleOf(o *interop.Object) (v *interop.Value, x float64, err error) {
	v = o.Take("multipleOf")
	if v == nil {
		return nil, 0, nil
	}
	x, ok := v.Float()
	if !ok || x <= 0 {
		return nil, 0, im.fail(v, "multipleOf must be a number above 0")
	}
	return v, x, nil
}

// boundCheck adds the CEL check that holds the field at path to the bound
// keyword key (given at v), named after the check name and the keyword.
func (im *importer) boundCheck(v *interop.Value, path, name, key string, expr func(field string) string) error {
	return im.celCheck(v, path, name+"_"+strings.ToLower(key), expr, fmt.Sprintf("JSON Schema: %s has %s %s", path, key, v.Text))
}

// literals applies enum and const: values the field's type cannot take are
// left out (they never match), null is allowed only when listed, strings
// of a text field become the field's enum, anything else a CEL check with
// JSON Schema's equality (1 equals 1.0, objects and lists deeply).
func (im *importer) literals(f *contractv1.Field, enumV, constV *interop.Value, path string, nullable *bool) error {
	src, vals := enumV, []*interop.Value(nil)
	if enumV != nil {
		vals = enumV.Items
	}
	if constV != nil {
		src, vals = constV, []*interop.Value{constV}
	}
	if len(vals) == 0 {
		return nil
	}
	t := f.GetType()
	integer := t == contractv1.FieldType_FIELD_TYPE_INT64 || t == contractv1.FieldType_FIELD_TYPE_INT32
	top := !strings.Contains(path, ".") && !strings.Contains(path, contract.ItemsSuffix)
	var strs, lits []string
	sawNull := false
	for _, v := range vals {
		var fits bool
		switch v.Kind {
		case interop.Null:
			sawNull = true
			continue
		case interop.String:
			fits = t == contractv1.FieldType_FIELD_TYPE_STRING || t == contractv1.FieldType_FIELD_TYPE_TIMESTAMP ||
				t == contractv1.FieldType_FIELD_TYPE_DATE || t == contractv1.FieldType_FIELD_TYPE_UUID
			strs = append(strs, v.Text)
		case interop.Number:
			x, _ := v.Float()
			fits = (integer && integral(x)) || t == contractv1.FieldType_FIELD_TYPE_DOUBLE
			if fits && integer && top {
				lits = append(lits, literal(x, true))
				continue
			}
		case interop.Bool:
			fits = t == contractv1.FieldType_FIELD_TYPE_BOOL
		case interop.Map:
			fits = t == contractv1.FieldType_FIELD_TYPE_OBJECT
		case interop.List:
			fits = t == contractv1.FieldType_FIELD_TYPE_ARRAY
		}
		if fits {
			lits = append(lits, celValue(v))
		} else if v.Kind == interop.String {
			strs = strs[:len(strs)-1]
		}
	}
	if !sawNull {
		// JSON Schema: a value outside the enum fails even when the type
		// admits null.
		*nullable = false
	}
	switch {
	case len(lits) == 0 && !sawNull:
		return im.fail(src, "no allowed value of %s is of its type %s, so no record would pass", path, contract.ShortName(t))
	case len(lits) == 0:
		// Only null is allowed beside the type, which Seam cannot require.
		return im.fail(src, "%s allows null only; Seam has no field that must be null", path)
	case t == contractv1.FieldType_FIELD_TYPE_STRING && len(strs) == len(lits):
		f.Enum = strs
		return nil
	case len(lits) == 1:
		return im.celCheck(src, path, checkName(path)+"_allowed", func(f string) string { return f + " == " + lits[0] }, "JSON Schema: the allowed value of "+path)
	}
	return im.celCheck(src, path, checkName(path)+"_allowed", func(f string) string { return f + " in [" + strings.Join(lits, ", ") + "]" }, "JSON Schema: the allowed values of "+path)
}

// present checks on the object at parent that its member is present
// (must) or absent, whatever its value, null included.
func (im *importer) present(at *interop.Value, parent, member string, must bool) error {
	cond, suffix, desc := strconv.Quote(member)+" in ", "_required", "JSON Schema: "+parent+" requires "+member
	if !must {
		cond, suffix, desc = "!("+cond, "_absent", "JSON Schema: "+parent+" has no member "+member+" (its schema is false)"
	}
	return im.celCheck(at, parent, checkName(interop.Join(parent, member))+suffix, func(p string) string {
		c := cond + p
		if !must {
			c += ")"
		}
		if im.jsonPaths[parent] {
			return when(p, "map", c)
		}
		return c
	}, desc)
}

// typeOnly reports whether a schema says nothing but a type (and
// annotations).
func typeOnly(v *interop.Value) bool {
	if v.Get("type") == nil {
		return false
	}
	for _, k := range v.Keys {
		if k != "type" && k != "description" && annotations[k] == "" {
			return false
		}
	}
	return true
}
