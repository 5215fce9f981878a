package idrule_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/seamdata/seam/core/idrule"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

var (
	kindInt    = idmapv1.FormatKind_FORMAT_KIND_INT
	kindUUID   = idmapv1.FormatKind_FORMAT_KIND_UUID
	kindString = idmapv1.FormatKind_FORMAT_KIND_STRING
)

func mustFormat(t testing.TB, name string, kind idmapv1.FormatKind, pattern string) *idrule.Format {
	t.Helper()
	f, err := idrule.NewFormat("format", &idmapv1.Format{Name: name, Kind: kind, Pattern: pattern})
	if err != nil {
		t.Fatalf("NewFormat(%s): %v", name, err)
	}
	return f
}

func TestFormatValid(t *testing.T) {
	t.Parallel()
	intF := mustFormat(t, "legacy-int", kindInt, "")
	uuidF := mustFormat(t, "uuid", kindUUID, "")
	codeF := mustFormat(t, "crm-code", kindString, `^CRM-[A-Z]{3}$`)
	anyF := mustFormat(t, "any", kindString, "")
	tests := []struct {
		format *idrule.Format
		id     string
		want   bool
	}{
		{intF, "0", true},
		{intF, "123", true},
		{intF, "-123", true},
		{intF, "9223372036854775807", true},
		{intF, "-9223372036854775808", true},
		{intF, "9223372036854775808", false},
		{intF, "-9223372036854775809", false},
		{intF, "99999999999999999999", false},
		{intF, "0123", false},
		{intF, "-0", false},
		{intF, "+5", false},
		{intF, " 5", false},
		{intF, "5 ", false},
		{intF, "", false},
		{intF, "-", false},
		{intF, "1e3", false},
		{intF, "12a", false},
		{uuidF, "0189c5e4-7f6a-7c3e-9b1a-2f4d6e8a0b1c", true},
		{uuidF, "00000000-0000-0000-0000-000000000000", true},
		{uuidF, "0189C5E4-7F6A-7C3E-9B1A-2F4D6E8A0B1C", false},
		{uuidF, "{0189c5e4-7f6a-7c3e-9b1a-2f4d6e8a0b1c}", false},
		{uuidF, "urn:uuid:0189c5e4-7f6a-7c3e-9b1a-2f4d6e8a0b1c", false},
		{uuidF, "0189c5e47f6a7c3e9b1a2f4d6e8a0b1c", false},
		{uuidF, "0189c5e4-7f6a-7c3e-9b1a-2f4d6e8a0b1g", false},
		{uuidF, "0189c5e4+7f6a-7c3e-9b1a-2f4d6e8a0b1c", false},
		{uuidF, "", false},
		{codeF, "CRM-ABC", true},
		{codeF, "CRM-abc", false},
		{codeF, "xCRM-ABC", false},
		{anyF, "anything at all", true},
		{anyF, "", false},
	}
	for _, tt := range tests {
		if got := tt.format.Valid(tt.id); got != tt.want {
			t.Errorf("%s.Valid(%q) = %v, want %v", tt.format.Name(), tt.id, got, tt.want)
		}
		if err := tt.format.Check(tt.id); (err == nil) != tt.want {
			t.Errorf("%s.Check(%q) = %v, want error: %v", tt.format.Name(), tt.id, err, !tt.want)
		}
	}
}

func TestNewFormatRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		format    *idmapv1.Format
		wantField string
	}{
		{&idmapv1.Format{Kind: kindInt}, "f.name"},
		{&idmapv1.Format{Name: "Legacy", Kind: kindInt}, "f.name"},
		{&idmapv1.Format{Name: "1st", Kind: kindInt}, "f.name"},
		{&idmapv1.Format{Name: "x", Kind: idmapv1.FormatKind_FORMAT_KIND_UNSPECIFIED}, "f.kind"},
		{&idmapv1.Format{Name: "x", Kind: kindInt, Pattern: "^1"}, "f.pattern"},
		{&idmapv1.Format{Name: "x", Kind: kindString, Pattern: "(unclosed"}, "f.pattern"},
	}
	for _, tt := range tests {
		_, err := idrule.NewFormat("f", tt.format)
		var fe *idrule.FieldError
		if !errors.As(err, &fe) || fe.Field != tt.wantField {
			t.Errorf("NewFormat(%v) = %v, want a FieldError on %s", tt.format, err, tt.wantField)
		}
	}
}

