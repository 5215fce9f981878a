package gate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// Every gate command answers -o json and exits 0, 1 or 2 as the
// conventions say.
func TestCLIGateCommands(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	n.SetupOrders(t)
	lines := seamtest.OrderLines(10)
	lines[3] = strings.Replace(lines[3], `"currency":"USD"`, `"currency":"XXX"`, 1)
	file := seamtest.WriteFile(t, "day.ndjson", strings.Join(lines, "\n")+"\n")
	n.MustJSON(t, "gate", "ingest", file, "--subject", "shop.orders", "--partition", "2026-03-01")

	// One JSON object per quarantined record, one per line.
	list := n.MustJSON(t, "quarantine", "list", "--subject", "shop.orders")
	id, _ := list["id"].(string)
	if id == "" || seamtest.JSONInt(list["position"]) != 4 {
		t.Fatalf("quarantine list = %v, want the one bad record, at line 4", list)
	}
	if show := n.MustJSON(t, "quarantine", "show", id); show["id"] != id || !strings.Contains(fmt.Sprint(show["reasons"]), "ENUM_MISMATCH") {
		t.Errorf("quarantine show %s = %v", id, show)
	}
	n.MustJSON(t, "quarantine", "replay", "shop.orders", "--from", "2026-03-01", "--to", "2026-03-01", "--dry-run")
	n.MustJSON(t, "monitor", "shop.orders")
	n.MustJSON(t, "alerts", "list", "--subject", "shop.orders")
	n.MustJSON(t, "gate", "contain", "shop.orders", "--reason", "drill")
	if c := n.MustJSON(t, "gate", "containments"); !strings.Contains(c["containments"].([]any)[0].(map[string]any)["reason"].(string), "drill") {
		t.Errorf("containments = %v", c)
	}
	n.MustJSON(t, "gate", "release", "shop.orders", "--reason", "drill over")
	n.MustCLI(t, exit.Failed, "gate", "release", "shop.orders", "--reason", "again")
	n.MustCLI(t, exit.Usage, "gate", "contain", "no.such", "--reason", "x")
	n.MustCLI(t, exit.Usage, "gate", "contain", "shop.orders")
	n.MustJSON(t, "quarantine", "discard", id, "--why", "test record")
	if s := n.MustJSON(t, "quarantine", "stats", "--subject", "shop.orders"); seamtest.JSONInt(s["total"]) != 0 {
		t.Errorf("held after discarding the only record = %v, want 0", s["total"])
	}
}
