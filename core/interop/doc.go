package interop

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/seamdata/seam/core/contract"
)

// Limits that keep hostile documents (alias bombs, absurd nesting) from
// exhausting memory, the stack or time.
const (
	maxNodes = 1 << 20
	maxDepth = 64
	// aliasAllowance is how many nodes aliases may add beyond the
	// document's own: a contract reuses a few blocks, it does not expand a
	// small text into a large tree. Without it a 130-byte alias bomb costs
	// a million nodes and seconds to refuse.
	aliasAllowance = 1000
)

// ValueKind is the JSON kind of a Value.
type ValueKind int

// Value kinds.
const (
	Null ValueKind = iota
	Bool
	Number
	String
	List
	Map
)

func (k ValueKind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "a list", "a mapping"}[k]
}

// Value is one node of a parsed YAML or JSON document, with where it sits.
type Value struct {
	Kind ValueKind
	// Text is a scalar's text: the string, the number literal, "true".
	Text string
	// Items are a list's elements.
	Items []*Value
	// Keys and Vals are a mapping's entries in document order.
	Keys []string
	Vals []*Value
	// Path locates the node ("schema[0].properties[1].name").
	Path         string
	Line, Column int
}

// Get returns the value of key in a mapping, or nil.
func (v *Value) Get(key string) *Value {
	if v == nil || v.Kind != Map {
		return nil
	}
	for i, k := range v.Keys {
		if k == key {
			return v.Vals[i]
		}
	}
	return nil
}

// Float returns a number's value.
func (v *Value) Float() (float64, bool) {
	if v == nil || v.Kind != Number {
		return 0, false
	}
	f, err := strconv.ParseFloat(v.Text, 64)
	return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
}

