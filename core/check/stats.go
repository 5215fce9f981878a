package check

import (
	"fmt"
	"math"

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
	// partitions' values (NaN when the alert is on an absolute bound).
	Observed, Baseline float64
	// RelativeChange is |observed − baseline| / |baseline| (NaN without one).
	RelativeChange float64
	Message        string
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

// Monitor evaluates the statistical checks on a partition's stats against
// the trailing partitions' stats (oldest first; each check uses its last
// Baseline entries, and partitions where the metric is undefined are left
// out). A relative-change bound needs at least one baseline partition;
// absolute bounds (min, max) apply without one.
func (p *Plan) Monitor(current Stats, baseline []Stats) []Alert {
	var alerts []Alert
	for i := range p.checks {
		ch := &p.checks[i]
		if !ch.Kind.Statistical() {
			continue
		}
		obs, ok := metric(ch, current)
		if !ok {
			continue
		}
		a := Alert{Check: i, Name: ch.Name, Field: ch.Field, Policy: ch.Policy, Metric: metricNames[ch.Kind],
			Observed: obs, Baseline: math.NaN(), RelativeChange: math.NaN()}
		if ch.Baseline > 0 {
			window := baseline[max(0, len(baseline)-ch.Baseline):]
			mean, n := 0.0, int64(0)
			for _, b := range window {
				if m, ok := metric(ch, b); ok {
					mean = mergeMeans(mean, n, m, 1)
					n++
				}
			}
			if n > 0 {
				a.Baseline = mean
				a.RelativeChange = RelativeChange(obs, a.Baseline)
			}
		}
		switch {
		case !math.IsNaN(ch.Min) && obs < ch.Min:
			a.Message = fmt.Sprintf("%s %s is %.4g, below the minimum %g", a.Metric, fieldOf(ch), obs, ch.Min)
		case !math.IsNaN(ch.Max) && obs > ch.Max:
			a.Message = fmt.Sprintf("%s %s is %.4g, above the maximum %g", a.Metric, fieldOf(ch), obs, ch.Max)
		case !math.IsNaN(ch.MaxRelativeChange) && !math.IsNaN(a.RelativeChange) && a.RelativeChange > ch.MaxRelativeChange:
			a.Message = fmt.Sprintf("%s %s moved from a baseline of %.4g to %.4g, a relative change of %.3g over the allowed %g (baseline: %d partitions)",
				a.Metric, fieldOf(ch), a.Baseline, obs, a.RelativeChange, ch.MaxRelativeChange, ch.Baseline)
		default:
			continue
		}
		alerts = append(alerts, a)
	}
	return alerts
}

func fieldOf(ch *Check) string {
	if ch.Field == "" {
		return "of the partition"
	}
	return "of " + ch.Field
}
