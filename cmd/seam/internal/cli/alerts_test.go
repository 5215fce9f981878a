package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// seam alerts list shows the alerts that still hold; ack and resolve move
// them, with their exit codes; --all shows resolved ones with who
// resolved them.
func TestCLIAlertsLifecycle(t *testing.T) {
	t.Parallel()
	n := seamtest.StartOrders(t)
	ingestBlockedDay(t, n)
	n.Seal(t, "shop.orders", "2026-03-01")
	list := func(args ...string) []map[string]any {
		t.Helper()
		got := n.MustJSON(t, append([]string{"alerts", "list", "shop.orders"}, args...)...)
		raw, _ := got["alerts"].([]any)
		var out []map[string]any
		for _, a := range raw {
			out = append(out, a.(map[string]any))
		}
		return out
	}
	open := list()
	if len(open) == 0 {
		t.Fatalf("alerts list = nothing, want the blocked partition's alerts")
	}
	for _, a := range open {
		if a["state"] != "ALERT_STATE_OPEN" {
			t.Fatalf("alerts list shows %v, want only OPEN alerts", a)
		}
	}
	seq := fmt.Sprint(open[0]["sequence"])

	n.MustCLI(t, exit.Usage, "alerts", "resolve", seq)
	n.MustCLI(t, exit.Usage, "alerts", "ack", "not-a-number")
	n.MustCLI(t, exit.Usage, "alerts", "list", "--state", "closed")
	n.MustCLI(t, exit.Usage, "alerts", "ack", "99999")
	if out := n.MustCLI(t, exit.OK, "alerts", "ack", seq, "--reason", "on it"); !strings.Contains(out, "[ACKNOWLEDGED by ") {
		t.Errorf("alerts ack printed %q, want the alert ACKNOWLEDGED with who", out)
	}
	if len(list()) != len(open) {
		t.Errorf("an acknowledged alert still holds, and is listed")
	}
	if out := n.MustCLI(t, exit.OK, "alerts", "resolve", seq, "--reason", "resent corrected"); !strings.Contains(out, "[RESOLVED by ") {
		t.Errorf("alerts resolve printed %q, want the alert RESOLVED with who", out)
	}
	n.MustCLI(t, exit.Failed, "alerts", "ack", seq)
	if got := list(); len(got) != len(open)-1 {
		t.Errorf("alerts list after resolving one = %d alerts, want %d", len(got), len(open)-1)
	}
	var resolved []map[string]any
	for _, a := range list("--all") {
		if a["state"] == "ALERT_STATE_RESOLVED" {
			resolved = append(resolved, a)
		}
	}
	if len(resolved) != 1 || resolved[0]["resolvedBy"] == "" || resolved[0]["resolution"] != "resent corrected" {
		t.Errorf("alerts list --all resolved = %v, want the one resolved with who and why", resolved)
	}
	if got := list("--state", "resolved"); len(got) != 1 {
		t.Errorf("alerts list --state resolved = %v, want 1", got)
	}
}

// ingestBlockedDay sends shop.orders a first day, 2026-03-01, whose first
// order lacks its customer: the gate blocks it.
func ingestBlockedDay(t *testing.T, n *seamtest.Node) {
	t.Helper()
	lines := seamtest.OrderLines(3)
	lines[0] = strings.Replace(lines[0], `"customer_id":100000,`, ``, 1)
	n.MustCLI(t, exit.Failed, "gate", "ingest", seamtest.WriteLines(t, "blocked.ndjson", lines), "--subject", "shop.orders", "--partition", "2026-03-01")
}
