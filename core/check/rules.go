package check

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// ArgKind is what a named rule argument accepts.
type ArgKind uint8

// Argument kinds.
const (
	// ArgNumber is a plain number: 85, -3.5, 1e6.
	ArgNumber ArgKind = iota
	// ArgCount is a whole number of zero or more: 1000.
	ArgCount
	// ArgRate is a share between 0 and 1, written 0.9 or 90%.
	ArgRate
	// ArgFraction is a relative change, written 0.15 or 15%.
	ArgFraction
	// ArgPoints is a difference of rates in percentage points: 5 or 5pt.
	ArgPoints
	// ArgPartitions is a number of trailing partitions: 7 or 7d.
	ArgPartitions
	// ArgDirection is drop, rise or both.
	ArgDirection
	// ArgDuration is a duration such as 30m, 2h or 1d.
	ArgDuration
	// ArgZone is an IANA time zone in quotes: "Europe/Berlin".
	ArgZone
)

var argKindNames = [...]string{"number", "whole number", "rate", "fraction", "points", "partitions", "direction", "duration", "time zone"}

// String names the kind as the documentation does.
func (k ArgKind) String() string { return argKindNames[k] }

// ArgSpec is one named argument of a rule.
type ArgSpec struct {
	Name string
	Kind ArgKind
	// Default is the value that applies when the argument is left out, in
	// the words of the documentation ("none", "both", "0").
	Default string
}

// RuleSpec describes one check rule: what the loader accepts, in the form
// docs/contract.md documents it.
type RuleSpec struct {
	Name string
	Kind Kind
	// Form is the rule's positional form, for example "required(FIELD)".
	Form  string
	Named []ArgSpec
	// Statistical rules are judged per partition, the others per record.
	Statistical bool
}

// Shared argument lists of the statistical rules.
var (
	argBaseline   = ArgSpec{"baseline", ArgPartitions, "none"}
	argRelative   = ArgSpec{"max_relative_change", ArgFraction, "none"}
	argPoints     = ArgSpec{"max_point_change", ArgPoints, "none"}
	argDirection  = ArgSpec{"direction", ArgDirection, "both"}
	argMinRows    = ArgSpec{"min_rows", ArgCount, "0"}
	statisticArgs = func(bound ArgKind, rate bool) []ArgSpec {
		out := []ArgSpec{{"min", bound, "none"}, {"max", bound, "none"}, argRelative}
		if rate {
			out = append(out, argPoints)
		}
		return append(out, argDirection, argBaseline, argMinRows)
	}
)

// ruleTable is the single list of check rules; the compiler and the
// documentation test both read it.
var ruleTable = []RuleSpec{
	{Name: "required", Kind: KindRequired, Form: "required(FIELD)"},
	{Name: "not_null", Kind: KindNotNull, Form: "not_null(FIELD)"},
	{Name: "pattern", Kind: KindPattern, Form: `pattern(FIELD[, "RE2"])`},
	{Name: "range", Kind: KindRange, Form: "range(FIELD)", Named: []ArgSpec{{"min", ArgNumber, "none"}, {"max", ArgNumber, "none"}}},
	{Name: "unique", Kind: KindUnique, Form: "unique(FIELD, ...)"},
	{Name: "cel", Kind: KindCEL, Form: "cel(EXPRESSION)"},
	{Name: "additional_fields", Kind: KindAdditional, Form: "additional_fields()"},
	{Name: "in_partition", Kind: KindInPartition, Form: "in_partition(FIELD)",
		Named: []ArgSpec{{"zone", ArgZone, `"UTC"`}, {"tolerance", ArgDuration, "0"}}},
	{Name: "one_of", Kind: KindOneOf, Form: "one_of(FIELD, SHAPE, SHAPE, ...)"},
	{Name: "row_count", Kind: KindRowCount, Form: "row_count()", Named: statisticArgs(ArgCount, false), Statistical: true},
	{Name: "null_rate", Kind: KindNullRate, Form: "null_rate(FIELD)", Named: statisticArgs(ArgRate, true), Statistical: true},
	{Name: "mean_drift", Kind: KindMeanDrift, Form: "mean_drift(FIELD)", Named: statisticArgs(ArgNumber, false), Statistical: true},
	{Name: "match_rate", Kind: KindMatchRate, Form: "match_rate(FIELD)", Named: statisticArgs(ArgRate, true), Statistical: true},
}

// Rules returns every check rule a contract may declare, in documentation
// order.
func Rules() []RuleSpec {
	out := slices.Clone(ruleTable)
	for i := range out {
		out[i].Named = slices.Clone(out[i].Named)
	}
	return out
}

