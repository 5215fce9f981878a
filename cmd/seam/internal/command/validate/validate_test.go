package validate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/command/validate"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
	"github.com/seamdata/seam/core/examples"
)

func runValidate(t *testing.T, args ...string) (validate.Report, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := seamtest.RunTo(context.Background(), append([]string{"validate", "--contract", seamtest.ExampleFile(t, "shop_orders_v1.yaml"), "-o", "json"}, args...), &out, &errOut)
	var rep validate.Report
	if code != exit.Usage {
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("validate -o json: %v\nstdout: %s\nstderr: %s", err, out.String(), errOut.String())
		}
	}
	return rep, errOut.String(), code
}

func TestValidateNDJSON(t *testing.T) {
	t.Parallel()
	lines := seamtest.OrderLines(2500)
	clean := seamtest.WriteLines(t, "clean.ndjson", lines)
	rep, stderr, code := runValidate(t, clean)
	if code != exit.OK || rep.Records != 2500 || rep.Passed != 2500 || rep.Batches != 3 || rep.Blocked {
		t.Fatalf("clean file: exit %d, report %+v (stderr %s); want exit 0, 2500 records passed in 3 batches", code, rep, stderr)
	}

	// Line 5 lacks the required customer_id (a BLOCK check); line 1203 has
	// a currency outside the enum (QUARANTINE).
	bad := append([]string(nil), lines...)
	bad[4] = strings.Replace(bad[4], `"customer_id":100004,`, ``, 1)
	bad[1202] = strings.Replace(bad[1202], `"currency":"GBP"`, `"currency":"XXX"`, 1)
	if bad[4] == lines[4] || bad[1202] == lines[1202] {
		t.Fatal("test data did not change; the fixture's format moved")
	}
	rep, stderr, code = runValidate(t, seamtest.WriteLines(t, "bad.ndjson", bad))
	if code != exit.Failed || !rep.Blocked {
		t.Fatalf("file with a missing key: exit %d, blocked %v (stderr %s); want exit 1 and blocked", code, rep.Blocked, stderr)
	}
	if rep.Quarantined != 2 || rep.Passed != 2498 {
		t.Errorf("quarantined %d, passed %d; want 2 and 2498", rep.Quarantined, rep.Passed)
	}
	if len(rep.Failures) != 2 || rep.Failures[0].Line != 5 || rep.Failures[1].Line != 1203 {
		t.Fatalf("first failures = %+v, want lines 5 and 1203 in order", rep.Failures)
	}
	if rep.Failures[0].Field != "customer_id" || rep.Failures[1].Field != "currency" {
		t.Errorf("failing fields = %s, %s; want customer_id, currency", rep.Failures[0].Field, rep.Failures[1].Field)
	}
	blocked := map[string]int64{}
	for _, c := range rep.Checks {
		blocked[c.Name] = c.BlockedBatches
	}
	if blocked["customer_present"] != 1 {
		t.Errorf("blocked batches per check = %v, want customer_present blocking 1 batch", blocked)
	}
}

// CSV rows may span lines inside quotes; failures still name the line the
// row starts on, across batch boundaries.
func TestValidateCSVLineNumbers(t *testing.T) {
	t.Parallel()
	header := "order_id,customer_id,amount,currency,status,created_at,country,items,discount,channel,email,coupon"
	row := func(i int, coupon string) string {
		return strings.Join([]string{"ORD-000000000" + string(rune('0'+i)), "1000" + string(rune('0'+i)), "10.5", "EUR", "paid",
			"2026-11-29T10:00:00Z", "DE", "2", "0", "web", "a@b.example", coupon}, ",")
	}
	lines := []string{header, row(1, `"multi`), `line"`, row(2, "x"), row(3, "y"), strings.Replace(row(4, "z"), "EUR", "XXX", 1)}
	path := seamtest.WriteLines(t, "orders.csv", lines)
	rep, stderr, code := runValidate(t, "--batch-size", "2", path)
	if code != exit.OK {
		t.Fatalf("exit %d (stderr %s), want 0", code, stderr)
	}
	if rep.Records != 4 || rep.Batches != 2 || rep.Quarantined != 1 {
		t.Fatalf("report %+v; want 4 records in 2 batches, 1 quarantined", rep)
	}
	if len(rep.Failures) != 1 || rep.Failures[0].Line != 6 {
		t.Errorf("failures = %+v, want one at line 6 (the row after the two-line row)", rep.Failures)
	}
}

