// Package check compiles a contract's fields and declared checks into a plan
// that validates decoded records without maps or reflection per record, and
// evaluates the statistical monitors of a partition against its baseline.
//
// Policies default as the gate's design says: structural checks QUARANTINE,
// except required on a key or identifier field, which BLOCKs; CEL checks
// QUARANTINE; statistical checks ALERT. A BLOCK check without a threshold
// blocks on its first failure; with a count or fraction it blocks when its
// failures exceed that count or that share of the batch. A record that fails
// a BLOCK check of a batch that is not blocked is quarantined, since it
// still broke a hard rule. Thresholds do not apply to other policies.
package check

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Kind is what a check tests.
type Kind uint8

// Check kinds. The record-level ones run per record in Validate; the
// statistical ones run per partition in Monitor.
const (
	KindDecode Kind = iota // the record decoded at all
	KindType
	KindRequired
	KindNotNull
	KindPattern
	KindEnum
	KindRange
	KindLength
	KindFormat // identifier format shape
	KindUnique // key uniqueness in the batch
	KindCEL
	KindAdditional  // undeclared fields, top-level or of one object
	KindInPartition // event time inside the partition
	KindOneOf       // a field's value has one of several shapes
	KindRowCount
	KindNullRate
	KindMeanDrift
	KindMatchRate
)

var kindNames = [...]string{"decode", "type", "required", "not_null", "pattern", "enum", "range", "length", "format", "unique", "cel",
	"additional_fields", "in_partition", "one_of", "row_count", "null_rate", "mean_drift", "match_rate"}

// String returns the kind's rule name.
func (k Kind) String() string { return kindNames[k] }

// Statistical reports whether the kind is evaluated per partition.
func (k Kind) Statistical() bool { return k >= KindRowCount }

// Threshold bounds how many failures a BLOCK check tolerates in a batch.
// The zero Threshold tolerates none.
type Threshold struct {
	Count      int64
	Fraction   float64
	IsFraction bool
}

// Exceeded reports whether failures out of total records cross the threshold.
func (t Threshold) Exceeded(failures, total int64) bool {
	if t.IsFraction {
		return float64(failures) > t.Fraction*float64(total)
	}
	return failures > t.Count
}

func (t Threshold) String() string {
	if t.IsFraction {
		return fmt.Sprintf("fraction %g", t.Fraction)
	}
	return fmt.Sprintf("count %d", t.Count)
}

// Check is one compiled check.
type Check struct {
	// Name is the declared name, or for implied checks "<field>.<kind>"
	// ("customer_id.type", "order_id.unique", "record.decode").
	Name string
	// Rule is the declared rule text, or the equivalent rule of an implied check.
	Rule string
	Kind Kind
	// Field is the checked field's path; Fields lists every field of a
	// unique check. Empty for record-level checks.
	Field  string
	Fields []string
	Policy contractv1.Policy
	// Threshold applies when Policy is BLOCK.
	Threshold Threshold
	// Implied is true for checks derived from field definitions.
	Implied bool
	// Code is the RecordError code a failure carries.
	Code recordv1.ErrorCode
	// Statistical parameters; NaN when not given. Min and Max are absolute
	// bounds of the metric (rates as shares, 0.9 for 90%);
	// MaxRelativeChange bounds |observed − baseline| / |baseline|;
	// MaxPointChange bounds a rate's change in percentage points.
	Min, Max, MaxRelativeChange, MaxPointChange float64
	// Direction says which way a relative or point change counts.
	Direction Direction
	// Baseline is how many trailing partitions form the baseline.
	Baseline int
	// MinRows is the fewest rows a partition needs to be judged or to
	// count in a baseline; 0 judges every partition.
	MinRows int64
	// Zone and Tolerance configure an in_partition check: the partition's
	// dates are in Zone, and event times up to Tolerance outside still pass.
	Zone      *time.Location
	Tolerance time.Duration
	// Shapes are the shapes a one_of check accepts.
	Shapes []Shape
}

// newCheck is a check with every optional number unset.
func newCheck(ch Check) Check {
	ch.Min, ch.Max, ch.MaxRelativeChange, ch.MaxPointChange = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	return ch
}

// IdentifierFormat validates the shape of one identifier format. idmap's
// format validators (core/idrule.Format) satisfy it.
type IdentifierFormat interface {
	Valid(id string) bool
}

// IdentifierFormats resolves a namespace's formats; idmap plugs in here.
type IdentifierFormats interface {
	IdentifierFormat(namespace, format string) (IdentifierFormat, bool)
}

// Option configures Compile.
type Option func(*compiler)

// WithIdentifierFormats makes every identifier field imply a format check
// resolved through formats; an unknown namespace or format is then a compile
// error. Without it, identifier format checks are left to idmap.
func WithIdentifierFormats(formats IdentifierFormats) Option {
	return func(c *compiler) { c.formats = formats }
}

