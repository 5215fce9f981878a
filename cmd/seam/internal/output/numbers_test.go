package output_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/output"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// -o json writes every number as a number, 64-bit integers and 0 included (the match rate of a day whose
// ids all failed to resolve), and null, not the string "NaN", where a
// value is not defined (an alert without a baseline).
func TestJSONNumbers(t *testing.T) {
	t.Parallel()
	st := &gatev1.PartitionState{Subject: "bank.ledger", Partition: "2026-10-22", MatchRate: 0, SealedMatchRate: -1,
		Counts: &gatev1.PartitionCounts{Received: 2500, Accepted: 0, Quarantined: 2500},
		Alerts: []*gatev1.Alert{{Kind: "MATCH_RATE", Observed: 0, Baseline: math.NaN(), Count: 7}, {Kind: "ROW_COUNT", Observed: math.Inf(1), Baseline: 3.5}},
		Checks: []*gatev1.CheckOutcome{{Check: "account_match", Observed: math.NaN(), Baseline: math.Inf(-1)}}}
	for _, multiline := range []bool{false, true} {
		var buf bytes.Buffer
		var err error
		if multiline {
			err = output.Proto(&buf, st)
		} else {
			err = output.ProtoLine(&buf, st)
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(buf.String(), "NaN") || strings.Contains(buf.String(), "Infinity") {
			t.Errorf("JSON holds NaN or Infinity strings:\n%s", buf.String())
		}
		var got map[string]any
		if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, buf.String())
		}
		if v, ok := got["match_rate"]; !ok || v != 0.0 {
			t.Errorf("match_rate = %v (present %v), want 0\n%s", v, ok, buf.String())
		}
		if got["sealed_match_rate"] != -1.0 || got["amendment"] != 0.0 {
			t.Errorf("sealed_match_rate = %v, amendment %v; want -1 and 0", got["sealed_match_rate"], got["amendment"])
		}
		counts := got["counts"].(map[string]any)
		if counts["accepted"] != 0.0 || counts["received"] != 2500.0 {
			t.Errorf("counts = %v, want accepted 0 and received 2500, numbers", counts)
		}
		a := got["alerts"].([]any)
		first, second := a[0].(map[string]any), a[1].(map[string]any)
		if v, ok := first["baseline"]; !ok || v != nil || first["observed"] != 0.0 || first["count"] != 7.0 {
			t.Errorf("alert without a baseline = %v, want baseline null and observed 0", first)
		}
		if v, ok := second["observed"]; !ok || v != nil || second["baseline"] != 3.5 {
			t.Errorf("alert observing infinity = %v, want observed null", second)
		}
		c := got["checks"].([]any)[0].(map[string]any)
		if c["observed"] != nil || c["baseline"] != nil || c["failures"] != 0.0 {
			t.Errorf("check = %v, want observed and baseline null, failures 0", c)
		}
	}
	// A 64-bit integer keeps every digit, above 2^53 too.
	var buf bytes.Buffer
	if err := output.ProtoLine(&buf, &gatev1.Alert{Sequence: 1<<53 + 1}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"sequence":9007199254740993`) {
		t.Errorf("alert = %s, want sequence 9007199254740993 as a number", buf.String())
	}
}
