package contract_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// TestContractImport converts our own payments ODCS contract and the
// orders JSON Schema offline; --strict refuses the lossy ones and takes a
// JSON Schema whose every keyword carries over (a caveat is not a loss); a
// JSON Schema assertion Seam cannot check is refused at its JSON pointer.
func TestContractImport(t *testing.T) {
	t.Parallel()
	odcsFile := "../../../../../core/interop/odcs/testdata/payments.odcs.yaml"
	schemaFile := "../../../../../core/interop/jsonschema/testdata/orders.schema.json"
	paymentsSchema := "../../../../../core/interop/jsonschema/testdata/payments.schema.json"
	oneOf := filepath.Join(t.TempDir(), "events.schema.json")
	if err := os.WriteFile(oneOf, []byte(`{"type": "object", "properties": {"kind": {"type": "string", "oneOf": [{"maxLength": 3}, {"pattern": "^x"}]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args       []string
		code       int
		out, notes string
	}{
		{[]string{"contract", "import", odcsFile}, exit.OK, "subject: finance.payments", "SQL"},
		{[]string{"contract", "import", "--from", "jsonschema", "--subject", "shop.orders", "--owner", "team-checkout", schemaFile}, exit.OK, "additional_fields(shipping)", "KEPT"},
		{[]string{"contract", "import", "--strict", "--from", "jsonschema", paymentsSchema}, exit.OK, "subject: bank.payments", "CAVEAT"},
		{[]string{"contract", "import", "--strict", odcsFile}, exit.Failed, "", "DROPPED"},
		{[]string{"contract", "import", "--from", "xml", odcsFile}, exit.Usage, "", ""},
		{[]string{"contract", "import", "--from", "jsonschema", schemaFile}, exit.Failed, "", ""},
		{[]string{"contract", "import", "--subject", "ops.events", "--owner", "ops", oneOf}, exit.Failed, "", "/properties/kind/oneOf: combinations of schemas (oneOf) are not checked"},
	} {
		stdout, stderr, code := seamtest.Run(context.Background(), tc.args...)
		if code != tc.code || !strings.Contains(stdout, tc.out) || !strings.Contains(stderr, tc.notes) {
			t.Errorf("seam %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), code, tc.code, stdout, stderr)
		}
	}
}
