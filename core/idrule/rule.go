package idrule

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// Func translates one id that already passed its source format's check.
// It returns the translated id and Hit, or "" and Miss when the rule has no
// image for it (an int outside a template's range, a UUID without the
// embedding prefix, an output the target format refuses).
type Func func(id string) (string, Status)

// Compiled is a rule ready to run.
type Compiled struct {
	// Rule is the validated rule; lookup rules are marked reversible because
	// a one-to-one table answers both directions.
	Rule *idmapv1.Rule
	// From and To are the formats of the forward direction.
	From, To *Format
	// Forward translates From ids to To ids; nil for lookup rules.
	Forward Func
	// Reverse translates To ids back to From ids; nil unless the rule is
	// deterministic and reversible.
	Reverse Func
	// Lookup is true when the pair is served by a lookup table.
	Lookup bool
}

// Compile checks rule against the formats it connects and compiles it.
// Errors are *FieldError with paths under "rule". It refuses rules that
// cannot be one-to-one where they claim to be: a reversible UUIDv5, a
// template whose parse-back would be ambiguous.
func Compile(rule *idmapv1.Rule, from, to *Format) (*Compiled, error) {
	if from == nil {
		return nil, &FieldError{"rule.from_format", fmt.Sprintf("format %q is not defined in the namespace", rule.GetFromFormat())}
	}
	if to == nil {
		return nil, &FieldError{"rule.to_format", fmt.Sprintf("format %q is not defined in the namespace", rule.GetToFormat())}
	}
	if from.name == to.name {
		return nil, &FieldError{"rule.to_format", fmt.Sprintf("is the same as from_format %q; a rule connects two different formats", from.name)}
	}
	c := &Compiled{Rule: proto.Clone(rule).(*idmapv1.Rule), From: from, To: to}
	var err error
	switch s := rule.GetStrategy().(type) {
	case *idmapv1.Rule_Template:
		err = c.compileTemplate(s.Template.GetTemplate())
	case *idmapv1.Rule_UuidEmbed:
		err = c.compileUUIDEmbed(s.UuidEmbed.GetPrefix())
	case *idmapv1.Rule_UuidV5:
		err = c.compileUUIDv5(s.UuidV5.GetNamespaceUuid())
	case *idmapv1.Rule_Normalize:
		err = c.compileNormalize(s.Normalize)
	case *idmapv1.Rule_Lookup:
		c.Lookup = true
		c.Rule.Reversible = true
	default:
		err = &FieldError{"rule.strategy", "must be one of template, uuid_embed, uuid_v5, normalize, lookup"}
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Verify runs the rule on sample ids of the From format: each must be valid,
// translate, and, where the rule is reversible, translate back to itself.
// It returns how many samples were checked; the error is a *SampleError.
func (c *Compiled) Verify(samples []string) (int, error) {
	for i, s := range samples {
		if err := c.From.Check(s); err != nil {
			return i, &SampleError{Index: i, Sample: s, Reason: err.Error()}
		}
		if c.Lookup {
			continue
		}
		out, st := c.Forward(s)
		if st != Hit {
			return i, &SampleError{Index: i, Sample: s, Reason: fmt.Sprintf("the rule gives no %s id for it (%s)", c.To.name, st)}
		}
		if err := c.To.Check(out); err != nil {
			return i, &SampleError{Index: i, Sample: s, Reason: fmt.Sprintf("translates to %q, which the target format refuses: %v", out, err)}
		}
		if c.Reverse == nil {
			continue
		}
		back, st := c.Reverse(out)
		if st != Hit || back != s {
			return i, &SampleError{Index: i, Sample: s, Reason: fmt.Sprintf("translates to %q but that translates back to %q (%s); the rule is not one-to-one on this id, so it cannot be reversible", out, back, st)}
		}
	}
	return len(samples), nil
}

// SampleError says which sample a rule failed on.
type SampleError struct {
	Index  int
	Sample string
	Reason string
}

// Error implements error.
func (e *SampleError) Error() string {
	return fmt.Sprintf("samples[%d] %q: %s", e.Index, e.Sample, e.Reason)
}

// guard wraps f so that its output must fit the target format: a rendered
// template or normalized string the target refuses is a miss, never a
// malformed id handed downstream.
func guard(f Func, to *Format) Func {
	return func(id string) (string, Status) {
		out, st := f(id)
		if st == Hit && !to.Valid(out) {
			return "", Miss
		}
		return out, st
	}
}

// compileTemplate handles "PREFIX{int:0N}SUFFIX" and "PREFIX{uuid}SUFFIX".
// The literal parts are fixed, so parsing back strips them; the placeholder
// text must be canonical (padded to exactly N digits, or longer without a
// leading zero), so every number has one rendering and every rendering one
// number.
func (c *Compiled) compileTemplate(tmpl string) error {
	const field = "rule.template.template"
	open := strings.IndexByte(tmpl, '{')
	if open < 0 {
		return &FieldError{field, fmt.Sprintf("%q has no placeholder; want one of {int}, {int:0N} or {uuid}", tmpl)}
	}
	end := strings.IndexByte(tmpl[open:], '}')
	if end < 0 {
		return &FieldError{field, fmt.Sprintf("%q has an unclosed '{'", tmpl)}
	}
	end += open
	prefix, placeholder, suffix := tmpl[:open], tmpl[open+1:end], tmpl[end+1:]
	if strings.ContainsAny(prefix+suffix, "{}") {
		return &FieldError{field, fmt.Sprintf("%q has more than one placeholder or a stray brace; a second placeholder makes parse-back ambiguous", tmpl)}
	}
	if prefix == "" && suffix == "" {
		return &FieldError{field, fmt.Sprintf("%q is only a placeholder; use a normalize rule or the same format", tmpl)}
	}
	typ, spec, hasSpec := strings.Cut(placeholder, ":")
	var valueKind idmapv1.FormatKind
	width := 0
	switch typ {
	case "int":
		valueKind = idmapv1.FormatKind_FORMAT_KIND_INT
		if hasSpec {
			w, err := strconv.Atoi(strings.TrimPrefix(spec, "0"))
			if !strings.HasPrefix(spec, "0") || err != nil || w < 1 || w > 19 {
				return &FieldError{field, fmt.Sprintf("placeholder {%s}: padding must be 0N with N from 1 to 19, such as {int:08}", placeholder)}
			}
			width = w
		}
	case "uuid":
		valueKind = idmapv1.FormatKind_FORMAT_KIND_UUID
		if hasSpec {
			return &FieldError{field, fmt.Sprintf("placeholder {%s}: {uuid} takes no options", placeholder)}
		}
	default:
		return &FieldError{field, fmt.Sprintf("placeholder {%s}: unknown type %q, want int or uuid", placeholder, typ)}
	}

	// One side holds the value, the other (textSide) the rendered string.
	var textSide *Format
	forwardRenders := false
	switch {
	case c.From.kind == valueKind && c.To.kind == idmapv1.FormatKind_FORMAT_KIND_STRING:
		textSide, forwardRenders = c.To, true
	case c.To.kind == valueKind && c.From.kind == idmapv1.FormatKind_FORMAT_KIND_STRING:
		textSide = c.From
	default:
		return &FieldError{"rule", fmt.Sprintf("template {%s} connects a %s format and a STRING format; %s is %s and %s is %s",
			typ, valueKind, c.From.name, c.From.kind, c.To.name, c.To.kind)}
	}

	var render, parse Func
	if valueKind == idmapv1.FormatKind_FORMAT_KIND_INT {
		render = func(id string) (string, Status) {
			v, ok := ParseInt(id)
			if !ok || v < 0 {
				// Negative numbers have no rendering: "-" inside a padded
				// field would give two spellings of one number.
				return "", Miss
			}
			digits := strconv.FormatInt(v, 10)
			var b strings.Builder
			b.Grow(len(prefix) + max(width, len(digits)) + len(suffix))
			b.WriteString(prefix)
			for range width - len(digits) {
				b.WriteByte('0')
			}
			b.WriteString(digits)
			b.WriteString(suffix)
			return b.String(), Hit
		}
		parse = func(s string) (string, Status) {
			if len(s) < len(prefix)+len(suffix) || !strings.HasPrefix(s, prefix) || !strings.HasSuffix(s, suffix) {
				return "", Miss
			}
			digits := s[len(prefix) : len(s)-len(suffix)]
			if len(digits) == 0 || len(digits) < width {
				return "", Miss
			}
			for i := 0; i < len(digits); i++ {
				if digits[i] < '0' || digits[i] > '9' {
					return "", Miss
				}
			}
			// Exactly width digits may carry padding zeros; a longer field
			// must not, or two strings would name one number.
			if len(digits) > width && len(digits) > 1 && digits[0] == '0' {
				return "", Miss
			}
			trimmed := strings.TrimLeft(digits, "0")
			if trimmed == "" {
				trimmed = "0"
			}
			if _, ok := ParseInt(trimmed); !ok {
				return "", Miss
			}
			return trimmed, Hit
		}
	} else {
		render = func(id string) (string, Status) {
			return prefix + id + suffix, Hit
		}
		parse = func(s string) (string, Status) {
			if len(s) != len(prefix)+36+len(suffix) || !strings.HasPrefix(s, prefix) || !strings.HasSuffix(s, suffix) {
				return "", Miss
			}
			u := s[len(prefix) : len(prefix)+36]
			if _, ok := ParseUUID(u); !ok {
				return "", Miss
			}
			return u, Hit
		}
	}
	render = guard(render, textSide)
	if forwardRenders {
		c.Forward, c.Reverse = render, parse
	} else {
		c.Forward, c.Reverse = parse, render
	}
	if !c.Rule.GetReversible() {
		c.Reverse = nil
	}
	return nil
}

// compileUUIDEmbed handles an int64 stored big-endian in the low 8 bytes of
// a UUID whose high 8 bytes are the fixed prefix. Every int64 has exactly
// one such UUID, so the rule is one-to-one; UUIDs with another prefix miss.
func (c *Compiled) compileUUIDEmbed(prefix string) error {
	const field = "rule.uuid_embed.prefix"
	raw := strings.ReplaceAll(strings.ToLower(prefix), "-", "")
	if len(raw) != 16 {
		return &FieldError{field, fmt.Sprintf("%q has %d hex digits, want exactly 16 (the first 8 bytes of the UUID)", prefix, len(raw))}
	}
	var high [8]byte
	if _, err := hex.Decode(high[:], []byte(raw)); err != nil {
		return &FieldError{field, fmt.Sprintf("%q is not hexadecimal: %v", prefix, err)}
	}
	embed := func(id string) (string, Status) {
		v, ok := ParseInt(id)
		if !ok {
			return "", Miss
		}
		var u [16]byte
		copy(u[:8], high[:])
		binary.BigEndian.PutUint64(u[8:], uint64(v))
		return FormatUUID(u), Hit
	}
	extract := func(id string) (string, Status) {
		u, ok := ParseUUID(id)
		if !ok || [8]byte(u[:8]) != high {
			return "", Miss
		}
		return strconv.FormatInt(int64(binary.BigEndian.Uint64(u[8:])), 10), Hit
	}
	intKind, uuidKind := idmapv1.FormatKind_FORMAT_KIND_INT, idmapv1.FormatKind_FORMAT_KIND_UUID
	switch {
	case c.From.kind == intKind && c.To.kind == uuidKind:
		c.Forward, c.Reverse = embed, extract
	case c.From.kind == uuidKind && c.To.kind == intKind:
		c.Forward, c.Reverse = extract, embed
	default:
		return &FieldError{"rule", fmt.Sprintf("uuid_embed connects an INT format and a UUID format; %s is %s and %s is %s",
			c.From.name, c.From.kind, c.To.name, c.To.kind)}
	}
	if !c.Rule.GetReversible() {
		c.Reverse = nil
	}
	return nil
}

// compileUUIDv5 derives a name-based UUID (RFC 9562 section 5.5): SHA-1 of
// the namespace UUID followed by the id's bytes, version 5, RFC variant.
// SHA-1 cannot be inverted, so a reversible UUIDv5 rule is refused: the
// reverse direction needs a lookup table.
func (c *Compiled) compileUUIDv5(namespace string) error {
	ns, ok := ParseUUID(strings.ToLower(namespace))
	if !ok {
		return &FieldError{"rule.uuid_v5.namespace_uuid", fmt.Sprintf("%q is not a UUID in 8-4-4-4-12 form", namespace)}
	}
	if c.Rule.GetReversible() {
		return &FieldError{"rule.reversible", "a UUIDv5 derivation is forward only (SHA-1 cannot be inverted); set reversible false and import a lookup table for the reverse direction"}
	}
	if c.To.kind != idmapv1.FormatKind_FORMAT_KIND_UUID {
		return &FieldError{"rule.to_format", fmt.Sprintf("uuid_v5 produces UUIDs; %s is %s", c.To.name, c.To.kind)}
	}
	c.Forward = func(id string) (string, Status) {
		return FormatUUID(UUIDv5(ns, id)), Hit
	}
	return nil
}

// UUIDv5 returns the RFC 9562 name-based (SHA-1) UUID of name in namespace.
func UUIDv5(namespace [16]byte, name string) [16]byte {
	h := sha1.New()
	h.Write(namespace[:])
	h.Write([]byte(name))
	var sum [sha1.Size]byte
	h.Sum(sum[:0])
	var u [16]byte
	copy(u[:], sum[:16])
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	return u
}

// compileNormalize maps between formats that differ in case and surrounding
// whitespace. Forward applies the rule; a reversible rule maps back with the
// opposite case, and an id is a hit only when that round trip returns it,
// so two source ids never share one target.
func (c *Compiled) compileNormalize(n *idmapv1.NormalizeRule) error {
	var fold, unfold func(string) string
	switch n.GetCase() {
	case "":
		fold, unfold = identity, identity
	case "lower":
		fold, unfold = strings.ToLower, strings.ToUpper
	case "upper":
		fold, unfold = strings.ToUpper, strings.ToLower
	default:
		return &FieldError{"rule.normalize.case", fmt.Sprintf("%q, want \"lower\", \"upper\" or empty to keep the case", n.GetCase())}
	}
	if n.GetCase() == "" && !n.GetTrimSpace() {
		return &FieldError{"rule.normalize", "changes nothing; set case or trim_space"}
	}
	trim := n.GetTrimSpace()
	forward := func(id string) (string, Status) {
		if trim {
			id = strings.TrimSpace(id)
		}
		out := fold(id)
		if out == "" {
			return "", Miss
		}
		return out, Hit
	}
	if !c.Rule.GetReversible() {
		c.Forward = guard(forward, c.To)
		return nil
	}
	if trim {
		return &FieldError{"rule.reversible", "trim_space drops whitespace that cannot be restored; a reversible normalize rule may only change case"}
	}
	c.Forward = guard(func(id string) (string, Status) {
		out, st := forward(id)
		if st != Hit || unfold(out) != id {
			return "", Miss
		}
		return out, Hit
	}, c.To)
	c.Reverse = guard(func(id string) (string, Status) {
		out := unfold(id)
		if fold(out) != id {
			return "", Miss
		}
		return out, Hit
	}, c.From)
	return nil
}

func identity(s string) string { return s }
