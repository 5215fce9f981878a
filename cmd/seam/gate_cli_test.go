package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// setupOrders registers commerce.order, shop.orders v1 and the customer
// namespace through the CLI.
func (n *node) setupOrders(t *testing.T) {
	t.Helper()
	n.mustCLI(t, 0, "canonical", "register", "-f", testdata("commerce_order.yaml"))
	n.mustCLI(t, 0, "contract", "register", "-f", testdata("shop_orders_v1.yaml"))
	n.mustCLI(t, 0, "idmap", "namespace", "create", "customer", "--format", "legacy-int:int", "--format", "uuid:uuid")
}

// seam validate, offline, and the gate, online, give the same verdicts on
// the same file: the same records pass, the same fail each check, the
// same batches block.
func TestValidateAgreesWithGate(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	n.setupOrders(t)

	lines := orderLines(3000)
	lines[9] = strings.Replace(lines[9], `"currency":"USD"`, `"currency":"XXX"`, 1)
	lines[1499] = strings.Replace(lines[1499], `"amount":`, `"amount":-`, 1)
	lines[2998] = strings.Replace(lines[2998], `"order_id":"ORD-`, `"order_id":"ORDER-`, 1)
	lines[2000] = strings.Replace(lines[2000], `"items":`, `"items":"`, 1)
	lines[2000] = strings.Replace(lines[2000], `,"discount"`, `","discount"`, 1)
	file := writeFile(t, "orders.ndjson", strings.Join(lines, "\n")+"\n")

	rep, stderr, code := runValidate(t, file)
	if code != exitOK {
		t.Fatalf("validate: exit %d (%s)", code, stderr)
	}
	ing := n.mustJSON(t, "gate", "ingest", file, "--subject", "shop.orders", "--partition", "2026-03-01", "--batch-id", "agree")
	sum := ing["summary"].(map[string]any)
	if got := jsonInt(sum["accepted"]); got != rep.Passed {
		t.Errorf("gate accepted %d, validate passed %d", got, rep.Passed)
	}
	if got := jsonInt(sum["quarantined"]); got != rep.Quarantined || got != 4 {
		t.Errorf("gate quarantined %d, validate %d; want 4 both", got, rep.Quarantined)
	}
	stats := n.mustJSON(t, "quarantine", "stats", "--subject", "shop.orders")
	byCheck := map[string]int64{}
	for _, c := range stats["by_check"].([]any) {
		c := c.(map[string]any)
		byCheck[c["key"].(string)] = jsonInt(c["count"])
	}
	for _, c := range rep.Checks {
		if byCheck[c.Name] != c.Failures {
			t.Errorf("check %s: gate quarantined %d, validate counted %d (gate by check: %v)", c.Name, byCheck[c.Name], c.Failures, byCheck)
		}
	}

	// A missing key blocks at both: validate its batch, the gate its
	// partition.
	lines[1200] = strings.Replace(lines[1200], `"customer_id":`, `"customer":`, 1)
	blocked := writeFile(t, "blocked.ndjson", strings.Join(lines, "\n")+"\n")
	rep, _, code = runValidate(t, blocked)
	if code != exitNo || !rep.Blocked {
		t.Fatalf("validate of a file with a missing key: exit %d, blocked %v", code, rep.Blocked)
	}
	out, _, code := n.cli(t, "gate", "ingest", blocked, "--subject", "shop.orders", "--partition", "2026-03-02", "--batch-id", "blocked", "-o", "json")
	if code != exitNo {
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

func jsonInt(v any) int64 {
	switch x := v.(type) {
	case float64:
		return int64(x)
	case string:
		var n int64
		json.Unmarshal([]byte(x), &n)
		return n
	}
	return 0
}

// Every gate command answers -o json and exits 0, 1 or 2 as the
// conventions say.
func TestCLIGateCommands(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	n.setupOrders(t)
	lines := orderLines(10)
	lines[3] = strings.Replace(lines[3], `"currency":"USD"`, `"currency":"XXX"`, 1)
	file := writeFile(t, "day.ndjson", strings.Join(lines, "\n")+"\n")
	n.mustJSON(t, "gate", "ingest", file, "--subject", "shop.orders", "--partition", "2026-03-01")

	// One JSON object per quarantined record, one per line.
	list := n.mustJSON(t, "quarantine", "list", "--subject", "shop.orders")
	id, _ := list["id"].(string)
	if id == "" || jsonInt(list["position"]) != 4 {
		t.Fatalf("quarantine list = %v, want the one bad record, at line 4", list)
	}
	if show := n.mustJSON(t, "quarantine", "show", id); show["id"] != id || !strings.Contains(fmt.Sprint(show["reasons"]), "ENUM_MISMATCH") {
		t.Errorf("quarantine show %s = %v", id, show)
	}
	n.mustJSON(t, "quarantine", "replay", "shop.orders", "--from", "2026-03-01", "--to", "2026-03-01", "--dry-run")
	n.mustJSON(t, "monitor", "shop.orders")
	n.mustJSON(t, "alerts", "list", "--subject", "shop.orders")
	n.mustJSON(t, "gate", "contain", "shop.orders", "--reason", "drill")
	if c := n.mustJSON(t, "gate", "containments"); !strings.Contains(c["containments"].([]any)[0].(map[string]any)["reason"].(string), "drill") {
		t.Errorf("containments = %v", c)
	}
	n.mustJSON(t, "gate", "release", "shop.orders", "--reason", "drill over")
	n.mustCLI(t, exitNo, "gate", "release", "shop.orders", "--reason", "again")
	n.mustCLI(t, exitUsage, "gate", "contain", "no.such", "--reason", "x")
	n.mustCLI(t, exitUsage, "gate", "contain", "shop.orders")
	n.mustJSON(t, "quarantine", "discard", id, "--why", "test record")
	if s := n.mustJSON(t, "quarantine", "stats", "--subject", "shop.orders"); jsonInt(s["total"]) != 0 {
		t.Errorf("held after discarding the only record = %v, want 0", s["total"])
	}
}

// The watch commands print what is already there, then follow, until
// interrupted (here, a deadline), and exit 0.
func TestCLIWatch(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	n.setupOrders(t)
	lines := orderLines(3)
	lines[0] = strings.Replace(lines[0], `"customer_id":100000,`, ``, 1)
	file := writeFile(t, "blocked.ndjson", strings.Join(lines, "\n")+"\n")
	n.mustCLI(t, exitNo, "gate", "ingest", file, "--subject", "shop.orders", "--partition", "2026-03-01")
	n.mustCLI(t, 0, "gate", "ingest", writeFile(t, "ok.ndjson", strings.Join(orderLines(3)[1:], "\n")+"\n"), "--subject", "shop.orders", "--partition", "2026-03-02")
	// Sealed, the first day is judged whole and raises its alerts.
	if _, err := gatev1.NewGateServiceClient(n.conn(t, n.admin)).SealPartition(context.Background(),
		&gatev1.SealPartitionRequest{Subject: "shop.orders", Partition: "2026-03-01"}); err != nil {
		t.Fatalf("SealPartition: %v", err)
	}

	watch := func(args ...string) []map[string]any {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		var out, errOut bytes.Buffer
		if code := run(ctx, append([]string{"--addr", n.grpcAddr, "--token", n.admin, "-o", "json"}, args...), &out, &errOut); code != exitOK {
			t.Fatalf("seam %v: exit %d (%s)", args, code, errOut.String())
		}
		var got []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			m := map[string]any{}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("seam %v: line %q is not JSON: %v", args, line, err)
			}
			got = append(got, m)
		}
		return got
	}
	events := watch("events", "watch", "--subject", "shop.orders")
	if len(events) == 0 || events[0]["type"] != "EVENT_TYPE_VERSION_REGISTERED" {
		t.Errorf("events watch = %v, want the history of shop.orders from its registration", events)
	}
	alerts := watch("alerts", "watch", "--subject", "shop.orders")
	if len(alerts) == 0 || alerts[0]["subject"] != "shop.orders" {
		t.Errorf("alerts watch = %v, want the alerts of shop.orders", alerts)
	}
}
