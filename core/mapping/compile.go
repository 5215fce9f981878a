package mapping

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // cast zones must resolve the same on every host, with or without a zoneinfo database

	"cel.dev/cel-go/cel"
	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// Reasons are the stable ids of mapping compile problems; the registry
// returns them as field-violation reasons, beside contract.Reason*.
const (
	ReasonMappingMissing     = "MAPPING_MISSING"
	ReasonCanonicalMismatch  = "MAPPING_CANONICAL_MISMATCH"
	ReasonSchemaInvalid      = "MAPPING_SCHEMA_INVALID"
	ReasonCanonicalUnknown   = "MAPPING_CANONICAL_FIELD_UNKNOWN"
	ReasonSourceUnknown      = "MAPPING_SOURCE_FIELD_UNKNOWN"
	ReasonNoProducer         = "MAPPING_FIELD_WITHOUT_SOURCE"
	ReasonManyProducers      = "MAPPING_FIELD_AMBIGUOUS"
	ReasonRequiredMissing    = "MAPPING_REQUIRED_NOT_PRODUCED"
	ReasonRequiredMayBeEmpty = "MAPPING_REQUIRED_MAY_BE_ABSENT"
	ReasonTypeMismatch       = "MAPPING_TYPE_MISMATCH"
	ReasonCastInvalid        = "MAPPING_CAST_INVALID"
	ReasonValuesInvalid      = "MAPPING_VALUES_INVALID"
	ReasonDefaultInvalid     = "MAPPING_DEFAULT_INVALID"
	ReasonConstantInvalid    = "MAPPING_CONSTANT_INVALID"
	ReasonExprInvalid        = "MAPPING_EXPR_INVALID"
	ReasonTranslateInvalid   = "MAPPING_TRANSLATE_INVALID"
	ReasonTranslateMissing   = "MAPPING_TRANSLATE_MISSING"
	ReasonNamespaceUnknown   = "MAPPING_IDMAP_NAMESPACE_UNKNOWN"
	ReasonFormatUnknown      = "MAPPING_IDMAP_FORMAT_UNKNOWN"
)

// IDCatalog answers which idmap namespaces and formats exist, so a mapping
// that translates through a namespace nobody created is refused when it is
// compiled rather than failing every record. The adapter fills it from
// idmap's GetNamespace; the registry may pass nil to skip the check.
type IDCatalog interface {
	// Formats returns the formats of namespace. found is false when the
	// namespace does not exist; err is for failures to find out.
	Formats(namespace string) (formats []*idmapv1.Format, found bool, err error)
}

// StaticCatalog is an IDCatalog held in memory: namespace name → formats.
type StaticCatalog map[string][]*idmapv1.Format

// Formats implements IDCatalog.
func (c StaticCatalog) Formats(namespace string) ([]*idmapv1.Format, bool, error) {
	f, ok := c[namespace]
	return f, ok, nil
}

// op is how a canonical field is produced.
type op uint8

const (
	opNone op = iota // not mapped: the field is left out
	opFrom
	opConstant
	opExpr
)

// fieldPlan is the compiled mapping of one canonical field.
type fieldPlan struct {
	name string
	// key is the field's JSON member prefix, `"name":`, escaped once.
	key      []byte
	typ      contractv1.FieldType
	required bool
	op       op
	// slot and source locate the source value (opFrom).
	slot   int
	source string
	conv   conv
	def    Value
	hasDef bool
	// values maps source enum values to canonical ones.
	values map[string][]byte
	// lookup is the translation this field's ids go through, -1 for none.
	lookup   int
	constant Value
	expr     string
	prog     cel.Program
}

// translation is one (namespace, from format, to format) triple: every id
// that goes through it in a batch goes in one idmap call.
type translation struct {
	namespace, from, to string
}

// Plan is a compiled mapping from one contract version to a canonical model
// version. It is immutable and safe for concurrent use.
type Plan struct {
	subject          string
	canonicalName    string
	canonicalVersion int32
	src              *record.Schema
	fields           []fieldPlan
	keys             []int
	translations     []translation
	hasExpr          bool
	// pool keeps released batch buffers (see Batch.Release).
	pool sync.Pool
}

