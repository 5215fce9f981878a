package output_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/output"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// The fields table names nested fields by their dotted path and shows
// each field's type, flags and identifier.
func TestFields(t *testing.T) {
	t.Parallel()
	fields := []*contractv1.Field{
		{Name: "order_id", Type: contractv1.FieldType_FIELD_TYPE_STRING, Required: true, Key: true},
		{Name: "customer_id", Type: contractv1.FieldType_FIELD_TYPE_INT64, Identifier: &contractv1.Identifier{Namespace: "customer", Format: "legacy-int"}},
		{Name: "lines", Type: contractv1.FieldType_FIELD_TYPE_ARRAY, Items: &contractv1.Field{Type: contractv1.FieldType_FIELD_TYPE_OBJECT,
			Fields: []*contractv1.Field{{Name: "sku", Type: contractv1.FieldType_FIELD_TYPE_STRING, Required: true}}}},
	}
	var b bytes.Buffer
	if err := output.Fields(&b, fields); err != nil {
		t.Fatal(err)
	}
	// Columns are aligned with spaces; compare the words of each row.
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		rows = append(rows, strings.Join(strings.Fields(l), " "))
	}
	got := strings.Join(rows, "\n")
	want := `FIELD TYPE REQUIRED KEY IDENTIFIER
order_id STRING yes yes -
customer_id INT64 - - customer/legacy-int
lines ARRAY - - -
lines[] OBJECT - - -
lines[].sku STRING yes - -`
	if got != want {
		t.Errorf("fields table:\n%s\nwant:\n%s", got, want)
	}
}
