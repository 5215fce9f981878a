package infer

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/seamdata/seam/core/idrule"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// Pair is one id in two formats: From translates to To.
type Pair struct {
	From, To string
}

// RuleQuery asks which deterministic rule, if any, translates the ids of
// one format of a namespace into another, given pairs known to be right.
type RuleQuery struct {
	// Namespace is the idmap namespace; its name is also a UUIDv5
	// namespace candidate (see NamespaceCandidates).
	Namespace string
	// From and To are the formats, as idmap defines them.
	From, To *idmapv1.Format
	// Pairs are From ids with their To ids.
	Pairs []Pair
	// NamespaceUUIDs are further UUIDv5 namespace UUIDs to try.
	NamespaceUUIDs []string
}

// Exception is a pair a rule gets wrong.
type Exception struct {
	Pair Pair `json:"pair"`
	// Got is what the rule gives for Pair.From ("" for no translation).
	Got string `json:"got"`
	Why string `json:"why"`
}

// RuleFinding is the answer: a rule verified on every pair (or value), or
// why only a lookup table will do.
type RuleFinding struct {
	// Rule is the proposed rule, ready for SetRule; nil when only a table
	// will do. Its direction may be the reverse of the query's, with
	// Reversible set, when that is how the rule is written (templates
	// render an integer into text).
	Rule *idmapv1.Rule `json:"rule,omitempty"`
	// Answers is true when Rule translates the query's From ids into To
	// ids. A UUIDv5 rule found the other way round answers only its own
	// direction: the query's direction then still needs a table, which
	// can be generated from the known ids (UUIDv5Pairs).
	Answers bool `json:"answers"`
	// Checked is how many pairs (or values) the rule was verified on, and
	// Matched how many it got right.
	Checked int `json:"checked"`
	Matched int `json:"matched"`
	// Exceptions are the pairs (or values) the rule gets wrong, at most
	// maxExceptions of them; Wrong counts them all.
	Exceptions []Exception `json:"exceptions,omitempty"`
	Wrong      int         `json:"wrong"`
	// Alternatives are other rules that fit the same pairs equally well:
	// the pairs cannot tell them apart.
	Alternatives []string `json:"alternatives,omitempty"`
	// Samples are ids of the rule's From format to validate it on with
	// SetRule.
	Samples []string `json:"samples,omitempty"`
	// Why says in a sentence why this rule, or why only a table will do,
	// and what to do; Reason is its core, short enough to quote ("200 of
	// 200 UUIDs are random (version 4), so no rule can derive them").
	Why    string `json:"why"`
	Reason string `json:"reason,omitempty"`
	// Tried names every rule considered and how it did.
	Tried []string `json:"tried,omitempty"`
}

// TableOnly reports whether no rule answers the query's direction.
func (f *RuleFinding) TableOnly() bool { return f.Rule == nil || !f.Answers }

const (
	// maxExceptions bounds the exceptions a finding lists.
	maxExceptions = 20
	// maxSamples bounds the samples a finding gives for SetRule.
	maxSamples = 5
	// ruleTolerance is the share of pairs a rule may get wrong and still be
	// proposed (with its exceptions listed): a few hand-typed pairs in a
	// sync file should not hide a rule that explains everything else.
	ruleTolerance = 0.01
)

