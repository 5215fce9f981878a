package check

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/seamdata/seam/core/contract"
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

// objectAdditional compiles additional_fields(OBJECT): a record whose
// object carries members the contract does not declare fails. The
// contract's additional_fields attribute covers the top level only; this
// is how a contract closes a nested object.
func (c *compiler) objectAdditional(where string, call *call, ch Check, slot int) {
	f := c.p.schema.Field(slot)
	if f.Type() != contractv1.FieldType_FIELD_TYPE_OBJECT && f.Type() != contractv1.FieldType_FIELD_TYPE_JSON {
		c.errorf(where+".rule", "column %d: additional_fields takes an OBJECT or JSON field; %q is %s (leave the argument out for the record's top level)",
			call.args[0].col, f.Path, contract.ShortName(f.Type()))
		return
	}
	if c.p.objects == nil {
		c.p.objects = make([]int, c.p.schema.Len())
		for i := range c.p.objects {
			c.p.objects[i] = -1
		}
	}
	if c.p.objects[slot] >= 0 {
		c.errorf(where+".rule", "column 1: additional_fields(%s) is declared twice; keep one", f.Path)
		return
	}
	ch.Field = f.Path
	c.p.objects[slot] = c.add(ch)
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

// undeclaredIn is the undeclared members of one closed object of a record.
type undeclaredIn struct {
	check, object int
	count         int
	first         string
	names         []string
}

// objectAdditional fails the additional_fields(OBJECT) checks of a record
// whose closed objects carry undeclared members: one failure per object,
// naming up to maxNamedUndeclared of them. The work is linear in the
// record's undeclared members times its closed objects.
func (v *validator) objectAdditional(r *record.Record) {
	if v.p.objects == nil || len(r.UnknownMembers) == 0 {
		return
	}
	found := v.closed[:0]
	for _, m := range r.UnknownMembers {
		check := v.p.objects[m.Object]
		if check < 0 {
			continue
		}
		k := slices.IndexFunc(found, func(u undeclaredIn) bool { return u.object == m.Object })
		if k < 0 {
			found = append(found, undeclaredIn{check: check, object: m.Object})
			k = len(found) - 1
		}
		u := &found[k]
		u.count++
		if u.first == "" {
			u.first = string(m.Name)
		}
		if len(u.names) < maxNamedUndeclared {
			u.names = append(u.names, strconv.Quote(string(m.Name)))
		}
	}
	for _, u := range found {
		path := v.p.schema.Field(u.object).Path
		more := ""
		if u.count > len(u.names) {
			more = fmt.Sprintf(" and %d more", u.count-len(u.names))
		}
		v.fail(u.check, path+"."+u.first, r.Position, fmt.Sprintf("undeclared field %s%s in %s; the contract allows no additional fields there: declare them in a new version or stop sending them",
			strings.Join(u.names, ", "), more, path))
	}
	v.closed = found[:0]
}
