package contract

import (
	"google.golang.org/protobuf/proto"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// Identity makes the canonical model name with the same top-level fields
// as c, and sets c's mapping to carry every field over unchanged, so a
// contract imported from another format can be ingested at once. It
// returns nil, and leaves c alone, when c already has a mapping.
func Identity(c *contractv1.Contract, name string) *contractv1.CanonicalModel {
	if c.GetMapping() != nil {
		return nil
	}
	m := &contractv1.CanonicalModel{
		Name:        name,
		Owner:       c.GetOwner(),
		Description: c.GetDescription(),
	}
	mapping := &contractv1.Mapping{Canonical: name, Fields: map[string]*contractv1.FieldMapping{}}
	for _, f := range c.GetFields() {
		m.Fields = append(m.Fields, proto.Clone(f).(*contractv1.Field))
		mapping.Fields[f.GetName()] = &contractv1.FieldMapping{From: f.GetName()}
	}
	c.Mapping = mapping
	return m
}
