package check

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/seamdata/seam/core/contract"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// declaredChecks compiles the contract's checks. A declared check that
// restates an implied one (required(f) of a required field, unique of the
// key fields, pattern(f) or range(f) without their own arguments) replaces
// it, so its name, policy and threshold decide instead of the defaults.
func (c *compiler) declaredChecks() {
	names := map[string]int{}
	for i, decl := range c.c.GetChecks() {
		where := fmt.Sprintf("checks[%d]", i)
		if decl.GetName() == "" {
			c.errorf(where+".name", "empty; every check needs a name")
		} else if j, dup := names[decl.GetName()]; dup {
			c.errorf(where+".name", "%q is also the name of checks[%d]; names must be unique", decl.GetName(), j)
		}
		names[decl.GetName()] = i
		call, err := parseRule(decl.GetRule())
		if err != nil {
			c.errorf(where+".rule", "%v", err)
			continue
		}
		spec, ok := ruleSpec(call.name)
		if !ok {
			c.errorf(where+".rule", "column 1: unknown rule %q; use one of %s", call.name, ruleNames())
			continue
		}
		args := map[string]argValue{}
		bad := false
		for _, key := range slices.Sorted(maps.Keys(call.named)) {
			a := call.named[key]
			as, ok := spec.arg(key)
			if !ok {
				c.errorf(where+".rule", "column %d: %s does not take %q; it takes %s", a.col, call.name, key, orNone(spec.argNames()))
				bad = true
				continue
			}
			v, msg := convert(as, a)
			if msg != "" {
				c.errorf(where+".rule", "%s", msg)
				bad = true
				continue
			}
			args[key] = v
		}
		if bad {
			continue
		}
		ch := newCheck(Check{Name: decl.GetName(), Rule: decl.GetRule(), Kind: spec.Kind, Policy: decl.GetPolicy()})
		if t := decl.GetThreshold(); t != nil {
			switch l := t.GetLimit().(type) {
			case *contractv1.Threshold_Count:
				if l.Count < 0 {
					c.errorf(where+".threshold.count", "%d is negative; use 0 to block on any failure", l.Count)
				}
				ch.Threshold = Threshold{Count: l.Count}
			case *contractv1.Threshold_Fraction:
				if l.Fraction < 0 || l.Fraction > 1 || math.IsNaN(l.Fraction) {
					c.errorf(where+".threshold.fraction", "%g is outside [0, 1]", l.Fraction)
				}
				ch.Threshold = Threshold{Fraction: l.Fraction, IsFraction: true}
			}
		}
		c.declared(where, call, args, ch)
	}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "no named arguments"
	}
	return strings.Join(s, ", ")
}

// fieldArgs resolves a call's positional arguments as field paths.
func (c *compiler) fieldArgs(where string, call *call, min, max int) ([]int, bool) {
	if len(call.args) < min || len(call.args) > max {
		want := fmt.Sprintf("%d field", min)
		if max > min {
			want = fmt.Sprintf("%d to %d fields", min, max)
		}
		if max > 100 {
			want = fmt.Sprintf("at least %d field", min)
		}
		c.errorf(where+".rule", "column 1: %s takes %s, got %d arguments", call.name, want, len(call.args))
		return nil, false
	}
	var slots []int
	for _, a := range call.args {
		if a.ident == "" {
			c.errorf(where+".rule", "column %d: expected a field name, found %s", a.col, a)
			return nil, false
		}
		slot, ok := c.p.schema.Lookup(a.ident)
		if !ok {
			c.errorf(where+".rule", "column %d: field %q is not declared in the contract's fields", a.col, a.ident)
			return nil, false
		}
		slots = append(slots, slot)
	}
	return slots, true
}

