package gate

import (
	"github.com/seamdata/seam/core/naming"
	"github.com/seamdata/seam/platform/rpcerr"
)

// badNames appends to bad a violation for each non-empty name that breaks
// the naming rule (core/naming); fieldsAndValues alternates a field path
// and its value. Empty names are left to the callers, which say what a
// missing one should be.
func badNames(bad []rpcerr.FieldViolation, fieldsAndValues ...string) []rpcerr.FieldViolation {
	for i := 0; i+1 < len(fieldsAndValues); i += 2 {
		field, value := fieldsAndValues[i], fieldsAndValues[i+1]
		if value == "" {
			continue
		}
		if err := naming.Check(field, value); err != nil {
			bad = append(bad, rpcerr.FieldViolation{Field: field, Description: naming.Describe(err)})
		}
	}
	return bad
}
