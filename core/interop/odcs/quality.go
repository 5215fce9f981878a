package odcs

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/interop"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// comparison is an ODCS operator (mustBe, mustBeLessThan…) with its bound.
type comparison struct {
	op   string // eq, ne, gt, ge, lt, le, between, notBetween
	a, b float64
	num  bool // the bound is a number
	v    *interop.Value
}

var operators = map[string]string{
	"mustBe": "eq", "mustNotBe": "ne", "mustBeGreaterThan": "gt", "mustBeGreaterOrEqualTo": "ge",
	"mustBeLessThan": "lt", "mustBeLessOrEqualTo": "le", "mustBeBetween": "between", "mustNotBeBetween": "notBetween",
	// ODCS v3.0 spellings.
	"mustBeGreaterThanOrEqualTo": "ge", "mustBeLessThanOrEqualTo": "le",
}

func (im *importer) comparison(o *interop.Object) (*comparison, error) {
	var cmp *comparison
	for key, op := range operators {
		v := o.Take(key)
		if v == nil {
			continue
		}
		if cmp != nil {
			return nil, im.fail(v, "a quality rule takes one operator; %s and %s are both given", key, cmp.v.Path)
		}
		cmp = &comparison{op: op, v: v}
		switch {
		case op == "between" || op == "notBetween":
			if v.Kind != interop.List || len(v.Items) != 2 {
				return nil, im.fail(v, "%s takes two numbers, smallest first", key)
			}
			a, ok1 := v.Items[0].Float()
			b, ok2 := v.Items[1].Float()
			if !ok1 || !ok2 || a > b {
				return nil, im.fail(v, "%s takes two numbers, smallest first", key)
			}
			cmp.a, cmp.b, cmp.num = a, b, true
		default:
			cmp.a, cmp.num = v.Float()
		}
	}
	return cmp, nil
}

// zero reports whether the comparison demands a count of nothing.
func (c *comparison) zero() bool {
	if c == nil || !c.num {
		return false
	}
	switch c.op {
	case "eq", "le":
		return c.a == 0
	case "lt":
		return c.a == 1
	case "between":
		return c.a == 0 && c.b == 0
	}
	return false
}

// atMost returns the largest allowed value of a "less than" comparison.
func (c *comparison) atMost() (float64, bool) {
	if c == nil || !c.num {
		return 0, false
	}
	switch c.op {
	case "le", "lt", "eq":
		return c.a, true
	case "between":
		return c.b, true
	}
	return 0, false
}

var metadataDropped = map[string]string{
	"id":                       "Seam checks are named, not given ids",
	"dimension":                "Seam does not sort checks into quality dimensions",
	"businessImpact":           "Seam keeps no business impact",
	"schedule":                 "Seam runs checks on every batch as it arrives, not on a schedule",
	"scheduler":                "Seam runs checks on every batch as it arrives, not on a schedule",
	"method":                   "Seam keeps no check method",
	"tags":                     "Seam checks carry no tags",
	"authoritativeDefinitions": "Seam checks carry no links to outside definitions",
}

// quality converts a list of ODCS quality rules on a property (field is its
// dotted path) or on the object (field is empty).
func (ob *objectImport) quality(v *interop.Value, field string, decl *contractv1.Field) error {
	im := ob.im
	if v.Kind != interop.List {
		return im.fail(v, "want a list of quality rules, got %s", v.Kind)
	}
	for _, q := range v.Items {
		if q.Kind != interop.Map {
			return im.fail(q, "want a quality rule (a mapping), got %s", q.Kind)
		}
		if err := ob.rule(q, field, decl); err != nil {
			return err
		}
	}
	return nil
}