func (c *compiler) declared(where string, call *call, args map[string]argValue, ch Check) {
	stat := ch.Kind.Statistical()
	explicit := ch.Policy != contractv1.Policy_POLICY_UNSPECIFIED
	switch {
	case ch.Policy != contractv1.Policy_POLICY_UNSPECIFIED:
	case stat:
		ch.Policy = contractv1.Policy_POLICY_ALERT
	default:
		ch.Policy = contractv1.Policy_POLICY_QUARANTINE
	}
	num := func(key string) float64 {
		if a, ok := args[key]; ok {
			return a.num
		}
		return math.NaN()
	}
	switch ch.Kind {
	case KindAdditional:
		slots, ok := c.fieldArgs(where, call, 0, 1)
		if !ok {
			return
		}
		ch.Code = recordv1.ErrorCode_ERROR_CODE_UNDECLARED_FIELD
		if len(slots) == 1 {
			c.objectAdditional(where, call, ch, slots[0])
			return
		}
		if i := c.p.additional; i >= 0 && c.p.checks[i].Implied {
			c.replace(i, ch, explicit)
			return
		}
		if c.p.additional >= 0 {
			c.errorf(where+".rule", "column 1: additional_fields() is declared twice; keep one")
			return
		}
		c.p.additional = c.add(ch)
		return
	case KindCEL:
		ch.Code = recordv1.ErrorCode_ERROR_CODE_CHECK_FAILED
		prg, err := c.compileCEL(call.expr)
		if err != nil {
			c.errorf(where+".rule", "column %d: %v", call.exprCol, err)
			return
		}
		c.p.cels = append(c.p.cels, celPlan{check: c.add(ch), prg: prg})
		return
	case KindUnique:
		slots, ok := c.fieldArgs(where, call, 1, math.MaxInt)
		if !ok {
			return
		}
		for _, s := range slots {
			if c.p.schema.Field(s).Parent >= 0 {
				c.errorf(where+".rule", "field %q is nested; unique takes top-level fields", c.p.schema.Field(s).Path)
				return
			}
		}
		ch.Code = recordv1.ErrorCode_ERROR_CODE_DUPLICATE_KEY
		for _, s := range slots {
			ch.Fields = append(ch.Fields, c.p.schema.Field(s).Path)
		}
		ch.Field = ch.Fields[0]
		if i, ok := c.implied["unique:"+strings.Join(ch.Fields, ",")]; ok {
			c.replace(i, ch, explicit)
			return
		}
		c.p.uniques = append(c.p.uniques, uniquePlan{check: c.add(ch), slots: slots})
		return
	case KindRowCount:
		if _, ok := c.fieldArgs(where, call, 0, 0); !ok {
			return
		}
		c.statistical(where, call, args, ch)
		return
	}
	// Every remaining kind names one field.
	fieldCall := *call
	if ch.Kind == KindPattern && len(call.args) == 2 {
		fieldCall.args = call.args[:1] // the second is the pattern
	}
	if ch.Kind == KindOneOf && len(call.args) > 1 {
		fieldCall.args = call.args[:1] // the others are shapes
	}
	slots, ok := c.fieldArgs(where, &fieldCall, 1, 1)
	if !ok {
		return
	}
	slot := slots[0]
	fp := &c.p.fields[slot]
	ch.Field = fp.path
	switch ch.Kind {
	case KindRequired, KindNotNull:
		ch.Code = recordv1.ErrorCode_ERROR_CODE_MISSING_REQUIRED
		if i, ok := c.implied["required:"+fp.path]; ok && ch.Kind == KindRequired {
			c.replace(i, ch, explicit)
			return
		}
		if d := c.p.schema.Field(slot).Decl; !explicit && ch.Kind == KindRequired && (d.GetKey() || d.GetIdentifier() != nil) {
			ch.Policy = contractv1.Policy_POLICY_BLOCK
		}
		c.p.rules = append(c.p.rules, valueRule{check: c.add(ch), slot: slot, kind: ch.Kind})
	case KindPattern:
		ch.Code = recordv1.ErrorCode_ERROR_CODE_PATTERN_MISMATCH
		if len(call.args) == 1 {
			if i, ok := c.implied["pattern:"+fp.path]; ok {
				c.replace(i, ch, explicit)
				return
			}
			c.errorf(where+".rule", "column %d: field %q declares no pattern; give one as pattern(%s, \"^...$\")", call.args[0].col, fp.path, fp.path)
			return
		}
		a := call.args[1]
		re, err := newMatcher(a.str)
		if !a.isStr || err != nil {
			c.errorf(where+".rule", "column %d: expected an RE2 pattern string: %v", a.col, err)
			return
		}
		c.p.rules = append(c.p.rules, valueRule{check: c.add(ch), slot: slot, kind: KindPattern, re: re})
	case KindRange:
		ch.Code = recordv1.ErrorCode_ERROR_CODE_OUT_OF_RANGE
		lo, hi := num("min"), num("max")
		if math.IsNaN(lo) && math.IsNaN(hi) {
			if i, ok := c.implied["range:"+fp.path]; ok {
				c.replace(i, ch, explicit)
				return
			}
			c.errorf(where+".rule", "column 1: field %q declares no min or max; give them as range(%s, min: 0, max: 100)", fp.path, fp.path)
			return
		}
		if lo > hi {
			c.errorf(where+".rule", "column 1: min %g is above max %g; no value could pass", lo, hi)
			return
		}
		ch.Min, ch.Max = lo, hi
		c.p.rules = append(c.p.rules, valueRule{check: c.add(ch), slot: slot, kind: KindRange, min: lo, max: hi})
	case KindInPartition:
		c.inPartition(where, call, args, ch, slot)
	case KindOneOf:
		c.oneOf(where, call, ch, slot)
	case KindNullRate:
		c.statistical(where, call, args, ch)
	case KindMeanDrift:
		if !contract.IsNumeric(fp.typ) {
			c.errorf(where+".rule", "column %d: mean_drift needs a numeric field; %q is %s", call.args[0].col, fp.path, contract.ShortName(fp.typ))
			return
		}
		c.statistical(where, call, args, ch)
	case KindMatchRate:
		if c.p.schema.Field(slot).Decl.GetIdentifier() == nil {
			c.errorf(where+".rule", "column %d: match_rate needs an identifier field; %q declares no identifier", call.args[0].col, fp.path)
			return
		}
		if !slices.Contains(c.p.ids, slot) {
			c.p.ids = append(c.p.ids, slot)
		}
		c.statistical(where, call, args, ch)
	}
}

