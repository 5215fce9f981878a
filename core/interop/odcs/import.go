package odcs

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/interop"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// ImportOptions tune Import.
type ImportOptions struct {
	// Source names the document in messages, usually its file name.
	Source string
	// Object imports only the schema object of this name; empty imports
	// every schema object that has properties.
	Object string
	// Subject names the Seam subject when exactly one object is imported
	// and the document does not name it (custom property seamSubject).
	// Without either, the subject is derived from the contract's domain,
	// data product or name and the object's name ("seller.tbl").
	Subject string
	// Owner is used when the contract names no team.
	Owner string
	// Strict refuses the document (a *interop.LossError) when anything is
	// dropped or approximated.
	Strict bool
}

// Contract is one imported schema object.
type Contract struct {
	// Object is the ODCS schema object's name.
	Object   string
	Contract *contractv1.Contract
}

// Result is what Import made of a document.
type Result struct {
	Contracts []Contract
	Report    interop.Report
}

// Import converts an ODCS v3 document (YAML or JSON) into Seam contracts,
// one per schema object. Every contract is validated and its checks
// compiled; a document that yields none, or an invalid one, is an error
// naming the object and the problem.
func Import(data []byte, opts ImportOptions) (*Result, error) {
	if opts.Source == "" {
		opts.Source = "odcs"
	}
	root, err := interop.Parse(data, opts.Source)
	if err != nil {
		return nil, err
	}
	im := &importer{opts: opts, res: &Result{}}
	if err := im.document(root); err != nil {
		return nil, err
	}
	return im.res, im.res.Report.StrictIf(opts.Strict, interop.FormatODCS)
}

type importer struct {
	opts ImportOptions
	res  *Result

	labels        map[string]string
	owner         string
	notice        string
	compatibility contractv1.Compatibility
	subject       string // root seamSubject
	purpose       string
}

func (im *importer) note(v *interop.Value, kind interop.Kind, format string, args ...any) {
	im.res.Report.Add(v.Path, kind, format, args...)
}

func (im *importer) fail(v *interop.Value, format string, args ...any) error {
	return interop.ErrorAt(im.opts.Source, v, format, args...)
}

// keepText sets *dst to val's text, for a custom property a reader
// takes.
func (im *importer) keepText(val *interop.Value, dst *string) (taken bool, err error) {
	*dst, err = im.text(val)
	return true, err
}

// takeText takes key from o and returns its text ("" when absent).
func (im *importer) takeText(o *interop.Object, key string) (string, error) {
	return im.text(o.Take(key))
}

// text returns a string value, or an error naming what was found.
func (im *importer) text(v *interop.Value) (string, error) {
	if v == nil || v.Kind == interop.Null {
		return "", nil
	}
	if v.Kind != interop.String {
		if s, ok := v.Scalar(); ok {
			return s, nil
		}
		return "", im.fail(v, "want text, got %s", v.Kind)
	}
	return v.Text, nil
}

func (im *importer) document(root *interop.Value) error {
	o := interop.NewObject(root)
	if v := o.Take("kind"); v != nil && v.Text != "DataContract" {
		return im.fail(v, "kind is %q; an ODCS data contract has kind DataContract", v.Text)
	}
	api := o.Take("apiVersion")
	if api == nil {
		return im.fail(root, "apiVersion is missing; an ODCS v3 contract says apiVersion: v3.1.0 (or v3.0.x)")
	}
	if !strings.HasPrefix(api.Text, "v3.") {
		return im.fail(api, "apiVersion %q is not supported; Seam reads ODCS v3.0.x and v3.1.0", api.Text)
	}
	im.labels = map[string]string{}
	for _, key := range rootLabels {
		if v := o.Take(key); v != nil {
			if err := im.label(v, labelPrefix+key); err != nil {
				return err
			}
		}
	}
	if v := o.Take("tags"); v != nil {
		im.tags(v, labelPrefix+"tags")
	}
	for _, section := range []struct {
		key  string
		read func(*interop.Value) error
	}{{"description", im.description}, {"team", im.team}, {"slaProperties", im.sla}, {"customProperties", im.rootCustom}} {
		if v := o.Take(section.key); v != nil {
			if err := section.read(v); err != nil {
				return err
			}
		}
	}
	dropped := map[string]string{
		"servers":                  "Seam does not connect to storage; pipelines send records through the gate",
		"roles":                    "access in Seam is by bearer tokens with Seam roles (admin, operator, owner, pipeline, viewer)",
		"price":                    "Seam keeps no pricing",
		"support":                  "Seam keeps no support channels",
		"authoritativeDefinitions": "Seam contracts carry no links to outside definitions",
		"slaDefaultElement":        "Seam reads no SLA element paths",
	}
	schema := o.Take("schema")
	for _, v := range o.Rest() {
		if why, ok := dropped[interop.Key(v)]; ok {
			im.note(v, interop.Dropped, "%s", why)
		} else {
			im.note(v, interop.Dropped, "%q is not an ODCS v3 key Seam knows", interop.Key(v))
		}
	}
	if schema == nil || (schema.Kind == interop.List && len(schema.Items) == 0) {
		return im.fail(schema, "the contract has no schema objects, so there is no record to check: Seam contracts describe the fields of records (add a schema object with properties)")
	}
	if schema.Kind != interop.List {
		return im.fail(schema, "want a list of schema objects, got %s", schema.Kind)
	}
	var picked []*interop.Value
	for _, obj := range schema.Items {
		if obj.Kind != interop.Map {
			return im.fail(obj, "want a schema object (a mapping), got %s", obj.Kind)
		}
		name, _ := obj.Get("name").Scalar()
		if im.opts.Object != "" && name != im.opts.Object {
			continue
		}
		picked = append(picked, obj)
	}
	if im.opts.Object != "" && len(picked) == 0 {
		return im.fail(schema, "no schema object is named %q", im.opts.Object)
	}
	for _, obj := range picked {
		c, err := im.object(obj, len(picked) == 1)
		if err != nil {
			return err
		}
		if c != nil {
			im.res.Contracts = append(im.res.Contracts, *c)
		}
	}
	if len(im.res.Contracts) == 0 {
		return im.fail(schema, "no schema object has properties, so there is no record to check: Seam contracts describe the fields of records")
	}
	subjects := map[string]string{}
	for _, c := range im.res.Contracts {
		if prev, dup := subjects[c.Contract.GetSubject()]; dup {
			return im.fail(schema, "schema objects %q and %q both become subject %q; name them apart with the custom property %s", prev, c.Object, c.Contract.GetSubject(), propSubject)
		}
		subjects[c.Contract.GetSubject()] = c.Object
	}
	return nil
}