func TestParseIntIsInverseOfFormatInt(t *testing.T) {
	t.Parallel()
	for _, v := range []int64{0, 1, -1, 42, 1 << 62, -1 << 63, 1<<63 - 1} {
		s := strconv.FormatInt(v, 10)
		got, ok := idrule.ParseInt(s)
		if !ok || got != v {
			t.Errorf("ParseInt(%q) = %d, %v, want %d, true", s, got, ok, v)
		}
	}
}

func TestUUIDRoundTrip(t *testing.T) {
	t.Parallel()
	const s = "0189c5e4-7f6a-7c3e-9b1a-2f4d6e8a0b1c"
	u, ok := idrule.ParseUUID(s)
	if !ok {
		t.Fatalf("ParseUUID(%q) failed", s)
	}
	if got := idrule.FormatUUID(u); got != s {
		t.Errorf("FormatUUID(ParseUUID(%q)) = %q, want the input", s, got)
	}
	if u[0] != 0x01 || u[15] != 0x1c {
		t.Errorf("ParseUUID bytes = %x, want 0189…1c", u)
	}
}

func compile(t *testing.T, rule *idmapv1.Rule, from, to *idrule.Format) *idrule.Compiled {
	t.Helper()
	c, err := idrule.Compile(rule, from, to)
	if err != nil {
		t.Fatalf("Compile(%v): %v", rule, err)
	}
	return c
}

// refuses wants Compile to refuse rule with an error containing want.
func refuses(t *testing.T, rule *idmapv1.Rule, from, to *idrule.Format, want string) {
	t.Helper()
	if _, err := idrule.Compile(rule, from, to); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Compile(%v) = %v, want an error containing %q", rule, err, want)
	}
}

// translates checks f: each key of hits translates to its value, and each
// of misses is a miss, with no id.
func translates(t *testing.T, f idrule.Func, hits map[string]string, misses ...string) {
	t.Helper()
	for in, want := range hits {
		if got, st := f(in); st != idrule.Hit || got != want {
			t.Errorf("translate(%q) = %q, %s, want %q, %s", in, got, st, want, idrule.Hit)
		}
	}
	for _, in := range misses {
		if got, st := f(in); st != idrule.Miss || got != "" {
			t.Errorf("translate(%q) = %q, %s, want a %s with no id", in, got, st, idrule.Miss)
		}
	}
}

