package infer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/seamdata/seam/core/contract"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// commentWidth is where comment lines wrap.
const commentWidth = 96

// renderYAML writes the proposal as a contract document core/contract
// loads back to the same message, with comments saying what the held
// records showed and what changed, field by field.
func renderYAML(p *Proposal, context []string) ([]byte, error) {
	w := &yamlWriter{findings: map[string]*Finding{}}
	for _, f := range p.Findings {
		w.findings[f.Field] = f
	}
	c := p.Contract
	w.comment("", fmt.Sprintf("%s: proposed next version (after v%d), inferred by `seam contract infer` from %d held records%s.",
		c.GetSubject(), p.ActiveVersion, p.Profile.Records, partitionsText(p.Profile.Partitions)))
	for _, line := range context {
		w.comment("", line)
	}
	w.comment("", fmt.Sprintf("Checks alone: %s under v%d, %s under this version (the mapping and its identifier translations run in `seam contract check` and the dry run).",
		passText(p.Before), p.ActiveVersion, passText(p.After)))
	if len(p.Changes) == 0 {
		w.comment("", fmt.Sprintf("No change against v%d: the held records need none.", p.ActiveVersion))
	} else {
		w.comment("", fmt.Sprintf("Changes against v%d:", p.ActiveVersion))
		for _, ch := range p.Changes {
			w.comment("", "  "+changeText(ch))
		}
	}
	for _, m := range p.Migrations {
		w.comment("", "Migration: "+migrationText(m))
	}
	if p.Profile.Malformed > 0 {
		w.comment("", fmt.Sprintf("%d held records could not be read at all (%s); they stay held.", p.Profile.Malformed, strings.Join(p.Profile.MalformedExamples, "; ")))
	}
	if len(p.Notes) > 0 {
		w.comment("", "To decide:")
		for _, n := range p.Notes {
			w.comment("", "  - "+n)
		}
	}
	w.kv("", "subject", scalar(c.GetSubject()))
	w.kv("", "owner", scalar(c.GetOwner()))
	if c.GetDescription() != "" {
		w.kv("", "description", scalar(c.GetDescription()))
	}
	if c.GetCompatibility() != contractv1.Compatibility_COMPATIBILITY_UNSPECIFIED {
		w.kv("", "compatibility", contract.ShortName(c.GetCompatibility()))
	}
	if c.GetNoticePeriod() != "" {
		w.kv("", "notice_period", scalar(c.GetNoticePeriod()))
	}
	if c.GetAdditionalFields() != contractv1.AdditionalFields_ADDITIONAL_FIELDS_UNSPECIFIED {
		w.kv("", "additional_fields", contract.ShortName(c.GetAdditionalFields()))
	}
	if len(c.GetLabels()) > 0 {
		w.kv("", "labels", stringMap(c.GetLabels()))
	}
	if pt := c.GetPartitionTime(); pt != nil {
		w.kv("", "partition_time", partitionTimeFlow(pt))
	}
	w.line("fields:")
	if err := w.fields("  ", "", c.GetFields()); err != nil {
		return nil, err
	}
	if len(c.GetChecks()) > 0 {
		w.line("checks:")
		for _, ch := range c.GetChecks() {
			w.line("  - " + checkFlow(ch))
		}
	}
	if m := c.GetMapping(); m != nil {
		w.line("mapping:")
		if m.GetCanonical() != "" {
			w.kv("  ", "canonical", scalar(m.GetCanonical()))
		}
		if m.GetCanonicalVersion() != 0 {
			w.kv("  ", "canonical_version", strconv.Itoa(int(m.GetCanonicalVersion())))
		}
		if len(m.GetRenamedFrom()) > 0 {
			w.kv("  ", "renamed_from", stringMap(m.GetRenamedFrom()))
		}
		if len(m.GetFields()) > 0 {
			w.line("  fields:")
			for _, name := range slices.Sorted(maps.Keys(m.GetFields())) {
				s, err := fieldMappingFlow(m.GetFields()[name])
				if err != nil {
					return nil, fmt.Errorf("render mapping of %s: %w", name, err)
				}
				w.kv("    ", key(name), s)
			}
		}
	}
	return w.buf.Bytes(), nil
}

type yamlWriter struct {
	buf      bytes.Buffer
	findings map[string]*Finding
}

