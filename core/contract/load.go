package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// Limits that keep hostile documents (alias bombs, absurd nesting, huge
// files) from exhausting memory or the stack, on the client and the server
// alike. Real contracts are far below all of them: a contract of 1,000
// fields is about 100 KB.
const (
	// MaxDocumentBytes bounds one contract (or canonical model, consumer,
	// namespace) document.
	MaxDocumentBytes = 1 << 20
	// MaxAliasNodes and MaxAliasBytes bound what aliases may add to a
	// document: the nodes and the scalar text of every anchored subtree,
	// counted once per alias that repeats it. A document whose aliases
	// would expand beyond them is refused before anything is expanded.
	MaxAliasNodes = 1 << 16
	MaxAliasBytes = 1 << 20

	maxNodes = 1 << 20
	maxDepth = 64
)

// LoadError is a document that could not be turned into a contract: malformed
// YAML, an unknown key, a value of the wrong type or an unknown enum name.
type LoadError struct {
	// Source names where the document came from, usually its file name.
	Source string
	// Line and Column locate the offending node (1-based); 0 when unknown.
	Line, Column int
	// Path is the field path inside the document, for example
	// "fields[2].type"; empty for errors about the whole document.
	Path string
	// Message says what is wrong and what would be accepted.
	Message string
	// Err is the underlying parser error, if any.
	Err error
}

// Error renders the error as "source:line:col: path: message".
func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString(e.Source)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	if e.Path != "" {
		b.WriteString(": ")
		b.WriteString(e.Path)
	}
	b.WriteString(": ")
	b.WriteString(e.Message)
	return b.String()
}

// Unwrap returns the underlying parser error.
func (e *LoadError) Unwrap() error { return e.Err }

// Load reads one contract authored as YAML (or JSON, which YAML contains).
// Enum values may be written short (type: STRING, policy: BLOCK) or in full
// (FIELD_TYPE_STRING). The result is not validated; call Validate.
func Load(data []byte, source string) (*contractv1.Contract, error) {
	c := &contractv1.Contract{}
	if err := Decode(data, source, c); err != nil {
		return nil, err
	}
	return c, nil
}

// LoadCanonicalModel reads one canonical model authored as YAML or JSON, with
// the same enum shorthand as Load. The result is not validated; call
// ValidateCanonicalModel.
func LoadCanonicalModel(data []byte, source string) (*contractv1.CanonicalModel, error) {
	m := &contractv1.CanonicalModel{}
	if err := Decode(data, source, m); err != nil {
		return nil, err
	}
	return m, nil
}

// LoadFile reads the contract in the file at path.
func LoadFile(path string) (*contractv1.Contract, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Load(data, path)
}

// LoadCanonicalModelFile reads the canonical model in the file at path.
func LoadCanonicalModelFile(path string) (*contractv1.CanonicalModel, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return LoadCanonicalModel(data, path)
}

// ReadFile reads a document file of at most MaxDocumentBytes, without
// reading more of a larger one than the limit.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > MaxDocumentBytes {
		return nil, tooLarge(path)
	}
	return data, nil
}

func tooLarge(source string) error {
	return &LoadError{Source: source, Message: fmt.Sprintf("the document is larger than %d bytes; a contract is far smaller (1,000 fields are about 100 KB): split it, or check that this is the file you meant", MaxDocumentBytes)}
}

