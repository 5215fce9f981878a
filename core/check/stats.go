package check

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// FieldStats are one field's counters over a batch or a partition.
type FieldStats struct {
	// Count is the records in which the field could appear (for a member
	// of an OBJECT field, those where the object was present).
	Count int64
	// Nulls counts absent or null values.
	Nulls int64
	// Numbers counts a numeric field's values and Mean is their mean. The
	// mean is kept rather than the sum so that no partition of legal
	// values overflows: two amounts of 1.7e308 have the mean 1.7e308,
	// while their sum is infinite.
	Numbers int64
	Mean    float64
	// IDs counts identifier values sent for lookup; Matched those that
	// resolved in their idmap namespace (set by the gate after its lookup).
	IDs     int64
	Matched int64
}

// AddNumber adds one numeric value to the mean. Each step weighs the old
// mean and the value by their shares, (n-1)/n and 1/n, so every term stays
// within the range of the values and nothing overflows.
func (f *FieldStats) AddNumber(x float64) {
	f.Numbers++
	f.Mean = mergeMeans(f.Mean, f.Numbers-1, x, 1)
}

// mergeMeans is the mean of a values with mean ma and b values with mean
// mb, computed by weights so that it cannot overflow.
func mergeMeans(ma float64, a int64, mb float64, b int64) float64 {
	switch {
	case b == 0:
		return ma
	case a == 0:
		return mb
	}
	n := float64(a) + float64(b)
	return ma*(float64(a)/n) + mb*(float64(b)/n)
}

// Stats are a batch's or a partition's counters for the statistical checks.
// Batches of one partition merge into the partition's Stats.
type Stats struct {
	Rows   int64
	Fields map[string]FieldStats
}

// Merge adds another batch's counters.
func (s *Stats) Merge(o Stats) {
	s.Rows += o.Rows
	if s.Fields == nil {
		s.Fields = make(map[string]FieldStats, len(o.Fields))
	}
	for k, f := range o.Fields {
		g := s.Fields[k]
		g.Count += f.Count
		g.Nulls += f.Nulls
		g.Mean = mergeMeans(g.Mean, g.Numbers, f.Mean, f.Numbers)
		g.Numbers += f.Numbers
		g.IDs += f.IDs
		g.Matched += f.Matched
		s.Fields[k] = g
	}
}

// Alert is a statistical check out of bounds in a partition.
type Alert struct {
	// Check indexes Plan.Checks; Name is its name.
	Check  int
	Name   string
	Field  string
	Policy contractv1.Policy
	// Metric is what was measured: row_count, null_rate, mean or match_rate.
	Metric string
	// Observed is the partition's value; Baseline the mean of the trailing
	// partitions' values (NaN when there was no baseline).
	Observed, Baseline float64
	// BaselinePartitions is how many partitions formed Baseline, and
	// BaselineFrom names them when the trail did.
	BaselinePartitions int
	BaselineFrom       []string
	// RelativeChange is |observed − baseline| / |baseline| and PointChange
	// (observed − baseline) × 100 (NaN without a baseline).
	RelativeChange, PointChange float64
	// Bound names the bound that was crossed: "min", "max",
	// "max_relative_change" or "max_point_change"; empty when the
	// partition is within them (Measures only).
	Bound   string
	Message string
}

// Measure returns a statistical check's metric over stats, and false when
// it is undefined (no rows, no numbers, no identifiers) or the partition
// has fewer rows than the check's min_rows.
func (ch *Check) Measure(s Stats) (float64, bool) {
	if s.Rows < ch.MinRows {
		return 0, false
	}
	return metric(ch, s)
}

// metric returns a statistical check's measured value over stats, and false
// when it is undefined (no rows, no numbers, no identifiers).
func metric(ch *Check, s Stats) (float64, bool) {
	f := s.Fields[ch.Field]
	switch ch.Kind {
	case KindRowCount:
		return float64(s.Rows), true
	case KindNullRate:
		if f.Count == 0 {
			return 0, false
		}
		return float64(f.Nulls) / float64(f.Count), true
	case KindMeanDrift:
		if f.Numbers == 0 {
			return 0, false
		}
		return f.Mean, true
	case KindMatchRate:
		if f.IDs == 0 {
			return 0, false
		}
		return float64(f.Matched) / float64(f.IDs), true
	}
	return 0, false
}

var metricNames = map[Kind]string{KindRowCount: "row_count", KindNullRate: "null_rate", KindMeanDrift: "mean", KindMatchRate: "match_rate"}

// IsMetric reports whether an outcome's kind is a partition metric
// (row_count, null_rate, mean, match_rate) rather than a record check.
func IsMetric(kind string) bool {
	for _, m := range metricNames {
		if m == kind {
			return true
		}
	}
	return false
}

// Metric names what a statistical check measures: row_count, null_rate,
// mean or match_rate; empty for record-level checks.
func (ch *Check) Metric() string { return metricNames[ch.Kind] }