func (w *yamlWriter) line(s string) {
	w.buf.WriteString(s)
	w.buf.WriteByte('\n')
}

func (w *yamlWriter) kv(indent, k, v string) { w.line(indent + k + ": " + v) }

// comment writes text as comment lines at indent, wrapped; line breaks
// and the characters YAML does not allow in a stream (controls, U+FFFE,
// U+FFFF) become spaces, so nothing can end the comment early or make the
// document unreadable.
func (w *yamlWriter) comment(indent, text string) {
	text = strings.Map(func(r rune) rune {
		if r < ' ' || r >= 0x7f && r <= 0x9f || r == 0x2028 || r == 0x2029 || r == 0xfffe || r == 0xffff {
			return ' '
		}
		return r
	}, text)
	lead := ""
	if strings.HasPrefix(text, "  ") {
		lead = "    "
	}
	first := true
	for text != "" {
		prefix := indent + "# "
		if !first {
			prefix += lead
		}
		room := commentWidth - len(prefix)
		cut := len(text)
		if cut > room {
			cut = strings.LastIndexByte(text[:room], ' ')
			if cut <= len(lead) {
				cut = room
			}
		}
		// Never cut inside a UTF-8 sequence.
		for cut < len(text) && cut > 0 && text[cut]&0xc0 == 0x80 {
			cut--
		}
		w.line(strings.TrimRight(prefix+text[:cut], " "))
		text = strings.TrimLeft(text[cut:], " ")
		first = false
	}
}

// fields writes a field list at indent; prefix is the dotted parent.
func (w *yamlWriter) fields(indent, prefix string, fields []*contractv1.Field) error {
	for _, f := range fields {
		path := prefix + f.GetName()
		w.fieldComment(indent, path)
		if err := w.field(indent, path, f, true); err != nil {
			return err
		}
	}
	return nil
}

func (w *yamlWriter) fieldComment(indent, path string) {
	fd := w.findings[path]
	if fd == nil {
		return
	}
	w.comment(indent, path+": "+fd.Observed)
	for _, ch := range fd.Changes {
		w.comment(indent, "→ "+ch)
	}
	if fd.Stays > 0 {
		w.comment(indent, fmt.Sprintf("  %d held records still fail on %s under this version: too few to be a change of the source", fd.Stays, path))
	}
}

// field writes one list item: a flow mapping when it nests nothing
// complex, block style otherwise.
func (w *yamlWriter) field(indent, path string, f *contractv1.Field, item bool) error {
	lead := indent
	if item {
		lead += "- "
	}
	if len(f.GetFields()) == 0 && len(f.GetItems().GetFields()) == 0 && f.GetItems().GetItems() == nil {
		w.line(lead + fieldFlow(f))
		return nil
	}
	inner := indent
	if item {
		inner += "  "
	}
	attrs := fieldAttrs(f)
	for i, a := range attrs {
		if i == 0 {
			w.line(lead + a[0] + ": " + a[1])
		} else {
			w.line(inner + a[0] + ": " + a[1])
		}
	}
	if len(attrs) == 0 {
		w.line(lead + "type: " + contract.ShortName(f.GetType()))
	}
	if len(f.GetFields()) > 0 {
		w.line(inner + "fields:")
		if err := w.fields(inner+"  ", path+".", f.GetFields()); err != nil {
			return err
		}
	}
	if it := f.GetItems(); it != nil {
		w.line(inner + "items:")
		ipath := path + contract.ItemsSuffix
		w.fieldComment(inner+"  ", ipath)
		if err := w.field(inner+"  ", ipath, it, false); err != nil {
			return err
		}
	}
	return nil
}