// Decode reads a YAML or JSON document into any proto message m, walking m's
// descriptor beside the YAML tree. That walk is what lets authors write enum
// values without their prefix and what puts a line, a column and a field path
// on every error; protojson then builds the message with unknown fields
// refused, so the proto's own JSON rules stay the final word.
//
// YAML 1.2 scalars are used (through go.yaml.in/yaml/v3), so `enum: [NO, SE]`
// stays two country codes instead of turning into a boolean, and a scalar
// given for a string field is taken verbatim as its text.
func Decode(data []byte, source string, m proto.Message) error {
	if len(data) > MaxDocumentBytes {
		return tooLarge(source)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return &LoadError{Source: source, Message: "empty document; want a YAML or JSON mapping"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		// Only comments: there is no document at all.
		return &LoadError{Source: source, Message: "empty document; want a YAML or JSON mapping"}
	case err != nil:
		return yamlError(source, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return yamlError(source, err)
	default:
		return &LoadError{Source: source, Line: extra.Line, Column: extra.Column,
			Message: "second YAML document; want exactly one document per file"}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	conv := &converter{source: source, sizes: map[*yaml.Node]treeSize{}}
	root, err := conv.resolve(root, "")
	if err != nil {
		return err
	}
	if isNull(root) {
		return &LoadError{Source: source, Line: root.Line, Column: root.Column,
			Message: "empty document; want a YAML or JSON mapping"}
	}
	v, err := conv.message(root, m.ProtoReflect().Descriptor(), "", 0)
	if err != nil {
		return err
	}
	js, err := json.Marshal(v)
	if err != nil {
		return &LoadError{Source: source, Message: "converting to JSON: " + err.Error(), Err: err}
	}
	opts := protojson.UnmarshalOptions{DiscardUnknown: false}
	if err := opts.Unmarshal(js, m); err != nil {
		return &LoadError{Source: source, Message: fmt.Sprintf("building %s: %v", m.ProtoReflect().Descriptor().Name(), err), Err: err}
	}
	return nil
}

// yamlLine matches the position yaml.v3 puts at the front of its syntax errors.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// YAMLSyntax splits a yaml.v3 syntax error into the line it names (0 when
// it names none) and its message without that position, for errors that
// carry the line in a field of their own.
func YAMLSyntax(err error) (line int, msg string) {
	msg = err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	return line, msg
}

func yamlError(source string, err error) error {
	line, msg := YAMLSyntax(err)
	return &LoadError{Source: source, Line: line, Message: "malformed YAML: " + msg, Err: err}
}

// converter turns a YAML node tree into the JSON value protojson expects for
// a message, checking keys and value kinds against the descriptor.
type converter struct {
	source string
	nodes  int
	// aliasNodes and aliasBytes are what aliases have added so far; sizes
	// memoises the expanded size of anchored subtrees.
	aliasNodes, aliasBytes int
	sizes                  map[*yaml.Node]treeSize
}

// treeSize is the expanded size of a subtree: its nodes and scalar text,
// aliases inside it counted as what they repeat. Sums saturate, so a bomb
// of a billion nodes is measured without overflowing or expanding it.
type treeSize struct{ nodes, bytes int }

const saturated = 1 << 40

func (c *converter) size(n *yaml.Node, depth int) treeSize {
	if n == nil || depth > maxDepth {
		return treeSize{}
	}
	if s, ok := c.sizes[n]; ok {
		return s
	}
	s := treeSize{nodes: 1, bytes: len(n.Value)}
	if n.Kind == yaml.AliasNode {
		s = c.size(n.Alias, depth+1)
	}
	for _, child := range n.Content {
		cs := c.size(child, depth+1)
		s.nodes = min(s.nodes+cs.nodes, saturated)
		s.bytes = min(s.bytes+cs.bytes, saturated)
	}
	c.sizes[n] = s
	return s
}

func (c *converter) fail(n *yaml.Node, path, format string, args ...any) error {
	e := &LoadError{Source: c.source, Path: path, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	return e
}

// item is the i-th item of the sequence n at path, aliases resolved, and
// its own path.
func (c *converter) item(n *yaml.Node, path string, i int) (*yaml.Node, string, error) {
	epath := fmt.Sprintf("%s[%d]", path, i)
	en, err := c.resolve(n.Content[i], epath)
	return en, epath, err
}

// resolve follows aliases and counts nodes, so an alias bomb ends in an
// error instead of exhausting memory: what an alias repeats is measured
// before it is expanded, against MaxAliasNodes and MaxAliasBytes.
func (c *converter) resolve(n *yaml.Node, path string) (*yaml.Node, error) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		s := c.size(n.Alias, 0)
		c.aliasNodes = min(c.aliasNodes+s.nodes, saturated)
		c.aliasBytes = min(c.aliasBytes+s.bytes, saturated)
		if c.aliasNodes > MaxAliasNodes || c.aliasBytes > MaxAliasBytes {
			return nil, c.fail(n, path, "alias *%s would expand the document beyond %d nodes or %d bytes of text repeated through aliases (an alias bomb?); write the values out or use fewer aliases",
				n.Value, MaxAliasNodes, MaxAliasBytes)
		}
	}
	for hops := 0; n.Kind == yaml.AliasNode; hops++ {
		if n.Alias == nil || hops > maxDepth {
			return nil, c.fail(n, path, "alias %q does not resolve", n.Value)
		}
		n = n.Alias
	}
	c.nodes++
	if c.nodes > maxNodes {
		return nil, c.fail(n, path, "document has more than %d nodes (counting alias expansions); split it or remove aliases", maxNodes)
	}
	return n, nil
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	default:
		return "an empty document"
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (c *converter) message(n *yaml.Node, md protoreflect.MessageDescriptor, path string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, c.fail(n, path, "nested deeper than %d levels", maxDepth)
	}
	if md.ParentFile().Package() == "google.protobuf" {
		// Well-known types (Value in defaults and constants) take any JSON.
		return c.generic(n, path, depth)
	}
	if n.Kind != yaml.MappingNode {
		return nil, c.fail(n, path, "want a mapping of %s fields, got %s", md.Name(), kindName(n))
	}
	out := make(map[string]any, len(n.Content)/2)
	seen := make(map[string]*yaml.Node, len(n.Content)/2)
	oneofs := make(map[protoreflect.FullName]string)
	fds := md.Fields()
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, err := c.resolve(n.Content[i], path)
		if err != nil {
			return nil, err
		}
		key := kn.Value
		kpath := join(path, key)
		fd := fds.ByName(protoreflect.Name(key))
		if fd == nil {
			fd = fds.ByJSONName(key)
		}
		if fd == nil {
			return nil, c.fail(kn, kpath, "unknown field %q of %s; known fields are %s", key, md.Name(), fieldNames(md))
		}
		name := string(fd.Name())
		if prev, dup := seen[name]; dup {
			return nil, c.fail(kn, kpath, "%q given twice (first on line %d); keep one", key, prev.Line)
		}
		seen[name] = kn
		vn, err := c.resolve(n.Content[i+1], kpath)
		if err != nil {
			return nil, err
		}
		if isNull(vn) {
			continue
		}
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			if other, ok := oneofs[od.FullName()]; ok {
				return nil, c.fail(kn, kpath, "%s and %s are alternatives (%s); give only one", other, name, od.Name())
			}
			oneofs[od.FullName()] = name
		}
		v, err := c.field(vn, fd, kpath, depth)
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}

func fieldNames(md protoreflect.MessageDescriptor) string {
	fds := md.Fields()
	names := make([]string, fds.Len())
	for i := range names {
		names[i] = string(fds.Get(i).Name())
	}
	return strings.Join(names, ", ")
}

func (c *converter) field(n *yaml.Node, fd protoreflect.FieldDescriptor, path string, depth int) (any, error) {
	switch {
	case fd.IsList():
		if n.Kind != yaml.SequenceNode {
			return nil, c.fail(n, path, "want a list, got %s", kindName(n))
		}
		out := make([]any, 0, len(n.Content))
		for i := range n.Content {
			en, epath, err := c.item(n, path, i)
			if err != nil {
				return nil, err
			}
			if isNull(en) {
				return nil, c.fail(en, epath, "empty list item; remove it or give a value")
			}
			v, err := c.single(en, fd, epath, depth)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case fd.IsMap():
		if n.Kind != yaml.MappingNode {
			return nil, c.fail(n, path, "want a mapping, got %s", kindName(n))
		}
		out := make(map[string]any, len(n.Content)/2)
		err := c.entries(n, path, func(key, kpath string, vn *yaml.Node) error {
			if isNull(vn) && fd.MapValue().Kind() != protoreflect.MessageKind {
				return c.fail(vn, kpath, "empty value; give a value or remove the key")
			}
			v, err := c.single(vn, fd.MapValue(), kpath, depth)
			out[key] = v
			return err
		})
		if err != nil {
			return nil, err
		}
		return out, nil
	default:
		return c.single(n, fd, path, depth)
	}
}

// entries walks a mapping node: it resolves each key and value in order,
// refuses keys that are not text or are given twice, and calls fn with the
// key, its path and its value.
func (c *converter) entries(n *yaml.Node, path string, fn func(key, kpath string, vn *yaml.Node) error) error {
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, err := c.resolve(n.Content[i], path)
		if err != nil {
			return err
		}
		if kn.Kind != yaml.ScalarNode {
			return c.fail(kn, path, "want a text key, got %s", kindName(kn))
		}
		kpath := mapPath(path, kn.Value)
		if seen[kn.Value] {
			return c.fail(kn, kpath, "key %q given twice; keep one", kn.Value)
		}
		seen[kn.Value] = true
		vn, err := c.resolve(n.Content[i+1], kpath)
		if err != nil {
			return err
		}
		if err := fn(kn.Value, kpath, vn); err != nil {
			return err
		}
	}
	return nil
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func mapPath(path, key string) string {
	if plainKey.MatchString(key) {
		return join(path, key)
	}
	return fmt.Sprintf("%s[%q]", path, key)
}

func (c *converter) single(n *yaml.Node, fd protoreflect.FieldDescriptor, path string, depth int) (any, error) {
	if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
		if isNull(n) {
			return map[string]any{}, nil
		}
		return c.message(n, fd.Message(), path, depth+1)
	}
	if n.Kind != yaml.ScalarNode {
		return nil, c.fail(n, path, "want a single value, got %s", kindName(n))
	}
	tag := n.ShortTag()
	switch fd.Kind() {
	case protoreflect.EnumKind:
		return c.enum(n, fd.Enum(), path)
	case protoreflect.StringKind, protoreflect.BytesKind:
		return n.Value, nil
	case protoreflect.BoolKind:
		if tag != "!!bool" {
			return nil, c.fail(n, path, "want true or false, got %q", n.Value)
		}
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, c.fail(n, path, "want true or false, got %q", n.Value)
		}
		return b, nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		var i int64
		if tag != "!!int" || n.Decode(&i) != nil {
			return nil, c.fail(n, path, "want a whole number, got %q", n.Value)
		}
		if fd.Kind() != protoreflect.Int64Kind && fd.Kind() != protoreflect.Sint64Kind && fd.Kind() != protoreflect.Sfixed64Kind &&
			(i < math.MinInt32 || i > math.MaxInt32) {
			return nil, c.fail(n, path, "%d does not fit a 32-bit integer", i)
		}
		return i, nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		var u uint64
		if tag != "!!int" || n.Decode(&u) != nil {
			return nil, c.fail(n, path, "want a whole number of zero or more, got %q", n.Value)
		}
		if (fd.Kind() == protoreflect.Uint32Kind || fd.Kind() == protoreflect.Fixed32Kind) && u > math.MaxUint32 {
			return nil, c.fail(n, path, "%d does not fit a 32-bit integer", u)
		}
		return u, nil
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		var f float64
		if (tag != "!!int" && tag != "!!float") || n.Decode(&f) != nil {
			return nil, c.fail(n, path, "want a number, got %q", n.Value)
		}
		switch {
		case math.IsNaN(f):
			return "NaN", nil
		case math.IsInf(f, 1):
			return "Infinity", nil
		case math.IsInf(f, -1):
			return "-Infinity", nil
		}
		return f, nil
	}
	return nil, c.fail(n, path, "field kind %s is not supported in YAML documents", fd.Kind())
}

