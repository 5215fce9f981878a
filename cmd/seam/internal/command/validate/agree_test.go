package validate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/command/validate"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// seam validate, offline, and the gate, online, give the same verdicts on
// the same file: the same records pass, the same fail each check, the
// same batches block.
func TestValidateAgreesWithGate(t *testing.T) {
	t.Parallel()
	n := seamtest.StartOrders(t)

	lines := seamtest.OrderLines(3000)
	lines[9] = strings.Replace(lines[9], `"currency":"USD"`, `"currency":"XXX"`, 1)
	lines[1499] = strings.Replace(lines[1499], `"amount":`, `"amount":-`, 1)
	lines[2998] = strings.Replace(lines[2998], `"order_id":"ORD-`, `"order_id":"ORDER-`, 1)
	lines[2000] = strings.Replace(lines[2000], `"items":`, `"items":"`, 1)
	lines[2000] = strings.Replace(lines[2000], `,"discount"`, `","discount"`, 1)
	file := seamtest.WriteLines(t, "orders.ndjson", lines)

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
	blocked := seamtest.WriteLines(t, "blocked.ndjson", lines)
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
	// Both judge the file as one partition.
	if p, _ := resp["partition"].(map[string]any); p["verdict"] != "PARTITION_VERDICT_"+rep.Verdict {
		t.Errorf("gate sealed the partition %v, validate predicted %s", p["verdict"], rep.Verdict)
	}
}

// randomContract has only checks validate can judge offline: a BLOCK
// threshold as a fraction of the partition and a QUARANTINE enum.
const randomContract = `subject: lab.samples
owner: team-lab
fields:
  - {name: sample_id, type: STRING, required: true, key: true}
  - {name: site, type: STRING}
  - {name: grade, type: STRING, enum: [A, B, C]}
  - {name: value, type: DOUBLE, required: true}
checks:
  - {name: site_present, rule: required(site), policy: BLOCK, threshold: {fraction: 0.01}}
mapping:
  canonical: lab.sample
  fields:
    sample_id: {from: sample_id}
    site: {from: site}
    grade: {from: grade}
    value: {from: value}
`

const randomCanonical = `name: lab.sample
owner: team-lab
fields:
  - {name: sample_id, type: STRING, required: true, key: true}
  - {name: site, type: STRING}
  - {name: grade, type: STRING}
  - {name: value, type: DOUBLE, required: true}
`

// Random files around the threshold, sent in random chunk sizes: the
// verdict validate predicts is the one the gate gives the sealed
// partition, and the counts agree.
func TestValidatePredictsPartitionVerdict(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	n.MustCLI(t, 0, "canonical", "register", seamtest.WriteFile(t, "lab_sample.yaml", randomCanonical))
	contractFile := seamtest.WriteFile(t, "lab_samples.yaml", randomContract)
	n.MustCLI(t, 0, "contract", "register", contractFile)
	rng := rand.New(rand.NewPCG(6, 12))
	verdicts := map[string]int{}
	for trial := range 12 {
		records := 200 + rng.IntN(800)
		var lines []string
		for i := range records {
			site := `"site":"S1",`
			if rng.IntN(100) < 1+trial%2 { // about 1% or 2% without a site
				site = ""
			}
			grade := []string{"A", "B", "C", "Z"}[rng.IntN(4)]
			lines = append(lines, fmt.Sprintf(`{"sample_id":"X-%d-%d",%s"grade":%q,"value":%d}`, trial, i, site, grade, rng.IntN(100)))
		}
		file := seamtest.WriteLines(t, fmt.Sprintf("t%d.ndjson", trial), lines)
		out, _, _ := seamtest.Run(context.Background(), "validate", "--contract", contractFile, file, "--batch-size", fmt.Sprint(1+rng.IntN(300)), "-o", "json")
		var rep validate.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("validate -o json: %v\n%s", err, out)
		}
		gout, _, _ := n.CLI(t, "gate", "ingest", "lab.samples", file, "--partition", fmt.Sprintf("2026-01-%02d", trial+1), "--chunk-records", fmt.Sprint(1+rng.IntN(300)), "-o", "json")
		var resp map[string]any
		if err := json.Unmarshal([]byte(gout), &resp); err != nil {
			t.Fatalf("gate ingest -o json: %v\n%s", err, gout)
		}
		p := resp["partition"].(map[string]any)
		if p["verdict"] != "PARTITION_VERDICT_"+rep.Verdict {
			t.Errorf("trial %d (%d records): gate sealed %v, validate predicted %s (%v)", trial, records, p["verdict"], rep.Verdict, rep.Decided)
		}
		c := p["counts"].(map[string]any)
		if seamtest.JSONInt(c["accepted"]) != rep.Passed || seamtest.JSONInt(c["quarantined"]) != rep.Quarantined {
			t.Errorf("trial %d: gate counts %v, validate passed %d quarantined %d", trial, c, rep.Passed, rep.Quarantined)
		}
		verdicts[rep.Verdict]++
	}
	if verdicts["BLOCKED"] == 0 || verdicts["BLOCKED"] == 12 {
		t.Errorf("verdicts over the trials = %v; the data should fall on both sides of the threshold", verdicts)
	}
}