// The RFC 9562 namespace UUIDs, tried for UUIDv5 first.
var standardNamespaces = []struct{ name, uuid string }{
	{"DNS", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"},
	{"URL", "6ba7b811-9dad-11d1-80b4-00c04fd430c8"},
	{"OID", "6ba7b812-9dad-11d1-80b4-00c04fd430c8"},
	{"X.500", "6ba7b814-9dad-11d1-80b4-00c04fd430c8"},
	{"nil", "00000000-0000-0000-0000-000000000000"},
	{"max", "ffffffff-ffff-ffff-ffff-ffffffffffff"},
}

// NamespaceCandidates lists the UUIDv5 namespace UUIDs a search tries, with
// how each was made: the RFC 9562 namespaces (DNS, URL, OID, X.500), the
// nil and max UUIDs, the UUIDv5 of the idmap namespace's name and of each
// format's name (and of "namespace/format") under the DNS and URL
// namespaces — the usual ways a service derives its own namespace — and
// the extra UUIDs given. SHA-1 cannot be inverted, so a namespace outside
// this list is found only when given.
func NamespaceCandidates(namespace string, formats []string, extra []string) []NamespaceCandidate {
	var out []NamespaceCandidate
	seen := map[string]bool{}
	add := func(how, u string) {
		u = strings.ToLower(u)
		if _, ok := idrule.ParseUUID(u); !ok || seen[u] {
			return
		}
		seen[u] = true
		out = append(out, NamespaceCandidate{UUID: u, How: how})
	}
	for _, u := range extra {
		add("given", u)
	}
	for _, s := range standardNamespaces {
		add("the RFC 9562 "+s.name+" namespace", s.uuid)
	}
	names := []string{namespace}
	for _, f := range formats {
		names = append(names, f, namespace+"/"+f)
	}
	for _, base := range standardNamespaces[:2] {
		b, _ := idrule.ParseUUID(base.uuid)
		for _, n := range names {
			if n == "" {
				continue
			}
			add(fmt.Sprintf("UUIDv5(%s, %q)", base.name, n), idrule.FormatUUID(idrule.UUIDv5(b, n)))
		}
	}
	return out
}

// NamespaceCandidate is one UUIDv5 namespace UUID to try, and how it was made.
type NamespaceCandidate struct {
	UUID string
	How  string
}

// UUIDv5Pairs returns, for each name, the pair (UUIDv5 of name in
// namespace, name): the table that answers the reverse of a UUIDv5 rule,
// generated from the known names.
func UUIDv5Pairs(namespace string, names []string) ([]Pair, error) {
	ns, ok := idrule.ParseUUID(strings.ToLower(namespace))
	if !ok {
		return nil, fmt.Errorf("namespace UUID %q is not a UUID in 8-4-4-4-12 form", namespace)
	}
	out := make([]Pair, len(names))
	for i, n := range names {
		out[i] = Pair{From: idrule.FormatUUID(idrule.UUIDv5(ns, n)), To: n}
	}
	return out, nil
}

// candidate is one rule to verify, with the order it is preferred in when
// several fit equally well.
type candidate struct {
	rule *idmapv1.Rule
	pref int
	why  string
}

// InferRule finds the deterministic rule that maps every pair's From id to
// its To id, as idmap's rules can express one: a template with an integer
// or UUID placeholder (zero padding, prefixes and suffixes), an integer
// embedded in a UUID, a UUIDv5 derivation, a change of case or trimmed
// spaces. Each candidate is compiled with core/idrule, exactly as idmap
// would run it, and verified on every pair. It errs only on formats idmap
// itself would refuse.
func InferRule(q RuleQuery) (*RuleFinding, error) {
	from, err := idrule.NewFormat("from", q.From)
	if err != nil {
		return nil, err
	}
	to, err := idrule.NewFormat("to", q.To)
	if err != nil {
		return nil, err
	}
	if from.Name() == to.Name() {
		return nil, fmt.Errorf("from and to are both format %q; a rule connects two formats", from.Name())
	}
	if len(q.Pairs) == 0 {
		return &RuleFinding{Why: "no pairs to learn from; give sample pairs (from-id,to-id) or load a table first"}, nil
	}
	var invalid []Exception
	for _, p := range q.Pairs {
		switch {
		case !from.Valid(p.From):
			invalid = append(invalid, Exception{Pair: p, Why: from.Check(p.From).Error()})
		case !to.Valid(p.To):
			invalid = append(invalid, Exception{Pair: p, Why: to.Check(p.To).Error()})
		}
	}
	cands := pairCandidates(q, from, to)
	var best *scored
	var all []*scored
	var tried []string
	for _, c := range cands {
		s := score(c, q, from, to)
		if s == nil {
			continue
		}
		all = append(all, s)
		tried = append(tried, fmt.Sprintf("%s: %d of %d pairs", describe(c.rule), s.matched, len(q.Pairs)))
		if best == nil || s.matched > best.matched || s.matched == best.matched && c.pref < best.c.pref {
			best = s
		}
	}
	f := &RuleFinding{Checked: len(q.Pairs), Tried: tried}
	need := len(q.Pairs) - int(ruleTolerance*float64(len(q.Pairs)))
	if best == nil || best.matched == 0 || best.matched < need {
		f.Reason = tableReason(q, from, to, best)
		f.Why = "only a lookup table will do: " + f.Reason + "; import the pairs with `seam idmap import " + q.Namespace + " FILE.csv --from " + from.Name() + " --to " + to.Name() + "`"
		if best != nil {
			f.Matched = best.matched
		}
		f.Exceptions, f.Wrong = invalid, len(invalid)
		return f, nil
	}
	f.Rule, f.Answers, f.Matched = best.c.rule, best.answers, best.matched
	f.Exceptions, f.Wrong = best.exceptions, best.wrong
	f.Samples = best.samples
	for _, s := range all {
		if s != best && s.matched == best.matched && s.answers == best.answers {
			f.Alternatives = append(f.Alternatives, describe(s.c.rule))
		}
	}
	f.Why, f.Reason = best.c.why, best.c.why
	if !f.Answers {
		// Only a UUIDv5 rule is forward-only, and it was found names→UUIDs
		// while the query asks UUIDs→names.
		f.Why += fmt.Sprintf("; SHA-1 cannot be reversed, so %s→%s still needs a lookup table: generate it from the known %s ids",
			q.From.GetName(), q.To.GetName(), q.To.GetName())
	}
	if f.Wrong > 0 {
		f.Why += fmt.Sprintf("; it gets %d of %d pairs wrong (listed): check those pairs before setting it, since a rule answers ahead of any table", f.Wrong, f.Checked)
	}
	return f, nil
}

// scored is a candidate verified on the pairs.
type scored struct {
	c          candidate
	answers    bool
	matched    int
	wrong      int
	exceptions []Exception
	samples    []string
}

// score compiles c and runs it on every pair in the query's direction: the
// rule's forward function when it goes From→To, its reverse when it is a
// reversible rule written To→From. A UUIDv5 rule written To→From (names to
// UUIDs, queried UUIDs to names) is verified in its own direction.
func score(c candidate, q RuleQuery, from, to *idrule.Format) *scored {
	rf, rt := from, to
	forward := c.rule.GetFromFormat() == q.From.GetName()
	if !forward {
		rf, rt = to, from
	}
	comp, err := idrule.Compile(c.rule, rf, rt)
	if err != nil {
		return nil
	}
	fn, answers := comp.Forward, true
	if !forward {
		fn = comp.Reverse
		if fn == nil {
			fn, answers = comp.Forward, false
		}
	}
	s := &scored{c: c, answers: answers}
	for _, p := range q.Pairs {
		in, want := p.From, p.To
		if !forward && !answers {
			in, want = p.To, p.From
		}
		got, st := "", idrule.Invalid
		if (forward || answers) && from.Valid(p.From) || !forward && !answers && to.Valid(p.To) {
			got, st = fn(in)
		}
		if st == idrule.Hit && got == want {
			s.matched++
			if len(s.samples) < maxSamples {
				if forward {
					s.samples = append(s.samples, p.From)
				} else {
					s.samples = append(s.samples, p.To)
				}
			}
			continue
		}
		s.wrong++
		if len(s.exceptions) < maxExceptions {
			why := fmt.Sprintf("the rule gives %q, not %q", got, want)
			if st != idrule.Hit {
				why = fmt.Sprintf("the rule has no translation for %q (%s)", in, st)
			}
			s.exceptions = append(s.exceptions, Exception{Pair: p, Got: got, Why: why})
		}
	}
	return s
}

// tableReason says plainly why only a table will do.
func tableReason(q RuleQuery, from, to *idrule.Format, best *scored) string {
	uuids := q.Pairs
	side := ""
	switch {
	case from.Kind() == idmapv1.FormatKind_FORMAT_KIND_UUID:
		side = "from"
	case to.Kind() == idmapv1.FormatKind_FORMAT_KIND_UUID:
		side = "to"
	}
	var why string
	if side != "" {
		vals := make([]string, len(uuids))
		for i, p := range uuids {
			vals[i] = p.From
			if side == "to" {
				vals[i] = p.To
			}
		}
		why = uuidNature(vals)
	}
	if why == "" {
		why = fmt.Sprintf("no template, embedding, UUIDv5 derivation or case rule maps these %s ids to their %s ids", from.Name(), to.Name())
	}
	if best != nil && best.matched > 0 {
		why += fmt.Sprintf(" (the closest, %s, fits only %d of %d pairs)", describe(best.c.rule), best.matched, len(q.Pairs))
	}
	return why
}

// uuidNature says what a set of UUIDs is when nothing derives them.
func uuidNature(vals []string) string {
	versions := map[byte]int{}
	n := 0
	for _, v := range vals {
		u, ok := idrule.ParseUUID(strings.ToLower(v))
		if !ok {
			continue
		}
		versions[u[6]>>4]++
		n++
	}
	if n == 0 {
		return ""
	}
	top, cnt := byte(0), 0
	for v, c := range versions {
		if c > cnt || c == cnt && v < top {
			top, cnt = v, c
		}
	}
	switch {
	case top == 4 && cnt*2 > n:
		return fmt.Sprintf("%d of %d UUIDs are random (version 4), so no rule can derive them", cnt, n)
	case top == 7 && cnt*2 > n:
		return fmt.Sprintf("%d of %d UUIDs are time-ordered (version 7): random bits and a clock, so no rule can derive them", cnt, n)
	case top == 5 && cnt*2 > n:
		return fmt.Sprintf("%d of %d UUIDs are name-based (version 5), but in none of the namespaces tried (give the source's with --namespace-uuid)", cnt, n)
	}
	return ""
}

// pairCandidates proposes the rules the pairs could follow.
func pairCandidates(q RuleQuery, from, to *idrule.Format) []candidate {
	var out []candidate
	fk, tk := from.Kind(), to.Kind()
	const (
		INT    = idmapv1.FormatKind_FORMAT_KIND_INT
		UUID   = idmapv1.FormatKind_FORMAT_KIND_UUID
		STRING = idmapv1.FormatKind_FORMAT_KIND_STRING
	)
	// Templates render a value (int or UUID) into text: the rule is
	// written from the value side to the text side, reversible.
	valueSide := func(k idmapv1.FormatKind) bool { return k == INT || k == UUID }
	switch {
	case valueSide(fk) && tk == STRING:
		out = append(out, templateCandidates(q.Pairs, false, fk, q.From.GetName(), q.To.GetName())...)
	case fk == STRING && valueSide(tk):
		out = append(out, templateCandidates(q.Pairs, true, tk, q.To.GetName(), q.From.GetName())...)
	}
	switch {
	case fk == INT && tk == UUID:
		out = append(out, embedCandidates(q.Pairs, false, q.From.GetName(), q.To.GetName())...)
	case fk == UUID && tk == INT:
		out = append(out, embedCandidates(q.Pairs, true, q.To.GetName(), q.From.GetName())...)
	}
	// UUIDv5: names (any kind but UUID) to UUIDs.
	if tk == UUID && fk != UUID || fk == UUID && tk != UUID {
		nameFmt, uuidFmt := q.From.GetName(), q.To.GetName()
		if fk == UUID {
			nameFmt, uuidFmt = uuidFmt, nameFmt
		}
		if v5Plausible(q.Pairs, fk == UUID) {
			for _, nc := range NamespaceCandidates(q.Namespace, []string{q.From.GetName(), q.To.GetName()}, q.NamespaceUUIDs) {
				out = append(out, candidate{
					rule: &idmapv1.Rule{FromFormat: nameFmt, ToFormat: uuidFmt, Strategy: &idmapv1.Rule_UuidV5{UuidV5: &idmapv1.UuidV5Rule{NamespaceUuid: nc.UUID}}},
					pref: 40,
					why:  fmt.Sprintf("every %s id is the UUIDv5 of its %s id in namespace %s (%s)", uuidFmt, nameFmt, nc.UUID, nc.How),
				})
			}
		}
	}
	// Case and spaces, between text formats (or text and UUID).
	if fk != INT && tk != INT && !(fk == UUID && tk == UUID) {
		for i, n := range []struct {
			c    string
			trim bool
		}{{"lower", false}, {"upper", false}, {"lower", true}, {"upper", true}, {"", true}} {
			for _, rev := range []bool{true, false} {
				if rev && n.trim {
					continue
				}
				out = append(out, candidate{
					rule: &idmapv1.Rule{FromFormat: q.From.GetName(), ToFormat: q.To.GetName(), Reversible: rev,
						Strategy: &idmapv1.Rule_Normalize{Normalize: &idmapv1.NormalizeRule{Case: n.c, TrimSpace: n.trim}}},
					pref: 30 + i*2 + b2i(!rev),
					why:  fmt.Sprintf("every %s id is its %s id %s", q.To.GetName(), q.From.GetName(), normalizeText(n.c, n.trim)),
				})
			}
		}
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func normalizeText(c string, trim bool) string {
	var parts []string
	if trim {
		parts = append(parts, "with surrounding spaces trimmed")
	}
	if c != "" {
		parts = append(parts, "in "+c+" case")
	}
	return strings.Join(parts, " and ")
}

// v5Plausible is true when the UUID side of most pairs has version 5.
func v5Plausible(pairs []Pair, uuidFrom bool) bool {
	n := 0
	for _, p := range pairs {
		s := p.To
		if uuidFrom {
			s = p.From
		}
		if u, ok := idrule.ParseUUID(strings.ToLower(s)); ok && u[6]>>4 == 5 {
			n++
		}
	}
	return n*2 > len(pairs)
}

// templateCandidates derives templates from where the value (an integer's
// digits or a UUID) sits in each text id: the most common prefix and
// suffix, and the padding the digits carry. textFirst is true when the
// pairs hold the text in From.
func templateCandidates(pairs []Pair, textFirst bool, kind idmapv1.FormatKind, valueFmt, textFmt string) []candidate {
	type frame struct{ prefix, suffix string }
	frames := map[frame]int{}
	padded := map[int]int{} // digit-run length of padded renderings
	lengths := map[int]int{}
	for _, p := range pairs {
		value, text := p.From, p.To
		if textFirst {
			value, text = p.To, p.From
		}
		var start, end int
		if kind == idmapv1.FormatKind_FORMAT_KIND_UUID {
			i := strings.Index(text, strings.ToLower(value))
			if i < 0 {
				continue
			}
			start, end = i, i+len(value)
		} else {
			var ok bool
			start, end, ok = digitRunOf(text, value)
			if !ok {
				continue
			}
			run := text[start:end]
			lengths[len(run)]++
			if len(run) > 1 && run[0] == '0' {
				padded[len(run)]++
			}
		}
		frames[frame{text[:start], text[end:]}]++
	}
	if len(frames) == 0 {
		return nil
	}
	var fr frame
	n := -1
	for f, c := range frames {
		if c > n || c == n && (f.prefix+"\x00"+f.suffix) < (fr.prefix+"\x00"+fr.suffix) {
			fr, n = f, c
		}
	}
	if fr.prefix == "" && fr.suffix == "" {
		return nil // a bare value is the same id, not a template
	}
	esc := strings.NewReplacer("{", "", "}", "")
	if esc.Replace(fr.prefix+fr.suffix) != fr.prefix+fr.suffix {
		return nil // braces cannot be literal text in an idmap template
	}
	mk := func(placeholder string, pref int) candidate {
		tmpl := fr.prefix + placeholder + fr.suffix
		return candidate{
			rule: &idmapv1.Rule{FromFormat: valueFmt, ToFormat: textFmt, Reversible: true,
				Strategy: &idmapv1.Rule_Template{Template: &idmapv1.TemplateRule{Template: tmpl}}},
			pref: pref,
			why:  fmt.Sprintf("every %s id is its %s id written as %s", textFmt, valueFmt, tmpl),
		}
	}
	if kind == idmapv1.FormatKind_FORMAT_KIND_UUID {
		return []candidate{mk("{uuid}", 0)}
	}
	var out []candidate
	for _, w := range slices.Sorted(maps.Keys(padded)) {
		if w <= 19 {
			out = append(out, mk(fmt.Sprintf("{int:0%d}", w), 0))
		}
	}
	out = append(out, mk("{int}", 2))
	if len(padded) == 0 && len(lengths) == 1 {
		// Every number has the same length and none is padded: the pairs
		// cannot tell "{int}" from padding to that length.
		for w := range lengths {
			if w > 1 && w <= 19 {
				out = append(out, mk(fmt.Sprintf("{int:0%d}", w), 1))
			}
		}
	}
	return out
}

// digitRunOf finds the maximal run of digits in text that holds the
// integer value, padded or not; the last such run when there are several.
func digitRunOf(text, value string) (int, int, bool) {
	v, ok := idrule.ParseInt(value)
	if !ok || v < 0 {
		return 0, 0, false
	}
	want := strconv.FormatInt(v, 10)
	found := false
	var s, e int
	for i := 0; i < len(text); {
		if text[i] < '0' || text[i] > '9' {
			i++
			continue
		}
		j := i
		for j < len(text) && text[j] >= '0' && text[j] <= '9' {
			j++
		}
		run := strings.TrimLeft(text[i:j], "0")
		if run == "" {
			run = "0"
		}
		if run == want {
			s, e, found = i, j, true
		}
		i = j
	}
	return s, e, found
}

// embedCandidates proposes uuid_embed with the most common first 16 hex
// digits of the UUIDs. uuidFirst is true when the pairs hold the UUID in
// From.
func embedCandidates(pairs []Pair, uuidFirst bool, intFmt, uuidFmt string) []candidate {
	prefixes := map[string]int{}
	for _, p := range pairs {
		u := p.To
		if uuidFirst {
			u = p.From
		}
		if len(u) == 36 {
			prefixes[strings.ReplaceAll(strings.ToLower(u[:18]), "-", "")]++
		}
	}
	best, n := "", 0
	for p, c := range prefixes {
		if c > n || c == n && p < best {
			best, n = p, c
		}
	}
	if n < 2 {
		return nil // no two UUIDs share their high bits: nothing is embedded
	}
	return []candidate{{
		rule: &idmapv1.Rule{FromFormat: intFmt, ToFormat: uuidFmt, Reversible: true,
			Strategy: &idmapv1.Rule_UuidEmbed{UuidEmbed: &idmapv1.UuidEmbedRule{Prefix: best}}},
		pref: 10,
		why:  fmt.Sprintf("every %s id holds its %s id in its low 64 bits, after the fixed prefix %s", uuidFmt, intFmt, best),
	}}
}

// describe renders a rule as `seam idmap rule set` flags would say it.
// normalizeSteps lists what a normalize rule does: its case, then trim.
func normalizeSteps(n *idmapv1.NormalizeRule) string {
	var m []string
	if c := n.GetCase(); c != "" {
		m = append(m, c)
	}
	if n.GetTrimSpace() {
		m = append(m, "trim")
	}
	return strings.Join(m, ",")
}

func describe(r *idmapv1.Rule) string {
	var s string
	switch st := r.GetStrategy().(type) {
	case *idmapv1.Rule_Template:
		s = "template " + st.Template.GetTemplate()
	case *idmapv1.Rule_UuidEmbed:
		s = "uuid_embed " + st.UuidEmbed.GetPrefix()
	case *idmapv1.Rule_UuidV5:
		s = "uuid_v5 " + st.UuidV5.GetNamespaceUuid()
	case *idmapv1.Rule_Normalize:
		s = "normalize " + normalizeSteps(st.Normalize)
	default:
		s = "lookup"
	}
	s = r.GetFromFormat() + "→" + r.GetToFormat() + " " + s
	if r.GetReversible() {
		s += " (reversible)"
	}
	return s
}

// DescribeRule renders a rule in one line: formats, strategy, reversible.
func DescribeRule(r *idmapv1.Rule) string { return describe(r) }

// RuleFlags renders a rule as the flags of `seam idmap rule set`.
func RuleFlags(r *idmapv1.Rule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--from %s --to %s", r.GetFromFormat(), r.GetToFormat())
	switch st := r.GetStrategy().(type) {
	case *idmapv1.Rule_Template:
		fmt.Fprintf(&b, " --template '%s'", st.Template.GetTemplate())
	case *idmapv1.Rule_UuidEmbed:
		fmt.Fprintf(&b, " --uuid-embed %s", st.UuidEmbed.GetPrefix())
	case *idmapv1.Rule_UuidV5:
		fmt.Fprintf(&b, " --uuid-v5 %s", st.UuidV5.GetNamespaceUuid())
	case *idmapv1.Rule_Normalize:
		fmt.Fprintf(&b, " --normalize %s", normalizeSteps(st.Normalize))
	case *idmapv1.Rule_Lookup:
		b.WriteString(" --lookup")
	}
	if r.GetReversible() && r.GetLookup() == nil {
		b.WriteString(" --reversible")
	}
	return b.String()
}

// RuleFromValues asks what the new ids alone say: the source used to send
// ids of format old and now sends values in format next (both of
// namespace). A rule can be read off the values when they parse back to
// old ids by themselves: a template around a number ("ACC-00012345") or a
// UUID ("CUST-{uuid}"), or integers embedded in UUIDs that share their
// high bits. With known old ids, a UUIDv5 derivation of them is searched
// for too. Otherwise only sample pairs or a table can tell.
//
// The finding's Rule, when found, is written between old and next as
// idmap would run it; Answers says whether it translates next→old.
func RuleFromValues(namespace string, old, next *idmapv1.Format, values, known, extraNS []string) *RuleFinding {
	of, err1 := idrule.NewFormat("old", old)
	nf, err2 := idrule.NewFormat("new", next)
	if err1 != nil || err2 != nil {
		return &RuleFinding{Why: fmt.Sprintf("the formats cannot be compiled: %v", cmp.Or(err1, err2))}
	}
	f := &RuleFinding{Checked: len(values)}
	if len(values) == 0 {
		f.Why = "no values to learn from"
		return f
	}
	var cands []candidate
	const (
		INT    = idmapv1.FormatKind_FORMAT_KIND_INT
		UUID   = idmapv1.FormatKind_FORMAT_KIND_UUID
		STRING = idmapv1.FormatKind_FORMAT_KIND_STRING
	)
	switch {
	case nf.Kind() == STRING && (of.Kind() == INT || of.Kind() == UUID):
		cands = valueTemplateCandidates(values, of.Kind(), old.GetName(), next.GetName())
	case nf.Kind() == UUID && of.Kind() == INT:
		// Pairs made by reading each UUID's low bits as the integer: if
		// the high bits are one fixed prefix, that is the embedding.
		pairs := make([]Pair, 0, len(values))
		for _, v := range values {
			if u, ok := idrule.ParseUUID(v); ok {
				pairs = append(pairs, Pair{From: strconv.FormatInt(int64(beUint64(u[8:])), 10), To: v})
			}
		}
		cands = embedCandidates(pairs, false, old.GetName(), next.GetName())
	}
	var best *scored
	for _, c := range cands {
		s := verifyOnValues(c, values, of, nf)
		if s == nil {
			continue
		}
		f.Tried = append(f.Tried, fmt.Sprintf("%s: %d of %d values", describe(c.rule), s.matched, len(values)))
		if best == nil || s.matched > best.matched || s.matched == best.matched && c.pref < best.c.pref {
			best = s
		}
	}
	need := len(values) - int(ruleTolerance*float64(len(values)))
	if best != nil && best.matched >= need && best.matched > 0 {
		f.Rule, f.Answers, f.Matched = best.c.rule, true, best.matched
		f.Exceptions, f.Wrong, f.Samples = best.exceptions, best.wrong, best.samples
		f.Reason = best.c.why
		f.Why = best.c.why + fmt.Sprintf("; verified on every value: %d of %d parse back to a %s id and render again unchanged", best.matched, len(values), old.GetName())
		return f
	}
	if nf.Kind() == UUID && len(known) > 0 {
		if v5 := searchUUIDv5(namespace, old.GetName(), next.GetName(), values, known, extraNS); v5 != nil {
			return v5
		}
	}
	why := ""
	if nf.Kind() == UUID {
		why = uuidNature(values)
	}
	if why == "" {
		why = fmt.Sprintf("the %s values do not parse back to %s ids by themselves", next.GetName(), old.GetName())
		if best != nil {
			why += fmt.Sprintf(" (the closest, %s, fits %d of %d)", describe(best.c.rule), best.matched, len(values))
		}
	}
	f.Reason = why
	f.Why = noRuleWhy(namespace, next.GetName(), old.GetName(), why)
	if best != nil {
		f.Matched = best.matched
	}
	return f
}

// noRuleWhy says that no rule can be read off the values, and how to
// find one from sample pairs of the translation needed, from→to.
func noRuleWhy(namespace, from, to, why string) string {
	return "no rule can be read off the values: " + why + "; give sample pairs (`seam idmap rule infer " + namespace + " --from " + from + " --to " + to + " PAIRS.csv`) or import a lookup table"
}

func beUint64(b []byte) uint64 {
	var v uint64
	for _, c := range b[:8] {
		v = v<<8 | uint64(c)
	}
	return v
}

// valueTemplateCandidates reads a template off text ids: one run of
// digits (or one UUID) between fixed text.
func valueTemplateCandidates(values []string, kind idmapv1.FormatKind, oldFmt, newFmt string) []candidate {
	pairs := make([]Pair, 0, len(values))
	for _, v := range values {
		if kind == idmapv1.FormatKind_FORMAT_KIND_UUID {
			if i := uuidIndex(v); i >= 0 {
				pairs = append(pairs, Pair{From: strings.ToLower(v[i : i+36]), To: v})
			}
			continue
		}
		sk, ok := skeletonOf(v, false)
		if !ok || len(sk.runs) != 1 {
			continue
		}
		digits := v[len(sk.lits[0]) : len(sk.lits[0])+sk.runs[0].n]
		n := strings.TrimLeft(digits, "0")
		if n == "" {
			n = "0"
		}
		if _, ok := idrule.ParseInt(n); ok {
			pairs = append(pairs, Pair{From: n, To: v})
		}
	}
	return templateCandidates(pairs, false, kind, oldFmt, newFmt)
}

// uuidIndex finds a canonical UUID in s, or -1.
func uuidIndex(s string) int {
	for i := 0; i+36 <= len(s); i++ {
		if _, ok := idrule.ParseUUID(s[i : i+36]); ok {
			return i
		}
	}
	return -1
}

// verifyOnValues runs a rule written old→next on each new value: it must
// translate back to an old id, and that id forward to the same value.
func verifyOnValues(c candidate, values []string, of, nf *idrule.Format) *scored {
	comp, err := idrule.Compile(c.rule, of, nf)
	if err != nil || comp.Reverse == nil {
		return nil
	}
	s := &scored{c: c, answers: true}
	for _, v := range values {
		id, back := "", idrule.Invalid
		if nf.Valid(v) {
			id, back = comp.Reverse(v)
		}
		again, st := "", idrule.Miss
		if back == idrule.Hit {
			again, st = comp.Forward(id)
		}
		if st == idrule.Hit && again == v {
			s.matched++
			if len(s.samples) < maxSamples {
				s.samples = append(s.samples, id)
			}
			continue
		}
		s.wrong++
		if len(s.exceptions) < maxExceptions {
			why := fmt.Sprintf("%q does not parse back to a %s id (%s)", v, of.Name(), back)
			if back == idrule.Hit {
				why = fmt.Sprintf("%q parses to %s, which renders as %q", v, id, again)
			}
			s.exceptions = append(s.exceptions, Exception{Pair: Pair{From: v, To: id}, Got: again, Why: why})
		}
	}
	return s
}

// searchUUIDv5 looks for the namespace in which the known old ids derive
// the new UUIDs.
func searchUUIDv5(namespace, oldFmt, newFmt string, values, known, extra []string) *RuleFinding {
	seen := make(map[string]bool, len(values))
	for _, v := range values {
		seen[strings.ToLower(v)] = true
	}
	var tried []string
	for _, nc := range NamespaceCandidates(namespace, []string{oldFmt, newFmt}, extra) {
		ns, _ := idrule.ParseUUID(nc.UUID)
		hits := 0
		for _, k := range known {
			if seen[idrule.FormatUUID(idrule.UUIDv5(ns, k))] {
				hits++
			}
		}
		tried = append(tried, fmt.Sprintf("uuid_v5 %s (%s): %d of %d values", nc.UUID, nc.How, hits, len(values)))
		if hits > 0 && hits >= len(values)-int(ruleTolerance*float64(len(values))) {
			return &RuleFinding{
				Rule:    &idmapv1.Rule{FromFormat: oldFmt, ToFormat: newFmt, Strategy: &idmapv1.Rule_UuidV5{UuidV5: &idmapv1.UuidV5Rule{NamespaceUuid: nc.UUID}}},
				Answers: false, Checked: len(values), Matched: hits, Wrong: len(values) - hits, Tried: tried,
				Samples: known[:min(maxSamples, len(known))],
				Reason:  fmt.Sprintf("every %s value is the UUIDv5 of a known %s id in namespace %s (%s)", newFmt, oldFmt, nc.UUID, nc.How),
				Why: fmt.Sprintf("every %s value is the UUIDv5 of a known %s id in namespace %s (%s); SHA-1 cannot be reversed, so %s→%s needs a lookup table, generated from the %d known %s ids",
					newFmt, oldFmt, nc.UUID, nc.How, newFmt, oldFmt, len(known), oldFmt),
			}
		}
	}
	return nil
}
