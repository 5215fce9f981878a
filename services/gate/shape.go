package gate

import (
	"fmt"

	"github.com/seamdata/seam/core/lexical"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

const contractPolicyAlert = contractv1.Policy_POLICY_ALERT

// minClusterRecords is the fewest failing values of one shape that count
// as a cluster: a handful of odd records is noise, not a changed source.
const minClusterRecords = 10

// shapes counts, by field and shape, the values of a batch that failed a
// type or identifier-format check. A partition adds them up; its seal
// reports a field whose failing values share one shape in a large share
// of its records as an unannounced change (figures.go).
func shapes(plan *check.Plan, b *record.Batch, res *check.BatchResult) map[string]shapeFigure {
	checks := plan.Checks()
	var out map[string]shapeFigure
	for i := range res.Records {
		for _, f := range res.Records[i].Failures {
			k := checks[f.Check].Kind
			if k != check.KindType && k != check.KindFormat {
				continue
			}
			slot, ok := plan.Schema().Lookup(f.Field)
			if !ok {
				continue
			}
			v := b.Records[i].Values[slot]
			shape := shapeOf(v)
			key := f.Field + "\x00" + shape
			if out == nil {
				out = map[string]shapeFigure{}
			}
			sf, ok := out[key]
			if !ok {
				decl := plan.Schema().Field(slot).Decl
				declared := decl.GetType().String()[len("FIELD_TYPE_"):]
				if id := decl.GetIdentifier(); id != nil {
					declared += " (" + id.GetNamespace() + "/" + id.GetFormat() + ")"
				}
				sf = shapeFigure{Field: f.Field, Shape: shape, Declared: declared, Sample: sampleOf(v)}
			}
			sf.Count++
			out[key] = sf
		}
	}
	return out
}

// shapeOf names what a value looks like, coarsely enough that one
// changed source produces one shape.
func shapeOf(v record.Value) string {
	switch v.Kind() {
	case record.KindString, record.KindRaw:
		b := v.Bytes()
		switch {
		case lexical.IsUUID(b):
			return "uuid"
		case allDigits(b):
			return "digit string"
		case len(b) == 0:
			return "empty string"
		}
		return "string"
	case record.KindNumber:
		if v.IsInt() {
			return "integer"
		}
		return "number"
	case record.KindBool:
		return "boolean"
	case record.KindObject:
		return "object"
	case record.KindArray:
		return "array"
	}
	return v.Kind().String()
}

func sampleOf(v record.Value) string {
	b := v.Bytes()
	if len(b) > 40 {
		return fmt.Sprintf("%q…", b[:40])
	}
	return fmt.Sprintf("%q", b)
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

func thresholdFraction(f float64) *contractv1.Threshold {
	return &contractv1.Threshold{Limit: &contractv1.Threshold_Fraction{Fraction: f}}
}

func thresholdCount(n int64) *contractv1.Threshold {
	return &contractv1.Threshold{Limit: &contractv1.Threshold_Count{Count: n}}
}

func thresholdText(d interface {
	GetThreshold() *contractv1.Threshold
}) string {
	switch l := d.GetThreshold().GetLimit().(type) {
	case *contractv1.Threshold_Fraction:
		return fmt.Sprintf("more than %g of the batch", l.Fraction)
	case *contractv1.Threshold_Count:
		if l.Count == 0 {
			return "no failure tolerated"
		}
		return fmt.Sprintf("more than %d records", l.Count)
	}
	return "no failure tolerated"
}