func TestTemplateRule(t *testing.T) {
	t.Parallel()
	intF := mustFormat(t, "legacy-int", kindInt, "")
	codeF := mustFormat(t, "cust-code", kindString, `^CUST-[0-9]+$`)
	rule := &idmapv1.Rule{FromFormat: "legacy-int", ToFormat: "cust-code", Reversible: true,
		Strategy: &idmapv1.Rule_Template{Template: &idmapv1.TemplateRule{Template: "CUST-{int:08}"}}}
	c := compile(t, rule, intF, codeF)
	translates(t, c.Forward, map[string]string{
		"42":        "CUST-00000042",
		"0":         "CUST-00000000",
		"12345678":  "CUST-12345678",
		"123456789": "CUST-123456789",
	}, "-5")
	translates(t, c.Reverse, map[string]string{
		"CUST-00000042":  "42",
		"CUST-00000000":  "0",
		"CUST-123456789": "123456789",
	},
		// Not canonical: these would give a second spelling of 42.
		"CUST-0000042", "CUST-000000042", "CUST-", "CUST-9999999999999999999", "ACCT-00000042")
	// Both ways over a range: every rendering parses back to its number.
	for _, v := range []int64{0, 1, 9, 10, 99999999, 100000000, 1<<63 - 1} {
		s := strconv.FormatInt(v, 10)
		code, st := c.Forward(s)
		if st != idrule.Hit {
			t.Fatalf("forward(%s) = %s, want HIT", s, st)
		}
		back, st := c.Reverse(code)
		if st != idrule.Hit || back != s {
			t.Errorf("reverse(forward(%s)) = %q, %s, want %s", s, back, st, s)
		}
	}

	// Reading the rule from the string side: forward parses.
	parse := compile(t, &idmapv1.Rule{FromFormat: "cust-code", ToFormat: "legacy-int", Reversible: true,
		Strategy: &idmapv1.Rule_Template{Template: &idmapv1.TemplateRule{Template: "CUST-{int:08}"}}}, codeF, intF)
	translates(t, parse.Forward, map[string]string{"CUST-00000042": "42"})
	translates(t, parse.Reverse, map[string]string{"42": "CUST-00000042"})

	// A rendering the target's pattern refuses is a miss, not a bad id.
	narrow := mustFormat(t, "short-code", kindString, `^C[0-9]{2}$`)
	nc := compile(t, &idmapv1.Rule{FromFormat: "legacy-int", ToFormat: "short-code",
		Strategy: &idmapv1.Rule_Template{Template: &idmapv1.TemplateRule{Template: "C{int:02}"}}}, intF, narrow)
	translates(t, nc.Forward, map[string]string{"7": "C07"}, "100")
	if nc.Reverse != nil {
		t.Errorf("Reverse of a rule with reversible=false is set, want nil")
	}
}

func TestTemplateUUIDPlaceholder(t *testing.T) {
	t.Parallel()
	uuidF := mustFormat(t, "uuid", kindUUID, "")
	refF := mustFormat(t, "ref", kindString, "")
	c := compile(t, &idmapv1.Rule{FromFormat: "uuid", ToFormat: "ref", Reversible: true,
		Strategy: &idmapv1.Rule_Template{Template: &idmapv1.TemplateRule{Template: "urn:cust:{uuid}"}}}, uuidF, refF)
	const u = "0189c5e4-7f6a-7c3e-9b1a-2f4d6e8a0b1c"
	translates(t, c.Forward, map[string]string{u: "urn:cust:" + u})
	translates(t, c.Reverse, map[string]string{"urn:cust:" + u: u}, "urn:cust:"+strings.ToUpper(u), "urn:cust:x")
}

func TestTemplateRefusals(t *testing.T) {
	t.Parallel()
	intF := mustFormat(t, "legacy-int", kindInt, "")
	uuidF := mustFormat(t, "uuid", kindUUID, "")
	codeF := mustFormat(t, "code", kindString, "")
	codeG := mustFormat(t, "code2", kindString, "")
	tests := []struct {
		name     string
		template string
		from, to *idrule.Format
		want     string
	}{
		{"no placeholder", "CUST-", intF, codeF, "no placeholder"},
		{"two placeholders", "{int}-{int}", intF, codeF, "more than one placeholder"},
		{"unclosed", "CUST-{int", intF, codeF, "unclosed"},
		{"placeholder only", "{int}", intF, codeF, "only a placeholder"},
		{"unknown type", "CUST-{float}", intF, codeF, "unknown type"},
		{"space padding", "CUST-{int:8}", intF, codeF, "padding must be 0N"},
		{"padding too wide", "CUST-{int:020}", intF, codeF, "padding must be 0N"},
		{"int placeholder on uuid", "CUST-{int}", uuidF, codeF, "connects a FORMAT_KIND_INT format and a STRING format"},
		{"string to string", "CUST-{int}", codeG, codeF, "connects"},
		{"uuid options", "X{uuid:08}", uuidF, codeF, "takes no options"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			refuses(t, &idmapv1.Rule{FromFormat: tt.from.Name(), ToFormat: tt.to.Name(), Reversible: true,
				Strategy: &idmapv1.Rule_Template{Template: &idmapv1.TemplateRule{Template: tt.template}}}, tt.from, tt.to, tt.want)
		})
	}
}