// fieldAttrs lists a field's scalar attributes in the reference order.
func fieldAttrs(f *contractv1.Field) [][2]string {
	var a [][2]string
	add := func(k, v string) { a = append(a, [2]string{k, v}) }
	if f.GetName() != "" {
		add("name", scalar(f.GetName()))
	}
	add("type", contract.ShortName(f.GetType()))
	if f.GetRequired() {
		add("required", "true")
	}
	if f.GetKey() {
		add("key", "true")
	}
	if f.GetDescription() != "" {
		add("description", scalar(f.GetDescription()))
	}
	if f.GetPattern() != "" {
		add("pattern", scalar(f.GetPattern()))
	}
	if len(f.GetEnum()) > 0 {
		vals := make([]string, len(f.GetEnum()))
		for i, v := range f.GetEnum() {
			vals[i] = scalar(v)
		}
		add("enum", "["+strings.Join(vals, ", ")+"]")
	}
	if f.Min != nil {
		add("min", number(f.GetMin()))
	}
	if f.Max != nil {
		add("max", number(f.GetMax()))
	}
	if f.MinLength != nil {
		add("min_length", strconv.FormatInt(f.GetMinLength(), 10))
	}
	if f.MaxLength != nil {
		add("max_length", strconv.FormatInt(f.GetMaxLength(), 10))
	}
	if id := f.GetIdentifier(); id != nil {
		add("identifier", "{namespace: "+scalar(id.GetNamespace())+", format: "+scalar(id.GetFormat())+"}")
	}
	if f.GetLayout() != "" {
		add("layout", scalar(f.GetLayout()))
	}
	return a
}

