// Package contracttest builds large synthetic contracts for benchmarks and
// tests of the contract loader, the classifier and the compilers.
package contracttest

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// Wide returns a valid contract with n top-level fields cycling through the
// shapes real feeds have: keyed strings with patterns, enums, bounded
// numbers, timestamps with layouts, identifiers, optional free text, small
// objects and arrays.
func Wide(n int) *contractv1.Contract {
	c := &contractv1.Contract{
		Subject:       "bench.wide",
		Owner:         "team-bench",
		Compatibility: contractv1.Compatibility_COMPATIBILITY_FULL,
		NoticePeriod:  "14d",
		Mapping:       &contractv1.Mapping{Canonical: "bench.canonical", Fields: map[string]*contractv1.FieldMapping{}},
	}
	for i := range n {
		f := wideField(i)
		c.Fields = append(c.Fields, f)
		c.Mapping.Fields[f.GetName()] = &contractv1.FieldMapping{From: f.GetName()}
		if i%50 == 0 {
			c.Checks = append(c.Checks, &contractv1.Check{
				Name:   fmt.Sprintf("present_%d", i),
				Rule:   fmt.Sprintf("required(%s)", f.GetName()),
				Policy: contractv1.Policy_POLICY_QUARANTINE,
			})
		}
	}
	return c
}

func ptr[T any](v T) *T { return &v }

func wideField(i int) *contractv1.Field {
	name := fmt.Sprintf("f%04d", i)
	switch i % 10 {
	case 0:
		return &contractv1.Field{Name: name, Type: contractv1.FieldType_FIELD_TYPE_STRING, Required: i == 0, Key: i == 0, Pattern: "^[A-Z]{3}-[0-9]{6}$"}
	case 1:
		return &contractv1.Field{Name: name, Type: contractv1.FieldType_FIELD_TYPE_INT64, Required: true,
			Identifier: &contractv1.Identifier{Namespace: "customer", Format: "legacy-int"}}
	case 2:
		return &contractv1.Field{Name: name, Type: contractv1.FieldType_FIELD_TYPE_DOUBLE, Required: true, Min: ptr(0.0), Max: ptr(1e6)}
	case 3:
		return &contractv1.Field{Name: name, Type: contractv1.FieldType_FIELD_TYPE_STRING, Enum: []string{"a", "b", "c", "d"}}
	case 4:
		return &contractv1.Field{Name: name, Type: contractv1.FieldType_FIELD_TYPE_TIMESTAMP, Required: true, Layout: "RFC3339"}
	case 5:
		return &contractv1.Field{Name: name, Type: contractv1.FieldType_FIELD_TYPE_INT32, Min: ptr(1.0)}
	case 6:
		return &contractv1.Field{Name: name, Type: contractv1.FieldType_FIELD_TYPE_STRING, MinLength: ptr(int64(2)), MaxLength: ptr(int64(2)), Description: "country code"}
	case 7:
		return &contractv1.Field{Name: name, Type: contractv1.FieldType_FIELD_TYPE_OBJECT, Fields: []*contractv1.Field{
			{Name: "street", Type: contractv1.FieldType_FIELD_TYPE_STRING, Required: true},
			{Name: "zip", Type: contractv1.FieldType_FIELD_TYPE_STRING, Pattern: "^[0-9]{5}$"},
		}}
	case 8:
		return &contractv1.Field{Name: name, Type: contractv1.FieldType_FIELD_TYPE_ARRAY, MaxLength: ptr(int64(100)),
			Items: &contractv1.Field{Type: contractv1.FieldType_FIELD_TYPE_INT32}}
	default:
		return &contractv1.Field{Name: name, Type: contractv1.FieldType_FIELD_TYPE_BOOL}
	}
}

