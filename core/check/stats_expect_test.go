package check_test

import (
	"math"
	"testing"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// A statistical check says what it expects in the words its rule uses,
// with the baseline it was judged against.
func TestExpectation(t *testing.T) {
	t.Parallel()
	p := compile(t, orders(
		&contractv1.Check{Name: "floor", Rule: "match_rate(customer_id, min: 0.9)"},
		&contractv1.Check{Name: "drop", Rule: "match_rate(customer_id, max_point_change: 5, direction: drop, baseline: 7)"},
		&contractv1.Check{Name: "aov", Rule: "mean_drift(amount, max_relative_change: 0.15, baseline: 7)"},
		&contractv1.Check{Name: "volume", Rule: "row_count(min: 10, max: 20)"},
	))
	want := map[string]string{
		"floor":  "at least 90%",
		"drop":   "within 5 points of drop of the baseline 97.9%",
		"aov":    "within a relative change of 0.15 of the baseline 0.979",
		"volume": "between 10 and 20",
	}
	for _, ch := range p.Checks() {
		w, ok := want[ch.Name]
		if !ok {
			continue
		}
		if got := ch.Expectation(0.979); got != w {
			t.Errorf("%s: Expectation(0.979) = %q, want %q", ch.Name, got, w)
		}
	}
	for _, ch := range p.Checks() {
		if ch.Name == "drop" {
			if got := ch.Expectation(math.NaN()); got != "within 5 points of drop of the baseline" {
				t.Errorf("drop without a baseline: %q", got)
			}
		}
	}
}
