package idmap_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

func TestCLIIdmap(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)

	ns := n.MustJSON(t, "idmap", "namespace", "create", "customer", "--format", "legacy-int:int", "--format", "uuid:uuid", "--format", "crm-code:string:^CRM-[0-9]{8}$")
	if got := len(ns["namespace"].(map[string]any)["formats"].([]any)); got != 3 {
		t.Errorf("namespace create: %d formats, want 3", got)
	}
	n.MustCLI(t, exit.Usage, "idmap", "namespace", "create", "x", "--format", "bad")

	rule := n.MustJSON(t, "idmap", "rule", "set", "customer", "--from", "legacy-int", "--to", "crm-code", "--template", "CRM-{int:08}", "--sample", "42", "--sample", "1234567")
	if rule["checked"] != float64(2) {
		t.Errorf("rule set checked %v samples, want 2", rule["checked"])
	}
	n.MustCLI(t, exit.Usage, "idmap", "rule", "set", "customer", "--from", "legacy-int", "--to", "crm-code")
	out := n.MustCLI(t, 0, "idmap", "translate", "customer", "--from", "legacy-int", "--to", "crm-code", "42", "x")
	if !strings.Contains(out, "CRM-00000042") || !strings.Contains(out, "INVALID") {
		t.Errorf("translate through the template rule:\n%s", out)
	}

	var csv strings.Builder
	csv.WriteString("uuid,legacy_int\n")
	for i := range 2500 {
		fmt.Fprintf(&csv, "00000000-0000-4000-8000-%012d,%d\n", i, 1000+i)
	}
	file := seamtest.WriteFile(t, "ids.csv", csv.String())
	imp := n.MustJSON(t, "idmap", "import", "customer", file, "--from", "uuid", "--to", "legacy-int")
	if imp["inserted"] != 2500.0 || imp["committed"] != true {
		t.Errorf("import = %v, want 2500 inserted and committed", imp)
	}
	if again := n.MustJSON(t, "idmap", "import", "customer", file, "--from", "uuid", "--to", "legacy-int"); again["inserted"] != 0.0 || again["unchanged"] != 2500.0 {
		t.Errorf("re-import = %v, want nothing inserted and 2500 unchanged", again)
	}

	// The same uuid to another int conflicts: the import fails whole by
	// default (exit 1) and commits the clean pairs with --on-conflict skip.
	clash := seamtest.WriteFile(t, "clash.csv", "uuid,legacy_int\n00000000-0000-4000-8000-000000000001,99999\n00000000-0000-4000-8000-999999999999,77777\n")
	out = n.MustCLI(t, exit.Failed, "idmap", "import", "customer", clash, "--from", "uuid", "--to", "legacy-int")
	if !strings.Contains(out, "NOT committed") || !strings.Contains(out, "99999") {
		t.Errorf("conflicting import output:\n%s", out)
	}
	out = n.MustCLI(t, exit.Failed, "idmap", "import", "customer", clash, "--from", "uuid", "--to", "legacy-int", "--on-conflict", "skip")
	if !strings.Contains(out, "committed: 2 pairs received, 1 inserted") {
		t.Errorf("import with --on-conflict skip:\n%s", out)
	}

	tr := n.MustJSON(t, "idmap", "translate", "customer", "--from", "uuid", "--to", "legacy-int",
		"00000000-0000-4000-8000-000000000007", "00000000-0000-4000-8000-123456789012", "not-a-uuid")
	statuses := fmt.Sprint(tr["statuses"])
	if fmt.Sprint(tr["values"]) != "[1007  ]" || statuses != "[TRANSLATE_STATUS_HIT TRANSLATE_STATUS_MISS TRANSLATE_STATUS_INVALID]" {
		t.Errorf("translate = values %v statuses %v; want a hit 1007, a miss and an invalid id", tr["values"], statuses)
	}

	stats := n.MustJSON(t, "idmap", "stats", "--namespace", "customer")
	if len(stats["counters"].([]any)) == 0 {
		t.Errorf("stats = %v, want counters", stats)
	}
	n.MustJSON(t, "idmap", "namespace", "get", "customer")
	n.MustJSON(t, "idmap", "namespace", "list")
	n.MustCLI(t, exit.Usage, "idmap", "namespace", "get", "nope")
	n.MustCLI(t, exit.Usage, "idmap", "import", "customer", "/no/such.csv", "--from", "uuid", "--to", "legacy-int")

	// Beside the template rule (both ways), the known CRM codes are a
	// member list: one column.
	known := seamtest.WriteFile(t, "known.csv", "crm_code\nCRM-00000042\nCRM-00000043\n")
	if m := n.MustJSON(t, "idmap", "import", "customer", known, "--members", "crm-code"); m["inserted"] != 2.0 || m["committed"] != true {
		t.Errorf("member import = %v, want 2 inserted and committed", m)
	}
	n.MustCLI(t, exit.Usage, "idmap", "import", "customer", known, "--members", "crm-code", "--from", "uuid")
}

// The first row of an import is a header unless --no-header; a first row
// that is a pair of valid ids is refused instead of dropped.
func TestImportHeaderIsExplicit(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	n.MustCLI(t, 0, "idmap", "namespace", "create", "customer", "--format", "legacy-int:int", "--format", "uuid:uuid")
	noHeader := seamtest.WriteFile(t, "pairs.csv", "00000000-0000-4000-8000-000000000001,1001\n00000000-0000-4000-8000-000000000002,1002\n")

	out := n.MustCLI(t, exit.Invalid, "idmap", "import", "customer", noHeader, "--from", "uuid", "--to", "legacy-int")
	if !strings.Contains(out, "--no-header") || !strings.Contains(out, "line 1") {
		t.Errorf("import of a file without a header:\n%s\nwant it refused, pointing at line 1 and --no-header", out)
	}
	if imp := n.MustJSON(t, "idmap", "import", "customer", noHeader, "--from", "uuid", "--to", "legacy-int", "--no-header"); imp["inserted"] != 2.0 {
		t.Errorf("import --no-header = %v, want both pairs inserted", imp)
	}
	swapped := seamtest.WriteFile(t, "swapped.csv", "legacy_int,uuid\n1003,00000000-0000-4000-8000-000000000003\n")
	if out := n.MustCLI(t, exit.Invalid, "idmap", "import", "customer", swapped, "--from", "uuid", "--to", "legacy-int"); !strings.Contains(out, "other way round") {
		t.Errorf("import of columns in the other order:\n%s\nwant it refused", out)
	}
	named := seamtest.WriteFile(t, "named.csv", "uuid,legacy_int\n00000000-0000-4000-8000-000000000003,1003\n")
	if imp := n.MustJSON(t, "idmap", "import", "customer", named, "--from", "uuid", "--to", "legacy-int"); imp["received"] != 1.0 {
		t.Errorf("import with a header naming the formats = %v, want 1 pair received", imp)
	}
}
