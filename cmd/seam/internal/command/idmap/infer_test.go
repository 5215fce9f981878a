package idmap_test

import (
	"encoding/csv"
	"fmt"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// A format added to a namespace is usable at once; a table exported is
// the CSV import reads; the rule behind a loaded table is found without a
// file, and the rule behind sample pairs is set with the command it prints.
func TestCLIRuleInferAndExport(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	n.MustCLI(t, 0, "idmap", "namespace", "create", "account", "--format", "number:int")
	out := n.MustCLI(t, 0, "idmap", "namespace", "add-format", "account", "--format", "acc-ref:string:^ACC-[0-9]{8}$")
	if !strings.Contains(out, "acc-ref") || !strings.Contains(out, "^ACC-[0-9]{8}$") {
		t.Errorf("add-format output:\n%s", out)
	}
	n.MustCLI(t, exit.Failed, "idmap", "namespace", "add-format", "account", "--format", "acc-ref:string")
	n.MustCLI(t, exit.Usage, "idmap", "namespace", "add-format", "account", "--format", "bad")

	var pairs strings.Builder
	pairs.WriteString("number,acc_ref\n")
	for i := range 300 {
		fmt.Fprintf(&pairs, "%d,ACC-%08d\n", 5000+i*3, 5000+i*3)
	}
	file := seamtest.WriteFile(t, "pairs.csv", pairs.String())
	n.MustCLI(t, 0, "idmap", "import", "account", file, "--from", "number", "--to", "acc-ref")

	// Exported the other way round, it reads back as the same 300 pairs.
	out = n.MustCLI(t, 0, "idmap", "export", "account", "--from", "acc-ref", "--to", "number")
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 301 || rows[0][0] != "acc-ref" {
		t.Fatalf("export: %d rows, %v:\n%.300s", len(rows), err, out)
	}
	for _, r := range rows[1:] {
		if r[0] != "ACC-000"+r[1] && r[0] != "ACC-0000"+r[1] {
			t.Fatalf("exported pair %q is not an imported one turned round", r)
		}
	}
	n.MustCLI(t, exit.Usage, "idmap", "export", "account", "--from", "number")

	// From the loaded table, no file needed.
	res := n.MustJSON(t, "idmap", "rule", "infer", "account", "--from", "acc-ref", "--to", "number")
	if res["rule"] != "number→acc-ref template ACC-{int:08} (reversible)" || res["table_only"] != false {
		t.Fatalf("rule infer from the table = %v", res)
	}

	// From sample pairs with one wrong: the rule, the exception, and the
	// command that sets it — which then works.
	var many strings.Builder
	many.WriteString("number,code\n")
	for i := range 150 {
		fmt.Fprintf(&many, "%d,ACC-%08d\n", i, i)
	}
	many.WriteString("99999,ACC-00000001\n")
	sample := seamtest.WriteFile(t, "sample.csv", many.String())
	n.MustCLI(t, 0, "idmap", "namespace", "create", "member", "--format", "number:int", "--format", "code:string")
	out = n.MustCLI(t, 0, "idmap", "rule", "infer", "member", "--from", "number", "--to", "code", sample)
	for _, want := range []string{"template ACC-{int:08} (reversible)", "150 right, 1 wrong", "99999", "set it: seam idmap rule set member --from number --to code --template 'ACC-{int:08}' --reversible --sample 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("rule infer output lacks %q:\n%s", want, out)
		}
	}
	n.MustCLI(t, 0, "idmap", "rule", "set", "member", "--from", "number", "--to", "code", "--template", "ACC-{int:08}", "--reversible", "--sample", "0")
	if out := n.MustCLI(t, 0, "idmap", "translate", "member", "--from", "code", "--to", "number", "ACC-00000042"); !strings.Contains(out, "42") {
		t.Errorf("the reversible rule does not translate back:\n%s", out)
	}
	// Pairs no rule explains: exit 1, saying a table will do.
	noise := seamtest.WriteFile(t, "noise.csv", "number,code\n1,ZZ-9\n2,QQ-1\n3,X\n")
	out = n.MustCLI(t, exit.Failed, "idmap", "rule", "infer", "member", "--from", "number", "--to", "code", noise)
	if !strings.Contains(out, "only a lookup table will do") {
		t.Errorf("rule infer on noise:\n%s", out)
	}
	n.MustCLI(t, exit.Usage, "idmap", "rule", "infer", "member", "--from", "number", "--to", "nope", noise)
}