func TestValidateUsage(t *testing.T) {
	t.Parallel()
	if _, _, code := runValidate(t, seamtest.WriteFile(t, "data.txt", "x")); code != exit.Usage {
		t.Errorf("unknown extension: exit %d, want 2", code)
	}
	if _, _, code := runValidate(t, "/no/such/file.ndjson"); code != exit.Usage {
		t.Errorf("missing file: exit %d, want 2", code)
	}
	var out, errOut bytes.Buffer
	if code := seamtest.RunTo(context.Background(), []string{"validate", "--contract", seamtest.WriteFile(t, "c.yaml", "subject: x\nfields: [{name: a, type: NOPE}]"), seamtest.WriteFile(t, "d.ndjson", "{}\n")}, &out, &errOut); code != exit.Invalid {
		t.Errorf("invalid contract: exit %d (%s), want 3", code, errOut.String())
	}
}

// seam validate refuses the contracts the registry refuses, with the same
// rules: here a mapping from a field the contract does not have.
func TestValidateChecksTheContractAsTheRegistryDoes(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	n.MustCLI(t, 0, "canonical", "register", seamtest.ExampleFile(t, "commerce_order.yaml"))
	broken := strings.Replace(string(examples.ShopOrdersV1YAML), "customer_id: {from: customer_id}", "customer_id: {from: customer_ref}", 1)
	if broken == string(examples.ShopOrdersV1YAML) {
		t.Fatal("core/examples/shop_orders_v1.yaml changed shape; update this test")
	}
	contractFile := seamtest.WriteFile(t, "broken.yaml", broken)
	data := seamtest.WriteLines(t, "day.ndjson", seamtest.OrderLines(3))

	registryOut := n.MustCLI(t, exit.Invalid, "contract", "register", contractFile)
	_, errOut, code := seamtest.Run(context.Background(), "validate", "--contract", contractFile, "--canonical", seamtest.ExampleFile(t, "commerce_order.yaml"), data)
	if code != exit.Invalid || !strings.Contains(errOut, "customer_ref") || !strings.Contains(registryOut, "customer_ref") {
		t.Errorf("validate of a contract the registry refuses: exit %d, %s; want 3 naming customer_ref as the registry does:\n%s", code, errOut, registryOut)
	}
	// Without the canonical model the mapping cannot be checked, and
	// validate says so rather than passing it in silence.
	_, errOut, code = seamtest.Run(context.Background(), "validate", "--contract", contractFile, data)
	if code != exit.OK || !strings.Contains(errOut, "--canonical") {
		t.Errorf("validate without --canonical: exit %d, %s; want 0 and a note that the mapping was not checked", code, errOut)
	}
}

// A data CSV without a header row is refused (exit 3) instead of having
// its first record taken for a header and every other record fail.
func TestValidateRefusesCSVWithoutHeader(t *testing.T) {
	t.Parallel()
	row := "ORD-0000000001,1001,10.5,EUR,paid,2026-11-29T10:00:00Z,DE,2,0,web,a@b.example,\n"
	_, errOut, code := seamtest.Run(context.Background(), "validate", "--contract", seamtest.ExampleFile(t, "shop_orders_v1.yaml"), seamtest.WriteFile(t, "rows.csv", row+row))
	if code != exit.Invalid || !strings.Contains(errOut, "header row") {
		t.Errorf("validate of a CSV without a header: exit %d, %s; want 3 asking for a header row", code, errOut)
	}
}

// One worker splits and validates on one goroutine, several in a
// pipeline: the same file gets the same report either way, with failures
// in many chunks and more of them than the report keeps.
func TestValidateWorkersAgree(t *testing.T) {
	t.Parallel()
	lines := seamtest.OrderLines(5000)
	for i := 7; i < len(lines); i += 97 {
		lines[i] = strings.Replace(lines[i], `"currency":"`, `"currency":"X`, 1)
	}
	lines[3333] = strings.Replace(lines[3333], `"customer_id":`, `"customer":`, 1)
	file := seamtest.WriteLines(t, "orders.ndjson", lines)
	var reports []validate.Report
	for _, workers := range []string{"1", "3"} {
		rep, stderr, code := runValidate(t, "--workers", workers, "--batch-size", "300", "--first", "20", file)
		if code != exit.Failed {
			t.Fatalf("--workers %s: exit %d (%s); want 1 (a batch blocks)", workers, code, stderr)
		}
		// Timings differ, and each run writes the contract afresh.
		rep.Seconds, rep.PerSecond, rep.Contract = 0, 0, ""
		reports = append(reports, rep)
	}
	one, three := reports[0], reports[1]
	if one.Records != 5000 || one.Quarantined != 53 || one.Batches != 17 || len(one.Failures) != 20 || one.Failures[0].Line != 8 {
		t.Fatalf("--workers 1: %d records, %d quarantined, %d batches, %d failures kept (first at line %d); want 5000, 53, 17, 20 from line 8",
			one.Records, one.Quarantined, one.Batches, len(one.Failures), one.Failures[0].Line)
	}
	a, _ := json.Marshal(one)
	b, _ := json.Marshal(three)
	if !bytes.Equal(a, b) {
		t.Errorf("reports differ:\n--workers 1: %s\n--workers 3: %s", a, b)
	}
}