func (im *importer) label(v *interop.Value, key string) error {
	s, ok := v.Scalar()
	if !ok {
		im.note(v, interop.Dropped, "want a single value, got %s; not kept", v.Kind)
		return nil
	}
	if s != "" {
		im.labels[key] = s
		im.note(v, interop.Kept, "kept as label %s", key)
	}
	return nil
}

func (im *importer) tags(v *interop.Value, key string) {
	if v.Kind != interop.List {
		im.note(v, interop.Dropped, "want a list of tags, got %s; not kept", v.Kind)
		return
	}
	var tags []string
	for _, t := range v.Items {
		s, ok := t.Scalar()
		if !ok || strings.Contains(s, ",") {
			im.note(t, interop.Dropped, "a tag must be text without commas; not kept")
			continue
		}
		tags = append(tags, s)
	}
	if len(tags) > 0 {
		im.labels[key] = strings.Join(tags, ",")
		im.note(v, interop.Kept, "kept as label %s", key)
	}
}

func (im *importer) description(v *interop.Value) error {
	if v.Kind == interop.String {
		im.purpose = v.Text
		return nil
	}
	if v.Kind != interop.Map {
		return im.fail(v, "want a description object (purpose, usage, limitations), got %s", v.Kind)
	}
	o := interop.NewObject(v)
	if p := o.Take("purpose"); p != nil {
		s, err := im.text(p)
		if err != nil {
			return err
		}
		im.purpose = s
	}
	for _, key := range []string{"usage", "limitations"} {
		if x := o.Take(key); x != nil {
			if err := im.label(x, labelPrefix+key); err != nil {
				return err
			}
		}
	}
	for _, r := range o.Rest() {
		im.note(r, interop.Dropped, "Seam contracts carry no %s in their description", interop.Key(r))
	}
	return nil
}

// team takes the owner: the team's name (v3.1.0), or for the v3.0.x list
// of members the username of the member whose role is owner.
func (im *importer) team(v *interop.Value) error {
	switch v.Kind {
	case interop.Map:
		o := interop.NewObject(v)
		name, err := im.text(o.Take("name"))
		if err != nil {
			return err
		}
		im.owner = name
		for _, r := range o.Rest() {
			im.note(r, interop.Dropped, "Seam keeps the team's name as the owner, not its %s", interop.Key(r))
		}
	case interop.List:
		for _, m := range v.Items {
			role, _ := m.Get("role").Scalar()
			if im.owner == "" && strings.EqualFold(strings.TrimSpace(role), "owner") {
				im.owner, _ = m.Get("username").Scalar()
			}
		}
		im.note(v, interop.Dropped, "Seam keeps one owner (the member with role owner, if any), not the list of members")
	default:
		return im.fail(v, "want a team object or a list of members, got %s", v.Kind)
	}
	return nil
}

func (im *importer) sla(v *interop.Value) error {
	if v.Kind != interop.List {
		return im.fail(v, "want a list of SLA properties, got %s", v.Kind)
	}
	for _, p := range v.Items {
		name, _ := p.Get("property").Scalar()
		if name != slaNotice {
			im.note(p, interop.Dropped, "SLA property %q has no Seam equivalent; Seam enforces the notice period of breaking changes (SLA property %s) and checks records, not delivery times", name, slaNotice)
			continue
		}
		o := interop.NewObject(p)
		o.Take("property")
		val, unit := o.Take("value"), o.Take("unit")
		u, _ := unit.Scalar()
		s, ok := val.Scalar()
		if !ok || s == "" {
			return im.fail(p, "%s needs a value such as 14 with unit d", slaNotice)
		}
		if u != "" {
			switch strings.ToLower(u) {
			case "d", "day", "days":
				u = "d"
			case "h", "hour", "hours":
				u = "h"
			default:
				return im.fail(unit, "unit %q of %s is not supported; use d (days) or h (hours)", u, slaNotice)
			}
		}
		notice := s + u
		if _, err := contract.ParseNoticePeriod(notice); err != nil {
			return im.fail(val, "%s %q: %v", slaNotice, notice, err)
		}
		im.notice = notice
		for _, r := range o.Rest() {
			im.note(r, interop.Dropped, "Seam keeps the notice period, not its %s", interop.Key(r))
		}
	}
	return nil
}

func (im *importer) rootCustom(v *interop.Value) error {
	return im.custom(v, func(prop string, val *interop.Value) (bool, error) {
		switch prop {
		case propSubject:
			return im.keepText(val, &im.subject)
		case propCompatibility:
			s, err := im.text(val)
			if err != nil {
				return true, err
			}
			n, ok := contractv1.Compatibility_value["COMPATIBILITY_"+strings.ToUpper(s)]
			if !ok {
				return true, im.fail(val, "unknown compatibility %q; want NONE, BACKWARD, FORWARD, FULL or a _TRANSITIVE variant", s)
			}
			im.compatibility = contractv1.Compatibility(n)
			return true, nil
		case propLabels:
			if val.Kind != interop.Map {
				return true, im.fail(val, "want a mapping of labels, got %s", val.Kind)
			}
			for i, k := range val.Keys {
				s, ok := val.Vals[i].Scalar()
				if !ok {
					return true, im.fail(val.Vals[i], "label values are text, got %s", val.Vals[i].Kind)
				}
				im.labels[k] = s
			}
			return true, nil
		}
		if s, ok := val.Scalar(); ok {
			im.labels[customLabelPrefix+prop] = s
			im.note(val, interop.Kept, "kept as label %s", customLabelPrefix+prop)
			return true, nil
		}
		return false, nil
	})
}

