package contract

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode/utf8"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// Reasons are the stable ids of validation problems; the registry returns
// them as field-violation reasons.
const (
	ReasonContractMissing        = "CONTRACT_MISSING"
	ReasonNameMissing            = "NAME_MISSING"
	ReasonNameInvalid            = "NAME_INVALID"
	ReasonOwnerMissing           = "OWNER_MISSING"
	ReasonCompatibilityInvalid   = "COMPATIBILITY_INVALID"
	ReasonNoticePeriodInvalid    = "NOTICE_PERIOD_INVALID"
	ReasonFieldsMissing          = "FIELDS_MISSING"
	ReasonFieldNameMissing       = "FIELD_NAME_MISSING"
	ReasonFieldNameInvalid       = "FIELD_NAME_INVALID"
	ReasonFieldNameDuplicate     = "FIELD_NAME_DUPLICATE"
	ReasonFieldTypeMissing       = "FIELD_TYPE_MISSING"
	ReasonFieldTypeInvalid       = "FIELD_TYPE_INVALID"
	ReasonFieldTooDeep           = "FIELD_TOO_DEEP"
	ReasonPatternInvalid         = "PATTERN_INVALID"
	ReasonPatternWrongType       = "PATTERN_WRONG_TYPE"
	ReasonEnumWrongType          = "ENUM_WRONG_TYPE"
	ReasonEnumValueDuplicate     = "ENUM_VALUE_DUPLICATE"
	ReasonEnumValueMismatch      = "ENUM_VALUE_MISMATCH"
	ReasonRangeWrongType         = "RANGE_WRONG_TYPE"
	ReasonRangeInvalid           = "RANGE_INVALID"
	ReasonLengthWrongType        = "LENGTH_WRONG_TYPE"
	ReasonLengthInvalid          = "LENGTH_INVALID"
	ReasonDecimalDigitsWrongType = "DECIMAL_DIGITS_WRONG_TYPE"
	ReasonDecimalDigitsInvalid   = "DECIMAL_DIGITS_INVALID"
	ReasonKeyNotRequired         = "KEY_NOT_REQUIRED"
	ReasonKeyNotScalar           = "KEY_NOT_SCALAR"
	ReasonKeyInArray             = "KEY_IN_ARRAY"
	ReasonIdentifierIncomplete   = "IDENTIFIER_INCOMPLETE"
	ReasonIdentifierInvalid      = "IDENTIFIER_INVALID"
	ReasonIdentifierWrongType    = "IDENTIFIER_WRONG_TYPE"
	ReasonFieldsWrongType        = "FIELDS_WRONG_TYPE"
	ReasonArrayWithoutItems      = "ARRAY_WITHOUT_ITEMS"
	ReasonItemsWrongType         = "ITEMS_WRONG_TYPE"
	ReasonLayoutWrongType        = "LAYOUT_WRONG_TYPE"
	ReasonCheckNameMissing       = "CHECK_NAME_MISSING"
	ReasonCheckNameInvalid       = "CHECK_NAME_INVALID"
	ReasonCheckNameDuplicate     = "CHECK_NAME_DUPLICATE"
	ReasonCheckRuleMissing       = "CHECK_RULE_MISSING"
	ReasonCheckPolicyInvalid     = "CHECK_POLICY_INVALID"
	ReasonThresholdInvalid       = "THRESHOLD_INVALID"
	ReasonAdditionalInvalid      = "ADDITIONAL_FIELDS_INVALID"
	ReasonPartitionTimeInvalid   = "PARTITION_TIME_INVALID"
)

// MaxDecimalPrecision is the most digits a DECIMAL field may declare
// (PostgreSQL's numeric allows 1000 in a type modifier).
const MaxDecimalPrecision = 1000

// Problem is one reason a contract or canonical model is invalid.
type Problem struct {
	// Path locates the problem in the document, for example "fields[2].type".
	Path string
	// Reason is one of the Reason* ids.
	Reason string
	// Message says what is wrong and what would make it pass.
	Message string
}