func TestUUIDEmbedRule(t *testing.T) {
	t.Parallel()
	intF := mustFormat(t, "legacy-int", kindInt, "")
	uuidF := mustFormat(t, "uuid", kindUUID, "")
	rule := &idmapv1.Rule{FromFormat: "legacy-int", ToFormat: "uuid", Reversible: true,
		Strategy: &idmapv1.Rule_UuidEmbed{UuidEmbed: &idmapv1.UuidEmbedRule{Prefix: "5EA1-0000-8000-0000"}}}
	c := compile(t, rule, intF, uuidF)
	translates(t, c.Forward, map[string]string{
		"42":                  "5ea10000-8000-0000-0000-00000000002a",
		"0":                   "5ea10000-8000-0000-0000-000000000000",
		"-1":                  "5ea10000-8000-0000-ffff-ffffffffffff",
		"9223372036854775807": "5ea10000-8000-0000-7fff-ffffffffffff",
	})
	translates(t, c.Reverse, map[string]string{
		"5ea10000-8000-0000-0000-00000000002a": "42",
		"5ea10000-8000-0000-ffff-ffffffffffff": "-1",
		"5ea10000-8000-0000-8000-000000000000": "-9223372036854775808",
	},
		// Another prefix: a real UUID, just not one of ours.
		"0189c5e4-7f6a-7c3e-0000-00000000002a")
	rev := compile(t, &idmapv1.Rule{FromFormat: "uuid", ToFormat: "legacy-int", Reversible: true,
		Strategy: &idmapv1.Rule_UuidEmbed{UuidEmbed: &idmapv1.UuidEmbedRule{Prefix: "5ea1000080000000"}}}, uuidF, intF)
	translates(t, rev.Forward, map[string]string{"5ea10000-8000-0000-0000-00000000002a": "42"})
	translates(t, rev.Reverse, map[string]string{"42": "5ea10000-8000-0000-0000-00000000002a"})

	for _, tt := range []struct {
		prefix   string
		from, to *idrule.Format
		want     string
	}{
		{"5ea1", intF, uuidF, "want exactly 16"},
		{"5ea10000800000zz", intF, uuidF, "not hexadecimal"},
		{"5ea1000080000000", intF, mustFormat(t, "s", kindString, ""), "connects an INT format and a UUID format"},
	} {
		refuses(t, &idmapv1.Rule{FromFormat: tt.from.Name(), ToFormat: tt.to.Name(),
			Strategy: &idmapv1.Rule_UuidEmbed{UuidEmbed: &idmapv1.UuidEmbedRule{Prefix: tt.prefix}}}, tt.from, tt.to, tt.want)
	}
}

func TestUUIDv5Rule(t *testing.T) {
	t.Parallel()
	strF := mustFormat(t, "dns-name", kindString, "")
	uuidF := mustFormat(t, "uuid", kindUUID, "")
	// RFC 9562 appendix A.4: UUIDv5 of "www.example.com" in the DNS namespace.
	c := compile(t, &idmapv1.Rule{FromFormat: "dns-name", ToFormat: "uuid",
		Strategy: &idmapv1.Rule_UuidV5{UuidV5: &idmapv1.UuidV5Rule{NamespaceUuid: "6ba7b810-9dad-11d1-80b4-00c04fd430c8"}}}, strF, uuidF)
	translates(t, c.Forward, map[string]string{"www.example.com": "2ed6657d-e927-568b-95e1-2665a8aea6a2"})
	if c.Reverse != nil {
		t.Errorf("UUIDv5 Reverse is set, want nil (forward only)")
	}

	for _, tt := range []struct {
		name       string
		ns         string
		reversible bool
		to         *idrule.Format
		want       string
	}{
		{"reversible refused", "6ba7b810-9dad-11d1-80b4-00c04fd430c8", true, uuidF, "forward only"},
		{"bad namespace", "not-a-uuid", false, uuidF, "not a UUID"},
		{"target not uuid", "6ba7b810-9dad-11d1-80b4-00c04fd430c8", false, mustFormat(t, "s", kindString, ""), "produces UUIDs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			refuses(t, &idmapv1.Rule{FromFormat: "dns-name", ToFormat: tt.to.Name(), Reversible: tt.reversible,
				Strategy: &idmapv1.Rule_UuidV5{UuidV5: &idmapv1.UuidV5Rule{NamespaceUuid: tt.ns}}}, strF, tt.to, tt.want)
		})
	}
}