// custom walks a customProperties list, handing each property to take;
// properties take does not handle are reported as dropped.
func (im *importer) custom(v *interop.Value, take func(prop string, val *interop.Value) (bool, error)) error {
	if v.Kind != interop.List {
		return im.fail(v, "want a list of custom properties, got %s", v.Kind)
	}
	for _, p := range v.Items {
		if p.Kind != interop.Map {
			return im.fail(p, "want a custom property {property, value}, got %s", p.Kind)
		}
		prop, _ := p.Get("property").Scalar()
		val := p.Get("value")
		if val == nil {
			val = &interop.Value{Kind: interop.Null, Path: interop.Join(p.Path, "value"), Line: p.Line, Column: p.Column}
		}
		ok, err := take(prop, val)
		if err != nil {
			return err
		}
		if !ok {
			im.note(p, interop.Dropped, "custom property %q has no Seam equivalent", prop)
		}
	}
	return nil
}

// object converts one schema object; nil (with a note) when it has no
// properties to check.
func (im *importer) object(obj *interop.Value, only bool) (*Contract, error) {
	o := interop.NewObject(obj)
	name, err := im.text(o.Take("name"))
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, im.fail(obj, "schema object has no name")
	}
	props := o.Take("properties")
	if props == nil || (props.Kind == interop.List && len(props.Items) == 0) {
		im.note(obj, interop.Dropped, "schema object %q lists no properties, so there is no record to check; not imported", name)
		return nil, nil
	}
	if props.Kind != interop.List {
		return nil, im.fail(props, "want a list of properties, got %s", props.Kind)
	}
	c := &contractv1.Contract{
		Owner:         im.owner,
		Compatibility: im.compatibility,
		NoticePeriod:  im.notice,
		Labels:        map[string]string{},
	}
	for k, v := range im.labels {
		c.Labels[k] = v
	}
	if im.purpose != "" {
		c.Labels[labelPrefix+"purpose"] = im.purpose
	}
	if c.Owner == "" {
		c.Owner = im.opts.Owner
	}
	ob := &objectImport{im: im, name: name, c: c}
	for _, key := range objectLabels {
		if v := o.Take(key); v != nil {
			s, ok := v.Scalar()
			if !ok {
				im.note(v, interop.Dropped, "want a single value, got %s; not kept", v.Kind)
				continue
			}
			c.Labels[objectLabelPrefix+key] = s
			if key != "name" {
				im.note(v, interop.Kept, "kept as label %s", objectLabelPrefix+key)
			}
		}
	}
	if v := o.Take("logicalType"); v != nil && v.Text != "object" {
		return nil, im.fail(v, "a schema object has logicalType object, not %q", v.Text)
	}
	if c.Description, err = im.takeText(o, "description"); err != nil {
		return nil, err
	}
	if v := o.Take("tags"); v != nil {
		saved := im.labels
		im.labels = c.Labels
		im.tags(v, objectLabelPrefix+"tags")
		im.labels = saved
	}
	subject := ""
	if v := o.Take("customProperties"); v != nil {
		err := im.custom(v, func(prop string, val *interop.Value) (bool, error) {
			switch prop {
			case propSubject:
				return im.keepText(val, &subject)
			case propMapping:
				m, err := ob.mapping(val)
				c.Mapping = m
				return true, err
			case propAdditionalFields:
				s, err := im.text(val)
				if err != nil {
					return true, err
				}
				n, ok := contractv1.AdditionalFields_value["ADDITIONAL_FIELDS_"+strings.ToUpper(strings.TrimSpace(s))]
				if !ok || n == 0 {
					return true, im.fail(val, "unknown %s %q; want ALLOW, QUARANTINE or REJECT", propAdditionalFields, s)
				}
				c.AdditionalFields = contractv1.AdditionalFields(n)
				return true, nil
			}
			return false, nil
		})
		if err != nil {
			return nil, err
		}
	}
	fields, err := ob.properties(props, "")
	if err != nil {
		return nil, err
	}
	c.Fields = fields
	ob.keyOrder(props)
	for _, u := range ob.uniques {
		ob.unique(u.v, u.path)
	}
	if v := o.Take("quality"); v != nil {
		if err := ob.quality(v, "", nil); err != nil {
			return nil, err
		}
	}
	for _, r := range o.Rest() {
		switch interop.Key(r) {
		case "relationships":
			im.note(r, interop.Dropped, "Seam has no relationships between data sets (foreign keys); declare consumers for lineage")
		case "authoritativeDefinitions":
			im.note(r, interop.Dropped, "Seam contracts carry no links to outside definitions")
		default:
			im.note(r, interop.Dropped, "%q is not a schema object key Seam knows", interop.Key(r))
		}
	}
	// Checks come out in name order, so a document converted back and forth
	// gives the same contract wherever its rules sat in the document.
	slices.SortStableFunc(ob.checks, func(a, b *contractv1.Check) int { return strings.Compare(a.GetName(), b.GetName()) })
	c.Checks = ob.checks
	switch {
	case subject != "":
	case im.subject != "" && only:
		subject = im.subject
	case im.opts.Subject != "" && only:
		subject = im.opts.Subject
	default:
		prefix := ""
		for _, key := range []string{"domain", "dataProduct", "name"} {
			if p := subjectPart(im.labels[labelPrefix+key]); p != "" {
				prefix = p
				break
			}
		}
		part := subjectPart(name)
		if part == "" {
			return nil, im.fail(obj, "cannot derive a subject from object name %q; name it with the custom property %s", name, propSubject)
		}
		subject = part
		if prefix != "" {
			subject = prefix + "." + part
		}
		im.note(obj, interop.Kept, "subject %q derived from the contract and object names; name it with the custom property %s to choose another", subject, propSubject)
	}
	c.Subject = subject
	if len(c.Labels) == 0 {
		c.Labels = nil
	}
	if err := im.validate(obj, name, c); err != nil {
		return nil, err
	}
	return &Contract{Object: name, Contract: c}, nil
}