// enumPrefix is the prefix shared by an enum's value names, taken from its
// *_UNSPECIFIED zero value ("FIELD_TYPE_" for FieldType).
func enumPrefix(ed protoreflect.EnumDescriptor) string {
	if ed.Values().Len() == 0 {
		return ""
	}
	zero := string(ed.Values().Get(0).Name())
	if p, ok := strings.CutSuffix(zero, "UNSPECIFIED"); ok {
		return p
	}
	return ""
}

func (c *converter) enum(n *yaml.Node, ed protoreflect.EnumDescriptor, path string) (any, error) {
	values := ed.Values()
	if n.ShortTag() == "!!int" {
		var i int32
		if n.Decode(&i) == nil && values.ByNumber(protoreflect.EnumNumber(i)) != nil {
			return string(values.ByNumber(protoreflect.EnumNumber(i)).Name()), nil
		}
	}
	name := strings.ToUpper(strings.TrimSpace(n.Value))
	prefix := enumPrefix(ed)
	if v := values.ByName(protoreflect.Name(name)); v != nil {
		return string(v.Name()), nil
	}
	if v := values.ByName(protoreflect.Name(prefix + name)); v != nil {
		return string(v.Name()), nil
	}
	return nil, c.fail(n, path, "unknown %s %q; want one of %s", ed.Name(), n.Value, strings.Join(enumNames(ed), ", "))
}