// Compile compiles src's mapping into the canonical model, recording the
// mapping's pinned canonical version (0 when it follows the latest) in
// record ids. See CompileVersion.
func Compile(src *contractv1.Contract, canonical *contractv1.CanonicalModel, ids IDCatalog) (*Plan, error) {
	return CompileVersion(src, canonical, src.GetMapping().GetCanonicalVersion(), ids)
}

// CompileVersion compiles src's mapping into canonical, whose registered
// version is canonicalVersion (it goes into record ids, so the same order
// gets a new id only when the canonical model changes). ids, when not nil,
// must know every namespace and format the mapping translates through.
//
// Problems of the mapping come back as a contract.Problems error, each
// with its mapping path ("mapping.fields.customer_id.translate.from") and a
// Reason* id; a failure of ids comes back wrapped as it is.
func CompileVersion(src *contractv1.Contract, canonical *contractv1.CanonicalModel, canonicalVersion int32, ids IDCatalog) (*Plan, error) {
	p, problems, err := Draft(src, canonical, canonicalVersion, ids)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return p, nil
}

// Draft compiles like CompileVersion but keeps going past problems: the
// plan it returns maps every field that compiled and leaves the others out,
// so a preview can show what a proposed mapping does while listing what
// keeps it from being registered. The plan is nil only when the contract or
// canonical model cannot be laid out at all, or when err is set.
func Draft(src *contractv1.Contract, canonical *contractv1.CanonicalModel, canonicalVersion int32, ids IDCatalog) (*Plan, contract.Problems, error) {
	c := compiler{ids: ids, namespaces: map[string]nsInfo{}}
	p := c.plan(src, canonical, canonicalVersion)
	if c.err != nil {
		return nil, nil, c.err
	}
	return p, c.problems, nil
}

type nsInfo struct {
	formats []*idmapv1.Format
	found   bool
}

type compiler struct {
	ids        IDCatalog
	namespaces map[string]nsInfo
	problems   contract.Problems
	err        error
	env        *cel.Env
}

