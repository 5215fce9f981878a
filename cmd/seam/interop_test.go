package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestContractImport converts our own payments ODCS contract and the
// orders JSON Schema offline; --strict refuses the lossy one.
func TestContractImport(t *testing.T) {
	odcsFile := "../../core/interop/odcs/testdata/payments.odcs.yaml"
	schemaFile := "../../core/interop/jsonschema/testdata/orders.schema.json"
	for _, tc := range []struct {
		args       []string
		code       int
		out, notes string
	}{
		{[]string{"contract", "import", odcsFile}, 0, "subject: finance.payments", "SQL"},
		{[]string{"contract", "import", "--from", "jsonschema", "--subject", "shop.orders", "--owner", "team-checkout", schemaFile}, 0, "subject: shop.orders", "additionalProperties"},
		{[]string{"contract", "import", "--strict", odcsFile}, exitNo, "", "DROPPED"},
		{[]string{"contract", "import", "--from", "xml", odcsFile}, exitUsage, "", ""},
		{[]string{"contract", "import", "--from", "jsonschema", schemaFile}, exitNo, "", ""},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String(), tc.out) || !strings.Contains(stderr.String(), tc.notes) {
			t.Errorf("seam %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), code, tc.code, stdout.String(), stderr.String())
		}
	}
}
