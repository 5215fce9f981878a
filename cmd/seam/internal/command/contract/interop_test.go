package contract_test

import (
	"context"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// TestContractImport converts our own payments ODCS contract and the
// orders JSON Schema offline; --strict refuses the lossy one.
func TestContractImport(t *testing.T) {
	t.Parallel()
	odcsFile := "../../../../../core/interop/odcs/testdata/payments.odcs.yaml"
	schemaFile := "../../../../../core/interop/jsonschema/testdata/orders.schema.json"
	for _, tc := range []struct {
		args       []string
		code       int
		out, notes string
	}{
		{[]string{"contract", "import", odcsFile}, exit.OK, "subject: finance.payments", "SQL"},
		{[]string{"contract", "import", "--from", "jsonschema", "--subject", "shop.orders", "--owner", "team-checkout", schemaFile}, exit.OK, "subject: shop.orders", "additionalProperties"},
		{[]string{"contract", "import", "--strict", odcsFile}, exit.Failed, "", "DROPPED"},
		{[]string{"contract", "import", "--from", "xml", odcsFile}, exit.Usage, "", ""},
		{[]string{"contract", "import", "--from", "jsonschema", schemaFile}, exit.Failed, "", ""},
	} {
		stdout, stderr, code := seamtest.Run(context.Background(), tc.args...)
		if code != tc.code || !strings.Contains(stdout, tc.out) || !strings.Contains(stderr, tc.notes) {
			t.Errorf("seam %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), code, tc.code, stdout, stderr)
		}
	}
}