func (c *compiler) add(path, reason, format string, args ...any) {
	c.problems = append(c.problems, contract.Problem{Path: path, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

func (c *compiler) plan(src *contractv1.Contract, canonical *contractv1.CanonicalModel, version int32) *Plan {
	m := src.GetMapping()
	if m == nil {
		c.add("mapping", ReasonMappingMissing, "no mapping; add one that names the canonical model (mapping.canonical) and maps its fields")
		return nil
	}
	if canonical == nil {
		c.add("mapping.canonical", ReasonCanonicalMismatch, "canonical model %q was not given; register it first", m.GetCanonical())
		return nil
	}
	if m.GetCanonical() != canonical.GetName() {
		c.add("mapping.canonical", ReasonCanonicalMismatch, "mapping names canonical model %q but is compiled against %q", m.GetCanonical(), canonical.GetName())
	}
	schema, err := record.NewSchema(src.GetFields())
	if err != nil {
		c.add("fields", ReasonSchemaInvalid, "source contract fields cannot be laid out: %v", err)
		return nil
	}
	if _, err := record.NewSchema(canonical.GetFields()); err != nil {
		c.add("mapping.canonical", ReasonSchemaInvalid, "canonical model %s fields cannot be laid out: %v", canonical.GetName(), err)
		return nil
	}
	p := &Plan{
		subject:          src.GetSubject(),
		canonicalName:    canonical.GetName(),
		canonicalVersion: version,
		src:              schema,
	}
	byName := make(map[string]int, len(canonical.GetFields()))
	for i, f := range canonical.GetFields() {
		byName[f.GetName()] = i
		p.fields = append(p.fields, fieldPlan{name: f.GetName(), typ: f.GetType(), required: f.GetRequired(), slot: -1, lookup: -1,
			key: append(record.AppendString(nil, f.GetName()), ':')})
		if f.GetKey() {
			p.keys = append(p.keys, i)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.GetFields())) {
		path := "mapping.fields." + name
		i, ok := byName[name]
		if !ok {
			hint := "map only fields the canonical model declares"
			if strings.Contains(name, ".") {
				hint = "nested canonical fields are mapped as a whole OBJECT field"
			}
			c.add(path, ReasonCanonicalUnknown, "canonical model %s has no field %q; %s (declared: %s)", canonical.GetName(), name, hint, strings.Join(fieldNames(canonical.GetFields()), ", "))
			continue
		}
		f := &p.fields[i]
		if !c.field(p, f, canonical.GetFields()[i], src, m.GetFields()[name], path) {
			*f = fieldPlan{name: f.name, key: f.key, typ: f.typ, required: f.required, slot: -1, lookup: -1}
		}
		if c.err != nil {
			return nil
		}
	}
	for i := range p.fields {
		f := &p.fields[i]
		if f.hasDef || f.op == opConstant || f.op == opExpr || !f.required {
			continue
		}
		path := "mapping.fields." + f.name
		switch {
		case f.op == opNone && m.GetFields()[f.name] == nil:
			c.add(path, ReasonRequiredMissing, "required canonical field %s is not produced; map it with from, constant or expr", f.name)
		case f.op == opFrom && !sourceRequired(schema, f.slot):
			c.add(path+".from", ReasonRequiredMayBeEmpty, "required canonical field %s comes from optional source field %s; give it a default or make %s required", f.name, f.source, f.source)
		}
	}
	return p
}

func fieldNames(fs []*contractv1.Field) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.GetName()
	}
	return out
}

// sourceRequired reports whether a source slot is always present: it and
// every enclosing OBJECT field are required.
func sourceRequired(s *record.Schema, slot int) bool {
	for slot >= 0 {
		f := s.Field(slot)
		if !f.Decl.GetRequired() {
			return false
		}
		slot = f.Parent
	}
	return true
}

// field compiles one field mapping; it reports false when it added a
// problem, so the field is left out of a draft plan.
func (c *compiler) field(p *Plan, f *fieldPlan, decl *contractv1.Field, src *contractv1.Contract, fm *contractv1.FieldMapping, path string) bool {
	before := len(c.problems)
	producers := 0
	for _, set := range []bool{fm.GetFrom() != "", fm.GetConstant() != nil, fm.GetExpr() != ""} {
		if set {
			producers++
		}
	}
	switch producers {
	case 0:
		c.add(path, ReasonNoProducer, "%s says nothing about where its value comes from; set from (a source field), constant or expr", f.name)
		return false
	case 1:
	default:
		c.add(path, ReasonManyProducers, "%s sets more than one of from, constant and expr; keep one", f.name)
		return false
	}
	switch {
	case fm.GetConstant() != nil:
		f.op = opConstant
		for _, extra := range []struct {
			set  bool
			name string
		}{{fm.GetCast() != nil, "cast"}, {len(fm.GetValues()) > 0, "values"}, {fm.GetDefault() != nil, "default"}, {fm.GetTranslate() != nil, "translate"}} {
			if extra.set {
				c.add(path+"."+extra.name, ReasonConstantInvalid, "a constant is written as the canonical value itself; drop %s", extra.name)
			}
		}
		v, msg := literal(fm.GetConstant(), decl)
		if msg != "" {
			c.add(path+".constant", ReasonConstantInvalid, "%s", msg)
		}
		f.constant = v
	case fm.GetExpr() != "":
		f.op = opExpr
		c.expr(p, f, decl, fm, path)
	default:
		f.op = opFrom
		c.from(p, f, decl, src, fm, path)
	}
	return len(c.problems) == before
}

// literal converts a constant or default to a canonical value of decl's
// type, or says why it cannot be one.
func literal(v *structpb.Value, decl *contractv1.Field) (Value, string) {
	t := decl.GetType()
	cv := conv{to: t, unixExp: -1, loc: time.UTC, layout: rfcLayout(decl.GetLayout())}
	var a arena
	var out Value
	var fl *failure
	if _, null := v.GetKind().(*structpb.Value_NullValue); t == contractv1.FieldType_FIELD_TYPE_JSON && !null && v.GetKind() != nil {
		// Every JSON value is a value of a JSON field, kept as written.
		raw, err := jsonOf(v)
		if err != nil {
			return Value{}, fmt.Sprintf("cannot be written as JSON: %v", err)
		}
		return Value{kind: KindJSON, b: raw}, ""
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		return Value{}, "null is no value; leave the field out instead"
	case *structpb.Value_NumberValue:
		if math.IsNaN(k.NumberValue) || math.IsInf(k.NumberValue, 0) {
			return Value{}, "not a finite number"
		}
		out, fl = cv.fromNumberText(appendFloat(nil, k.NumberValue), &a)
	case *structpb.Value_StringValue:
		out, fl = cv.fromString([]byte(k.StringValue), &a)
	case *structpb.Value_BoolValue:
		out, fl = cv.fromBool(k.BoolValue)
	case *structpb.Value_StructValue, *structpb.Value_ListValue:
		want := contractv1.FieldType_FIELD_TYPE_OBJECT
		if _, list := k.(*structpb.Value_ListValue); list {
			want = contractv1.FieldType_FIELD_TYPE_ARRAY
		}
		if t != want {
			return Value{}, fmt.Sprintf("a JSON %s cannot be %s %s", strings.ToLower(contract.ShortName(want)), decl.GetName(), contract.ShortName(t))
		}
		raw, err := jsonOf(v)
		if err != nil {
			return Value{}, fmt.Sprintf("cannot be written as JSON: %v", err)
		}
		return Value{kind: KindJSON, b: raw}, ""
	default:
		return Value{}, "no value given"
	}
	if fl != nil {
		return Value{}, fmt.Sprintf("does not fit canonical field %s (%s): %s", decl.GetName(), contract.ShortName(t), fl.msg)
	}
	// Values built in the scratch arena or referring to it stay valid: the
	// arena is never reused.
	return out, ""
}

// rfcLayout maps the "RFC3339" spelling (and empty) to the parser's fast
// path.
func rfcLayout(layout string) string {
	switch layout {
	case "", "RFC3339", time.RFC3339, time.RFC3339Nano:
		return ""
	}
	return layout
}

func (c *compiler) from(p *Plan, f *fieldPlan, decl *contractv1.Field, src *contractv1.Contract, fm *contractv1.FieldMapping, path string) {
	slot, ok := p.src.Lookup(fm.GetFrom())
	if !ok {
		c.add(path+".from", ReasonSourceUnknown, "source field %q is not declared in %s; use a dotted path for nested fields (declared: %s)",
			fm.GetFrom(), src.GetSubject(), strings.Join(sourcePaths(p.src), ", "))
		return
	}
	sf := p.src.Field(slot)
	f.slot, f.source = slot, sf.Path
	srcType := sf.Type()
	if fm.GetDefault() != nil {
		v, msg := literal(fm.GetDefault(), decl)
		if msg != "" {
			c.add(path+".default", ReasonDefaultInvalid, "%s", msg)
		}
		f.def, f.hasDef = v, true
	}
	effective := srcType // the type the value has when it reaches the cast
	if vals := fm.GetValues(); len(vals) > 0 {
		c.values(f, decl, sf, vals, fm.GetCast() != nil, path+".values")
		effective = contractv1.FieldType_FIELD_TYPE_STRING
	}
	if tr := fm.GetTranslate(); tr != nil {
		if fm.GetCast() != nil {
			c.add(path+".cast", ReasonTranslateInvalid, "a translated id takes the canonical type from its target format; drop the cast")
		}
		c.translate(p, f, decl, sf, tr, path+".translate")
		return
	}
	c.checkIdentifiers(decl, sf, path)
	if fm.GetCast() != nil {
		f.conv = c.cast(fm.GetCast(), effective, decl, path+".cast")
		return
	}
	f.conv = conv{to: decl.GetType(), unixExp: -1, loc: time.UTC, layout: rfcLayout(sf.Decl.GetLayout())}
	if !assignable(effective, decl.GetType()) {
		c.add(path+".from", ReasonTypeMismatch, "source field %s is %s but canonical field %s is %s; add a cast (mapping.fields.%s.cast) or map another field",
			sf.Path, contract.ShortName(effective), decl.GetName(), contract.ShortName(decl.GetType()), decl.GetName())
	}
}

func sourcePaths(s *record.Schema) []string {
	out := make([]string, 0, s.Len())
	for _, f := range s.Fields() {
		out = append(out, f.Path)
	}
	return out
}

// checkIdentifiers refuses to copy an identifier of one format into a
// canonical field of another without translating it: that is exactly how a
// UUID ends up where integers are joined on.
func (c *compiler) checkIdentifiers(decl *contractv1.Field, sf *record.Field, path string) {
	want, got := decl.GetIdentifier(), sf.Decl.GetIdentifier()
	if want == nil || got == nil {
		return
	}
	if want.GetNamespace() != got.GetNamespace() || want.GetFormat() != got.GetFormat() {
		c.add(path, ReasonTranslateMissing, "source field %s holds %s ids but canonical field %s holds %s ids; add translate: {from: %s, to: %s}",
			sf.Path, contract.IdentifierString(got), decl.GetName(), contract.IdentifierString(want), contract.IdentifierString(got), contract.IdentifierString(want))
	}
}

// assignable says which source types a canonical type takes without a cast:
// the same type, or a widening that cannot lose information.
func assignable(from, to contractv1.FieldType) bool {
	if from == to || to == contractv1.FieldType_FIELD_TYPE_JSON {
		return true // a JSON field takes every value as it was sent
	}
	switch to {
	case contractv1.FieldType_FIELD_TYPE_INT64:
		return from == contractv1.FieldType_FIELD_TYPE_INT32
	case contractv1.FieldType_FIELD_TYPE_DOUBLE:
		return from == contractv1.FieldType_FIELD_TYPE_INT32 || from == contractv1.FieldType_FIELD_TYPE_FLOAT
	case contractv1.FieldType_FIELD_TYPE_STRING:
		return from == contractv1.FieldType_FIELD_TYPE_UUID
	case contractv1.FieldType_FIELD_TYPE_DECIMAL:
		return isInt(from)
	}
	return false
}

func isInt(t contractv1.FieldType) bool {
	return t == contractv1.FieldType_FIELD_TYPE_INT32 || t == contractv1.FieldType_FIELD_TYPE_INT64
}

// castable says which source types a cast may convert to which targets.
func castable(from, to contractv1.FieldType) bool {
	if from == to || to == contractv1.FieldType_FIELD_TYPE_JSON || from == contractv1.FieldType_FIELD_TYPE_JSON {
		return true // a JSON value converts by its kind, record by record
	}
	str := from == contractv1.FieldType_FIELD_TYPE_STRING
	switch to {
	case contractv1.FieldType_FIELD_TYPE_STRING:
		return from != contractv1.FieldType_FIELD_TYPE_OBJECT && from != contractv1.FieldType_FIELD_TYPE_ARRAY
	case contractv1.FieldType_FIELD_TYPE_INT32, contractv1.FieldType_FIELD_TYPE_INT64:
		return str || contract.IsNumeric(from) || from == contractv1.FieldType_FIELD_TYPE_BOOL
	case contractv1.FieldType_FIELD_TYPE_FLOAT, contractv1.FieldType_FIELD_TYPE_DOUBLE, contractv1.FieldType_FIELD_TYPE_DECIMAL:
		return str || contract.IsNumeric(from)
	case contractv1.FieldType_FIELD_TYPE_BOOL:
		return str || isInt(from)
	case contractv1.FieldType_FIELD_TYPE_TIMESTAMP:
		return str || contract.IsNumeric(from) || from == contractv1.FieldType_FIELD_TYPE_DATE
	case contractv1.FieldType_FIELD_TYPE_DATE:
		return str || from == contractv1.FieldType_FIELD_TYPE_TIMESTAMP
	case contractv1.FieldType_FIELD_TYPE_UUID:
		return str
	}
	return false
}

// cast compiles an explicit cast of values of type from into decl.
func (c *compiler) cast(ct *contractv1.Cast, from contractv1.FieldType, decl *contractv1.Field, path string) conv {
	to := ct.GetTo()
	if to == contractv1.FieldType_FIELD_TYPE_UNSPECIFIED {
		to = decl.GetType()
	}
	cv := conv{to: to, explicit: true, unixExp: -1, loc: time.UTC, rounding: ct.GetRounding()}
	if to != decl.GetType() {
		c.add(path+".to", ReasonCastInvalid, "cast to %s, but canonical field %s is %s; cast to %s", contract.ShortName(to), decl.GetName(), contract.ShortName(decl.GetType()), contract.ShortName(decl.GetType()))
	}
	if from != contractv1.FieldType_FIELD_TYPE_UNSPECIFIED && !castable(from, to) {
		c.add(path+".to", ReasonCastInvalid, "%s values cannot be cast to %s", contract.ShortName(from), contract.ShortName(to))
	}
	timeTarget := to == contractv1.FieldType_FIELD_TYPE_TIMESTAMP || to == contractv1.FieldType_FIELD_TYPE_DATE
	if layout := ct.GetLayout(); layout != "" {
		switch exp, unix := unixLayouts[layout]; {
		case !timeTarget:
			c.add(path+".layout", ReasonCastInvalid, "a layout applies to casts to TIMESTAMP or DATE, not %s; drop it", contract.ShortName(to))
		case unix && to == contractv1.FieldType_FIELD_TYPE_TIMESTAMP:
			cv.unixExp, cv.layout = exp, layout
		case unix:
			c.add(path+".layout", ReasonCastInvalid, "%s is a time, not a date, layout; cast to TIMESTAMP", layout)
		default:
			cv.layout = rfcLayout(layout)
			if cv.layout != "" && !validLayout(cv.layout) {
				c.add(path+".layout", ReasonCastInvalid, "%q is not a Go time layout (it has no date or time elements); write it as the reference time 2006-01-02T15:04:05Z07:00 would look, or RFC3339", layout)
			}
		}
	} else if timeTarget && contract.IsNumeric(from) {
		c.add(path+".layout", ReasonCastInvalid, "numbers become times only with a unix layout; set layout to unix, unix_ms, unix_us or unix_ns")
	}
	if zone := ct.GetZone(); zone != "" {
		if !timeTarget {
			c.add(path+".zone", ReasonCastInvalid, "a zone applies to casts to TIMESTAMP or DATE; drop it")
		} else if loc, err := time.LoadLocation(zone); err != nil {
			c.add(path+".zone", ReasonCastInvalid, "unknown time zone %q; use an IANA name such as Europe/Berlin", zone)
		} else {
			cv.loc = loc
		}
	}
	if s := ct.GetScale(); s != 0 {
		switch {
		case math.IsNaN(s) || math.IsInf(s, 0):
			c.add(path+".scale", ReasonCastInvalid, "scale must be a finite number")
		case !contract.IsNumeric(to):
			c.add(path+".scale", ReasonCastInvalid, "scale applies to numeric targets, not %s; drop it", contract.ShortName(to))
		default:
			cv.scaled, cv.scale = true, s
			for k := -18; k <= 18; k++ {
				if s == math.Pow10(k) {
					cv.isPow10, cv.pow10 = true, k
				}
			}
			if to == contractv1.FieldType_FIELD_TYPE_DECIMAL && !cv.isPow10 {
				c.add(path+".scale", ReasonCastInvalid, "DECIMAL casts scale only by powers of ten (0.01, 100…), which keep every digit exact")
			}
		}
	}
	if r := ct.GetRounding(); r != contractv1.Rounding_ROUNDING_UNSPECIFIED {
		if _, known := contractv1.Rounding_name[int32(r)]; !known {
			c.add(path+".rounding", ReasonCastInvalid, "unknown rounding %d", r)
		} else if !isInt(to) && cv.unixExp < 0 {
			c.add(path+".rounding", ReasonCastInvalid, "rounding applies to casts to integers (or unix times), not %s; drop it", contract.ShortName(to))
		}
	}
	return cv
}

// validLayout reports whether a Go layout has at least one time element:
// formatting a time other than the reference time with it must change it.
func validLayout(layout string) bool {
	other := time.Date(1999, 12, 31, 1, 2, 3, 0, time.UTC)
	return other.Format(layout) != layout
}

// values compiles an enum value map. Values that are not in the map are
// errors at run time, never passed through.
func (c *compiler) values(f *fieldPlan, decl *contractv1.Field, sf *record.Field, vals map[string]string, cast bool, path string) {
	if t := sf.Type(); t != contractv1.FieldType_FIELD_TYPE_STRING {
		c.add(path, ReasonValuesInvalid, "values map strings, but source field %s is %s", sf.Path, contract.ShortName(t))
	}
	if !cast && decl.GetType() != contractv1.FieldType_FIELD_TYPE_STRING {
		c.add(path, ReasonValuesInvalid, "values produce strings, but canonical field %s is %s; add a cast", decl.GetName(), contract.ShortName(decl.GetType()))
	}
	f.values = make(map[string][]byte, len(vals))
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		v := vals[k]
		if len(decl.GetEnum()) > 0 && !cast && !slices.Contains(decl.GetEnum(), v) {
			c.add(path+"."+k, ReasonValuesInvalid, "%q is not a value of canonical field %s (allowed: %s)", v, decl.GetName(), strings.Join(decl.GetEnum(), ", "))
		}
		f.values[k] = []byte(v)
	}
	for _, e := range sf.Decl.GetEnum() {
		if _, ok := vals[e]; !ok {
			c.add(path, ReasonValuesInvalid, "source value %q of %s has no canonical value; map every value the source may send", e, sf.Path)
		}
	}
}