// validate checks the contract as the registry would, so an import never
// hands over a contract that cannot be registered.
func (im *importer) validate(obj *interop.Value, name string, c *contractv1.Contract) error {
	if c.GetOwner() == "" {
		return im.fail(obj, "the contract names no team, so schema object %q has no owner; add team.name or give an owner (seam contract import|register --owner)", name)
	}
	if problems := contract.Validate(c); len(problems) > 0 {
		return im.fail(obj, "schema object %q does not make a valid Seam contract: %v", name, problems)
	}
	if _, err := check.Compile(c); err != nil {
		return im.fail(obj, "the checks of schema object %q do not compile: %v", name, err)
	}
	return nil
}

// objectImport converts the properties and quality rules of one object.
type objectImport struct {
	im      *importer
	name    string
	c       *contractv1.Contract
	checks  []*contractv1.Check
	uniques []pendingUnique
}

// pendingUnique is a property marked unique, handled once every field is
// known (a lone primary key needs no check of its own).
type pendingUnique struct {
	v    *interop.Value
	path string
}

func (ob *objectImport) mapping(v *interop.Value) (*contractv1.Mapping, error) {
	js, err := json.Marshal(v.Any())
	if err != nil {
		return nil, ob.im.fail(v, "mapping: %v", err)
	}
	m := &contractv1.Mapping{}
	if err := protojson.Unmarshal(js, m); err != nil {
		return nil, ob.im.fail(v, "%s is not a Seam mapping: %v", propMapping, err)
	}
	return m, nil
}

