package gate_test

import (
	"context"
	"encoding/json"
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
	n := seamtest.StartOrders(t)
	lines := seamtest.OrderLines(10)
	lines[3] = strings.Replace(lines[3], `"currency":"USD"`, `"currency":"XXX"`, 1)
	file := seamtest.WriteLines(t, "day.ndjson", lines)
	n.MustJSON(t, "gate", "ingest", file, "--subject", "shop.orders", "--partition", "2026-03-01")
	// The table says where the held records are, and the command it
	// names lists them.
	table := n.MustCLI(t, exit.OK, "gate", "ingest", file, "--subject", "shop.orders", "--partition", "2026-03-01")
	if !strings.Contains(table, "1 record held: seam quarantine list shop.orders --from 2026-03-01 --to 2026-03-01 shows why") {
		t.Errorf("seam gate ingest does not say where the held record is:\n%s", table)
	}

	// One JSON object, like every other command; the subject as argument
	// or flag.
	list := n.MustJSON(t, "quarantine", "list", "shop.orders")
	records, _ := list["records"].([]any)
	if len(records) != 1 {
		t.Fatalf("quarantine list -o json = %v, want one object holding the one bad record", list)
	}
	rec := records[0].(map[string]any)
	id, _ := rec["id"].(string)
	if id == "" || seamtest.JSONInt(rec["position"]) != 4 {
		t.Fatalf("quarantine list = %v, want the one bad record, at line 4", list)
	}
	if byFlag := n.MustJSON(t, "quarantine", "list", "--subject", "shop.orders"); fmt.Sprint(byFlag["records"]) != fmt.Sprint(records) {
		t.Errorf("quarantine list --subject = %v, want what the argument gives", byFlag)
	}
	n.MustCLI(t, exit.Usage, "quarantine", "list", "shop.orders", "--subject", "other.subject")
	if stats := n.MustJSON(t, "quarantine", "stats", "shop.orders"); seamtest.JSONInt(stats["total"]) != 1 {
		t.Errorf("quarantine stats shop.orders = %v, want 1 held", stats)
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

// A partition over a BLOCK threshold is explained in the table, the JSON
// and the error: the check, its counts, the contract version and the first
// failing lines, and the exit code says "no" before the seal (--no-seal)
// as after it (the default).
func TestIngestExplainsBlockedPartition(t *testing.T) {
	t.Parallel()
	n := seamtest.StartOrders(t)
	lines := seamtest.OrderLines(30)
	for _, i := range []int{12, 17} {
		lines[i] = strings.Replace(lines[i], fmt.Sprintf(`"customer_id":%d,`, 100000+i), ``, 1)
	}
	file := seamtest.WriteLines(t, "day.ndjson", lines)

	out := n.MustCLI(t, exit.Failed, "gate", "ingest", "shop.orders", file, "--partition", "2026-03-01", "--chunk-records", "10", "--no-seal")
	for _, want := range []string{"OPEN (will be BLOCKED)", "will be BLOCKED at its seal", "customer_present", "2 of 30 records", "first at line 13"} {
		if !strings.Contains(out, want) {
			t.Errorf("ingest --no-seal of a day missing customer_id twice does not say %q:\n%s", want, out)
		}
	}
	jsonOut, _, code := n.CLI(t, "gate", "ingest", file, "--subject", "shop.orders", "--partition", "2026-03-02", "--chunk-records", "10", "--no-seal", "-o", "json")
	var resp map[string]any
	if err := json.Unmarshal([]byte(jsonOut), &resp); err != nil || code != exit.Failed {
		t.Fatalf("ingest -o json: exit %d, %v\n%s", code, err, jsonOut)
	}
	p, _ := resp["partition"].(map[string]any)
	if p["will_block"] != true || p["contract_version"] != float64(1) {
		t.Fatalf("ingest -o json partition = %v, want will_block under v1", p)
	}
	var found bool
	for _, c := range p["checks"].([]any) {
		c := c.(map[string]any)
		if c["check"] == "customer_present" {
			found = true
			if seamtest.JSONInt(c["failures"]) != 2 || fmt.Sprint(c["sample_positions"]) != "[13 18]" || c["exceeded"] != true {
				t.Errorf("check customer_present = %v, want 2 failures at lines 13 and 18, exceeded", c)
			}
		}
	}
	if !found {
		t.Errorf("partition checks = %v, want customer_present among them", p["checks"])
	}

	// Sealed by default: the verdict is final, and the table, the error
	// and seam gate partition say so.
	out = n.MustCLI(t, exit.Failed, "gate", "ingest", "shop.orders", file, "--partition", "2026-03-03", "--chunk-records", "10")
	for _, want := range []string{"SEALED BLOCKED", "partition 2026-03-03 of shop.orders is BLOCKED", "customer_present failed for 2 of 30 records, first at line 13"} {
		if !strings.Contains(out, want) {
			t.Errorf("ingest of a day missing customer_id twice does not say %q:\n%s", want, out)
		}
	}
	show := n.MustCLI(t, exit.OK, "gate", "partition", "shop.orders", "2026-03-03")
	for _, want := range []string{"SEALED BLOCKED", "customer_present", "required", "13, 18"} {
		if !strings.Contains(show, want) {
			t.Errorf("gate partition of the blocked day does not say %q:\n%s", want, show)
		}
	}
}

// The file is cut as seam validate cuts it: NDJSON at line feeds only, so
// quotes inside strings never merge lines, and --chunk-records and
// --chunk-bytes are honoured.
func TestIngestChunksNDJSONAtLineFeeds(t *testing.T) {
	t.Parallel()
	n := seamtest.StartOrders(t)
	lines := seamtest.OrderLines(25)
	for i := range lines {
		// A coupon with an escaped quote, and one with a lone one.
		coupon := `"coupon":"SPRING \"25\""`
		if i%2 == 1 {
			coupon = `"coupon":"5\" OFF"`
		}
		lines[i] = strings.Replace(lines[i], `"coupon":null`, coupon, 1)
		lines[i] = strings.Replace(lines[i], `"coupon":"SPRING`+fmt.Sprint(i%100)+`"`, coupon, 1)
	}
	file := seamtest.WriteLines(t, "quotes.ndjson", lines)
	resp := n.MustJSON(t, "gate", "ingest", "shop.orders", file, "--partition", "2026-03-01", "--chunk-records", "4")
	sum := resp["summary"].(map[string]any)
	if seamtest.JSONInt(resp["chunks"]) != 7 || seamtest.JSONInt(sum["received"]) != 25 || seamtest.JSONInt(sum["accepted"]) != 25 {
		t.Errorf("25 records in chunks of 4: %v chunks, summary %v; want 7 chunks and 25 accepted", resp["chunks"], sum)
	}
	// --chunk-bytes cuts chunks by size too: with room for two of these
	// lines and not three, 25 records go in 13 chunks.
	size := 0
	for _, l := range lines {
		size = max(size, len(l)+1)
	}
	resp = n.MustJSON(t, "gate", "ingest", "shop.orders", file, "--partition", "2026-03-02", "--chunk-bytes", fmt.Sprint(2*size+size/2))
	sum = resp["summary"].(map[string]any)
	if seamtest.JSONInt(resp["chunks"]) != 13 || seamtest.JSONInt(sum["accepted"]) != 25 {
		t.Errorf("25 records in chunks of %d bytes: %v chunks, summary %v; want 13 chunks and 25 accepted", 2*size+size/2, resp["chunks"], sum)
	}
}

// An empty file is refused the same way by ingest and validate (exit 3),
// and nothing is sent.
func TestEmptyFileRefusedAlike(t *testing.T) {
	t.Parallel()
	n := seamtest.StartOrders(t)
	for _, tc := range []struct{ name, content string }{{"empty.ndjson", ""}, {"blank.ndjson", "\n \n"}, {"header-only.csv", "order_id,customer_id\n"}} {
		file := seamtest.WriteFile(t, tc.name, tc.content)
		_, errOut, code := n.CLI(t, "gate", "ingest", "shop.orders", file, "--partition", "2026-03-01")
		if code != exit.Invalid || !strings.Contains(errOut, "holds no records") {
			t.Errorf("ingest %s: exit %d (%s), want 3 and \"holds no records\"", tc.name, code, errOut)
		}
		_, errOut, code = seamtest.Run(context.Background(), "validate", "--contract", seamtest.ExampleFile(t, "shop_orders_v1.yaml"), file)
		if code != exit.Invalid || !strings.Contains(errOut, "holds no records") {
			t.Errorf("validate %s: exit %d (%s), want 3 and \"holds no records\"", tc.name, code, errOut)
		}
	}
	if m := n.MustJSON(t, "monitor", "shop.orders"); len(m) != 0 {
		t.Errorf("monitor after refused empty files = %v, want nothing received", m)
	}
}

// A stream the gate refuses (an unknown subject) ends with the gate's
// reason, not a bare end of stream.
func TestIngestIntoUnknownSubjectSaysWhy(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	file := seamtest.WriteLines(t, "day.ndjson", seamtest.OrderLines(2500))
	_, errOut, code := n.CLI(t, "gate", "ingest", "no.such", file, "--partition", "2026-03-01")
	if code != exit.Usage || !strings.Contains(errOut, "no.such") || strings.Contains(errOut, "EOF") {
		t.Errorf("ingest into an unknown subject: exit %d, %s; want 2 naming the subject", code, errOut)
	}
}

// A partition name that breaks the naming rule is bad input: exit 3,
// naming the field and the rule, and nothing is stored.
func TestIngestBadPartitionNameExits3(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	file := seamtest.WriteLines(t, "day.ndjson", seamtest.OrderLines(3))
	for _, bad := range []string{"../x", strings.Repeat("p", 2000), "2026\u200b-03-01"} {
		_, errOut, code := n.CLI(t, "gate", "ingest", "shop.orders", file, "--partition", bad)
		if code != exit.Invalid || !strings.Contains(errOut, "partition") {
			t.Errorf("ingest with partition %.20q: exit %d, %s; want 3 naming partition", bad, code, errOut)
		}
	}
}
