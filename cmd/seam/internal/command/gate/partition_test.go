package gate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// ndjsonLines reads an NDJSON file written by --out; a missing file is
// nil.
func ndjsonLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return seamtest.NDJSON(t, path, string(b))
}

// The write-audit-publish loop from the command line: stage with --out
// and --no-seal, wait (open: exit 1), seal, wait (sealed: exit 0); a
// blocked file publishes nothing and removes what an earlier sending
// wrote; the corrected file sent with --replace counts once; a plain
// resend of accepted keys is quarantined as duplicates.
func TestSealPartitionWaitAndPublish(t *testing.T) {
	t.Parallel()
	n := seamtest.StartOrders(t)
	dir := t.TempDir()
	good := seamtest.WriteLines(t, "good.ndjson", seamtest.OrderLines(30))

	staged := dir + "/2026-03-01.ndjson"
	resp := n.MustJSON(t, "gate", "ingest", "shop.orders", good, "--partition", "2026-03-01", "--no-seal", "--out", staged, "--chunk-records", "7")
	if p := resp["partition"].(map[string]any); p["status"] != "PARTITION_STATUS_OPEN" {
		t.Fatalf("ingest --no-seal: partition %v, want OPEN", p)
	}
	if _, ok := resp["records"]; ok {
		t.Errorf("ingest --out -o json still prints the records; they belong in the file")
	}
	recs := ndjsonLines(t, staged)
	if len(recs) != 30 || recs[0]["record_id"] == "" || recs[0]["record"].(map[string]any)["order_id"] == nil {
		t.Fatalf("--out wrote %d records (first %v), want the 30 accepted canonical records", len(recs), recs[0])
	}
	out, errOut, code := n.CLI(t, "gate", "wait", "shop.orders", "2026-03-01", "--max-wait", "300ms")
	if code != exit.Failed || !strings.Contains(errOut, "still OPEN") || !strings.Contains(out, "OPEN") {
		t.Errorf("wait on an open partition: exit %d\n%s%s\nwant 1 saying it is still OPEN", code, out, errOut)
	}
	// The customer namespace holds no ids yet: the day passes, with the
	// match-rate alert of the whole day (exit 0: publish it).
	sealed := n.MustCLI(t, exit.OK, "gate", "seal", "shop.orders", "2026-03-01")
	for _, want := range []string{"SEALED PASSED_WITH_ALERTS", "sealed ", "customer_match", "match_rate", "MATCH_RATE"} {
		if !strings.Contains(sealed, want) {
			t.Errorf("seal of a good day does not say %q:\n%s", want, sealed)
		}
	}
	waited := n.MustJSON(t, "gate", "wait", "shop.orders", "2026-03-01")
	if waited["sealed"] != true || waited["partition"].(map[string]any)["verdict"] != "PARTITION_VERDICT_PASSED_WITH_ALERTS" {
		t.Errorf("wait on the sealed day = %v, want sealed PASSED_WITH_ALERTS", waited)
	}

	// A blocked day: nothing published, the stale file of an earlier
	// sending removed, exit 1 from ingest, seal and wait alike.
	lines := seamtest.OrderLines(30)
	lines[4] = strings.Replace(lines[4], fmt.Sprintf(`"customer_id":%d,`, 100004), ``, 1)
	bad := seamtest.WriteLines(t, "bad.ndjson", lines)
	publish := dir + "/2026-03-02.ndjson"
	if err := os.WriteFile(publish, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n.MustCLI(t, exit.Failed, "gate", "ingest", "shop.orders", bad, "--partition", "2026-03-02", "--out", publish)
	if _, err := os.Stat(publish); !os.IsNotExist(err) {
		t.Errorf("--out of a BLOCKED partition left %s (%v); want nothing published", publish, err)
	}
	n.MustCLI(t, exit.Failed, "gate", "seal", "shop.orders", "2026-03-02")
	n.MustCLI(t, exit.Failed, "gate", "wait", "shop.orders", "2026-03-02")

	// The corrected day as a replacement counts once.
	fixed := seamtest.WriteLines(t, "fixed.ndjson", seamtest.OrderLines(30))
	resp = n.MustJSON(t, "gate", "ingest", "shop.orders", fixed, "--partition", "2026-03-02", "--replace", "--out", publish)
	p := resp["partition"].(map[string]any)
	if p["verdict"] != "PARTITION_VERDICT_PASSED_WITH_ALERTS" || seamtest.JSONInt(p["attempt"]) != 2 || seamtest.JSONInt(p["counts"].(map[string]any)["accepted"]) != 30 {
		t.Errorf("replacement of the blocked day: partition %v, want PASSED_WITH_ALERTS, attempt 2, 30 accepted", p)
	}
	if got := len(ndjsonLines(t, publish)); got != 30 {
		t.Errorf("--out of the replacement holds %d records, want 30", got)
	}

	// The same records again under another batch id, without --replace:
	// every key is already in, so every record is a duplicate.
	resp = n.MustJSON(t, "gate", "ingest", "shop.orders", fixed, "--partition", "2026-03-02", "--batch-id", "again")
	sum := resp["summary"].(map[string]any)
	if seamtest.JSONInt(sum["duplicates"]) != 30 || seamtest.JSONInt(sum["accepted"]) != 0 {
		t.Errorf("plain resend of accepted keys: summary %v, want 30 duplicates, 0 accepted", sum)
	}
	show := n.MustJSON(t, "gate", "partition", "shop.orders", "2026-03-02", "--amendment", "0")
	if c := show["partition"].(map[string]any)["counts"].(map[string]any); seamtest.JSONInt(c["accepted"]) != 30 {
		t.Errorf("partition 2026-03-02 after the duplicate resend: counts %v, want 30 accepted", c)
	}
	if m := n.MustJSON(t, "monitor", "shop.orders"); !strings.Contains(fmt.Sprint(m), "duplicates:30") {
		t.Errorf("monitor after the duplicate resend = %v, want 30 duplicates counted", m)
	}

	// --out into a directory that does not exist is refused before
	// anything is sent.
	n.MustCLI(t, exit.Usage, "gate", "ingest", "shop.orders", good, "--partition", "2026-03-09", "--out", filepath.Join(dir, "nope", "x.ndjson"))
	if m := n.MustJSON(t, "monitor", "shop.orders"); strings.Contains(fmt.Sprint(m), "2026-03-09") {
		t.Errorf("ingest with an impossible --out sent records: %v", m)
	}
	n.MustCLI(t, exit.Usage, "gate", "wait", "shop.orders", "2026-03-01", "--max-wait", "0s")
	n.MustCLI(t, exit.Usage, "gate", "partition", "shop.orders", "2026-03-01", "--amendment", "-1")
	n.MustCLI(t, exit.Usage, "gate", "seal", "no.such", "2026-03-01")
	v1 := seamtest.ExampleFile(t, "shop_orders_v1.yaml")
	if out := n.MustCLI(t, exit.Usage, "contract", "register", v1, "--data-effective", "Oct 21"); !strings.Contains(out, "2026-10-21") {
		t.Errorf("--data-effective with a bad date says:\n%s\nwant an example of a good one", out)
	}
	n.MustCLI(t, exit.Usage, "contract", "register", v1, "--data-effective-reason", "why")
}