func TestNormalizeRule(t *testing.T) {
	t.Parallel()
	upperF := mustFormat(t, "crm-upper", kindString, `^[A-Z0-9-]+$`)
	lowerF := mustFormat(t, "crm-lower", kindString, `^[a-z0-9-]+$`)
	anyF := mustFormat(t, "crm-raw", kindString, "")

	oneWay := compile(t, &idmapv1.Rule{FromFormat: "crm-raw", ToFormat: "crm-lower",
		Strategy: &idmapv1.Rule_Normalize{Normalize: &idmapv1.NormalizeRule{Case: "lower", TrimSpace: true}}}, anyF, lowerF)
	translates(t, oneWay.Forward, map[string]string{
		"  ABC-1 ": "abc-1",
		"AbC-1":    "abc-1",
	}, "   ", "ABC_1") // the target pattern refuses '_'

	both := compile(t, &idmapv1.Rule{FromFormat: "crm-upper", ToFormat: "crm-lower", Reversible: true,
		Strategy: &idmapv1.Rule_Normalize{Normalize: &idmapv1.NormalizeRule{Case: "lower"}}}, upperF, lowerF)
	translates(t, both.Forward, map[string]string{"ABC-1": "abc-1"})
	translates(t, both.Reverse, map[string]string{"abc-1": "ABC-1"})

	// Mixed case has no one-to-one image: two ids would share "abc".
	mixed := compile(t, &idmapv1.Rule{FromFormat: "crm-raw", ToFormat: "crm-lower", Reversible: true,
		Strategy: &idmapv1.Rule_Normalize{Normalize: &idmapv1.NormalizeRule{Case: "lower"}}}, anyF, lowerF)
	translates(t, mixed.Forward, map[string]string{"ABC": "abc"}, "AbC")

	for _, tt := range []struct {
		name string
		rule *idmapv1.NormalizeRule
		rev  bool
		want string
	}{
		{"unknown case", &idmapv1.NormalizeRule{Case: "title"}, false, "want \"lower\""},
		{"no-op", &idmapv1.NormalizeRule{}, false, "changes nothing"},
		{"reversible trim", &idmapv1.NormalizeRule{Case: "lower", TrimSpace: true}, true, "cannot be restored"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			refuses(t, &idmapv1.Rule{FromFormat: "crm-raw", ToFormat: "crm-lower", Reversible: tt.rev,
				Strategy: &idmapv1.Rule_Normalize{Normalize: tt.rule}}, anyF, lowerF, tt.want)
		})
	}
}

func TestCompileRefusesStructure(t *testing.T) {
	t.Parallel()
	intF := mustFormat(t, "legacy-int", kindInt, "")
	for _, tt := range []struct {
		name     string
		rule     *idmapv1.Rule
		from, to *idrule.Format
		field    string
	}{
		{"missing from", &idmapv1.Rule{FromFormat: "nope", ToFormat: "legacy-int", Strategy: &idmapv1.Rule_Lookup{}}, nil, intF, "rule.from_format"},
		{"missing to", &idmapv1.Rule{FromFormat: "legacy-int", ToFormat: "nope", Strategy: &idmapv1.Rule_Lookup{}}, intF, nil, "rule.to_format"},
		{"same format", &idmapv1.Rule{FromFormat: "legacy-int", ToFormat: "legacy-int", Strategy: &idmapv1.Rule_Lookup{}}, intF, intF, "rule.to_format"},
		{"no strategy", &idmapv1.Rule{FromFormat: "legacy-int", ToFormat: "other"}, intF, mustFormat(t, "other", kindInt, ""), "rule.strategy"},
	} {
		_, err := idrule.Compile(tt.rule, tt.from, tt.to)
		var fe *idrule.FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("%s: Compile = %v, want a FieldError on %s", tt.name, err, tt.field)
		}
	}
}