// Error is a compile error at a contract path such as "checks[2].rule" or
// "fields[1].pattern".
type Error struct {
	Path string
	Msg  string
}

func (e *Error) Error() string { return e.Path + ": " + e.Msg }

// Plan is a contract compiled for validation. It is immutable and safe for
// concurrent use.
type Plan struct {
	schema  *record.Schema
	checks  []Check
	fields  []fieldPlan
	rules   []valueRule
	uniques []uniquePlan
	cels    []celPlan
	ids     []int // slots whose identifier values Validate extracts
	samples int
	// additional is the check of undeclared top-level fields, -1 for none.
	additional int
	// objects holds, per slot, the additional_fields(OBJECT) check of a
	// closed OBJECT field, -1 for none; nil when no object is closed.
	objects   []int
	partition []partitionPlan
	// scratch holds the memory of results given back with Recycle.
	scratch sync.Pool
}

// Schema returns the record schema the plan validates.
func (p *Plan) Schema() *record.Schema { return p.schema }

// Checks returns the compiled checks; results index them the same way.
func (p *Plan) Checks() []Check { return p.checks }

// fieldPlan holds the implied checks of one field, by check index (-1 when
// the field does not imply it).
type fieldPlan struct {
	slot, parent int
	path         string
	typ          contractv1.FieldType
	// anyType is set for a JSON field, whose range applies to numbers
	// and lengths to strings only (pattern and enum test strings alone
	// for every type).
	anyType      bool
	layout       string
	items        contractv1.FieldType
	typeCheck    int
	required     int
	pattern      *matcher
	patternCheck int
	enum         []string
	enumCheck    int
	min, max     float64 // NaN when unset
	// precision and scale bound a DECIMAL's digits (precision 0: none).
	precision, scale int32
	rangeCheck       int
	minLen           int64
	maxLen           int64 // -1 when unset
	lengthCheck      int
	format           IdentifierFormat
	formatCheck      int
	// oneOf is the field's one_of check, -1 for none; it takes over the
	// implied value checks above.
	oneOf int
}

// valueRule is a declared per-field check that is not one of the field's
// implied ones (a pattern or range given in the rule, not_null, required on
// an optional field).
type valueRule struct {
	check    int
	slot     int
	kind     Kind
	re       *matcher
	min, max float64
}

type uniquePlan struct {
	check int
	slots []int
}

type compiler struct {
	c       *contractv1.Contract
	formats IdentifierFormats
	p       *Plan
	errs    []error
	implied map[string]int // "<kind>:<field>" → check index
}