// IsRate reports whether the check measures a share (null_rate,
// match_rate), which max_point_change and percentages apply to.
func (ch *Check) IsRate() bool { return ch.Kind == KindNullRate || ch.Kind == KindMatchRate }

// RelativeChange is |observed − baseline| / |baseline|, as in Deequ's
// relative rate of change; from a zero baseline any change is infinite.
func RelativeChange(observed, baseline float64) float64 {
	if baseline == 0 {
		if observed == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Abs(observed-baseline) / math.Abs(baseline)
}

// Baseline is what a statistical check compares a partition with.
type Baseline struct {
	// Value is the mean of the metric over the partitions used; NaN when
	// there were none.
	Value float64
	// Partitions is how many partitions formed Value.
	Partitions int
	// Label, when set, names those partitions in messages, for example
	// "2026-03-01..2026-03-07".
	Label string
	// From names the partitions that formed Value, oldest first, when the
	// trail named them.
	From []string
}

// A Sample is one trailing partition a statistical check's baseline may
// be built from: its name and its statistics.
type Sample struct {
	Partition string
	Stats     Stats
}

// Trailing gives each statistical check, by name, the trailing partitions
// its baseline may come from, oldest first. The caller chooses them: an
// honest baseline holds only partitions that passed that check and were
// not contained, so an outage never becomes the new normal.
type Trailing map[string][]Sample

// SameTrail gives every statistical check of p the same window of
// unnamed partitions, oldest first.
func SameTrail(p *Plan, window []Stats) Trailing {
	if len(window) == 0 {
		return nil
	}
	samples := make([]Sample, len(window))
	for i, st := range window {
		samples[i] = Sample{Stats: st}
	}
	t := Trailing{}
	for i := range p.checks {
		if p.checks[i].Kind.Statistical() {
			t[p.checks[i].Name] = samples
		}
	}
	return t
}

// NoBaseline is the Baseline of a partition with nothing to compare to.
var NoBaseline = Baseline{Value: math.NaN()}

// BaselineOf averages the check's metric over the last ch.Baseline entries
// of window (oldest first) where it is defined and the partition has at
// least min_rows rows. The caller chooses which partitions may serve (see
// Trailing).
func (ch *Check) BaselineOf(window []Sample) Baseline {
	if ch.Baseline <= 0 {
		return NoBaseline
	}
	mean, n := 0.0, 0
	var from []string
	for i := len(window) - 1; i >= 0 && n < ch.Baseline; i-- {
		if m, ok := ch.Measure(window[i].Stats); ok {
			mean = mergeMeans(mean, int64(n), m, 1) // an average of huge means does not overflow
			n++
			if window[i].Partition != "" {
				from = append(from, window[i].Partition)
			}
		}
	}
	if n == 0 {
		return NoBaseline
	}
	slices.Reverse(from)
	b := Baseline{Value: mean, Partitions: n, From: from}
	switch {
	case len(from) == 1:
		b.Label = from[0]
	case len(from) > 1:
		b.Label = from[0] + ".." + from[len(from)-1]
	}
	return b
}

// Judgement is one statistical check's verdict on one partition.
type Judgement struct {
	Observed float64
	Baseline Baseline
	// RelativeChange is |observed − baseline| / |baseline|; PointChange is
	// (observed − baseline) × 100, for rates in percentage points. Both are
	// NaN without a baseline.
	RelativeChange, PointChange float64
	// Bound names the crossed bound ("min", "max", "max_relative_change",
	// "max_point_change"); empty when the partition passes.
	Bound string
	// Message explains a crossed bound with the numbers that crossed it.
	Message string
}

// Breached reports whether a bound was crossed.
func (j Judgement) Breached() bool { return j.Bound != "" }

// Judge tests observed, the check's metric over one partition, against the
// check's bounds: absolute ones (min, max) always, relative and point ones
// when base has a value, counting only the check's direction. It is pure:
// the caller decides which partitions are judged and which form the
// baseline (see Measure and BaselineOf).
func (ch *Check) Judge(observed float64, base Baseline) Judgement {
	j := Judgement{Observed: observed, Baseline: base, RelativeChange: math.NaN(), PointChange: math.NaN()}
	hasBase := base.Partitions > 0 && !math.IsNaN(base.Value)
	if hasBase {
		j.RelativeChange = RelativeChange(observed, base.Value)
		j.PointChange = (observed - base.Value) * 100
	}
	counts := func() bool {
		switch ch.Direction {
		case DirectionDrop:
			return observed < base.Value
		case DirectionRise:
			return observed > base.Value
		}
		return true
	}
	what := ch.Metric() + " " + fieldOf(ch)
	switch {
	case !math.IsNaN(ch.Min) && observed < ch.Min:
		j.Bound = "min"
		j.Message = fmt.Sprintf("%s is %s, below the minimum %s", what, ch.format(observed), ch.format(ch.Min))
	case !math.IsNaN(ch.Max) && observed > ch.Max:
		j.Bound = "max"
		j.Message = fmt.Sprintf("%s is %s, above the maximum %s", what, ch.format(observed), ch.format(ch.Max))
	case hasBase && !math.IsNaN(ch.MaxPointChange) && counts() && math.Abs(j.PointChange) > ch.MaxPointChange:
		j.Bound = "max_point_change"
		j.Message = fmt.Sprintf("%s is %s, %.3g points %s the baseline of %s, over the allowed %g points%s (%s)",
			what, ch.format(observed), math.Abs(j.PointChange), map[bool]string{true: "below", false: "above"}[j.PointChange < 0],
			ch.format(base.Value), ch.MaxPointChange, ch.directionNote(), base.describe())
	case hasBase && !math.IsNaN(ch.MaxRelativeChange) && counts() && j.RelativeChange > ch.MaxRelativeChange:
		j.Bound = "max_relative_change"
		j.Message = fmt.Sprintf("%s moved from a baseline of %s to %s, a relative change of %.3g over the allowed %g%s (%s)",
			what, ch.format(base.Value), ch.format(observed), j.RelativeChange, ch.MaxRelativeChange, ch.directionNote(), base.describe())
	}
	return j
}

// Expectation says in words what a statistical check expects of a
// partition, with the baseline it was judged against (NaN when none):
// "at least 90%", "within 5 points of drop of 97.9%", "between 10 and 20,
// within 0.15 of 84.86". Empty for a check without a bound.
func (ch *Check) Expectation(baseline float64) string {
	var parts []string
	switch {
	case !math.IsNaN(ch.Min) && !math.IsNaN(ch.Max):
		parts = append(parts, fmt.Sprintf("between %s and %s", ch.format(ch.Min), ch.format(ch.Max)))
	case !math.IsNaN(ch.Min):
		parts = append(parts, "at least "+ch.format(ch.Min))
	case !math.IsNaN(ch.Max):
		parts = append(parts, "at most "+ch.format(ch.Max))
	}
	base := "of the baseline"
	if !math.IsNaN(baseline) {
		base = "of the baseline " + ch.format(baseline)
	}
	if !math.IsNaN(ch.MaxPointChange) {
		parts = append(parts, fmt.Sprintf("within %g points%s %s", ch.MaxPointChange, ch.directionNote(), base))
	}
	if !math.IsNaN(ch.MaxRelativeChange) {
		parts = append(parts, fmt.Sprintf("within a relative change of %g%s %s", ch.MaxRelativeChange, ch.directionNote(), base))
	}
	return strings.Join(parts, ", ")
}

// format renders a metric value: rates as percentages, others with four
// significant digits.
func (ch *Check) format(v float64) string {
	if ch.IsRate() {
		return strconv.FormatFloat(v*100, 'g', 4, 64) + "%"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func (ch *Check) directionNote() string {
	switch ch.Direction {
	case DirectionDrop:
		return " of drop"
	case DirectionRise:
		return " of rise"
	}
	return ""
}

func (b Baseline) describe() string {
	s := fmt.Sprintf("baseline: %d partition", b.Partitions)
	if b.Partitions != 1 {
		s += "s"
	}
	if b.Label != "" {
		s += ", " + b.Label
	}
	return s
}

// Monitor returns the statistical checks out of bounds: see Measures.
func (p *Plan) Monitor(current Stats, trail Trailing) []Alert {
	var out []Alert
	for _, a := range p.Measures(current, trail) {
		if a.Bound != "" {
			out = append(out, a)
		}
	}
	return out
}

// Measures evaluates the statistical checks on a partition's stats against
// the trailing partitions' stats (oldest first; each check uses its last
// Baseline entries, and partitions where the metric is undefined or that
// have fewer than min_rows rows are left out). A relative or point bound
// needs at least one baseline partition; absolute bounds (min, max) apply
// without one. A partition under min_rows is not judged.
func (p *Plan) Measures(current Stats, trail Trailing) []Alert {
	var alerts []Alert
	for i := range p.checks {
		ch := &p.checks[i]
		if !ch.Kind.Statistical() {
			continue
		}
		obs, ok := ch.Measure(current)
		if !ok {
			continue
		}
		j := ch.Judge(obs, ch.BaselineOf(trail[ch.Name]))
		if !j.Breached() {
			j.Message = fmt.Sprintf("%s %s is %s, within its bounds", ch.Metric(), fieldOf(ch), ch.format(obs))
			if j.Baseline.Partitions > 0 {
				j.Message += fmt.Sprintf(" (%s of %s)", j.Baseline.describe(), ch.format(j.Baseline.Value))
			}
		}
		alerts = append(alerts, Alert{Check: i, Name: ch.Name, Field: ch.Field, Policy: ch.Policy, Metric: ch.Metric(),
			Observed: obs, Baseline: j.Baseline.Value, BaselinePartitions: j.Baseline.Partitions, BaselineFrom: j.Baseline.From,
			RelativeChange: j.RelativeChange, PointChange: j.PointChange, Bound: j.Bound, Message: j.Message})
	}
	return alerts
}

func fieldOf(ch *Check) string {
	if ch.Field == "" {
		return "of the partition"
	}
	return "of " + ch.Field
}
