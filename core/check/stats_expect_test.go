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
	tests := []struct{ name, rule, want string }{
		{"floor", "match_rate(customer_id, min: 0.9)", "at least 90%"},
		{"drop", "match_rate(customer_id, max_point_change: 5, direction: drop, baseline: 7)", "within 5 points of drop of the baseline 97.9%"},
		{"aov", "mean_drift(amount, max_relative_change: 0.15, baseline: 7)", "within a relative change of 0.15 of the baseline 0.979"},
		{"volume", "row_count(min: 10, max: 20)", "between 10 and 20"},
	}
	var checks []*contractv1.Check
	want := map[string]string{}
	for _, tt := range tests {
		checks = append(checks, &contractv1.Check{Name: tt.name, Rule: tt.rule})
		want[tt.name] = tt.want
	}
	p := compile(t, orders(checks...))
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
