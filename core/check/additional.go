package check

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// additionalFields adds the check the contract's additional_fields implies:
// QUARANTINE sets a record with undeclared top-level fields aside, REJECT
// blocks its batch, ALLOW (the default) passes it and only counts them.
func (c *compiler) additionalFields() {
	var policy contractv1.Policy
	switch af := c.c.GetAdditionalFields(); af {
	case contractv1.AdditionalFields_ADDITIONAL_FIELDS_UNSPECIFIED, contractv1.AdditionalFields_ADDITIONAL_FIELDS_ALLOW:
		return
	case contractv1.AdditionalFields_ADDITIONAL_FIELDS_QUARANTINE:
		policy = contractv1.Policy_POLICY_QUARANTINE
	case contractv1.AdditionalFields_ADDITIONAL_FIELDS_REJECT:
		policy = contractv1.Policy_POLICY_BLOCK
	default:
		c.errorf("additional_fields", "unknown value %d; want ALLOW, QUARANTINE or REJECT", af)
		return
	}
	c.p.additional = c.add(newCheck(Check{Name: "record.additional_fields", Rule: "additional_fields()", Kind: KindAdditional,
		Policy: policy, Implied: true, Code: recordv1.ErrorCode_ERROR_CODE_UNDECLARED_FIELD}))
}

// maxNamedUndeclared bounds how many undeclared names a message lists.
const maxNamedUndeclared = 5

// additional fails the additional_fields check of a record that carries
// undeclared top-level fields.
func (v *validator) additional(r *record.Record) {
	if v.p.additional < 0 || len(r.Unknown) == 0 {
		return
	}
	names := make([]string, 0, min(len(r.Unknown), maxNamedUndeclared))
	for _, n := range r.Unknown[:min(len(r.Unknown), maxNamedUndeclared)] {
		names = append(names, strconv.Quote(string(n)))
	}
	more := ""
	if len(r.Unknown) > maxNamedUndeclared {
		more = fmt.Sprintf(" and %d more", len(r.Unknown)-maxNamedUndeclared)
	}
	v.fail(v.p.additional, string(r.Unknown[0]), r.Position, fmt.Sprintf("undeclared field %s%s; the contract allows no additional fields: declare them in a new version or stop sending them",
		strings.Join(names, ", "), more))
}
