package check_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// day is n orders, the first missing of them without customer_id, with
// amounts around mean.
func day(n, missing int, mean float64) []string {
	out := make([]string, n)
	for i := range out {
		edits := []string{fmt.Sprintf(`order_id="ORD-%010d"`, i), fmt.Sprintf(`amount=%g`, mean+float64(i%3-1))}
		if i < missing {
			edits = append(edits, "-customer_id")
		}
		out[i] = order(edits...)
	}
	return out
}

// figures validates lines in batches of the given sizes (cycling) and
// adds them up.
func figures(t *testing.T, p *check.Plan, lines []string, sizes ...int) check.Figures {
	t.Helper()
	var f check.Figures
	for start, k := 0, 0; start < len(lines); k++ {
		end := min(len(lines), start+sizes[k%len(sizes)])
		b, err := record.NewDecoder(p.Schema(), record.Options{}).Decode(recordv1.Format_FORMAT_NDJSON, []byte(strings.Join(lines[start:end], "\n")), int64(start))
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		f.AddBatch(p, p.Validate(b.Records))
		start = end
	}
	return f
}

func blockFraction(f float64) *contractv1.Check {
	return &contractv1.Check{Name: "customer_present", Rule: "required(customer_id)", Policy: contractv1.Policy_POLICY_BLOCK,
		Threshold: &contractv1.Threshold{Limit: &contractv1.Threshold_Fraction{Fraction: f}}}
}

// A BLOCK threshold is judged on the whole partition, however it was
// chunked: 0.6% of a day missing the key against 0.5% blocks the day, in
// one batch or in chunks of 1, 7 or 333 records; 0.4% passes.
func TestJudgeIsTheSameForEveryChunking(t *testing.T) {
	t.Parallel()
	p := compile(t, orders(blockFraction(0.005), &contractv1.Check{Name: "aov", Rule: "mean_drift(amount, max_relative_change: 0.15, baseline: 3)"}))
	base := figures(t, p, day(200, 0, 85), 200).Stats
	baseline := check.SameTrail(p, []check.Stats{base, base, base})
	for _, tt := range []struct {
		missing int
		want    check.Verdict
	}{{6, check.Blocked}, {4, check.Passed}} {
		lines := day(1000, tt.missing, 85)
		var first check.Judgment
		for k, sizes := range [][]int{{1000}, {1}, {7}, {333}, {997, 3}} {
			j := p.Judge(figures(t, p, lines, sizes...), baseline, check.JudgeOptions{})
			if j.Verdict != tt.want {
				t.Fatalf("%d missing in chunks %v: verdict %v, want %v (%+v)", tt.missing, sizes, j.Verdict, tt.want, j.Outcomes)
			}
			if k == 0 {
				first = j
				continue
			}
			if !sameJudgment(j, first) {
				t.Fatalf("%d missing in chunks %v judged\n%+v\nin one batch\n%+v", tt.missing, sizes, j, first)
			}
		}
		o := first.Outcomes[0]
		if o.Name != "customer_present" || o.Failures != int64(tt.missing) || o.Rows != 1000 || o.Exceeded != (tt.want == check.Blocked) || o.Final {
			t.Fatalf("outcome %+v, want customer_present failing %d of 1000 (a fraction: never final)", o, tt.missing)
		}
	}
}

