package demo

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/client"
)

// The incident drill at a size CI can afford: every number must add up,
// the alerts must fire on the days the story says, and the same seed must
// print the same drill.
func TestDemo(t *testing.T) {
	t.Parallel()
	cfg := demoConfig{days: 10, perDay: testPerDay, batch: 500, breakDay: 8, seed: 7, customers: 1000, knownShare: 0.98}
	play := func() (*demoOutcome, string) {
		conn, _, admin, stop, err := demoConnection(context.Background(), &client.Globals{}, false)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		var out bytes.Buffer
		o, err := runDemo(context.Background(), conn, admin, cfg, &out)
		if err != nil {
			t.Fatalf("demo: %v\n%s", err, out.String())
		}
		return o, out.String()
	}
	o, text := play()

	if o.Sent != int64(cfg.days*cfg.perDay) {
		t.Errorf("sent %d records, want %d", o.Sent, cfg.days*cfg.perDay)
	}
	if o.Sent != o.Accepted+o.Released+o.Held || o.Duplicates != 0 {
		t.Errorf("sent %d != accepted %d + released %d + held %d, or duplicates %d != 0", o.Sent, o.Accepted, o.Released, o.Held, o.Duplicates)
	}
	if o.Released == 0 {
		t.Error("the replay released nothing")
	}
	for kind, day := range map[string]int{"MEAN_DRIFT": 5, "UNANNOUNCED_CHANGE": 8, "MATCH_RATE": 8} {
		if got, ok := o.AlertDays[kind]; !ok || got != day {
			t.Errorf("%s alert first on day %d (fired: %v), want day %d", kind, got, ok, day)
		}
	}
	if o.ContainedDay != 8 || o.BlockedBatches != 1 {
		t.Errorf("contained on day %d with %d blocked batches, want day 8 and 1", o.ContainedDay, o.BlockedBatches)
	}
	if last := o.MatchRates[cfg.days-1]; last < 0.96 || last > 0.995 {
		t.Errorf("final match rate %.3f, want near 0.98", last)
	}
	if want := []string{"features.customer_ltv", "dash.daily_revenue"}; !slices.Equal(o.RerunConsumers, want) {
		t.Errorf("rerun consumers %v, want %v", o.RerunConsumers, want)
	}
	for _, want := range []string{"CONTAINS shop.orders", "notice waived", "CHANGE_ANNOUNCED to features.customer_ltv", "BACKFILL_COMPLETED", "reconciliation:", "✓"} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}

	if _, again := play(); again != text {
		t.Errorf("the same seed printed a different drill:\nfirst:\n%s\nsecond:\n%s", text, again)
	}
}