func ruleSpec(name string) (*RuleSpec, bool) {
	for i := range ruleTable {
		if ruleTable[i].Name == name {
			return &ruleTable[i], true
		}
	}
	return nil, false
}

func ruleNames() string {
	names := make([]string, len(ruleTable))
	for i, r := range ruleTable {
		names[i] = r.Name
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func (r *RuleSpec) arg(name string) (ArgSpec, bool) {
	for _, a := range r.Named {
		if a.Name == name {
			return a, true
		}
	}
	return ArgSpec{}, false
}

func (r *RuleSpec) argNames() []string {
	names := make([]string, len(r.Named))
	for i, a := range r.Named {
		names[i] = a.Name
	}
	return names
}

// Direction says which way a change from the baseline counts.
type Direction uint8

// Directions of a relative or point bound.
const (
	// DirectionBoth counts a change either way.
	DirectionBoth Direction = iota
	// DirectionDrop counts only a fall below the baseline.
	DirectionDrop
	// DirectionRise counts only a rise above it.
	DirectionRise
)

var directionNames = [...]string{"both", "drop", "rise"}

// String returns the direction as a rule writes it.
func (d Direction) String() string { return directionNames[d] }

// numberWant says what a numeric argument kind accepts.
var numberWant = map[ArgKind]string{
	ArgNumber:     "a number",
	ArgCount:      "a whole number of zero or more",
	ArgRate:       "a rate between 0 and 1 (or 0% and 100%)",
	ArgFraction:   "a relative change such as 0.15 or 15%",
	ArgPoints:     "percentage points such as 5 or 5pt",
	ArgPartitions: "a whole number of trailing partitions such as 7 or 7d",
}

// argValue is a named argument converted by its kind.
type argValue struct {
	num       float64
	direction Direction
	duration  time.Duration
	zone      *time.Location
}

// convert checks a named argument against its kind and converts it. The
// message names the argument and what it accepts.
func convert(spec ArgSpec, a arg) (argValue, string) {
	bad := func(want string) (argValue, string) {
		return argValue{}, fmt.Sprintf("column %d: %s takes %s, not %s", a.col, spec.Name, want, a)
	}
	switch spec.Kind {
	case ArgDirection:
		for i, n := range directionNames {
			if a.ident == n {
				return argValue{direction: Direction(i)}, ""
			}
		}
		return bad("drop, rise or both")
	case ArgZone:
		if !a.isStr {
			return bad(`a time zone in quotes such as "Europe/Berlin"`)
		}
		loc, err := time.LoadLocation(a.str)
		if err != nil || a.str == "" || a.str == "Local" {
			return bad(`a known IANA time zone such as "UTC" or "Europe/Berlin"`)
		}
		return argValue{zone: loc}, ""
	case ArgDuration:
		unit := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[a.suffix]
		if !a.isNum || unit == 0 || a.num < 0 || math.IsInf(a.num, 0) || a.num*float64(unit) > float64(366*24*time.Hour) {
			return bad("a duration of at most a year such as 30m, 2h or 1d")
		}
		return argValue{duration: time.Duration(a.num * float64(unit))}, ""
	}
	if !a.isNum || math.IsNaN(a.num) || math.IsInf(a.num, 0) {
		return bad(numberWant[spec.Kind])
	}
	n := a.num
	switch spec.Kind {
	case ArgNumber:
		if a.suffix != "" {
			return bad("a plain number")
		}
	case ArgCount:
		if a.suffix != "" || n < 0 || n != math.Trunc(n) {
			return bad("a whole number of zero or more")
		}
	case ArgPartitions:
		if (a.suffix != "" && a.suffix != "d") || n < 1 || n != math.Trunc(n) {
			return bad("a whole number of trailing partitions such as 7 or 7d")
		}
	case ArgRate, ArgFraction:
		switch a.suffix {
		case "%":
			n /= 100
		case "":
		default:
			return bad("a number such as 0.15 or a percentage such as 15%")
		}
		if n < 0 || (spec.Kind == ArgRate && n > 1) {
			if spec.Kind == ArgRate {
				return bad("a rate between 0 and 1 (or 0% and 100%)")
			}
			return bad("a relative change of zero or more")
		}
	case ArgPoints:
		if a.suffix != "" && a.suffix != "pt" && a.suffix != "points" {
			return bad("percentage points such as 5 or 5pt")
		}
		if n < 0 || n > 100 {
			return bad("percentage points between 0 and 100")
		}
	}
	return argValue{num: n}, ""
}
