package contract_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

func bankUUID(i int) string { return fmt.Sprintf("7c9e6679-7425-40de-944b-%012d", i) }

func bankLines(day int, account func(i int) string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"txn_id":"TX-%010d","account_ref":%q,"amount_cents":%d,"booked_at":"2026-03-%02dT10:%02d:00Z"}`+"\n",
			day*1000+i, account(i), 1250+i, day, i)
	}
	return b.String()
}

// TestCLIBankFeedMigration: v2 with a lookup migration and no table is
// refused naming the table, and contract check runs v2 on the held UUIDs
// and says how many would pass (none, then 3 of 4 once the table is
// loaded); the consumer that reads only the canonical account_number is
// announced the change and told to rerun after the backfill.
func TestCLIBankFeedMigration(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	n.MustCLI(t, 0, "idmap", "namespace", "create", "account", "--format", "acc-ref:string:^ACC-[0-9]{8}$", "--format", "uuid:uuid")
	n.MustCLI(t, 0, "canonical", "register", "-f", seamtest.FixtureFile(t, "bank_model.yaml"))
	n.MustCLI(t, 0, "contract", "register", "-f", seamtest.FixtureFile(t, "bank_v1.yaml"))
	n.MustCLI(t, 0, "consumer", "register", "-f", seamtest.FixtureFile(t, "risk_consumer.yaml"))

	day1 := seamtest.WriteFile(t, "day1.ndjson", bankLines(1, func(i int) string { return fmt.Sprintf("ACC-%08d", 12345+i) }, 4))
	n.MustCLI(t, 0, "gate", "ingest", day1, "--subject", "bank.transactions", "--partition", "2026-03-01")
	day2 := seamtest.WriteFile(t, "day2.ndjson", bankLines(2, bankUUID, 4))
	n.MustCLI(t, 0, "gate", "ingest", day2, "--subject", "bank.transactions", "--partition", "2026-03-02")

	v2 := seamtest.FixtureFile(t, "bank_v2.yaml")
	out := n.MustCLI(t, exit.Failed, "contract", "check", "-f", v2, "--override-reason", "INC-12: the feed already sends UUIDs")
	for _, want := range []string{"MIGRATION_NOT_READY", "no rule and no lookup table for uuid→acc-ref", "seam idmap import account FILE.csv --from uuid --to acc-ref",
		"dry run on quarantined records (4 of 4 held, partitions 2026-03-02)", "0 of 4 would pass (0.0%); 4 would stay (4 MIGRATION_NOT_READY)", "risk.account_scores"} {
		if !strings.Contains(out, want) {
			t.Errorf("check of v2 before the table lacks %q:\n%s", want, out)
		}
	}
	out = n.MustCLI(t, exit.Failed, "contract", "register", "-f", v2, "--override-reason", "INC-12: the feed already sends UUIDs")
	if !strings.Contains(out, "uuid→acc-ref") {
		t.Errorf("register of v2 before the table does not name it:\n%s", out)
	}

	var pairs strings.Builder
	pairs.WriteString("uuid,acc_ref\n")
	for i := range 3 { // the fourth account has not been synced
		fmt.Fprintf(&pairs, "%s,ACC-%08d\n", bankUUID(i), 12345+i)
	}
	n.MustCLI(t, 0, "idmap", "import", "account", seamtest.WriteFile(t, "accounts.csv", pairs.String()), "--from", "uuid", "--to", "acc-ref")
	out = n.MustCLI(t, 0, "contract", "check", "-f", v2, "--override-reason", "INC-12: the feed already sends UUIDs")
	if !strings.Contains(out, "3 of 4 would pass (75.0%); 1 would stay (1 ID_UNMAPPED)") || strings.Contains(out, "migration not ready") {
		t.Errorf("check of v2 with the table:\n%s", out)
	}
	check := n.MustJSON(t, "contract", "check", "-f", v2, "--override-reason", "INC-12: the feed already sends UUIDs", "--dry-run", "2")
	if dry, _ := check["dry_run"].(map[string]any); dry == nil || dry["sampled"] != float64(2) || dry["held"] != float64(4) {
		t.Errorf("check -o json --dry-run 2: dry_run = %v, want 2 sampled of 4 held", check["dry_run"])
	}
	if out := n.MustCLI(t, 0, "contract", "check", "-f", v2, "--override-reason", "x", "--dry-run", "0"); strings.Contains(out, "dry run") {
		t.Errorf("--dry-run 0 still ran one:\n%s", out)
	}

	out = n.MustCLI(t, 0, "contract", "register", "-f", v2, "--override-reason", "INC-12: the feed already sends UUIDs")
	if !strings.Contains(out, "risk.account_scores") || !strings.Contains(out, "bank.transactions.account_ref → banking.transaction.account_number → risk.account_scores") {
		t.Errorf("register of v2 does not announce it to the canonical consumer:\n%s", out)
	}
	n.MustCLI(t, 0, "quarantine", "replay", "bank.transactions", "--from", "2026-03-02", "--to", "2026-03-02", "--summary-only")
	events := n.MustCLI(t, 0, "events", "list", "--subject", "bank.transactions", "--type", "CHANGE_ANNOUNCED", "--type", "BACKFILL_COMPLETED")
	for _, typ := range []string{"CHANGE_ANNOUNCED", "BACKFILL_COMPLETED"} {
		found := false
		for _, line := range strings.Split(events, "\n") {
			found = found || (strings.Contains(line, typ) && strings.Contains(line, "[consumers: risk.account_scores]"))
		}
		if !found {
			t.Errorf("no %s event names risk.account_scores:\n%s", typ, events)
		}
	}
}