// enumNames lists the short names of an enum's values other than its zero
// value, the names an author is expected to write.
func enumNames(ed protoreflect.EnumDescriptor) []string {
	prefix := enumPrefix(ed)
	var names []string
	for i := 0; i < ed.Values().Len(); i++ {
		v := ed.Values().Get(i)
		if v.Number() == 0 && prefix != "" {
			continue
		}
		names = append(names, strings.TrimPrefix(string(v.Name()), prefix))
	}
	return names
}

// generic converts any YAML node into a plain JSON value, for the
// google.protobuf.Value fields (defaults and constants).
func (c *converter) generic(n *yaml.Node, path string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, c.fail(n, path, "nested deeper than %d levels", maxDepth)
	}
	switch n.Kind {
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		err := c.entries(n, path, func(key, kpath string, vn *yaml.Node) error {
			v, err := c.generic(vn, kpath, depth+1)
			out[key] = v
			return err
		})
		if err != nil {
			return nil, err
		}
		return out, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i := range n.Content {
			en, epath, err := c.item(n, path, i)
			if err != nil {
				return nil, err
			}
			v, err := c.generic(en, epath, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, c.fail(n, path, "want true or false, got %q", n.Value)
			}
			return b, nil
		case "!!int", "!!float":
			var f float64
			if err := n.Decode(&f); err != nil {
				return nil, c.fail(n, path, "want a number, got %q", n.Value)
			}
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, c.fail(n, path, "%q is not a JSON number; quote it to send text", n.Value)
			}
			return f, nil
		default:
			return n.Value, nil
		}
	}
	return nil, c.fail(n, path, "want a value, got %s", kindName(n))
}
