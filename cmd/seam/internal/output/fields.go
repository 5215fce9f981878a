package output

import (
	"io"

	"github.com/seamdata/seam/core/contract"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// Fields writes the fields of a contract or a canonical model as a table,
// nested ones under their path, as `seam contract get` and `seam
// canonical get` show them.
func Fields(w io.Writer, fields []*contractv1.Field) error {
	t := NewTable(w, "FIELD", "TYPE", "REQUIRED", "KEY", "IDENTIFIER")
	for ref := range contract.Fields(fields) {
		f := ref.Field
		t.Row(ref.Name, Enum(f.GetType(), "FIELD_TYPE_"), YesNo(f.GetRequired()), YesNo(f.GetKey()), OrDash(contract.IdentifierString(f.GetIdentifier())))
	}
	return t.Flush()
}