// String renders the problem as "path: message".
func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// Problems lists every problem found; it is an error when non-empty. Use
// Err to get a nil error for an empty list.
type Problems []Problem

// Error lists the problems, one per line after the first.
func (ps Problems) Error() string {
	switch len(ps) {
	case 0:
		return "no problems"
	case 1:
		return ps[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(ps))
	for _, p := range ps {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Err returns ps as an error, or nil when there are no problems.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

var (
	// dottedName is the form of subjects and canonical model names:
	// dot-separated lower-case identifiers such as "shop.orders".
	dottedName = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)
	// fieldName keeps names usable in dotted paths and check expressions.
	fieldName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// checkName is how checks are named in verdicts and metrics.
	checkName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	// idmapName is a namespace or format; "/" separates them in Translate.
	idmapName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
)

const maxNameLen = 128

// Validate reports every structural problem of c with its field path. It
// does not parse check rules or the mapping: their compilers report their
// own problems. An unspecified compatibility is allowed (the registry's
// default applies), and so is a check with an unspecified policy (the check
// compiler's default applies).
func Validate(c *contractv1.Contract) Problems {
	if c == nil {
		return missing("contract")
	}
	var v validator
	v.owned("subject", c.GetSubject(), "shop.orders", c.GetOwner(), "may register versions")
	if _, known := contractv1.Compatibility_name[int32(c.GetCompatibility())]; !known {
		v.add("compatibility", ReasonCompatibilityInvalid, fmt.Sprintf("unknown compatibility %d", c.GetCompatibility()))
	}
	if _, err := ParseNoticePeriod(c.GetNoticePeriod()); err != nil {
		v.add("notice_period", ReasonNoticePeriodInvalid, err.Error())
	}
	if _, known := contractv1.AdditionalFields_name[int32(c.GetAdditionalFields())]; !known {
		v.add("additional_fields", ReasonAdditionalInvalid, fmt.Sprintf("unknown additional_fields %d; want ALLOW, QUARANTINE or REJECT", c.GetAdditionalFields()))
	}
	v.topFields(c.GetFields())
	v.checks(c.GetChecks())
	v.partitionTime(c)
	return v.problems
}

// owned checks what every registered document names: itself, at path
// (example shows a valid name), and the team that owns it, which is the
// team that does what the message says.
func (v *validator) owned(path, name, example, owner, ownerDoes string) {
	v.name(path, name, example)
	if strings.TrimSpace(owner) == "" {
		v.add("owner", ReasonOwnerMissing, "owner is empty; name the team that "+ownerDoes)
	}
}

// partitionTime checks the field that places records in partitions: a
// required top-level TIMESTAMP or DATE field, a granularity its type can
// express, and an allowed lateness that is a duration.
func (v *validator) partitionTime(c *contractv1.Contract) {
	pt := c.GetPartitionTime()
	if pt == nil {
		return
	}
	bad := func(path, format string, args ...any) {
		v.add("partition_time."+path, ReasonPartitionTimeInvalid, fmt.Sprintf(format, args...))
	}
	name := pt.GetField()
	var f *contractv1.Field
	for _, g := range c.GetFields() {
		if g.GetName() == name {
			f = g
		}
	}
	switch {
	case name == "":
		bad("field", "empty; name the TIMESTAMP or DATE field whose value places a record in its partition, such as booked_at")
	case f == nil:
		bad("field", "%q is not a top-level field of the contract; declare it, or name one that is", name)
	case f.GetType() != contractv1.FieldType_FIELD_TYPE_TIMESTAMP && f.GetType() != contractv1.FieldType_FIELD_TYPE_DATE:
		bad("field", "%q is %s; a partition time is a TIMESTAMP or DATE field", name, typeName(f.GetType()))
	case !f.GetRequired():
		bad("field", "%q is optional; a record without it could not be placed in a partition, so declare it required: true", name)
	}
	switch g := pt.GetGranularity(); {
	case g == contractv1.Granularity_GRANULARITY_UNSPECIFIED:
		bad("granularity", "missing; declare HOUR, DAY or MONTH")
	case contractv1.Granularity_name[int32(g)] == "":
		bad("granularity", "unknown granularity %d; declare HOUR, DAY or MONTH", g)
	case g == contractv1.Granularity_GRANULARITY_HOUR && f != nil && f.GetType() == contractv1.FieldType_FIELD_TYPE_DATE:
		bad("granularity", "HOUR partitions need a TIMESTAMP field; %q is a DATE, so declare DAY or MONTH", name)
	}
	if d, err := ParseNoticePeriod(pt.GetAllowedLateness()); err != nil || d < 0 {
		bad("allowed_lateness", "%q is not a duration; write it as \"6h\", \"2d\" or \"1d12h\"", pt.GetAllowedLateness())
	}
}

// ValidateCanonicalModel reports every structural problem of m with its
// field path, by the same field rules as Validate.
func ValidateCanonicalModel(m *contractv1.CanonicalModel) Problems {
	if m == nil {
		return missing("canonical model")
	}
	var v validator
	v.owned("name", m.GetName(), "commerce.order", m.GetOwner(), "owns the model")
	v.topFields(m.GetFields())
	return v.problems
}

// missing is the one problem of a document that was not given at all.
func missing(what string) Problems {
	return Problems{{Reason: ReasonContractMissing, Message: "no " + what + " given"}}
}

type validator struct {
	problems Problems
}

func (v *validator) add(path, reason, msg string) {
	v.problems = append(v.problems, Problem{Path: path, Reason: reason, Message: msg})
}

func (v *validator) name(path, name, example string) {
	switch {
	case name == "":
		v.add(path, ReasonNameMissing, fmt.Sprintf("%s is empty; give dotted lower-case words such as %q", path, example))
	case len(name) > maxNameLen || !dottedName.MatchString(name):
		v.add(path, ReasonNameInvalid, fmt.Sprintf("%q is not a valid %s; want dotted lower-case words (letters, digits, _) such as %q, at most %d characters", name, path, example, maxNameLen))
	}
}

func (v *validator) topFields(fields []*contractv1.Field) {
	if len(fields) == 0 {
		v.add("fields", ReasonFieldsMissing, "no fields; declare at least one")
		return
	}
	v.fields(fields, "fields", fieldContext{})
}

// fieldContext is what a field inherits from its enclosing fields.
type fieldContext struct {
	depth    int
	inArray  bool
	optional bool
}

func (v *validator) fields(fields []*contractv1.Field, path string, ctx fieldContext) {
	first := make(map[string]string, len(fields))
	for i, f := range fields {
		fpath := fmt.Sprintf("%s[%d]", path, i)
		name := f.GetName()
		switch {
		case name == "":
			v.add(fpath+".name", ReasonFieldNameMissing, "field has no name")
		case len(name) > maxNameLen || !fieldName.MatchString(name):
			v.add(fpath+".name", ReasonFieldNameInvalid, fmt.Sprintf("%q is not a valid field name; want letters, digits and _ not starting with a digit, at most %d characters", name, maxNameLen))
		}
		if name != "" {
			if prev, dup := first[name]; dup {
				v.add(fpath+".name", ReasonFieldNameDuplicate, fmt.Sprintf("field %q is declared twice (first at %s); rename or remove one", name, prev))
			} else {
				first[name] = fpath
			}
		}
		v.field(f, fpath, ctx)
	}
}

// IsNumeric reports whether fields of type t hold numbers: the integer,
// floating-point and decimal types.
func IsNumeric(t contractv1.FieldType) bool {
	switch t {
	case contractv1.FieldType_FIELD_TYPE_INT32, contractv1.FieldType_FIELD_TYPE_INT64,
		contractv1.FieldType_FIELD_TYPE_FLOAT, contractv1.FieldType_FIELD_TYPE_DOUBLE,
		contractv1.FieldType_FIELD_TYPE_DECIMAL:
		return true
	}
	return false
}

func typeName(t contractv1.FieldType) string { return ShortName(t) }

func (v *validator) field(f *contractv1.Field, path string, ctx fieldContext) {
	if ctx.depth >= maxDepth {
		v.add(path, ReasonFieldTooDeep, fmt.Sprintf("fields nest deeper than %d levels; flatten the structure", maxDepth))
		return
	}
	t := f.GetType()
	switch _, known := contractv1.FieldType_name[int32(t)]; {
	case t == contractv1.FieldType_FIELD_TYPE_UNSPECIFIED:
		v.add(path+".type", ReasonFieldTypeMissing, "field has no type; want one of "+strings.Join(fieldTypeNames(), ", "))
	case !known:
		v.add(path+".type", ReasonFieldTypeInvalid, fmt.Sprintf("unknown field type %d; want one of %s", t, strings.Join(fieldTypeNames(), ", ")))
	}
	// A JSON field takes every constraint of the kinds of values it may
	// hold, each applied to values of that kind only.
	isJSON := t == contractv1.FieldType_FIELD_TYPE_JSON
	isString := t == contractv1.FieldType_FIELD_TYPE_STRING || isJSON

	var re *regexp.Regexp
	if p := f.GetPattern(); p != "" {
		compiled, err := regexp.Compile(p)
		if err != nil {
			v.add(path+".pattern", ReasonPatternInvalid, fmt.Sprintf("pattern %q is not a valid RE2 expression: %v", p, err))
		} else {
			re = compiled
		}
		if !isString {
			v.add(path+".pattern", ReasonPatternWrongType, fmt.Sprintf("pattern applies to STRING and JSON fields, not %s; remove it or change the type", typeName(t)))
		}
	}

	if len(f.GetEnum()) > 0 && !isString {
		v.add(path+".enum", ReasonEnumWrongType, fmt.Sprintf("enum applies to STRING and JSON fields, not %s; remove it or change the type", typeName(t)))
	}
	seen := make(map[string]bool, len(f.GetEnum()))
	for i, e := range f.GetEnum() {
		epath := fmt.Sprintf("%s.enum[%d]", path, i)
		if seen[e] {
			v.add(epath, ReasonEnumValueDuplicate, fmt.Sprintf("enum value %q is listed twice", e))
		}
		seen[e] = true
		if re != nil && !re.MatchString(e) {
			v.add(epath, ReasonEnumValueMismatch, fmt.Sprintf("enum value %q does not match pattern %q, so no value could pass both; fix the value or the pattern", e, f.GetPattern()))
		}
		n := int64(utf8.RuneCountInString(e))
		if f.MinLength != nil && n < f.GetMinLength() || f.MaxLength != nil && n > f.GetMaxLength() {
			v.add(epath, ReasonEnumValueMismatch, fmt.Sprintf("enum value %q has %d characters, outside the allowed length; fix the value or min_length/max_length", e, n))
		}
	}

	if f.Min != nil || f.Max != nil {
		if !IsNumeric(t) && !isJSON {
			v.add(path, ReasonRangeWrongType, fmt.Sprintf("min and max apply to numeric and JSON fields, not %s; use min_length/max_length for lengths", typeName(t)))
		}
		switch {
		case f.Min != nil && math.IsNaN(f.GetMin()):
			v.add(path+".min", ReasonRangeInvalid, "min is NaN; give a number")
		case f.Max != nil && math.IsNaN(f.GetMax()):
			v.add(path+".max", ReasonRangeInvalid, "max is NaN; give a number")
		case f.Min != nil && f.Max != nil && f.GetMin() > f.GetMax():
			v.add(path+".min", ReasonRangeInvalid, fmt.Sprintf("min %g is greater than max %g, so no value could pass", f.GetMin(), f.GetMax()))
		}
	}

	if f.MinLength != nil || f.MaxLength != nil {
		if !isString && t != contractv1.FieldType_FIELD_TYPE_ARRAY {
			v.add(path, ReasonLengthWrongType, fmt.Sprintf("min_length and max_length apply to STRING, ARRAY and JSON fields, not %s", typeName(t)))
		}
		switch {
		case f.MinLength != nil && f.GetMinLength() < 0:
			v.add(path+".min_length", ReasonLengthInvalid, fmt.Sprintf("min_length %d is negative; give 0 or more", f.GetMinLength()))
		case f.MaxLength != nil && f.GetMaxLength() < 0:
			v.add(path+".max_length", ReasonLengthInvalid, fmt.Sprintf("max_length %d is negative; give 0 or more", f.GetMaxLength()))
		case f.MinLength != nil && f.MaxLength != nil && f.GetMinLength() > f.GetMaxLength():
			v.add(path+".min_length", ReasonLengthInvalid, fmt.Sprintf("min_length %d is greater than max_length %d, so no value could pass", f.GetMinLength(), f.GetMaxLength()))
		}
	}

	if f.Precision != nil || f.Scale != nil {
		switch {
		case t != contractv1.FieldType_FIELD_TYPE_DECIMAL:
			v.add(path, ReasonDecimalDigitsWrongType, fmt.Sprintf("precision and scale apply to DECIMAL fields, not %s; remove them or change the type", typeName(t)))
		case f.Precision == nil:
			v.add(path+".scale", ReasonDecimalDigitsInvalid, "scale needs a precision (as numeric(p, s)); give precision too")
		case f.GetPrecision() < 1 || f.GetPrecision() > MaxDecimalPrecision:
			v.add(path+".precision", ReasonDecimalDigitsInvalid, fmt.Sprintf("precision %d is outside 1..%d", f.GetPrecision(), MaxDecimalPrecision))
		case f.GetScale() < 0 || f.GetScale() > f.GetPrecision():
			v.add(path+".scale", ReasonDecimalDigitsInvalid, fmt.Sprintf("scale %d is outside 0..precision (%d)", f.GetScale(), f.GetPrecision()))
		}
	}

	if f.GetKey() {
		switch {
		case ctx.inArray:
			v.add(path+".key", ReasonKeyInArray, "a field inside an array cannot be a key; keys identify the whole record")
		case t == contractv1.FieldType_FIELD_TYPE_OBJECT || t == contractv1.FieldType_FIELD_TYPE_ARRAY || isJSON:
			v.add(path+".key", ReasonKeyNotScalar, fmt.Sprintf("a key must be a single value, not %s", typeName(t)))
		case !f.GetRequired():
			v.add(path+".key", ReasonKeyNotRequired, "a key field must be required: set required: true")
		case ctx.optional:
			v.add(path+".key", ReasonKeyNotRequired, "a key field must not sit inside an optional object: make the enclosing objects required")
		}
	}

	if id := f.GetIdentifier(); id != nil {
		switch t {
		case contractv1.FieldType_FIELD_TYPE_STRING, contractv1.FieldType_FIELD_TYPE_INT32,
			contractv1.FieldType_FIELD_TYPE_INT64, contractv1.FieldType_FIELD_TYPE_UUID:
		default:
			v.add(path+".identifier", ReasonIdentifierWrongType, fmt.Sprintf("an identifier must be STRING, INT32, INT64 or UUID, not %s", typeName(t)))
		}
		v.idmapName(path+".identifier.namespace", "namespace", id.GetNamespace(), "customer")
		v.idmapName(path+".identifier.format", "format", id.GetFormat(), "legacy-int")
	}

	if l := f.GetLayout(); l != "" && t != contractv1.FieldType_FIELD_TYPE_TIMESTAMP && t != contractv1.FieldType_FIELD_TYPE_DATE {
		v.add(path+".layout", ReasonLayoutWrongType, fmt.Sprintf("layout applies to TIMESTAMP and DATE fields, not %s", typeName(t)))
	}

	inner := fieldContext{depth: ctx.depth + 1, inArray: ctx.inArray, optional: ctx.optional || !f.GetRequired()}
	// An OBJECT without fields is any JSON object, its members unchecked:
	// what ODCS and JSON Schema say of an object that lists no properties.
	if t != contractv1.FieldType_FIELD_TYPE_OBJECT && !isJSON && len(f.GetFields()) > 0 {
		v.add(path+".fields", ReasonFieldsWrongType, fmt.Sprintf("fields apply to OBJECT and JSON fields, not %s", typeName(t)))
	}
	if len(f.GetFields()) > 0 {
		v.fields(f.GetFields(), path+".fields", inner)
	}
	switch {
	case t == contractv1.FieldType_FIELD_TYPE_ARRAY && f.GetItems() == nil:
		v.add(path+".items", ReasonArrayWithoutItems, "an ARRAY field needs items describing its elements")
	case t != contractv1.FieldType_FIELD_TYPE_ARRAY && !isJSON && f.GetItems() != nil:
		v.add(path+".items", ReasonItemsWrongType, fmt.Sprintf("items apply to ARRAY and JSON fields, not %s", typeName(t)))
	}
	if f.GetItems() != nil {
		inner.inArray = true
		v.field(f.GetItems(), path+".items", inner)
	}
}

func (v *validator) idmapName(path, what, value, example string) {
	switch {
	case value == "":
		v.add(path, ReasonIdentifierIncomplete, fmt.Sprintf("identifier %s is empty; give one such as %q", what, example))
	case len(value) > maxNameLen || !idmapName.MatchString(value):
		v.add(path, ReasonIdentifierInvalid, fmt.Sprintf("identifier %s %q is invalid; want lower-case letters, digits, '.', '_' or '-' such as %q", what, value, example))
	}
}

func fieldTypeNames() []string {
	return enumNames(contractv1.FieldType_FIELD_TYPE_UNSPECIFIED.Descriptor())
}

func (v *validator) checks(checks []*contractv1.Check) {
	first := make(map[string]string, len(checks))
	for i, c := range checks {
		path := fmt.Sprintf("checks[%d]", i)
		name := c.GetName()
		switch {
		case name == "":
			v.add(path+".name", ReasonCheckNameMissing, "check has no name")
		case len(name) > maxNameLen || !checkName.MatchString(name):
			v.add(path+".name", ReasonCheckNameInvalid, fmt.Sprintf("%q is not a valid check name; want lower-case letters, digits and _ such as \"customer_present\"", name))
		}
		if name != "" {
			if prev, dup := first[name]; dup {
				v.add(path+".name", ReasonCheckNameDuplicate, fmt.Sprintf("check %q is declared twice (first at %s); rename one", name, prev))
			} else {
				first[name] = path
			}
		}
		if strings.TrimSpace(c.GetRule()) == "" {
			v.add(path+".rule", ReasonCheckRuleMissing, "check has no rule, such as \"required(customer_id)\"")
		}
		if _, known := contractv1.Policy_name[int32(c.GetPolicy())]; !known {
			v.add(path+".policy", ReasonCheckPolicyInvalid, fmt.Sprintf("unknown policy %d; want BLOCK, QUARANTINE or ALERT", c.GetPolicy()))
		}
		if th := c.GetThreshold(); th != nil {
			switch l := th.GetLimit().(type) {
			case *contractv1.Threshold_Count:
				if l.Count < 0 {
					v.add(path+".threshold.count", ReasonThresholdInvalid, fmt.Sprintf("threshold count %d is negative; give 0 or more", l.Count))
				}
			case *contractv1.Threshold_Fraction:
				if math.IsNaN(l.Fraction) || l.Fraction < 0 || l.Fraction > 1 {
					v.add(path+".threshold.fraction", ReasonThresholdInvalid, fmt.Sprintf("threshold fraction %g is outside 0..1", l.Fraction))
				}
			}
		}
	}
}