func (c *compiler) errorf(path, format string, args ...any) {
	c.errs = append(c.errs, &Error{Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (c *compiler) add(ch Check) int {
	c.p.checks = append(c.p.checks, ch)
	return len(c.p.checks) - 1
}

// Compile compiles a contract's fields and checks. Errors (all of them,
// joined) are *Error values naming the contract path.
func Compile(ct *contractv1.Contract, opts ...Option) (*Plan, error) {
	schema, err := record.NewSchema(ct.GetFields())
	if err != nil {
		return nil, fmt.Errorf("compile checks of %q: %w", ct.GetSubject(), err)
	}
	c := &compiler{c: ct, p: &Plan{schema: schema, samples: 10, additional: -1}, implied: map[string]int{}}
	for _, o := range opts {
		o(c)
	}
	c.add(newCheck(Check{Name: "record.decode", Rule: "decode()", Kind: KindDecode, Policy: contractv1.Policy_POLICY_QUARANTINE,
		Implied: true, Code: recordv1.ErrorCode_ERROR_CODE_MALFORMED}))
	c.impliedChecks()
	c.additionalFields()
	c.declaredChecks()
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	return c.p, nil
}

// fieldWhere returns the contract path of a schema slot ("fields[2].fields[0]").
func fieldWhere(s *record.Schema, slot int) string {
	f := s.Field(slot)
	var idx int
	var siblings []record.Field
	for _, g := range s.Fields() {
		if g.Parent == f.Parent {
			siblings = append(siblings, g)
		}
	}
	for i, g := range siblings {
		if g.Index == slot {
			idx = i
		}
	}
	at := fmt.Sprintf("fields[%d]", idx)
	if f.Parent >= 0 {
		return fieldWhere(s, f.Parent) + "." + at
	}
	return at
}

func (c *compiler) impliedCheck(f *record.Field, kind Kind, code recordv1.ErrorCode, rule string, policy contractv1.Policy) int {
	i := c.add(newCheck(Check{Name: f.Path + "." + kind.String(), Rule: rule, Kind: kind, Field: f.Path, Policy: policy, Implied: true, Code: code}))
	c.implied[kind.String()+":"+f.Path] = i
	return i
}

func (c *compiler) impliedChecks() {
	s := c.p.schema
	q := contractv1.Policy_POLICY_QUARANTINE
	var keys []int
	for i := range s.Fields() {
		f := s.Field(i)
		d := f.Decl
		// where names the field in errors only; it scans the schema, so
		// it is not computed for fields without one.
		where := func() string { return fieldWhere(s, i) }
		fp := fieldPlan{slot: i, parent: f.Parent, path: f.Path, typ: d.GetType(), anyType: d.GetType() == contractv1.FieldType_FIELD_TYPE_JSON, layout: d.GetLayout(),
			typeCheck: -1, required: -1, patternCheck: -1, enumCheck: -1, rangeCheck: -1, lengthCheck: -1, formatCheck: -1, oneOf: -1,
			min: math.NaN(), max: math.NaN(), maxLen: -1}
		if d.GetItems() != nil {
			fp.items = d.GetItems().GetType()
		}
		if d.GetType() == contractv1.FieldType_FIELD_TYPE_UNSPECIFIED {
			c.errorf(where()+".type", "field %q has no type; declare one such as STRING or INT64", f.Path)
		} else {
			fp.typeCheck = c.impliedCheck(f, KindType, recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH, fmt.Sprintf("type(%s, %s)", f.Path, contract.ShortName(d.GetType())), q)
		}
		if d.GetType() == contractv1.FieldType_FIELD_TYPE_DECIMAL && d.Precision != nil {
			fp.precision, fp.scale = d.GetPrecision(), d.GetScale()
		}
		if d.GetRequired() || d.GetKey() {
			policy := q
			if d.GetKey() || d.GetIdentifier() != nil {
				policy = contractv1.Policy_POLICY_BLOCK
			}
			fp.required = c.impliedCheck(f, KindRequired, recordv1.ErrorCode_ERROR_CODE_MISSING_REQUIRED, "required("+f.Path+")", policy)
		}
		if pat := d.GetPattern(); pat != "" {
			re, err := newMatcher(pat)
			if err != nil {
				c.errorf(where()+".pattern", "invalid RE2 pattern: %v", err)
			} else {
				fp.pattern = re
				fp.patternCheck = c.impliedCheck(f, KindPattern, recordv1.ErrorCode_ERROR_CODE_PATTERN_MISMATCH, "pattern("+f.Path+")", q)
			}
		}
		if len(d.GetEnum()) > 0 {
			fp.enum = d.GetEnum()
			fp.enumCheck = c.impliedCheck(f, KindEnum, recordv1.ErrorCode_ERROR_CODE_ENUM_MISMATCH, "enum("+f.Path+")", q)
		}
		if d.Min != nil || d.Max != nil {
			if d.Min != nil {
				fp.min = d.GetMin()
			}
			if d.Max != nil {
				fp.max = d.GetMax()
			}
			if fp.min > fp.max {
				c.errorf(where()+".min", "min %g is above max %g; no value could pass", fp.min, fp.max)
			}
			fp.rangeCheck = c.impliedCheck(f, KindRange, recordv1.ErrorCode_ERROR_CODE_OUT_OF_RANGE, "range("+f.Path+")", q)
		}
		if d.MinLength != nil || d.MaxLength != nil {
			fp.minLen = d.GetMinLength()
			if d.MaxLength != nil {
				fp.maxLen = d.GetMaxLength()
			}
			if fp.maxLen >= 0 && fp.minLen > fp.maxLen {
				c.errorf(where()+".min_length", "min_length %d is above max_length %d; no value could pass", fp.minLen, fp.maxLen)
			}
			fp.lengthCheck = c.impliedCheck(f, KindLength, recordv1.ErrorCode_ERROR_CODE_LENGTH, "length("+f.Path+")", q)
		}
		if id := d.GetIdentifier(); id != nil && c.formats != nil {
			v, ok := c.formats.IdentifierFormat(id.GetNamespace(), id.GetFormat())
			if !ok {
				c.errorf(where()+".identifier", "unknown identifier format %q of namespace %q; register it in idmap first", id.GetFormat(), id.GetNamespace())
			} else {
				fp.format = v
				fp.formatCheck = c.impliedCheck(f, KindFormat, recordv1.ErrorCode_ERROR_CODE_ID_INVALID, "format("+f.Path+")", q)
			}
		}
		if d.GetKey() {
			if f.Parent >= 0 {
				c.errorf(where()+".key", "key field %q is nested; only top-level fields can be keys", f.Path)
			}
			keys = append(keys, i)
		}
		c.p.fields = append(c.p.fields, fp)
	}
	if len(keys) > 0 {
		var paths []string
		for _, k := range keys {
			paths = append(paths, s.Field(k).Path)
		}
		name := strings.Join(paths, ",")
		i := c.add(newCheck(Check{Name: name + ".unique", Rule: "unique(" + strings.Join(paths, ", ") + ")", Kind: KindUnique, Field: paths[0], Fields: paths,
			Policy: q, Implied: true, Code: recordv1.ErrorCode_ERROR_CODE_DUPLICATE_KEY}))
		c.implied["unique:"+name] = i
		c.p.uniques = append(c.p.uniques, uniquePlan{check: i, slots: keys})
	}
}