func fieldFlow(f *contractv1.Field) string {
	parts := []string{}
	for _, a := range fieldAttrs(f) {
		parts = append(parts, a[0]+": "+a[1])
	}
	if it := f.GetItems(); it != nil {
		parts = append(parts, "items: "+fieldFlow(it))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func partitionTimeFlow(pt *contractv1.PartitionTime) string {
	var parts []string
	if pt.GetField() != "" {
		parts = append(parts, "field: "+scalar(pt.GetField()))
	}
	if pt.GetGranularity() != contractv1.Granularity_GRANULARITY_UNSPECIFIED {
		parts = append(parts, "granularity: "+contract.ShortName(pt.GetGranularity()))
	}
	if pt.GetAllowedLateness() != "" {
		parts = append(parts, "allowed_lateness: "+scalar(pt.GetAllowedLateness()))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func checkFlow(ch *contractv1.Check) string {
	parts := []string{"name: " + scalar(ch.GetName()), "rule: " + quoted(ch.GetRule())}
	if ch.GetPolicy() != contractv1.Policy_POLICY_UNSPECIFIED {
		parts = append(parts, "policy: "+contract.ShortName(ch.GetPolicy()))
	}
	if ch.GetDescription() != "" {
		parts = append(parts, "description: "+scalar(ch.GetDescription()))
	}
	switch l := ch.GetThreshold().GetLimit().(type) {
	case *contractv1.Threshold_Count:
		parts = append(parts, "threshold: {count: "+strconv.FormatInt(l.Count, 10)+"}")
	case *contractv1.Threshold_Fraction:
		parts = append(parts, "threshold: {fraction: "+number(l.Fraction)+"}")
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func fieldMappingFlow(fm *contractv1.FieldMapping) (string, error) {
	var parts []string
	if fm.GetFrom() != "" {
		parts = append(parts, "from: "+scalar(fm.GetFrom()))
	}
	if ct := fm.GetCast(); ct != nil {
		var c []string
		if ct.GetTo() != contractv1.FieldType_FIELD_TYPE_UNSPECIFIED {
			c = append(c, "to: "+contract.ShortName(ct.GetTo()))
		}
		if ct.GetLayout() != "" {
			c = append(c, "layout: "+scalar(ct.GetLayout()))
		}
		if ct.GetZone() != "" {
			c = append(c, "zone: "+scalar(ct.GetZone()))
		}
		if ct.GetScale() != 0 {
			c = append(c, "scale: "+number(ct.GetScale()))
		}
		if ct.GetRounding() != contractv1.Rounding_ROUNDING_UNSPECIFIED {
			c = append(c, "rounding: "+contract.ShortName(ct.GetRounding()))
		}
		parts = append(parts, "cast: {"+strings.Join(c, ", ")+"}")
	}
	if len(fm.GetValues()) > 0 {
		parts = append(parts, "values: "+stringMap(fm.GetValues()))
	}
	for _, v := range []struct {
		k string
		v *structpb.Value
	}{{"default", fm.GetDefault()}, {"constant", fm.GetConstant()}} {
		if v.v == nil {
			continue
		}
		js, err := protojson.Marshal(v.v)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, js); err != nil {
			return "", err
		}
		parts = append(parts, v.k+": "+buf.String())
	}
	if fm.GetExpr() != "" {
		parts = append(parts, "expr: "+quoted(fm.GetExpr()))
	}
	if tr := fm.GetTranslate(); tr != nil {
		parts = append(parts, "translate: {from: "+scalar(tr.GetFrom())+", to: "+scalar(tr.GetTo())+"}")
	}
	return "{" + strings.Join(parts, ", ") + "}", nil
}

func stringMap(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, key(k)+": "+scalar(m[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// plain matches text YAML reads back unquoted as the same string.
// plain reports whether s is a name YAML reads as the same string without
// quotes: ^[A-Za-z_][A-Za-z0-9_./-]*$ (and not a reserved word).
func plain(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', c == '_':
		case i > 0 && ('0' <= c && c <= '9' || c == '.' || c == '/' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// reserved are words YAML could read as something other than a string.
var reserved = map[string]bool{"true": true, "false": true, "null": true, "yes": true, "no": true, "on": true, "off": true, "y": true, "n": true}

// scalar writes s plain when YAML reads it back as the same string, and
// as a JSON string (a valid YAML double-quoted scalar) otherwise.
func scalar(s string) string {
	if plain(s) && !reserved[strings.ToLower(s)] {
		return s
	}
	return quoted(s)
}

func key(s string) string { return scalar(s) }

// quoted writes s as a YAML double-quoted scalar with the same content.
// Characters YAML does not allow unescaped in a stream (C0 and C1
// controls, DEL, U+FFFE and U+FFFF) and those a reader could take for a
// line break (NEL, U+2028, U+2029) are escaped; invalid UTF-8 becomes
// U+FFFD, as it does everywhere else Seam prints a value.
func quoted(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || (r >= 0x7f && r <= 0x9f):
			fmt.Fprintf(&b, `\x%02x`, r)
		case r == 0x2028 || r == 0x2029 || r == 0xfffe || r == 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func number(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func partitionsText(parts []string) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return " of partition " + parts[0]
	}
	return fmt.Sprintf(" of %d partitions %s..%s", len(parts), parts[0], parts[len(parts)-1])
}

func passText(v Verification) string {
	if v.Error != "" {
		return "cannot run (" + v.Error + ")"
	}
	return fmt.Sprintf("%d of %d pass", v.Passed, v.Records)
}

func changeText(ch *registryv1.Change) string {
	level := strings.TrimPrefix(ch.GetLevel().String(), "CHANGE_LEVEL_")
	s := fmt.Sprintf("%s %s %s", level, ch.GetRule(), ch.GetPath())
	switch {
	case ch.GetOldValue() != "" && ch.GetNewValue() != "":
		s += ": " + ch.GetOldValue() + " → " + ch.GetNewValue()
	case ch.GetNewValue() != "":
		s += ": " + ch.GetNewValue()
	case ch.GetOldValue() != "":
		s += ": was " + ch.GetOldValue()
	}
	return s
}

// migrationText says in a line what idmap needs for a migration.
func migrationText(m *Migration) string {
	s := fmt.Sprintf("%s sends %s/%s ids instead of %s/%s", m.Field, m.Namespace, m.New, m.Namespace, m.Old)
	if m.CreateFormat != nil {
		s += fmt.Sprintf(" (a new format: create it with `seam idmap namespace add-format %s --format %s`)", m.Namespace, FormatFlag(m.CreateFormat))
	}
	if m.Target == "" {
		return s + "; no canonical field is produced from it, so nothing translates it"
	}
	s += fmt.Sprintf("; the mapping translates %s→%s", m.New, m.Target)
	switch r := m.Rule; {
	case r == nil:
	case r.Rule != nil && r.Answers && m.Target == m.Old:
		var samples strings.Builder
		for _, x := range r.Samples {
			fmt.Fprintf(&samples, " --sample %s", x)
		}
		s += fmt.Sprintf(", by the rule `seam idmap rule set %s %s%s`: %s", m.Namespace, RuleFlags(r.Rule), samples.String(), r.Why)
	default:
		s += ", which needs a lookup table: " + r.Why
	}
	return s
}

// FormatFlag renders a format as `--format NAME:KIND[:PATTERN]` takes it,
// in single quotes for a shell.
func FormatFlag(f *idmapv1.Format) string {
	s := f.GetName() + ":" + strings.ToLower(strings.TrimPrefix(f.GetKind().String(), "FORMAT_KIND_"))
	if f.GetPattern() != "" {
		s += ":" + f.GetPattern()
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