func TestLookupRuleIsReversible(t *testing.T) {
	t.Parallel()
	c := compile(t, &idmapv1.Rule{FromFormat: "uuid", ToFormat: "legacy-int", Strategy: &idmapv1.Rule_Lookup{Lookup: &idmapv1.LookupRule{}}},
		mustFormat(t, "uuid", kindUUID, ""), mustFormat(t, "legacy-int", kindInt, ""))
	if !c.Lookup || !c.Rule.GetReversible() || c.Forward != nil {
		t.Errorf("lookup rule compiled to Lookup=%v Reversible=%v Forward set=%v, want true, true, false", c.Lookup, c.Rule.GetReversible(), c.Forward != nil)
	}
	if n, err := c.Verify([]string{"0189c5e4-7f6a-7c3e-9b1a-2f4d6e8a0b1c"}); err != nil || n != 1 {
		t.Errorf("Verify(valid uuid) = %d, %v, want 1, nil", n, err)
	}
	if _, err := c.Verify([]string{"42"}); err == nil {
		t.Errorf("Verify(\"42\") on a uuid lookup = nil, want an error: samples must fit the source format")
	}
}

func TestVerifySamples(t *testing.T) {
	t.Parallel()
	anyF := mustFormat(t, "crm-raw", kindString, "")
	lowerF := mustFormat(t, "crm-lower", kindString, `^[a-z0-9-]+$`)
	intF := mustFormat(t, "legacy-int", kindInt, "")
	codeF := mustFormat(t, "code", kindString, "")
	rev := compile(t, &idmapv1.Rule{FromFormat: "crm-raw", ToFormat: "crm-lower", Reversible: true,
		Strategy: &idmapv1.Rule_Normalize{Normalize: &idmapv1.NormalizeRule{Case: "lower"}}}, anyF, lowerF)
	tmpl := compile(t, &idmapv1.Rule{FromFormat: "legacy-int", ToFormat: "code", Reversible: true,
		Strategy: &idmapv1.Rule_Template{Template: &idmapv1.TemplateRule{Template: "CUST-{int:08}"}}}, intF, codeF)
	tests := []struct {
		name      string
		c         *idrule.Compiled
		samples   []string
		wantN     int
		wantIndex int // -1: no error
		want      string
	}{
		{"all round-trip", rev, []string{"ABC", "XY-9"}, 2, -1, ""},
		{"mixed case is not one-to-one", rev, []string{"ABC", "AbC"}, 1, 1, "no crm-lower id"},
		{"template samples", tmpl, []string{"1", "42", "123456789"}, 3, -1, ""},
		{"sample outside source format", tmpl, []string{"1", "007"}, 1, 1, "canonical decimal"},
		{"sample without image", tmpl, []string{"-4"}, 0, 0, "no code id"},
	}
	for _, tt := range tests {
		n, err := tt.c.Verify(tt.samples)
		if n != tt.wantN {
			t.Errorf("%s: Verify checked %d, want %d", tt.name, n, tt.wantN)
		}
		if tt.wantIndex < 0 {
			if err != nil {
				t.Errorf("%s: Verify = %v, want nil", tt.name, err)
			}
			continue
		}
		var se *idrule.SampleError
		if !errors.As(err, &se) || se.Index != tt.wantIndex || !strings.Contains(se.Reason, tt.want) {
			t.Errorf("%s: Verify = %v, want a SampleError at %d containing %q", tt.name, err, tt.wantIndex, tt.want)
		}
	}
}