// parseRef splits "namespace/format".
func parseRef(s string) (ns, format string, ok bool) {
	ns, format, ok = strings.Cut(s, "/")
	return ns, format, ok && ns != "" && format != "" && !strings.Contains(format, "/")
}

func (c *compiler) translate(p *Plan, f *fieldPlan, decl *contractv1.Field, sf *record.Field, tr *contractv1.Translate, path string) {
	fromNS, fromFormat, ok1 := parseRef(tr.GetFrom())
	toNS, toFormat, ok2 := parseRef(tr.GetTo())
	if !ok1 {
		c.add(path+".from", ReasonTranslateInvalid, "%q is not namespace/format, such as customer/uuid", tr.GetFrom())
	}
	if !ok2 {
		c.add(path+".to", ReasonTranslateInvalid, "%q is not namespace/format, such as customer/legacy-int", tr.GetTo())
	}
	if !ok1 || !ok2 {
		return
	}
	if fromNS != toNS {
		c.add(path+".to", ReasonTranslateInvalid, "idmap translates within one namespace, but from is in %s and to in %s", fromNS, toNS)
		return
	}
	if fromFormat == toFormat {
		c.add(path+".to", ReasonTranslateInvalid, "from and to are both %s; drop translate", tr.GetFrom())
	}
	if id := sf.Decl.GetIdentifier(); id != nil && (id.GetNamespace() != fromNS || id.GetFormat() != fromFormat) {
		c.add(path+".from", ReasonTranslateInvalid, "source field %s declares %s ids, not %s", sf.Path, contract.IdentifierString(id), tr.GetFrom())
	}
	if id := decl.GetIdentifier(); id != nil && (id.GetNamespace() != toNS || id.GetFormat() != toFormat) {
		c.add(path+".to", ReasonTranslateInvalid, "canonical field %s holds %s ids, not %s", decl.GetName(), contract.IdentifierString(id), tr.GetTo())
	}
	switch t := sf.Type(); t {
	case contractv1.FieldType_FIELD_TYPE_INT32, contractv1.FieldType_FIELD_TYPE_INT64,
		contractv1.FieldType_FIELD_TYPE_STRING, contractv1.FieldType_FIELD_TYPE_UUID:
	default:
		c.add(path+".from", ReasonTranslateInvalid, "source field %s is %s; ids are integers, strings or UUIDs", sf.Path, contract.ShortName(t))
	}
	switch t := decl.GetType(); t {
	case contractv1.FieldType_FIELD_TYPE_INT32, contractv1.FieldType_FIELD_TYPE_INT64,
		contractv1.FieldType_FIELD_TYPE_STRING, contractv1.FieldType_FIELD_TYPE_UUID:
	default:
		c.add(path+".to", ReasonTranslateInvalid, "canonical field %s is %s; ids are integers, strings or UUIDs", decl.GetName(), contract.ShortName(t))
	}
	if c.ids != nil {
		formats, found, err := c.lookupNamespace(fromNS)
		if err != nil {
			c.err = fmt.Errorf("compile %s: look up idmap namespace %q: %w", path, fromNS, err)
			return
		}
		if !found {
			c.add(path+".from", ReasonNamespaceUnknown, "idmap namespace %q does not exist; create it (seam idmap namespace create) before registering this mapping", fromNS)
			return
		}
		fromF := findFormat(formats, fromFormat)
		toF := findFormat(formats, toFormat)
		if fromF == nil {
			c.add(path+".from", ReasonFormatUnknown, "idmap namespace %s has no format %q (formats: %s)", fromNS, fromFormat, formatNames(formats))
		}
		if toF == nil {
			c.add(path+".to", ReasonFormatUnknown, "idmap namespace %s has no format %q (formats: %s)", toNS, toFormat, formatNames(formats))
		}
		if toF != nil && !kindFits(toF.GetKind(), decl.GetType()) {
			c.add(path+".to", ReasonTypeMismatch, "format %s holds %s ids but canonical field %s is %s", tr.GetTo(), kindName(toF.GetKind()), decl.GetName(), contract.ShortName(decl.GetType()))
		}
		if fromF != nil && !kindFits(fromF.GetKind(), sf.Type()) {
			c.add(path+".from", ReasonTypeMismatch, "format %s holds %s ids but source field %s is %s", tr.GetFrom(), kindName(fromF.GetKind()), sf.Path, contract.ShortName(sf.Type()))
		}
	}
	key := translation{namespace: fromNS, from: fromFormat, to: toFormat}
	f.lookup = slices.Index(p.translations, key)
	if f.lookup < 0 {
		f.lookup = len(p.translations)
		p.translations = append(p.translations, key)
	}
	f.conv = conv{to: decl.GetType(), unixExp: -1, loc: time.UTC}
}

