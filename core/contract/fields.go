package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"iter"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// ItemsSuffix marks the elements of an ARRAY field in a dotted name:
// "lines[]" are the elements of lines and "lines[].sku" a member of each.
const ItemsSuffix = "[]"

// FieldRef is one field reached by Fields.
type FieldRef struct {
	Field *contractv1.Field
	// Name is the dotted name records use: "amount", "address.zip",
	// "lines[]" for the elements of an array, "lines[].sku" inside them.
	Name string
	// Path is where the field sits in the document, as validation errors
	// name it: "fields[3].fields[0]", "fields[4].items".
	Path string
	// InArray is true for array elements and everything inside them; such
	// fields occur any number of times per record.
	InArray bool
	// Optional is true when the field or one of its enclosing objects is not
	// required, so a record may lack it.
	Optional bool
}

// Fields yields every field of fields depth first in declaration order,
// descending into OBJECT members and ARRAY items.
func Fields(fields []*contractv1.Field) iter.Seq[FieldRef] {
	return func(yield func(FieldRef) bool) {
		walk(fields, FieldRef{}, "fields", yield)
	}
}

func walk(fields []*contractv1.Field, parent FieldRef, path string, yield func(FieldRef) bool) bool {
	for i, f := range fields {
		ref := FieldRef{
			Field:    f,
			Name:     joinName(parent.Name, f.GetName()),
			Path:     fmt.Sprintf("%s[%d]", path, i),
			InArray:  parent.InArray,
			Optional: parent.Optional || !f.GetRequired(),
		}
		if !visit(ref, yield) {
			return false
		}
	}
	return true
}

func visit(ref FieldRef, yield func(FieldRef) bool) bool {
	if !yield(ref) {
		return false
	}
	f := ref.Field
	if len(f.GetFields()) > 0 && !walk(f.GetFields(), ref, ref.Path+".fields", yield) {
		return false
	}
	if f.GetItems() != nil {
		items := FieldRef{
			Field:    f.GetItems(),
			Name:     ref.Name + ItemsSuffix,
			Path:     ref.Path + ".items",
			InArray:  true,
			Optional: true,
		}
		return visit(items, yield)
	}
	return true
}

func joinName(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// Lookup finds the field with a dotted name ("customer_id", "address.zip",
// "lines[].sku") among fields, or returns nil.
func Lookup(fields []*contractv1.Field, name string) *contractv1.Field {
	var f *contractv1.Field
	for part := range strings.SplitSeq(name, ".") {
		depth := 0
		for strings.HasSuffix(part, ItemsSuffix) {
			part = strings.TrimSuffix(part, ItemsSuffix)
			depth++
		}
		if f != nil {
			fields = f.GetFields()
		}
		f = nil
		for _, cand := range fields {
			if cand.GetName() == part {
				f = cand
				break
			}
		}
		for ; f != nil && depth > 0; depth-- {
			f = f.GetItems()
		}
		if f == nil {
			return nil
		}
	}
	return f
}

// Keys returns the dotted names of the key fields of c in declaration order:
// together they identify a record. Keys inside arrays are invalid (Validate
// reports them) and are not returned.
func Keys(c *contractv1.Contract) []string {
	return appendKeys(nil, c.GetFields(), "")
}

// appendKeys walks without building document paths: the classifier calls
// Keys on every comparison of wide contracts.
func appendKeys(keys []string, fields []*contractv1.Field, prefix string) []string {
	for _, f := range fields {
		if f.GetKey() {
			keys = append(keys, joinName(prefix, f.GetName()))
		}
		if len(f.GetFields()) > 0 {
			keys = appendKeys(keys, f.GetFields(), joinName(prefix, f.GetName()))
		}
	}
	return keys
}

// IdentifierRef is a field that carries an idmap identifier.
type IdentifierRef struct {
	// Name is the field's dotted name.
	Name       string
	Field      *contractv1.Field
	Identifier *contractv1.Identifier
}

// Ref renders the identifier as idmap names it, "namespace/format".
func (r IdentifierRef) Ref() string {
	return IdentifierString(r.Identifier)
}

// IdentifierString renders an identifier as "namespace/format", the form
// Translate uses; nil renders as "".
func IdentifierString(id *contractv1.Identifier) string {
	if id == nil {
		return ""
	}
	return id.GetNamespace() + "/" + id.GetFormat()
}

// Identifiers returns the identifier fields of c in declaration order.
func Identifiers(c *contractv1.Contract) []IdentifierRef {
	var ids []IdentifierRef
	for ref := range Fields(c.GetFields()) {
		if id := ref.Field.GetIdentifier(); id != nil {
			ids = append(ids, IdentifierRef{Name: ref.Name, Field: ref.Field, Identifier: id})
		}
	}
	return ids
}

// ShortName is an enum value's name without the prefix its type shares
// ("STRING" for FIELD_TYPE_STRING), the form authors write. Values the
// descriptor does not know render as their number.
func ShortName(e protoreflect.Enum) string {
	ed := e.Descriptor()
	v := ed.Values().ByNumber(e.Number())
	if v == nil {
		return fmt.Sprintf("%d", e.Number())
	}
	return strings.TrimPrefix(string(v.Name()), enumPrefix(ed))
}

// Fingerprint is the hex SHA-256 of m's deterministic binary encoding: two
// messages with equal content have equal fingerprints within one build. It
// fails only for messages proto cannot encode (invalid UTF-8 in a string).
func Fingerprint(m proto.Message) (string, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("fingerprinting %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