func (ob *objectImport) rule(q *interop.Value, field string, decl *contractv1.Field) error {
	im := ob.im
	o := interop.NewObject(q)
	typ, _ := o.Take("type").Scalar()
	name, _ := o.Take("name").Scalar()
	desc, _ := o.Take("description").Scalar()
	sevV := o.Take("severity")
	severity, _ := sevV.Scalar()
	check := &contractv1.Check{Description: desc}
	explicitPolicy := false
	if cp := o.Take("customProperties"); cp != nil {
		err := im.custom(cp, func(prop string, val *interop.Value) (bool, error) {
			switch prop {
			case propPolicy:
				s, _ := val.Scalar()
				n, ok := contractv1.Policy_value["POLICY_"+strings.ToUpper(s)]
				if !ok {
					return true, im.fail(val, "unknown policy %q; want BLOCK, QUARANTINE or ALERT", s)
				}
				check.Policy, explicitPolicy = contractv1.Policy(n), true
				return true, nil
			case propThreshold:
				th, err := ob.threshold(val)
				check.Threshold = th
				return true, err
			}
			return false, nil
		})
		if err != nil {
			return err
		}
	}
	if !explicitPolicy {
		switch strings.ToLower(severity) {
		case "":
		case "error", "critical", "high", "blocker":
			check.Policy = contractv1.Policy_POLICY_QUARANTINE
		case "warning", "warn", "info", "low", "medium":
			check.Policy = contractv1.Policy_POLICY_ALERT
		default:
			im.note(sevV, interop.Dropped, "severity %q is not one Seam maps to a policy (error → QUARANTINE, warning or info → ALERT)", severity)
		}
	}
	if typ == "" {
		typ = "library"
	}
	subject := field
	if subject == "" {
		subject = ob.name
	}
	named := func(metric string) string {
		if name != "" {
			return checkName(name)
		}
		return checkName(subject, metric)
	}
	var err error
	switch typ {
	case "text":
		o.Take("implementation")
		im.note(q, interop.Dropped, "a text quality rule is prose for people; Seam cannot check it")
	case "sql":
		o.Take("query")
		if _, err = im.comparison(o); err != nil {
			return err
		}
		o.Take("unit")
		im.note(q, interop.Dropped, "Seam does not run SQL queries; it checks each record as it arrives (express the rule as a Seam check, for example cel(...))")
	case "custom":
		engine, _ := o.Take("engine").Scalar()
		impl := o.Take("implementation")
		if strings.EqualFold(engine, engineSeam) {
			rule, ok := impl.Scalar()
			if !ok || strings.TrimSpace(rule) == "" {
				return im.fail(impl, "a seam custom rule's implementation is a Seam check rule such as mean_drift(amount, max_relative_change: 0.15, baseline: 7)")
			}
			check.Name, check.Rule = named(strings.SplitN(rule, "(", 2)[0]), rule
			ob.add(check)
		} else {
			im.note(q, interop.Dropped, "Seam does not run %s rules; only custom rules with engine %s are Seam checks", cmp.Or(engine, "engine-less"), engineSeam)
		}
	case "library":
		err = ob.library(q, o, field, decl, check, named)
	default:
		im.note(q, interop.Dropped, "quality rule type %q is not one Seam knows (library, sql, custom, text)", typ)
		return nil
	}
	if err != nil {
		return err
	}
	for _, r := range o.Rest() {
		why, ok := metadataDropped[interop.Key(r)]
		if !ok {
			why = fmt.Sprintf("%q is not a quality rule key Seam knows", interop.Key(r))
		}
		im.note(r, interop.Dropped, "%s", why)
	}
	return nil
}

func (ob *objectImport) threshold(v *interop.Value) (*contractv1.Threshold, error) {
	if v.Kind != interop.Map {
		return nil, ob.im.fail(v, "%s is {count: N} or {fraction: F}", propThreshold)
	}
	if c, ok := v.Get("count").Int(); ok {
		return &contractv1.Threshold{Limit: &contractv1.Threshold_Count{Count: c}}, nil
	}
	if f, ok := v.Get("fraction").Float(); ok {
		return &contractv1.Threshold{Limit: &contractv1.Threshold_Fraction{Fraction: f}}, nil
	}
	return nil, ob.im.fail(v, "%s is {count: N} or {fraction: F}", propThreshold)
}

func formatNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// library converts an ODCS library metric.
func (ob *objectImport) library(q *interop.Value, o *interop.Object, field string, decl *contractv1.Field, check *contractv1.Check, named func(string) string) error {
	im := ob.im
	metric, _ := o.Take("metric").Scalar()
	if metric == "" {
		metric, _ = o.Take("rule").Scalar() // ODCS v3.0
	}
	cmp, err := im.comparison(o)
	if err != nil {
		return err
	}
	unit, _ := o.Take("unit").Scalar()
	percent := strings.EqualFold(unit, "percent") || unit == "%"
	argsV := o.Take("arguments")
	var args *interop.Object
	if argsV != nil {
		if argsV.Kind != interop.Map {
			return im.fail(argsV, "want arguments as a mapping, got %s", argsV.Kind)
		}
		args = interop.NewObject(argsV)
	}
	arg := func(key string) *interop.Value {
		if args == nil {
			return nil
		}
		return args.Take(key)
	}
	topLevel := field != "" && !strings.Contains(field, ".") && !strings.Contains(field, contract.ItemsSuffix)
	unsupported := func(why string) {
		im.note(q, interop.Dropped, "%s", why)
	}
	if cmp == nil && metric != "" {
		return im.fail(q, "library rule %s needs an operator such as mustBe: 0", metric)
	}
	tolerance := func() {
		if !cmp.zero() {
			im.note(cmp.v, interop.Approximated, "Seam fails every offending record; the tolerance (%s %s) is not applied", cmp.v.Text, unit)
		}
	}
	switch metric {
	case "nullValues", "nullCheck", "notNull":
		switch {
		case field == "":
			unsupported("a nullValues rule on a whole object has no Seam equivalent; put it on a property")
		case percent:
			max, ok := cmp.atMost()
			if !ok {
				unsupported("only an upper bound on the share of nulls maps to Seam (null_rate max)")
				break
			}
			if cmp.op == "lt" {
				im.note(cmp.v, interop.Approximated, "mustBeLessThan is checked as at most")
			}
			check.Name, check.Rule = named("null_rate"), fmt.Sprintf("null_rate(%s, max: %s)", field, formatNum(max/100))
			if check.Policy == contractv1.Policy_POLICY_QUARANTINE {
				check.Policy = contractv1.Policy_POLICY_UNSPECIFIED // partition-level checks alert
			}
			ob.add(check)
		case cmp.zero():
			check.Name, check.Rule = named("not_null"), fmt.Sprintf("required(%s)", field)
			ob.add(check)
		default:
			unsupported("a count of nulls other than zero has no Seam equivalent (Seam bounds the share of nulls with null_rate, in percent)")
		}
	case "missingValues":
		if field == "" || !cmp.zero() || percent {
			unsupported("only missingValues mustBe 0 on a property maps to Seam")
			break
		}
		var extra []string
		if mv := arg("missingValues"); mv != nil && mv.Kind == interop.List {
			for _, it := range mv.Items {
				if it.Kind == interop.String {
					extra = append(extra, strconv.Quote(it.Text))
				}
			}
		}
		check.Name, check.Rule = named("not_missing"), fmt.Sprintf("required(%s)", field)
		ob.add(check)
		if len(extra) > 0 {
			if !topLevel {
				im.note(q, interop.Dropped, "values counted as missing (%s) are checked on top-level fields only", strings.Join(extra, ", "))
				break
			}
			ob.add(&contractv1.Check{Name: named("not_missing") + "_values", Description: check.Description, Policy: check.Policy,
				Rule: fmt.Sprintf("cel(!(%s in [%s]))", field, strings.Join(extra, ", "))})
		}
	case "invalidValues", "validValues":
		if field == "" || decl == nil {
			unsupported("an invalidValues rule on a whole object has no Seam equivalent; put it on a property")
			break
		}
		if cmp.op != "eq" && cmp.op != "le" && cmp.op != "lt" {
			unsupported("only an upper bound on invalid values maps to Seam")
			break
		}
		tolerance()
		valid := arg("validValues")
		if valid == nil {
			valid = o.Take("validValues") // ODCS v3.0 put them beside the rule
		}
		if p := arg("pattern"); p != nil {
			s, _ := p.Scalar()
			decl.Pattern = s
		}
		if valid != nil {
			if valid.Kind != interop.List {
				return im.fail(valid, "want a list of valid values, got %s", valid.Kind)
			}
			var strs, lits []string
			allStrings := true
			for _, it := range valid.Items {
				switch it.Kind {
				case interop.Null:
				case interop.String:
					strs = append(strs, it.Text)
					lits = append(lits, strconv.Quote(it.Text))
				default:
					allStrings = false
					lits = append(lits, it.Text)
				}
			}
			switch {
			case decl.GetType() == contractv1.FieldType_FIELD_TYPE_STRING && allStrings:
				decl.Enum = strs
				if check.GetPolicy() == contractv1.Policy_POLICY_ALERT || check.GetPolicy() == contractv1.Policy_POLICY_BLOCK {
					im.note(q, interop.Approximated, "the allowed values become the field's enum, whose failures are quarantined (policy %s is not applied)", contract.ShortName(check.GetPolicy()))
				}
			case topLevel:
				check.Name, check.Rule = named("valid_values"), fmt.Sprintf("cel(dyn(%s) == null || %s in [%s])", field, field, strings.Join(lits, ", "))
				ob.add(check)
			default:
				unsupported("valid values of a nested non-string field are not checked")
			}
		}
	case "duplicateValues", "duplicateCount", "unique":
		if !cmp.zero() && cmp.op != "le" && cmp.op != "lt" {
			unsupported("only an upper bound on duplicates maps to Seam")
			break
		}
		tolerance()
		fields := []string{field}
		if field == "" {
			fields = nil
			if ps := arg("properties"); ps != nil && ps.Kind == interop.List {
				for _, it := range ps.Items {
					s, _ := it.Scalar()
					fields = append(fields, s)
				}
			}
			if len(fields) == 0 {
				unsupported("a duplicateValues rule on a whole object needs arguments.properties naming the fields that must be unique together")
				break
			}
		}
		for _, f := range fields {
			if strings.Contains(f, ".") {
				unsupported("uniqueness of nested fields is not checked; Seam checks top-level fields")
				fields = nil
				break
			}
		}
		if fields != nil {
			check.Name, check.Rule = named("unique"), fmt.Sprintf("unique(%s)", strings.Join(fields, ", "))
			ob.add(check)
		}
	case "rowCount":
		if field != "" {
			unsupported("rowCount applies to a whole object, not a property")
			break
		}
		var parts []string
		switch cmp.op {
		case "gt":
			parts = append(parts, "min: "+formatNum(math.Floor(cmp.a)+1))
		case "ge":
			parts = append(parts, "min: "+formatNum(cmp.a))
		case "lt":
			parts = append(parts, "max: "+formatNum(math.Ceil(cmp.a)-1))
		case "le":
			parts = append(parts, "max: "+formatNum(cmp.a))
		case "between":
			parts = append(parts, "min: "+formatNum(cmp.a), "max: "+formatNum(cmp.b))
		case "eq":
			parts = append(parts, "min: "+formatNum(cmp.a), "max: "+formatNum(cmp.a))
		default:
			unsupported("a row count that must not be a value or range has no Seam equivalent")
		}
		if parts != nil {
			check.Name, check.Rule = named("row_count"), fmt.Sprintf("row_count(%s)", strings.Join(parts, ", "))
			if check.Policy == contractv1.Policy_POLICY_QUARANTINE {
				check.Policy = contractv1.Policy_POLICY_UNSPECIFIED
			}
			im.note(q, interop.Approximated, "Seam counts rows per partition (as sent by the pipeline) and raises an alert, rather than counting the whole data set")
			ob.add(check)
		}
	default:
		unsupported(fmt.Sprintf("library metric %q has no Seam equivalent", metric))
	}
	if args != nil {
		for _, r := range args.Rest() {
			im.note(r, interop.Dropped, "argument %q is not used by Seam", interop.Key(r))
		}
	}
	return nil
}
