package record

import (
	"errors"
	"fmt"
	"strings"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// Field is one slot of a compiled schema: a declared field, top level or a
// member of an OBJECT field (or of a JSON field's objects), flattened so a record is one []Value indexed by
// slot.
type Field struct {
	// Index is the field's slot in Record.Values.
	Index int
	// Parent is the slot of the enclosing OBJECT field, or -1 at top level.
	Parent int
	// Name is the field's own name; Path is dotted from the top ("customer.id").
	Name string
	Path string
	// Decl is the contract's declaration of the field.
	Decl *contractv1.Field
	// members is the lookup of an OBJECT field's declared members.
	members *level
	// pos is the field's position among its siblings.
	pos int
	// quoted is the name and its closing quote, as a member whose name
	// needs no unescaping starts (after its opening quote); nil when the
	// name has a byte a JSON string would have to escape.
	quoted []byte
}

// Type is the declared type of the field.
func (f *Field) Type() contractv1.FieldType { return f.Decl.GetType() }

// level is the set of fields declared side by side in one object.
type level struct {
	slots []int          // in declaration order
	names map[string]int // name → slot
}

// Schema is a contract's field list compiled for decoding: a slot per field
// (nested OBJECT members included) and name lookups per object level.
// A Schema is immutable and safe for concurrent use.
type Schema struct {
	fields []Field
	paths  map[string]int
	top    *level
}

// NewSchema compiles a contract's fields. It fails when a name is empty,
// duplicated within one object, or contains a dot (dots separate path
// segments); errors name the field path such as "fields[2].fields[0].name".
func NewSchema(fields []*contractv1.Field) (*Schema, error) {
	s := &Schema{paths: make(map[string]int)}
	var errs []error
	s.top = s.addLevel(fields, -1, "", "fields", &errs)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

func (s *Schema) addLevel(fields []*contractv1.Field, parent int, prefix, where string, errs *[]error) *level {
	l := &level{names: make(map[string]int, len(fields))}
	for i, f := range fields {
		at := fmt.Sprintf("%s[%d]", where, i)
		name := f.GetName()
		switch {
		case name == "":
			*errs = append(*errs, fmt.Errorf("%s.name: empty; every field needs a name", at))
			continue
		case strings.Contains(name, "."):
			*errs = append(*errs, fmt.Errorf("%s.name: %q contains a dot; nest the field under an OBJECT field instead", at, name))
			continue
		}
		if _, dup := l.names[name]; dup {
			*errs = append(*errs, fmt.Errorf("%s.name: %q is declared twice in the same object; rename or remove one", at, name))
			continue
		}
		idx := len(s.fields)
		s.fields = append(s.fields, Field{Index: idx, Parent: parent, Name: name, Path: prefix + name, Decl: f, pos: len(l.slots), quoted: quotedName(name)})
		l.names[name] = idx
		l.slots = append(l.slots, idx)
		s.paths[prefix+name] = idx
		if t := f.GetType(); (t == contractv1.FieldType_FIELD_TYPE_OBJECT || t == contractv1.FieldType_FIELD_TYPE_JSON) && len(f.GetFields()) > 0 {
			m := s.addLevel(f.GetFields(), idx, prefix+name+".", at+".fields", errs)
			s.fields[idx].members = m
		}
	}
	return l
}

// quotedName is name followed by '"' when every byte of name is plain, so
// that a member name matching it byte for byte is that name, unescaped.
func quotedName(name string) []byte {
	for i := 0; i < len(name); i++ {
		if !plain[name[i]] {
			return nil
		}
	}
	return append([]byte(name), '"')
}

// Len is the number of slots, and the length of every record's Values.
func (s *Schema) Len() int { return len(s.fields) }

// Field returns the field in slot i.
func (s *Schema) Field(i int) *Field { return &s.fields[i] }

// Fields returns every slot in order: declaration order, depth first.
func (s *Schema) Fields() []Field { return s.fields }

// Lookup returns the slot of a dotted field path.
func (s *Schema) Lookup(path string) (int, bool) {
	i, ok := s.paths[path]
	return i, ok
}

// lookup finds the slot named key at a level, trying the slot the record's
// previous field suggests first: sources almost always send fields in one
// order, so the guess saves a map lookup per field (and Decoder.members
// tries it before it scans the name at all).
func (l *level) lookup(s *Schema, key []byte, guess int) (slot, pos int, ok bool) {
	if guess < len(l.slots) {
		sl := l.slots[guess]
		if s.fields[sl].Name == string(key) {
			return sl, guess + 1, true
		}
	}
	sl, ok := l.names[string(key)]
	if !ok {
		return 0, guess, false
	}
	// Resume guessing after the slot found, wherever it is declared.
	return sl, s.fields[sl].pos + 1, true
}