func (c *compiler) lookupNamespace(ns string) ([]*idmapv1.Format, bool, error) {
	if info, ok := c.namespaces[ns]; ok {
		return info.formats, info.found, nil
	}
	formats, found, err := c.ids.Formats(ns)
	if err != nil {
		return nil, false, err
	}
	c.namespaces[ns] = nsInfo{formats: formats, found: found}
	return formats, found, nil
}

func findFormat(formats []*idmapv1.Format, name string) *idmapv1.Format {
	for _, f := range formats {
		if f.GetName() == name {
			return f
		}
	}
	return nil
}

func formatNames(formats []*idmapv1.Format) string {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = f.GetName()
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func kindName(k idmapv1.FormatKind) string {
	return strings.ToLower(strings.TrimPrefix(k.String(), "FORMAT_KIND_"))
}

// kindFits says whether ids of an idmap format kind fit a field type.
func kindFits(k idmapv1.FormatKind, t contractv1.FieldType) bool {
	switch k {
	case idmapv1.FormatKind_FORMAT_KIND_INT:
		return isInt(t) || t == contractv1.FieldType_FIELD_TYPE_STRING
	case idmapv1.FormatKind_FORMAT_KIND_UUID:
		return t == contractv1.FieldType_FIELD_TYPE_UUID || t == contractv1.FieldType_FIELD_TYPE_STRING
	case idmapv1.FormatKind_FORMAT_KIND_STRING:
		return t == contractv1.FieldType_FIELD_TYPE_STRING
	}
	return true // an unspecified kind says nothing to check against
}
