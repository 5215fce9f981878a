package check

import (
	"fmt"
	"math"
	"sort"

	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// maxSamples is how many failing positions a partition keeps per check.
const maxSamples = 10

// CheckFailures counts one record check's failures over a partition.
type CheckFailures struct {
	Count int64
	// Samples are the source positions of the first failures.
	Samples []int64
}

// Figures are what a partition accumulates over all its batches: the
// statistics of its records and, by check name, the failures of its
// record checks. Batches add to them in any order and any chunking; the
// judgment depends on the sums only.
type Figures struct {
	Stats    Stats
	Failures map[string]CheckFailures
}

// AddBatch adds a validated batch's counters under p's check names.
func (f *Figures) AddBatch(p *Plan, res *BatchResult) {
	f.Stats.Merge(res.Stats)
	for i, cr := range res.Checks {
		if cr.Failures > 0 {
			f.AddFailures(p.checks[i].Name, cr.Failures, cr.Samples)
		}
	}
}

// AddFailures adds failures of the check named name (a check of the plan,
// or one the caller judges records by, such as a mapping).
func (f *Figures) AddFailures(name string, n int64, samples []int64) {
	if f.Failures == nil {
		f.Failures = map[string]CheckFailures{}
	}
	c := f.Failures[name]
	c.Count += n
	for _, s := range samples {
		if len(c.Samples) == maxSamples {
			break
		}
		c.Samples = append(c.Samples, s)
	}
	f.Failures[name] = c
}

// Verdict is the judgment of a whole partition.
type Verdict uint8

// Verdicts, from best to worst.
const (
	Passed Verdict = iota + 1
	PassedWithAlerts
	Blocked
)

// Outcome is one check's result on a partition.
type Outcome struct {
	// Check indexes Plan.Checks; -1 for a check outside the plan (the
	// caller's, such as "mapping").
	Check  int
	Name   string
	Rule   string
	Kind   string
	Policy contractv1.Policy
	Field  string
	// Failures and Rows weigh a record check: how many of the partition's
	// records failed it.
	Failures, Rows int64
	Threshold      Threshold
	// Exceeded is set when a BLOCK check is over its threshold, an ALERT
	// record check failed at all, or a metric is out of its bounds.
	Exceeded bool
	// Final is set when more records cannot undo Exceeded: a BLOCK check
	// over a count threshold (a fraction may still be diluted).
	Final bool
	// Observed and Baseline are a metric's value and baseline (NaN when
	// none); BaselineFrom names the partitions the baseline came from.
	Observed, Baseline float64
	BaselineFrom       []string
	Samples            []int64
	Message            string
}

// Judgment is a partition's verdict and the outcomes that decided it.
type Judgment struct {
	Verdict  Verdict
	Outcomes []Outcome
}

// JudgeOptions adjust a judgment.
type JudgeOptions struct {
	// Amendment judges records that arrived after their partition was
	// sealed, on their own: every check applies except the row count,
	// which is a property of the whole partition.
	Amendment bool
}

// Judge judges a sealed partition on its figures, each statistical check
// against its trailing partitions (see Trailing). The partition is BLOCKED when
// a BLOCK check failed over its threshold (a count, or a fraction of the
// partition's records) or a BLOCK metric is out of bounds; PASSED with
// alerts when an ALERT check failed or an ALERT metric is out of bounds;
// PASSED otherwise. Outcomes list every record check that failed, by
// name, then every metric that was measured, in plan order: those within
// bounds are not Exceeded.
func (p *Plan) Judge(f Figures, trail Trailing, opts JudgeOptions) Judgment {
	j := Judgment{Verdict: Passed}
	worse := func(v Verdict) {
		if v > j.Verdict {
			j.Verdict = v
		}
	}
	for _, o := range p.recordOutcomes(f) {
		if o.Exceeded {
			switch o.Policy {
			case contractv1.Policy_POLICY_BLOCK:
				worse(Blocked)
			case contractv1.Policy_POLICY_ALERT:
				worse(PassedWithAlerts)
			}
		}
		j.Outcomes = append(j.Outcomes, o)
	}
	for _, a := range p.Measures(f.Stats, trail) {
		ch := &p.checks[a.Check]
		if opts.Amendment && ch.Kind == KindRowCount {
			continue
		}
		o := Outcome{Check: a.Check, Name: a.Name, Rule: ch.Rule, Kind: a.Metric, Policy: a.Policy, Field: a.Field, Rows: f.Stats.Rows,
			Exceeded: a.Bound != "", Final: true, Observed: a.Observed, Baseline: a.Baseline, BaselineFrom: a.BaselineFrom, Message: a.Message}
		if !o.Exceeded {
			j.Outcomes = append(j.Outcomes, o) // measured and within bounds: the partition may serve as its baseline
			continue
		}
		if a.Policy == contractv1.Policy_POLICY_BLOCK {
			worse(Blocked)
		} else {
			worse(PassedWithAlerts)
		}
		j.Outcomes = append(j.Outcomes, o)
	}
	return j
}

// Progress is what an open partition's figures say so far: the BLOCK
// checks failing in it, each marked Exceeded when over its threshold on
// the records received so far (and Final when more records cannot undo
// that). Nothing statistical is judged on a partial partition.
func (p *Plan) Progress(f Figures) []Outcome {
	var out []Outcome
	for _, o := range p.recordOutcomes(f) {
		if o.Policy == contractv1.Policy_POLICY_BLOCK {
			out = append(out, o)
		}
	}
	return out
}

// recordOutcomes weighs every record check with failures against the
// partition's records, plan checks first in plan order, then the caller's.
func (p *Plan) recordOutcomes(f Figures) []Outcome {
	rows := f.Stats.Rows
	var out []Outcome
	seen := map[string]bool{}
	for i := range p.checks {
		ch := &p.checks[i]
		fails, ok := f.Failures[ch.Name]
		if ch.Kind.Statistical() || !ok || fails.Count == 0 {
			continue
		}
		seen[ch.Name] = true
		o := Outcome{Check: i, Name: ch.Name, Rule: ch.Rule, Kind: ch.Kind.String(), Policy: ch.Policy, Field: ch.Field,
			Failures: fails.Count, Rows: rows, Threshold: ch.Threshold, Samples: fails.Samples, Observed: math.NaN(), Baseline: math.NaN()}
		switch ch.Policy {
		case contractv1.Policy_POLICY_BLOCK:
			o.Exceeded = ch.Threshold.Exceeded(fails.Count, rows)
			o.Final = o.Exceeded && !ch.Threshold.IsFraction
			o.Message = fmt.Sprintf("check %s (%s) failed %d of %d records, %s its threshold of %s", ch.Name, ch.Rule, fails.Count, rows,
				map[bool]string{true: "over", false: "within"}[o.Exceeded], thresholdText(ch.Threshold))
		case contractv1.Policy_POLICY_ALERT:
			o.Exceeded = true
			o.Message = fmt.Sprintf("%d of %d records failed ALERT check %s (%s); they passed", fails.Count, rows, ch.Name, ch.Rule)
		default:
			o.Message = fmt.Sprintf("%d of %d records failed check %s (%s) and were quarantined", fails.Count, rows, ch.Name, ch.Rule)
		}
		out = append(out, o)
	}
	var others []string
	for name, fails := range f.Failures {
		if !seen[name] && fails.Count > 0 && !p.statistical(name) {
			others = append(others, name)
		}
	}
	sort.Strings(others)
	for _, name := range others {
		fails := f.Failures[name]
		out = append(out, Outcome{Check: -1, Name: name, Kind: "record", Policy: contractv1.Policy_POLICY_QUARANTINE, Failures: fails.Count, Rows: rows,
			Samples: fails.Samples, Observed: math.NaN(), Baseline: math.NaN(),
			Message: fmt.Sprintf("%d of %d records failed %s and were quarantined", fails.Count, rows, name)})
	}
	return out
}

func (p *Plan) statistical(name string) bool {
	for i := range p.checks {
		if p.checks[i].Name == name {
			return p.checks[i].Kind.Statistical()
		}
	}
	return false
}

// thresholdText says what a threshold tolerates.
func thresholdText(t Threshold) string {
	switch {
	case t.IsFraction:
		return fmt.Sprintf("%g of the partition", t.Fraction)
	case t.Count == 0:
		return "no failure"
	}
	return fmt.Sprintf("%d records", t.Count)
}

// KeyCheck returns the index of the check that keeps the contract's key
// unique (the implied unique check of the key fields, or the declared
// check restating it), and false when the contract declares no key.
func (p *Plan) KeyCheck() (int, bool) {
	for _, u := range p.uniques {
		if p.isKey(u.slots) {
			return u.check, true
		}
	}
	return 0, false
}

// AppendKey appends the encoded contract key of a record (its key fields'
// kinds and length-prefixed bytes) to dst; false when the contract has no
// key or a key field is absent or null.
func (p *Plan) AppendKey(dst []byte, vals []record.Value) ([]byte, bool) {
	for _, u := range p.uniques {
		if p.isKey(u.slots) {
			return appendKey(dst, vals, u.slots)
		}
	}
	return dst, false
}

// isKey reports whether slots are exactly the contract's key fields.
func (p *Plan) isKey(slots []int) bool {
	keys := 0
	for _, f := range p.schema.Fields() {
		if f.Decl.GetKey() && f.Parent < 0 {
			keys++
		}
	}
	for _, s := range slots {
		if !p.schema.Field(s).Decl.GetKey() {
			return false
		}
	}
	return len(slots) > 0 && len(slots) == keys
}