// Evolve returns a copy of a Wide contract with roughly one field in four
// changed (far more than a real version, so benchmarks give an upper bound)
// the way feeds evolve: fields added and removed, types widened and
// changed, fields made required, enum values added, bounds and patterns
// tightened or relaxed, identifier formats and descriptions changed, nested
// members added, and one check altered.
func Evolve(c *contractv1.Contract) *contractv1.Contract {
	c = proto.Clone(c).(*contractv1.Contract)
	kept := c.Fields[:0]
	for i, f := range c.Fields {
		switch {
		case i%97 == 3:
			continue // removed
		case i%10 == 5 && i%3 == 0:
			f.Type = contractv1.FieldType_FIELD_TYPE_INT64
		case i%10 == 9 && i%7 == 0:
			f.Required = true
		case i%10 == 3 && i%4 == 1:
			f.Enum = append(f.Enum, "e")
		case i%10 == 2 && i%6 == 0:
			f.Max = ptr(5e5)
		case i%10 == 0 && i%9 == 0 && i > 0:
			f.Pattern = "^[A-Z]{3}-[0-9]{8}$"
		case i%10 == 1 && i%50 == 11:
			f.Identifier.Format = "uuid"
			f.Type = contractv1.FieldType_FIELD_TYPE_UUID
		case i%10 == 6 && i%3 == 0:
			f.Description = "ISO 3166-1 alpha-2 country code"
		case i%10 == 7 && i%8 == 7:
			f.Fields = append(f.Fields, &contractv1.Field{Name: "city", Type: contractv1.FieldType_FIELD_TYPE_STRING})
		case i%10 == 4 && i%11 == 0:
			f.Type = contractv1.FieldType_FIELD_TYPE_STRING
			f.Layout = ""
		}
		kept = append(kept, f)
	}
	c.Fields = kept
	for i := range len(c.Fields) / 40 {
		c.Fields = append(c.Fields, &contractv1.Field{Name: fmt.Sprintf("added_%d", i), Type: contractv1.FieldType_FIELD_TYPE_STRING})
	}
	if len(c.Checks) > 0 {
		c.Checks[0].Policy = contractv1.Policy_POLICY_BLOCK
	}
	return c
}

// WideYAML renders Wide(n) as contract YAML the way people write it: one
// flow mapping per field.
func WideYAML(n int) []byte {
	c := Wide(n)
	var b strings.Builder
	fmt.Fprintf(&b, "subject: %s\nowner: %s\ncompatibility: FULL\nnotice_period: %s\nfields:\n", c.GetSubject(), c.GetOwner(), c.GetNoticePeriod())
	for _, f := range c.GetFields() {
		b.WriteString("  - ")
		writeField(&b, f)
		b.WriteString("\n")
	}
	b.WriteString("checks:\n")
	for _, ch := range c.GetChecks() {
		fmt.Fprintf(&b, "  - {name: %s, rule: %q, policy: QUARANTINE}\n", ch.GetName(), ch.GetRule())
	}
	fmt.Fprintf(&b, "mapping:\n  canonical: %s\n  fields:\n", c.GetMapping().GetCanonical())
	for _, f := range c.GetFields() {
		fmt.Fprintf(&b, "    %s: {from: %s}\n", f.GetName(), f.GetName())
	}
	return []byte(b.String())
}

func writeField(b *strings.Builder, f *contractv1.Field) {
	b.WriteString("{")
	if f.GetName() != "" {
		fmt.Fprintf(b, "name: %s, ", f.GetName())
	}
	fmt.Fprintf(b, "type: %s", strings.TrimPrefix(f.GetType().String(), "FIELD_TYPE_"))
	if f.GetRequired() {
		b.WriteString(", required: true")
	}
	if f.GetKey() {
		b.WriteString(", key: true")
	}
	if f.GetPattern() != "" {
		fmt.Fprintf(b, ", pattern: %q", f.GetPattern())
	}
	if len(f.GetEnum()) > 0 {
		fmt.Fprintf(b, ", enum: [%s]", strings.Join(f.GetEnum(), ", "))
	}
	if f.Min != nil {
		fmt.Fprintf(b, ", min: %g", f.GetMin())
	}
	if f.Max != nil {
		fmt.Fprintf(b, ", max: %g", f.GetMax())
	}
	if f.MinLength != nil {
		fmt.Fprintf(b, ", min_length: %d", f.GetMinLength())
	}
	if f.MaxLength != nil {
		fmt.Fprintf(b, ", max_length: %d", f.GetMaxLength())
	}
	if f.GetLayout() != "" {
		fmt.Fprintf(b, ", layout: %s", f.GetLayout())
	}
	if f.GetDescription() != "" {
		fmt.Fprintf(b, ", description: %q", f.GetDescription())
	}
	if id := f.GetIdentifier(); id != nil {
		fmt.Fprintf(b, ", identifier: {namespace: %s, format: %s}", id.GetNamespace(), id.GetFormat())
	}
	if len(f.GetFields()) > 0 {
		b.WriteString(", fields: [")
		for i, m := range f.GetFields() {
			if i > 0 {
				b.WriteString(", ")
			}
			writeField(b, m)
		}
		b.WriteString("]")
	}
	if f.GetItems() != nil {
		b.WriteString(", items: ")
		writeField(b, f.GetItems())
	}
	b.WriteString("}")
}
