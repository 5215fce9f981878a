package validate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// seam validate, offline, and the gate, online, give the same verdicts on
// the same file: the same records pass, the same fail each check, the
// same batches block.
func TestValidateAgreesWithGate(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	n.SetupOrders(t)

	lines := seamtest.OrderLines(3000)
	lines[9] = strings.Replace(lines[9], `"currency":"USD"`, `"currency":"XXX"`, 1)
	lines[1499] = strings.Replace(lines[1499], `"amount":`, `"amount":-`, 1)
	lines[2998] = strings.Replace(lines[2998], `"order_id":"ORD-`, `"order_id":"ORDER-`, 1)
	lines[2000] = strings.Replace(lines[2000], `"items":`, `"items":"`, 1)
	lines[2000] = strings.Replace(lines[2000], `,"discount"`, `","discount"`, 1)
	file := seamtest.WriteFile(t, "orders.ndjson", strings.Join(lines, "\n")+"\n")

	rep, stderr, code := runValidate(t, file)
	if code != exit.OK {
		t.Fatalf("validate: exit %d (%s)", code, stderr)
	}
	ing := n.MustJSON(t, "gate", "ingest", file, "--subject", "shop.orders", "--partition", "2026-03-01", "--batch-id", "agree")
	sum := ing["summary"].(map[string]any)
	if got := seamtest.JSONInt(sum["accepted"]); got != rep.Passed {
		t.Errorf("gate accepted %d, validate passed %d", got, rep.Passed)
	}
	if got := seamtest.JSONInt(sum["quarantined"]); got != rep.Quarantined || got != 4 {
		t.Errorf("gate quarantined %d, validate %d; want 4 both", got, rep.Quarantined)
	}
	stats := n.MustJSON(t, "quarantine", "stats", "--subject", "shop.orders")
	byCheck := map[string]int64{}
	for _, c := range stats["by_check"].([]any) {
		c := c.(map[string]any)
		byCheck[c["key"].(string)] = seamtest.JSONInt(c["count"])
	}
	for _, c := range rep.Checks {
		if byCheck[c.Name] != c.Failures {
			t.Errorf("check %s: gate quarantined %d, validate counted %d (gate by check: %v)", c.Name, byCheck[c.Name], c.Failures, byCheck)
		}
	}

	// A missing key blocks at both: validate its batch, the gate its
	// partition.
	lines[1200] = strings.Replace(lines[1200], `"customer_id":`, `"customer":`, 1)
	blocked := seamtest.WriteFile(t, "blocked.ndjson", strings.Join(lines, "\n")+"\n")
	rep, _, code = runValidate(t, blocked)
	if code != exit.Failed || !rep.Blocked {
		t.Fatalf("validate of a file with a missing key: exit %d, blocked %v", code, rep.Blocked)
	}
	out, _, code := n.CLI(t, "gate", "ingest", blocked, "--subject", "shop.orders", "--partition", "2026-03-02", "--batch-id", "blocked", "-o", "json")
	if code != exit.Failed {
		t.Fatalf("gate ingest of a file with a missing key: exit %d, want 1\n%s", code, out)
	}
	var resp map[string]any
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatalf("gate ingest -o json: %v\n%s", err, out)
	}
	// The gate judges BLOCK thresholds on the whole partition: its answer
	// says the partition will be BLOCKED (validate still counts batches,
	// until it predicts partitions too).
	if p, _ := resp["partition"].(map[string]any); p["will_block"] != true {
		t.Errorf("gate answer's partition = %v, want will_block", resp["partition"])
	}
}