// Int returns a whole number's value.
func (v *Value) Int() (int64, bool) {
	if v == nil || v.Kind != Number {
		return 0, false
	}
	if i, err := strconv.ParseInt(v.Text, 10, 64); err == nil {
		return i, true
	}
	f, ok := v.Float()
	if !ok || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

// Scalar renders a scalar as text (strings as they are, numbers and
// booleans as written, null as ""); ok is false for lists and mappings.
func (v *Value) Scalar() (string, bool) {
	if v == nil {
		return "", false
	}
	switch v.Kind {
	case Null:
		return "", true
	case Bool, Number, String:
		return v.Text, true
	}
	return "", false
}

// Any converts the value to plain Go values (map[string]any, []any,
// float64, string, bool, nil), for export and for facets.
func (v *Value) Any() any {
	switch v.Kind {
	case Bool:
		return v.Text == "true"
	case Number:
		if i, err := strconv.ParseInt(v.Text, 10, 64); err == nil {
			return i
		}
		f, _ := strconv.ParseFloat(v.Text, 64)
		return f
	case String:
		return v.Text
	case List:
		out := make([]any, len(v.Items))
		for i, it := range v.Items {
			out[i] = it.Any()
		}
		return out
	case Map:
		out := make(map[string]any, len(v.Keys))
		for i, k := range v.Keys {
			out[k] = v.Vals[i].Any()
		}
		return out
	}
	return nil
}

// Parse reads one YAML or JSON document into a Value tree. It refuses
// several documents in one file, invalid UTF-8, alias bombs and nesting
// deeper than 64 levels, with the line of the problem.
func Parse(data []byte, source string) (*Value, error) {
	if !utf8.Valid(data) {
		return nil, &Error{Source: source, Message: "document is not valid UTF-8"}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &Error{Source: source, Message: "empty document; want a YAML or JSON mapping"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return nil, &Error{Source: source, Message: "empty document; want a YAML or JSON mapping"}
	case err != nil:
		return nil, yamlError(source, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, yamlError(source, err)
	default:
		return nil, &Error{Source: source, Line: extra.Line, Column: extra.Column, Message: "second YAML document; want exactly one document per file"}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	p := &parser{source: source}
	p.budget = min(maxNodes, written(root, 0)+aliasAllowance)
	v, err := p.value(root, "", 0)
	if err != nil {
		return nil, err
	}
	if v.Kind != Map {
		return nil, &Error{Source: source, Line: v.Line, Column: v.Column, Message: fmt.Sprintf("the document is %s; want a mapping", v.Kind)}
	}
	return v, nil
}

func yamlError(source string, err error) error {
	line, msg := contract.YAMLSyntax(err)
	return &Error{Source: source, Line: line, Message: "malformed YAML or JSON: " + msg, Err: err}
}

type parser struct {
	source string
	nodes  int
	// budget is how many nodes the document may have with its aliases
	// expanded.
	budget int
}

// written counts the nodes of a YAML tree as written, an alias counting as
// one node; deeper than maxDepth it stops, since value refuses that anyway.
func written(n *yaml.Node, depth int) int {
	if n == nil || depth > maxDepth {
		return 0
	}
	c := 1
	if n.Kind != yaml.AliasNode {
		for _, k := range n.Content {
			c += written(k, depth+1)
		}
	}
	return c
}

func (p *parser) fail(n *yaml.Node, path, format string, args ...any) error {
	return &Error{Source: p.source, Line: n.Line, Column: n.Column, Path: path, Message: fmt.Sprintf(format, args...)}
}

// Join appends a key to a path.
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Index appends a list index to a path.
func Index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func (p *parser) value(n *yaml.Node, path string, depth int) (*Value, error) {
	for hops := 0; n.Kind == yaml.AliasNode; hops++ {
		if n.Alias == nil || hops > maxDepth {
			return nil, p.fail(n, path, "alias %q does not resolve", n.Value)
		}
		n = n.Alias
	}
	p.nodes++
	if p.nodes > p.budget {
		if p.budget == maxNodes {
			return nil, p.fail(n, path, "document has more than %d nodes (counting alias expansions)", maxNodes)
		}
		return nil, p.fail(n, path, "aliases expand the document past %d nodes (the %d it is written with, plus %d); write the repeated parts out instead of referring to them",
			p.budget, p.budget-aliasAllowance, aliasAllowance)
	}
	if depth > maxDepth {
		return nil, p.fail(n, path, "nested deeper than %d levels", maxDepth)
	}
	v := &Value{Path: path, Line: n.Line, Column: n.Column}
	switch n.Kind {
	case yaml.MappingNode:
		v.Kind = Map
		var seen keySet
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn := n.Content[i]
			if kn.Kind != yaml.ScalarNode {
				return nil, p.fail(kn, path, "mapping keys must be text")
			}
			if kn.Value == "<<" {
				return nil, p.fail(kn, path, "YAML merge keys (<<) are not supported; write the keys out")
			}
			if seen.has(v, kn.Value) {
				return nil, p.fail(kn, Join(path, kn.Value), "key %q given twice; keep one", kn.Value)
			}
			child, err := p.value(n.Content[i+1], Join(path, kn.Value), depth+1)
			if err != nil {
				return nil, err
			}
			v.Keys = append(v.Keys, kn.Value)
			v.Vals = append(v.Vals, child)
		}
	case yaml.SequenceNode:
		v.Kind = List
		for i, en := range n.Content {
			child, err := p.value(en, Index(path, i), depth+1)
			if err != nil {
				return nil, err
			}
			v.Items = append(v.Items, child)
		}
	case yaml.ScalarNode:
		v.Text = n.Value
		switch n.ShortTag() {
		case "!!null":
			v.Kind = Null
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, p.fail(n, path, "want true or false, got %q", n.Value)
			}
			v.Kind, v.Text = Bool, strconv.FormatBool(b)
		case "!!int", "!!float":
			var f float64
			if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, p.fail(n, path, "%q is not a JSON number; quote it to give text", n.Value)
			}
			v.Kind = Number
			if _, err := strconv.ParseInt(n.Value, 10, 64); err != nil {
				// Keep one spelling for every number that is not a plain
				// integer literal (1e3, 0x10, 1_000).
				var i int64
				if n.ShortTag() == "!!int" && n.Decode(&i) == nil {
					v.Text = strconv.FormatInt(i, 10)
				} else {
					v.Text = strconv.FormatFloat(f, 'g', -1, 64)
				}
			}
		default:
			v.Kind = String
		}
	default:
		return nil, p.fail(n, path, "unsupported YAML node")
	}
	return v, nil
}

// keySet finds a key among a mapping's keys so far: by scanning while
// there are few, by a map once there are many, so a mapping with thousands
// of keys is not quadratic.
type keySet map[string]struct{}

func (s *keySet) has(v *Value, key string) bool {
	const scan = 16
	if *s == nil {
		if len(v.Keys) < scan {
			return slices.Contains(v.Keys, key)
		}
		*s = make(keySet, 2*len(v.Keys))
		for _, k := range v.Keys {
			(*s)[k] = struct{}{}
		}
	}
	if _, ok := (*s)[key]; ok {
		return true
	}
	(*s)[key] = struct{}{}
	return false
}

// Object reads the entries of a mapping and remembers which were taken, so
// a converter can report every key it did not understand.
type Object struct {
	V    *Value
	used map[string]bool
}

// NewObject wraps a mapping.
func NewObject(v *Value) *Object { return &Object{V: v, used: map[string]bool{}} }

// Take returns the value of key (nil when absent) and marks it handled.
func (o *Object) Take(key string) *Value {
	o.used[key] = true
	return o.V.Get(key)
}

// Has reports whether key is present, without marking it.
func (o *Object) Has(key string) bool { return o.V.Get(key) != nil }

// Rest returns the keys not taken, in document order, with their values.
func (o *Object) Rest() []*Value {
	var out []*Value
	for i, k := range o.V.Keys {
		if !o.used[k] {
			out = append(out, o.V.Vals[i])
		}
	}
	return out
}

// Key returns the last path segment of v: the key it was found under.
func Key(v *Value) string {
	p := v.Path
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[i+1:]
	}
	return p
}