// Statistics are judged on the whole partition: a drift shows in the
// day's full mean, and an amendment is not judged by its row count.
func TestJudgeMetrics(t *testing.T) {
	t.Parallel()
	p := compile(t, orders(
		&contractv1.Check{Name: "aov", Rule: "mean_drift(amount, max_relative_change: 0.15, baseline: 3)"},
		&contractv1.Check{Name: "volume", Rule: "row_count(min: 100)"},
		&contractv1.Check{Name: "plausible", Rule: "cel(amount < 100000.0)", Policy: contractv1.Policy_POLICY_ALERT},
	))
	base := figures(t, p, day(200, 0, 85), 50).Stats
	baseline := check.SameTrail(p, []check.Stats{base, base, base})
	j := p.Judge(figures(t, p, day(200, 0, 106.25), 9), baseline, check.JudgeOptions{})
	if j.Verdict != check.PassedWithAlerts {
		t.Fatalf("drift day: verdict %v (%+v), want PassedWithAlerts", j.Verdict, j.Outcomes)
	}
	var kinds []string
	for _, o := range j.Outcomes {
		kinds = append(kinds, fmt.Sprintf("%s:%v", o.Kind, o.Exceeded))
		if o.Kind == "mean" && (o.Observed < 106.2 || o.Observed > 106.3 || o.Baseline < 84.9 || o.Baseline > 85.1) {
			t.Fatalf("drift outcome %+v, want the day's full mean 106.25 against 85", o)
		}
	}
	// The row count was measured and passed: listed, not exceeded.
	if got := strings.Join(kinds, ","); got != "mean:true,row_count:false" {
		t.Fatalf("outcomes %s, want the drift exceeded and the row count measured (amounts are plausible, 200 rows)", got)
	}
	small := figures(t, p, day(5, 0, 85), 5)
	if j := p.Judge(small, baseline, check.JudgeOptions{}); j.Verdict != check.PassedWithAlerts || len(j.Outcomes) != 2 || j.Outcomes[1].Kind != "row_count" || !j.Outcomes[1].Exceeded {
		t.Fatalf("5-record partition: %+v, want a row_count alert", j)
	}
	if j := p.Judge(small, baseline, check.JudgeOptions{Amendment: true}); j.Verdict != check.Passed {
		t.Fatalf("5-record amendment: %+v, want PASSED (row count judges whole partitions)", j)
	}
}

// While a partition is open, Progress reports the BLOCK checks failing so
// far; a count threshold once exceeded is final, a fraction is not.
func TestProgress(t *testing.T) {
	t.Parallel()
	count := &contractv1.Check{Name: "customer_present", Rule: "required(customer_id)", Policy: contractv1.Policy_POLICY_BLOCK,
		Threshold: &contractv1.Threshold{Limit: &contractv1.Threshold_Count{Count: 2}}}
	for _, tt := range []struct {
		check       *contractv1.Check
		missing     int
		over, final bool
	}{{count, 2, false, false}, {count, 3, true, true}, {blockFraction(0.005), 6, true, false}} {
		p := compile(t, orders(tt.check))
		got := p.Progress(figures(t, p, day(1000, tt.missing, 85), 100))
		if len(got) != 1 || got[0].Exceeded != tt.over || got[0].Final != tt.final {
			t.Fatalf("%d missing against %v: progress %+v, want exceeded %v final %v", tt.missing, tt.check.GetThreshold(), got, tt.over, tt.final)
		}
	}
}

// Random batches of random partitions: the figures, and so the judgment,
// are the sum of the batches whatever their sizes.
func TestFiguresAddUp(t *testing.T) {
	t.Parallel()
	p := compile(t, orders(blockFraction(0.01)))
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		n := 1 + rng.IntN(300)
		lines := day(n, rng.IntN(n/10+1), 50+rng.Float64()*100)
		whole := figures(t, p, lines, n)
		sizes := []int{1 + rng.IntN(n), 1 + rng.IntN(17)}
		parts := figures(t, p, lines, sizes...)
		if whole.Stats.Rows != parts.Stats.Rows || !reflect.DeepEqual(whole.Failures, parts.Failures) ||
			math.Abs(whole.Stats.Fields["amount"].Mean-parts.Stats.Fields["amount"].Mean) > 1e-9 ||
			p.Judge(whole, nil, check.JudgeOptions{}).Verdict != p.Judge(parts, nil, check.JudgeOptions{}).Verdict {
			t.Fatalf("%d records in chunks %v: %+v, whole: %+v", n, sizes, parts, whole)
		}
	}
}

// sameJudgment compares judgments, metric values to 1e-9 (a mean merged
// batch by batch differs from one computed at once in its last bits).
func sameJudgment(a, b check.Judgment) bool {
	if a.Verdict != b.Verdict || len(a.Outcomes) != len(b.Outcomes) {
		return false
	}
	close := func(x, y float64) bool {
		return (math.IsNaN(x) && math.IsNaN(y)) || math.Abs(x-y) <= 1e-9*math.Max(1, math.Abs(y))
	}
	for i := range a.Outcomes {
		x, y := a.Outcomes[i], b.Outcomes[i]
		if !close(x.Observed, y.Observed) || !close(x.Baseline, y.Baseline) {
			return false
		}
		x.Observed, x.Baseline, y.Observed, y.Baseline = 0, 0, 0, 0
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}