func (ob *objectImport) properties(v *interop.Value, prefix string) ([]*contractv1.Field, error) {
	if v.Kind != interop.List {
		return nil, ob.im.fail(v, "want a list of properties, got %s", v.Kind)
	}
	var out []*contractv1.Field
	for _, p := range v.Items {
		if p.Kind != interop.Map {
			return nil, ob.im.fail(p, "want a property (a mapping), got %s", p.Kind)
		}
		f, err := ob.property(p, prefix, false)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// keyOrder notes primary key positions that disagree with the declaration
// order, which is the order of Seam's key fields.
func (ob *objectImport) keyOrder(props *interop.Value) {
	type pos struct {
		name string
		at   int64
	}
	var keys []pos
	for _, p := range props.Items {
		if pk := p.Get("primaryKey"); pk != nil && pk.Text == "true" {
			n, _ := p.Get("name").Scalar()
			at, ok := p.Get("primaryKeyPosition").Int()
			if !ok || at < 1 {
				at = math.MaxInt64
			}
			keys = append(keys, pos{n, at})
		}
	}
	if !sort.SliceIsSorted(keys, func(i, j int) bool { return keys[i].at < keys[j].at }) {
		ob.im.note(props, interop.Approximated, "primaryKeyPosition orders the key differently from the properties; Seam's key is in declaration order")
	}
}

// seamTypes are the Seam types of ODCS's logical types.
var seamTypes = map[string]contractv1.FieldType{
	"string":    contractv1.FieldType_FIELD_TYPE_STRING,
	"integer":   contractv1.FieldType_FIELD_TYPE_INT32, // ODCS's default integer format is i32
	"number":    contractv1.FieldType_FIELD_TYPE_DOUBLE,
	"boolean":   contractv1.FieldType_FIELD_TYPE_BOOL,
	"date":      contractv1.FieldType_FIELD_TYPE_DATE,
	"timestamp": contractv1.FieldType_FIELD_TYPE_TIMESTAMP,
	"time":      contractv1.FieldType_FIELD_TYPE_STRING,
	"object":    contractv1.FieldType_FIELD_TYPE_OBJECT,
	"array":     contractv1.FieldType_FIELD_TYPE_ARRAY,
}

// seamType is the Seam type of an ODCS logical type; false for a type
// ODCS does not define.
func seamType(logical string) (contractv1.FieldType, bool) {
	t, ok := seamTypes[logical]
	return t, ok
}

// physicalType is what Seam reads from a physicalType: the Seam type it
// means and the length, precision and scale written after it.
type physicalType struct {
	t         contractv1.FieldType
	time      bool  // a time of day (time, timetz): STRING with timePattern
	n         int64 // length of a string type, precision of a decimal
	scale     int64
	hasN      bool
	hasScale  bool
	items     *physicalType // element type of int4[], ARRAY<STRING>
	ok        bool
	canonical string // the base name, lower case, for messages
}

var physicalRE = regexp.MustCompile(`^([a-z_][a-z0-9_ ]*?)\s*(?:[(\[]\s*(\d+)\s*(?:,\s*(-?\d+)\s*)?[)\]])?(\s+with(?:out)?\s+(?:local\s+)?time\s+zone)?$`)

// physicalNames maps the physical type names of PostgreSQL, Snowflake,
// BigQuery and common SQL to Seam types; docs/contract.md lists them.
var physicalNames = map[string]contractv1.FieldType{}

func init() {
	for t, names := range map[contractv1.FieldType][]string{
		contractv1.FieldType_FIELD_TYPE_STRING: {"varchar", "char", "character", "character varying", "nvarchar", "nchar", "bpchar", "string", "text", "citext", "clob", "varchar2", "nvarchar2",
			"bytea", "bytes", "binary", "varbinary", "blob", "inet", "cidr", "macaddr", "xml", "interval", "money", "enum"},
		contractv1.FieldType_FIELD_TYPE_INT32:     {"int", "integer", "int4", "int32", "smallint", "int2", "int16", "tinyint", "byteint", "mediumint", "serial", "serial4", "smallserial", "serial2"},
		contractv1.FieldType_FIELD_TYPE_INT64:     {"bigint", "int8", "int64", "long", "bigserial", "serial8"},
		contractv1.FieldType_FIELD_TYPE_FLOAT:     {"real", "float4", "float32"},
		contractv1.FieldType_FIELD_TYPE_DOUBLE:    {"float", "double", "double precision", "float8", "float64"},
		contractv1.FieldType_FIELD_TYPE_DECIMAL:   {"decimal", "numeric", "number", "bignumeric", "bigdecimal"},
		contractv1.FieldType_FIELD_TYPE_BOOL:      {"bool", "boolean"},
		contractv1.FieldType_FIELD_TYPE_DATE:      {"date"},
		contractv1.FieldType_FIELD_TYPE_TIMESTAMP: {"timestamp", "timestamptz", "timestamp_tz", "timestamp_ntz", "timestamp_ltz", "datetime", "datetime2", "datetimeoffset", "smalldatetime"},
		contractv1.FieldType_FIELD_TYPE_UUID:      {"uuid", "uniqueidentifier"},
		contractv1.FieldType_FIELD_TYPE_OBJECT:    {"object", "struct", "record", "map"},
		// A JSON column holds any JSON value, as Snowflake's VARIANT and
		// Redshift's SUPER do; a logicalType narrows it.
		contractv1.FieldType_FIELD_TYPE_JSON:  {"json", "jsonb", "variant", "super"},
		contractv1.FieldType_FIELD_TYPE_ARRAY: {"array", "list"},
	} {
		for _, n := range names {
			physicalNames[n] = t
		}
	}
}

// physical reads a physical type such as "varchar(18)", "VARCHAR[50]",
// "bigint", "NUMBER(38,0)", "timestamp(3) with time zone", "int4[]",
// "ARRAY<STRING>" or Seam's own type names.
func physical(s string) physicalType {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return physicalType{}
	}
	if inner, ok := strings.CutSuffix(s, "[]"); ok {
		it := physical(inner)
		return physicalType{t: contractv1.FieldType_FIELD_TYPE_ARRAY, items: &it, ok: it.ok, canonical: "array"}
	}
	if rest, ok := strings.CutPrefix(s, "array<"); ok && strings.HasSuffix(rest, ">") {
		it := physical(strings.TrimSuffix(rest, ">"))
		return physicalType{t: contractv1.FieldType_FIELD_TYPE_ARRAY, items: &it, ok: it.ok, canonical: "array"}
	}
	if strings.HasPrefix(s, "struct<") {
		return physicalType{t: contractv1.FieldType_FIELD_TYPE_OBJECT, ok: true, canonical: "struct"}
	}
	if strings.HasPrefix(s, "_") && len(s) > 1 { // PostgreSQL's internal array names: _int4
		if it := physical(s[1:]); it.ok {
			return physicalType{t: contractv1.FieldType_FIELD_TYPE_ARRAY, items: &it, ok: true, canonical: "array"}
		}
	}
	m := physicalRE.FindStringSubmatch(s)
	if m == nil {
		return physicalType{}
	}
	name := m[1]
	p := physicalType{canonical: name}
	if m[2] != "" {
		p.n, _ = strconv.ParseInt(m[2], 10, 64)
		p.hasN = true
	}
	if m[3] != "" {
		p.scale, _ = strconv.ParseInt(m[3], 10, 64)
		p.hasScale = true
	}
	if name == "time" || name == "timetz" || name == "time_tz" {
		return physicalType{t: contractv1.FieldType_FIELD_TYPE_STRING, time: true, ok: true, canonical: name}
	}
	if name == "timestamp" && m[4] != "" {
		return physicalType{t: contractv1.FieldType_FIELD_TYPE_TIMESTAMP, ok: true, canonical: name}
	}
	if m[4] != "" {
		return physicalType{}
	}
	t, ok := physicalNames[name]
	if !ok {
		t, ok = seamTypeName(name)
	}
	if !ok {
		return physicalType{}
	}
	p.t, p.ok = t, true
	if t != contractv1.FieldType_FIELD_TYPE_STRING && t != contractv1.FieldType_FIELD_TYPE_DECIMAL {
		p.n, p.hasN, p.scale, p.hasScale = 0, false, 0, false // timestamp(6), float(53): no bound Seam checks
	}
	if t == contractv1.FieldType_FIELD_TYPE_DECIMAL && p.hasN && (!p.hasScale || p.scale == 0) {
		// NUMBER(38,0), NUMERIC(9): whole numbers.
		switch {
		case p.n <= 9:
			p.t = contractv1.FieldType_FIELD_TYPE_INT32
		case p.n <= 18:
			p.t = contractv1.FieldType_FIELD_TYPE_INT64
		}
	}
	return p
}

// seamTypeName reads Seam's own type names (INT64, DOUBLE), as Seam's
// export writes them.
func seamTypeName(name string) (contractv1.FieldType, bool) {
	n, ok := contractv1.FieldType_value["FIELD_TYPE_"+strings.ToUpper(name)]
	if !ok || n == 0 {
		return 0, false
	}
	return contractv1.FieldType(n), true
}

func typeName(t contractv1.FieldType) string { return contract.ShortName(t) }

// refine settles a property's type from its logicalType (t) and its
// physicalType when both are given. Within one family the physical type,
// what the column holds, is the more exact: number over int4 is INT32,
// date over timestamp is TIMESTAMP, string over uuid is UUID. An object
// over a scalar physical type (a domain type) takes the scalar type.
func (ob *objectImport) refine(p, physV *interop.Value, logical string, t contractv1.FieldType, ph physicalType) contractv1.FieldType {
	im := ob.im
	phys, _ := physV.Scalar()
	switch {
	case ph.t == t:
		return t
	case ph.t == contractv1.FieldType_FIELD_TYPE_JSON:
		// A JSON column whose values the logicalType says are of one kind.
		return t
	case family(t) == family(ph.t) && t == contractv1.FieldType_FIELD_TYPE_INT32:
		// logicalType integer: the physical type says how wide.
		switch ph.t {
		case contractv1.FieldType_FIELD_TYPE_INT64:
			return ph.t
		case contractv1.FieldType_FIELD_TYPE_DECIMAL:
			if ph.hasN && ph.n > 18 {
				im.note(physV, interop.Approximated, "integer %q is wider than Seam's INT64: checked as DECIMAL, which also admits fractions", phys)
				return ph.t
			}
			im.note(physV, interop.Approximated, "integer %q checked as INT64: values beyond 64 bits are refused", phys)
			return contractv1.FieldType_FIELD_TYPE_INT64
		}
		im.note(physV, interop.Dropped, "physicalType %q stores integers as floating point; checked as INT32, as the logicalType says", phys)
		return t
	case family(t) == family(ph.t) && t == contractv1.FieldType_FIELD_TYPE_STRING:
		return ph.t // uuid
	case family(t) == family(ph.t):
		if family(t) == 3 {
			im.note(physV, interop.Approximated, "logicalType %s over physicalType %q: checked as %s, what the column holds", logical, phys, typeName(ph.t))
		}
		return ph.t
	case t == contractv1.FieldType_FIELD_TYPE_OBJECT && ph.t != contractv1.FieldType_FIELD_TYPE_ARRAY && p.Get("properties") == nil:
		im.note(physV, interop.Approximated, "logicalType object over the scalar physicalType %q (a domain type): checked as %s, what the column holds", phys, typeName(ph.t))
		return ph.t
	}
	im.note(physV, interop.Dropped, "physicalType %q (%s) disagrees with logicalType %s; checked as %s, as the logicalType says", phys, typeName(ph.t), logical, typeName(t))
	return t
}

// family groups the Seam types one value's JSON form can take.
func family(t contractv1.FieldType) int {
	switch t {
	case contractv1.FieldType_FIELD_TYPE_STRING, contractv1.FieldType_FIELD_TYPE_UUID:
		return 1
	case contractv1.FieldType_FIELD_TYPE_INT32, contractv1.FieldType_FIELD_TYPE_INT64,
		contractv1.FieldType_FIELD_TYPE_FLOAT, contractv1.FieldType_FIELD_TYPE_DOUBLE, contractv1.FieldType_FIELD_TYPE_DECIMAL:
		return 2
	case contractv1.FieldType_FIELD_TYPE_DATE, contractv1.FieldType_FIELD_TYPE_TIMESTAMP:
		return 3
	}
	return int(t) + 100
}

// timePattern is how a time of day (ODCS logicalType time) is checked.
const timePattern = `^([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]+)?)?$`

// property converts one property (or array items, when items is true).
func (ob *objectImport) property(p *interop.Value, prefix string, items bool) (*contractv1.Field, error) {
	im := ob.im
	o := interop.NewObject(p)
	f := &contractv1.Field{}
	if !items {
		name, err := im.text(o.Take("name"))
		if err != nil {
			return nil, err
		}
		if name == "" {
			return nil, im.fail(p, "property has no name")
		}
		f.Name = name
	}
	path := f.Name
	if prefix != "" {
		path = prefix + "." + f.Name
	}
	if items {
		path = prefix + contract.ItemsSuffix
	}
	logical, err := im.text(o.Take("logicalType"))
	if err != nil {
		return nil, err
	}
	physV := o.Take("physicalType")
	phys, _ := physV.Scalar()
	opts := o.Take("logicalTypeOptions")
	var optObj *interop.Object
	if opts != nil {
		if opts.Kind != interop.Map {
			return nil, im.fail(opts, "want logicalTypeOptions as a mapping, got %s", opts.Kind)
		}
		optObj = interop.NewObject(opts)
	}
	take := func(key string) *interop.Value {
		if optObj == nil {
			return nil
		}
		return optObj.Take(key)
	}
	t, known := seamType(logical)
	ph := physical(phys)
	switch {
	case logical == "" && ph.ok:
		t = ph.t
	case logical == "" && o.Has("properties"):
		t = contractv1.FieldType_FIELD_TYPE_OBJECT
	case logical == "" && o.Has("items"):
		t = contractv1.FieldType_FIELD_TYPE_ARRAY
	case logical == "":
		t = contractv1.FieldType_FIELD_TYPE_STRING
		im.note(p, interop.Approximated, "no logicalType (nor a physicalType Seam reads); taken as STRING")
	case !known:
		return nil, im.fail(o.V.Get("logicalType"), "unknown logicalType %q; ODCS v3 has string, date, timestamp, time, number, integer, object, array, boolean", logical)
	}
	timeOfDay := logical == "time" || logical == "" && ph.time
	if ph.ok && logical != "" && !timeOfDay {
		t = ob.refine(p, physV, logical, t, ph)
	}
	if ph.ok && t == contractv1.FieldType_FIELD_TYPE_STRING && ph.t == contractv1.FieldType_FIELD_TYPE_STRING && ph.hasN && ph.n > 0 && !ph.time {
		n := ph.n
		f.MaxLength = &n
	}
	if ph.ok && t == contractv1.FieldType_FIELD_TYPE_DECIMAL && ph.t == contractv1.FieldType_FIELD_TYPE_DECIMAL && ph.hasN {
		// numeric(p, s): the digits Seam's DECIMAL checks, as the column
		// holds them.
		if ph.n < 1 || ph.n > contract.MaxDecimalPrecision || ph.scale < 0 || ph.scale > ph.n {
			im.note(physV, interop.Dropped, "precision and scale of %q are outside what a DECIMAL can declare (precision 1..%d, scale 0..precision); any exact decimal is taken", phys, contract.MaxDecimalPrecision)
		} else {
			precision, scale := int32(ph.n), int32(ph.scale)
			f.Precision, f.Scale = &precision, &scale
		}
	}
	if physV != nil && phys != "" && !ph.ok {
		im.note(physV, interop.Dropped, "physicalType %q is not a type Seam reads; the field is checked as %s, from its logicalType", phys, typeName(t))
	}
	if timeOfDay {
		t = contractv1.FieldType_FIELD_TYPE_STRING
		f.Pattern = timePattern
		im.note(p, interop.Approximated, "Seam has no time-of-day type: checked as a STRING matching %s", timePattern)
	}
	if t == contractv1.FieldType_FIELD_TYPE_ARRAY && ph.items != nil && ph.items.ok && !o.Has("items") {
		f.Items = &contractv1.Field{Type: ph.items.t}
		if ph.items.time {
			f.Items.Pattern = timePattern
		}
	}
	// The format option decides between Seam types of one family.
	if v := take("format"); v != nil {
		s, _ := v.Scalar()
		switch logical {
		case "integer":
			switch s {
			case "i8", "i16", "i32", "u8", "u16":
				t = contractv1.FieldType_FIELD_TYPE_INT32
			case "i64", "u32", "u64":
				t = contractv1.FieldType_FIELD_TYPE_INT64
			default:
				t = contractv1.FieldType_FIELD_TYPE_DECIMAL
				im.note(v, interop.Approximated, "integer format %s is wider than Seam's INT64: taken as DECIMAL, which also admits fractions", s)
			}
			bounds := map[string][2]float64{"i8": {-128, 127}, "i16": {-32768, 32767}, "u8": {0, 255}, "u16": {0, 65535}, "u32": {0, 4294967295}, "u64": {0, math.NaN()}}
			if b, ok := bounds[s]; ok {
				if optObj.V.Get("minimum") == nil {
					f.Min = &b[0]
				}
				if !math.IsNaN(b[1]) && optObj.V.Get("maximum") == nil {
					f.Max = &b[1]
				}
			}
			if s == "u64" {
				im.note(v, interop.Approximated, "u64 values above 2^63-1 do not fit Seam's INT64")
			}
		case "number":
			switch s {
			case "f32":
				t = contractv1.FieldType_FIELD_TYPE_FLOAT
			case "f64":
				t = contractv1.FieldType_FIELD_TYPE_DOUBLE
			default:
				im.note(v, interop.Dropped, "number format %q is not one Seam knows (f32, f64)", s)
			}
		case "string":
			switch strings.ToLower(s) {
			case "uuid":
				t = contractv1.FieldType_FIELD_TYPE_UUID
			case "email":
				f.Pattern = emailPattern
				im.note(v, interop.Approximated, "email addresses are checked with the pattern %s, looser than RFC 5322", emailPattern)
			default:
				im.note(v, interop.Dropped, "string format %q is not checked by Seam", s)
			}
		case "date", "timestamp":
			layout, ok := layoutFromJava(s)
			if !ok {
				im.note(v, interop.Dropped, "date format %q has no Go time layout Seam can check; values are checked as %s", s, map[string]string{"date": "YYYY-MM-DD", "timestamp": "RFC 3339"}[logical])
			} else {
				f.Layout = layout
			}
		default:
			im.note(v, interop.Dropped, "format %q is not checked by Seam", s)
		}
	}
	f.Type = t
	if err := ob.constraints(f, take); err != nil {
		return nil, err
	}
	if v := o.Take("required"); v != nil {
		f.Required = v.Text == "true"
	}
	if v := o.Take("primaryKey"); v != nil && v.Text == "true" {
		if items {
			im.note(v, interop.Dropped, "array items cannot be a key")
		} else {
			f.Key = true
			if !f.Required {
				f.Required = true
				im.note(v, interop.Approximated, "a primary key is required in Seam (absent or null keys fail)")
			}
		}
	}
	o.Take("primaryKeyPosition") // keyOrder reports disagreements
	if v := o.Take("unique"); v != nil && v.Text == "true" {
		ob.uniques = append(ob.uniques, pendingUnique{v, path})
	}
	if f.Description, err = im.takeText(o, "description"); err != nil {
		return nil, err
	}
	if v := o.Take("customProperties"); v != nil {
		err := im.custom(v, func(prop string, val *interop.Value) (bool, error) {
			switch prop {
			case propIdentifier:
				s, _ := val.Scalar()
				ns, format, ok := strings.Cut(s, "/")
				if !ok {
					return true, im.fail(val, "%s is namespace/format, such as customer/legacy-int; got %q", propIdentifier, s)
				}
				f.Identifier = &contractv1.Identifier{Namespace: ns, Format: format}
				return true, nil
			case propLayout:
				return im.keepText(val, &f.Layout)
			}
			return false, nil
		})
		if err != nil {
			return nil, err
		}
	}
	if v := o.Take("properties"); v != nil {
		if t != contractv1.FieldType_FIELD_TYPE_OBJECT {
			return nil, im.fail(v, "properties apply to object properties, not %s", logical)
		}
		fields, err := ob.properties(v, path)
		if err != nil {
			return nil, err
		}
		f.Fields = fields
		if req := take("required"); req != nil {
			ob.requiredMembers(f, req)
		}
	}
	if v := o.Take("items"); v != nil {
		if t != contractv1.FieldType_FIELD_TYPE_ARRAY {
			return nil, im.fail(v, "items apply to array properties, not %s", logical)
		}
		if v.Kind != interop.Map {
			return nil, im.fail(v, "want items as a mapping, got %s", v.Kind)
		}
		it, err := ob.property(v, path, true)
		if err != nil {
			return nil, err
		}
		f.Items = it
		if it.GetType() == contractv1.FieldType_FIELD_TYPE_OBJECT || interop.HasConstraints(it) {
			im.note(v, interop.Approximated, "the gate checks the type of each array element, not the constraints or members declared inside it")
		}
	}
	if optObj != nil {
		for _, r := range optObj.Rest() {
			im.note(r, interop.Dropped, "logicalTypeOptions.%s has no Seam equivalent", interop.Key(r))
		}
	}
	if t == contractv1.FieldType_FIELD_TYPE_ARRAY && f.Items == nil {
		f.Items = &contractv1.Field{Type: contractv1.FieldType_FIELD_TYPE_STRING}
		im.note(p, interop.Approximated, "array without items: elements taken as STRING")
	}
	if t == contractv1.FieldType_FIELD_TYPE_OBJECT && len(f.Fields) == 0 {
		im.note(p, interop.Kept, "object property %q lists no properties: any JSON object passes, its members unchecked", path)
	}
	if v := o.Take("quality"); v != nil {
		if items {
			im.note(v, interop.Dropped, "quality rules on array items are not checked")
		} else if err := ob.quality(v, path, f); err != nil {
			return nil, err
		}
	}
	for _, r := range o.Rest() {
		key := interop.Key(r)
		why, ok := propertyDropped[key]
		if !ok {
			why = fmt.Sprintf("%q is not a property key Seam knows", key)
		}
		im.note(r, interop.Dropped, "%s", why)
	}
	return f, nil
}

var propertyDropped = map[string]string{
	"id":                       "Seam fields are named, not given ids",
	"businessName":             "Seam fields carry no business name",
	"physicalName":             "Seam fields carry no physical name: records use the property name",
	"classification":           "Seam does not classify fields",
	"encryptedName":            "Seam does not know encrypted columns",
	"transformSourceObjects":   "Seam does not keep transformation lineage of a field; declare consumers instead",
	"transformLogic":           "Seam does not keep transformation logic",
	"transformDescription":     "Seam does not keep transformation descriptions",
	"examples":                 "Seam keeps no example values",
	"criticalDataElement":      "Seam has no critical-data-element flag",
	"tags":                     "Seam fields carry no tags",
	"authoritativeDefinitions": "Seam fields carry no links to outside definitions",
	"relationships":            "Seam has no foreign keys; declare consumers for lineage",
	"partitioned":              "Seam's partition is named by the pipeline per batch, not by a column",
	"partitionKeyPosition":     "Seam's partition is named by the pipeline per batch, not by a column",
}

// emailPattern is how an email format is checked.
const emailPattern = `^[^@\s]+@[^@\s]+\.[^@\s]+$`

// constraints reads the numeric, length and pattern options.
func (ob *objectImport) constraints(f *contractv1.Field, take func(string) *interop.Value) error {
	im := ob.im
	num := func(key string) (*float64, *interop.Value, error) {
		v := take(key)
		if v == nil {
			return nil, nil, nil
		}
		x, ok := v.Float()
		if !ok {
			if f.Type == contractv1.FieldType_FIELD_TYPE_DATE || f.Type == contractv1.FieldType_FIELD_TYPE_TIMESTAMP || f.Pattern == timePattern {
				im.note(v, interop.Dropped, "bounds on dates, times and timestamps are not checked by Seam (min and max apply to numbers)")
				return nil, nil, nil
			}
			return nil, nil, im.fail(v, "want a number, got %s", v.Kind)
		}
		return &x, v, nil
	}
	integer := f.Type == contractv1.FieldType_FIELD_TYPE_INT32 || f.Type == contractv1.FieldType_FIELD_TYPE_INT64
	if x, _, err := num("minimum"); err != nil {
		return err
	} else if x != nil {
		f.Min = x
	}
	if x, _, err := num("maximum"); err != nil {
		return err
	} else if x != nil {
		f.Max = x
	}
	for _, ex := range []struct {
		key string
		min bool
	}{{"exclusiveMinimum", true}, {"exclusiveMaximum", false}} {
		x, v, err := num(ex.key)
		if err != nil {
			return err
		}
		if x == nil {
			continue
		}
		switch {
		case integer && *x == math.Trunc(*x):
			b := *x - 1
			if ex.min {
				b = *x + 1
				f.Min = &b
			} else {
				f.Max = &b
			}
		default:
			if ex.min {
				f.Min = x
			} else {
				f.Max = x
			}
			im.note(v, interop.Approximated, "%s %g is checked inclusively: Seam's bounds include the bound", ex.key, *x)
		}
	}
	if v := take("multipleOf"); v != nil {
		im.note(v, interop.Dropped, "multipleOf is not checked by Seam")
	}
	length := func(key string) (*int64, error) {
		v := take(key)
		if v == nil {
			return nil, nil
		}
		n, ok := v.Int()
		if !ok || n < 0 {
			return nil, im.fail(v, "want a whole number of 0 or more, got %q", v.Text)
		}
		return &n, nil
	}
	for _, k := range []struct {
		key string
		min bool
	}{{"minLength", true}, {"maxLength", false}, {"minItems", true}, {"maxItems", false}} {
		n, err := length(k.key)
		if err != nil {
			return err
		}
		if n == nil {
			continue
		}
		if k.min {
			f.MinLength = n
		} else if f.MaxLength == nil || *n < *f.MaxLength {
			f.MaxLength = n
		}
	}
	if v := take("pattern"); v != nil {
		s, _ := v.Scalar()
		if _, err := regexp.Compile(s); err != nil {
			im.note(v, interop.Dropped, "pattern %q is not an RE2 expression Seam can check: %v", s, err)
		} else {
			f.Pattern = s
		}
	}
	if v := take("uniqueItems"); v != nil && v.Text == "true" {
		im.note(v, interop.Dropped, "uniqueItems is not checked by Seam")
	}
	return nil
}

// requiredMembers applies an object's logicalTypeOptions.required list.
func (ob *objectImport) requiredMembers(f *contractv1.Field, req *interop.Value) {
	if req.Kind != interop.List {
		ob.im.note(req, interop.Dropped, "want a list of member names, got %s", req.Kind)
		return
	}
	for _, it := range req.Items {
		name, _ := it.Scalar()
		found := false
		for _, m := range f.GetFields() {
			if m.GetName() == name {
				m.Required, found = true, true
			}
		}
		if !found {
			ob.im.note(it, interop.Dropped, "required member %q is not among the object's properties", name)
		}
	}
}

func (ob *objectImport) unique(v *interop.Value, path string) {
	if strings.Contains(path, ".") || strings.Contains(path, contract.ItemsSuffix) {
		ob.im.note(v, interop.Dropped, "uniqueness of nested fields is not checked; Seam checks top-level fields")
		return
	}
	if f := contract.Lookup(ob.c.GetFields(), path); f != nil && f.GetKey() && len(contract.Keys(ob.c)) == 1 {
		return // the key's implied uniqueness check covers it
	}
	ob.add(&contractv1.Check{Name: checkName(path, "unique"), Rule: "unique(" + path + ")"})
}

var checkNameRE = regexp.MustCompile(`[^a-z0-9_]+`)

func checkName(parts ...string) string {
	s := strings.ToLower(strings.Join(parts, "_"))
	s = checkNameRE.ReplaceAllString(s, "_")
	s = strings.Trim(nameHead.ReplaceAllString(s, ""), "_")
	if s == "" {
		s = "check"
	}
	return s
}

// add appends a check, numbering its name when taken.
func (ob *objectImport) add(c *contractv1.Check) {
	base := c.Name
	for i := 2; slices.ContainsFunc(ob.checks, func(o *contractv1.Check) bool { return o.GetName() == c.Name }); i++ {
		c.Name = fmt.Sprintf("%s_%d", base, i)
	}
	ob.checks = append(ob.checks, c)
}