// statistical finishes a partition-level check: a relative or point change
// needs a baseline, a direction needs one of them, and every check needs a
// bound to test.
func (c *compiler) statistical(where string, call *call, args map[string]argValue, ch Check) {
	num := func(key string) float64 {
		if a, ok := args[key]; ok {
			return a.num
		}
		return math.NaN()
	}
	ch.Min, ch.Max = num("min"), num("max")
	ch.MaxRelativeChange, ch.MaxPointChange = num("max_relative_change"), num("max_point_change")
	if a, ok := args["baseline"]; ok {
		ch.Baseline = int(a.num)
	}
	if a, ok := args["min_rows"]; ok {
		ch.MinRows = int64(a.num)
	}
	relative := !math.IsNaN(ch.MaxRelativeChange) || !math.IsNaN(ch.MaxPointChange)
	if a, ok := args["direction"]; ok {
		if !relative {
			c.errorf(where+".rule", "column %d: direction applies to max_relative_change or max_point_change; give one of them", call.named["direction"].col)
			return
		}
		ch.Direction = a.direction
	}
	if relative && ch.Baseline == 0 {
		bound := "max_relative_change"
		if math.IsNaN(ch.MaxRelativeChange) {
			bound = "max_point_change"
		}
		c.errorf(where+".rule", "column 1: %s needs a baseline, for example baseline: 7", bound)
		return
	}
	if !relative && math.IsNaN(ch.Min) && math.IsNaN(ch.Max) {
		spec, _ := ruleSpec(call.name)
		c.errorf(where+".rule", "column 1: %s needs a bound: min, max, max_relative_change%s (it takes %s)", call.name,
			map[bool]string{true: " or max_point_change", false: ""}[ch.Kind == KindNullRate || ch.Kind == KindMatchRate], orNone(spec.argNames()))
		return
	}
	if !math.IsNaN(ch.Min) && !math.IsNaN(ch.Max) && ch.Min > ch.Max {
		c.errorf(where+".rule", "column 1: min %g is above max %g; no partition could pass", ch.Min, ch.Max)
		return
	}
	switch ch.Kind {
	case KindNullRate:
		ch.Code = recordv1.ErrorCode_ERROR_CODE_MISSING_REQUIRED
	case KindMatchRate:
		ch.Code = recordv1.ErrorCode_ERROR_CODE_ID_UNMAPPED
	default:
		ch.Code = recordv1.ErrorCode_ERROR_CODE_CHECK_FAILED
	}
	c.add(ch)
}

// replace puts a declared check in place of the implied check it restates,
// keeping the implied check's compiled evaluation.
func (c *compiler) replace(i int, ch Check, explicit bool) {
	old := c.p.checks[i]
	ch.Code, ch.Field, ch.Fields = old.Code, old.Field, old.Fields
	if !explicit {
		ch.Policy = old.Policy
	}
	c.p.checks[i] = ch
	for k, v := range c.implied {
		if v == i {
			delete(c.implied, k) // a second declared restatement adds a new check
		}
	}
}
