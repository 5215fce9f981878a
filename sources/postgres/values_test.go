package postgres

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

func TestAppendJSON(t *testing.T) {
	t.Parallel()
	for typ, cases := range map[contractv1.FieldType]map[string]string{
		contractv1.FieldType_FIELD_TYPE_INT64: {
			"9007199254740993": "9007199254740993", // every digit kept
			"-42":              "-42",
			"4.2":              `"4.2"`, // not an integer: sent as text, the gate refuses it by name
			"007":              `"007"`, // a leading zero is no JSON number
		},
		contractv1.FieldType_FIELD_TYPE_DOUBLE: {
			"1.5e-07":   "1.5e-07",
			"NaN":       `"NaN"`,
			"-Infinity": `"-Infinity"`,
			"00":        `"00"`,
			"+1.5":      `"+1.5"`,
		},
		contractv1.FieldType_FIELD_TYPE_DECIMAL: {
			"12.50": `"12.50"`,
		},
		contractv1.FieldType_FIELD_TYPE_BOOL: {
			"t": "true",
			"f": "false",
		},
		contractv1.FieldType_FIELD_TYPE_TIMESTAMP: {
			"2026-03-01 09:12:00":           `"2026-03-01T09:12:00Z"`,
			"2026-03-01 09:12:00.123456+00": `"2026-03-01T09:12:00.123456Z"`,
			"2026-03-01 09:12:00+05:30":     `"2026-03-01T09:12:00+05:30"`,
			"2026-03-01 09:12:00-08":        `"2026-03-01T09:12:00-08:00"`,
			"infinity":                      `"infinity"`,
		},
		contractv1.FieldType_FIELD_TYPE_DATE: {
			"2026-03-01": `"2026-03-01"`,
		},
		contractv1.FieldType_FIELD_TYPE_STRING: {
			"a \"quoted\"\nline\t\x01": `"a \"quoted\"\nline\t\u0001"`,
			"caf\xc3\xa9 \xff":         `"café \ufffd"`,
		},
	} {
		for text, want := range cases {
			got := string(appendJSON(nil, typ, []byte(text)))
			if got != want {
				t.Errorf("appendJSON(%s, %q) = %s, want %s", typ, text, got, want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("appendJSON(%s, %q) = %s is not JSON", typ, text, got)
			}
		}
	}
}

// Whatever a text value holds, the record stays valid JSON and valid
// UTF-8: nothing a source sends can break a batch for the others.
func FuzzAppendJSON(f *testing.F) {
	for _, s := range []string{"", "x", "\xff\xfe", "2026-03-01 09:12:00+05:30", "NaN", "\"\\"} {
		f.Add(s, int32(contractv1.FieldType_FIELD_TYPE_STRING))
	}
	f.Fuzz(func(t *testing.T, s string, typ int32) {
		got := appendJSON(nil, contractv1.FieldType(typ%13), []byte(s))
		if !json.Valid(got) || !utf8.Valid(got) {
			t.Fatalf("appendJSON(%d, %q) = %q: not valid JSON in UTF-8", typ%13, s, got)
		}
	})
}

func shape(cols ...Column) Shape { return cols }

func TestContractFromCatalog(t *testing.T) {
	t.Parallel()
	s := shape(
		Column{Name: "id", Type: oidInt8, Key: true, NotNull: true, TypeName: "bigint"},
		Column{Name: "iban", Type: oidVarchar, TypMod: 34 + 4, NotNull: true, TypeName: "character varying(34)"},
		Column{Name: "memo", Type: oidText, TypeName: "text"},
		Column{Name: "price", Type: oidNumeric, TypMod: 12<<16 | 4 + 4, TypeName: "numeric(12,4)"},
	)
	c := deriveContract("bank.transfers", "team-bank", TableName{"public", "transfers"}, s)
	if c.GetCompatibility() != contractv1.Compatibility_COMPATIBILITY_FULL {
		t.Fatalf("compatibility %s, want FULL", c.GetCompatibility())
	}
	byName := map[string]*contractv1.Field{}
	for _, f := range c.GetFields() {
		byName[f.GetName()] = f
	}
	if f := byName["iban"]; f.GetType() != contractv1.FieldType_FIELD_TYPE_STRING || f.GetMaxLength() != 34 || !f.GetRequired() {
		t.Fatalf("iban field %v, want a required STRING of at most 34", f)
	}
	if f := byName["price"]; f.GetType() != contractv1.FieldType_FIELD_TYPE_DECIMAL || f.Precision == nil || f.GetPrecision() != 12 || f.GetScale() != 4 {
		t.Fatalf("price field %v, want DECIMAL(12,4) from numeric(12,4)", f)
	}
	if f := byName["memo"]; f.GetRequired() {
		t.Fatalf("nullable memo is required")
	}
	var keys []string
	for _, f := range c.GetFields() {
		if f.GetKey() {
			keys = append(keys, f.GetName())
		}
	}
	if got := strings.Join(keys, ","); got != "id,_seam_lsn,_seam_seq" {
		t.Fatalf("key %s, want id,_seam_lsn,_seam_seq: every change its own record", got)
	}
	if ok, why := accepts(c, s); !ok {
		t.Fatalf("the derived contract does not accept its own shape: %s", why)
	}

	level := func(next Shape) (bool, []string) {
		ev := classifyShape(c, next)
		var rules []string
		for _, ch := range ev.changes {
			if ch.GetLevel() == registryv1.ChangeLevel_CHANGE_LEVEL_BREAKING {
				rules = append(rules, ch.GetRule())
			}
		}
		return ev.breaking, rules
	}
	for _, tc := range []struct {
		name     string
		next     Shape
		breaking bool
		rule     string
	}{
		{"new nullable column", append(s.clone(), Column{Name: "channel", Type: oidText}), false, ""},
		{"new NOT NULL column", append(s.clone(), Column{Name: "channel", Type: oidText, NotNull: true}), true, "FIELD_ADDED_REQUIRED"},
		{"dropped column", shape(s[0], s[1], s[3]), true, "FIELD_REMOVED"},
		{"retyped column", shape(s[0], s[1], Column{Name: "memo", Type: oidInt4}, s[3]), true, "FIELD_TYPE_CHANGED"},
		{"shorter varchar", shape(s[0], Column{Name: "iban", Type: oidVarchar, TypMod: 20 + 4, NotNull: true}, s[2], s[3]), true, "CONSTRAINT_TIGHTENED"},
		{"renamed column", shape(s[0], s[1], Column{Name: "note", Type: oidText}, s[3]), true, "FIELD_REMOVED"},
		{"numeric(12,4) to numeric(8,1)", shape(s[0], s[1], s[2], Column{Name: "price", Type: oidNumeric, TypMod: 8<<16 | 1 + 4}), true, "FIELD_TYPE_NARROWED"},
		// Widening is not narrowing, but FULL compatibility also guards
		// old readers, so it is breaking there too (as integer to bigint).
		{"numeric(12,4) to numeric(14,6)", shape(s[0], s[1], s[2], Column{Name: "price", Type: oidNumeric, TypMod: 14<<16 | 6 + 4}), true, "FIELD_TYPE_WIDENED"},
		{"numeric(12,4) to numeric", shape(s[0], s[1], s[2], Column{Name: "price", Type: oidNumeric, TypMod: -1}), true, "FIELD_TYPE_WIDENED"},
	} {
		breaking, rules := level(tc.next)
		if breaking != tc.breaking || (tc.rule != "" && !strings.Contains(strings.Join(rules, ","), tc.rule)) {
			t.Errorf("%s: breaking %v with %v, want breaking %v naming %q", tc.name, breaking, rules, tc.breaking, tc.rule)
		}
	}
	// The proposal for a dropped column maps nothing from it.
	dropped := shape(s[0], s[1], s[3])
	proposed := applyShape(c, dropped)
	if _, ok := proposed.GetMapping().GetFields()["memo"]; ok {
		t.Fatal("the proposal still maps the dropped column memo")
	}
	if ok, _ := accepts(proposed, dropped); !ok {
		t.Fatal("the proposal does not accept the shape it was made for")
	}
}

func (s Shape) clone() Shape { return append(Shape(nil), s...) }
