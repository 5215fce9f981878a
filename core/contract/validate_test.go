package contract_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/examples"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// valid is a minimal valid contract; each case adds one mistake to it.
const valid = `
subject: shop.orders
owner: team-checkout
fields:
  - {name: id, type: STRING, required: true, key: true}
`

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		doc  string
		want []string // "path REASON"
	}{
		{"valid", valid, nil},
		{"valid with everything", `
subject: shop.orders_v2
owner: team
compatibility: FULL
notice_period: 1d12h
fields:
  - {name: id, type: STRING, required: true, key: true, pattern: "^[A-Z]+$", enum: [A, B], min_length: 1, max_length: 1}
  - {name: n, type: INT32, min: 0, max: 0}
  - {name: ts, type: DATE, layout: "2006-01-02"}
  - name: addr
    type: OBJECT
    required: true
    fields: [{name: zip, type: STRING, required: true, key: true}]
  - {name: tags, type: ARRAY, max_length: 3, items: {type: STRING, pattern: "^[a-z]+$"}}
  - {name: cust, type: UUID, identifier: {namespace: customer, format: uuid}}
checks:
  - {name: id_present, rule: required(id)}
  - {name: drift, rule: "mean_drift(n)", policy: ALERT, threshold: {fraction: 1}}
`, nil},
		{"missing subject and owner", `fields: [{name: id, type: STRING}]`, []string{"subject NAME_MISSING", "owner OWNER_MISSING"}},
		{"bad subject", "subject: Shop-Orders\nowner: t\nfields: [{name: id, type: STRING}]", []string{"subject NAME_INVALID"}},
		{"no fields", "subject: a.b\nowner: t\n", []string{"fields FIELDS_MISSING"}},
		{"bad notice", valid + "notice_period: two weeks\n", []string{"notice_period NOTICE_PERIOD_INVALID"}},
		{"partition time", valid + "  - {name: booked_at, type: TIMESTAMP, required: true}\npartition_time: {field: booked_at, granularity: DAY, allowed_lateness: 1d12h}\n", nil},
		{"partition time by month of a date", valid + "  - {name: day, type: DATE, required: true}\npartition_time: {field: day, granularity: MONTH}\n", nil},
		{"partition time field missing", valid + "partition_time: {field: booked_at, granularity: DAY}\n", []string{"partition_time.field PARTITION_TIME_INVALID"}},
		{"partition time field optional", valid + "  - {name: booked_at, type: TIMESTAMP}\npartition_time: {field: booked_at, granularity: DAY}\n", []string{"partition_time.field PARTITION_TIME_INVALID"}},
		{"partition time field a string", valid + "  - {name: booked_at, type: STRING, required: true}\npartition_time: {field: booked_at, granularity: DAY}\n", []string{"partition_time.field PARTITION_TIME_INVALID"}},
		{"partition time without granularity", valid + "  - {name: booked_at, type: TIMESTAMP, required: true}\npartition_time: {field: booked_at}\n", []string{"partition_time.granularity PARTITION_TIME_INVALID"}},
		{"hours of a date", valid + "  - {name: day, type: DATE, required: true}\npartition_time: {field: day, granularity: HOUR}\n", []string{"partition_time.granularity PARTITION_TIME_INVALID"}},
		{"bad lateness", valid + "  - {name: booked_at, type: TIMESTAMP, required: true}\npartition_time: {field: booked_at, granularity: DAY, allowed_lateness: soon}\n", []string{"partition_time.allowed_lateness PARTITION_TIME_INVALID"}},
		{"missing type", valid + "  - {name: x}\n", []string{"fields[1].type FIELD_TYPE_MISSING"}},
		{"bad field name", valid + "  - {name: 1x, type: STRING}\n  - {name: a.b, type: STRING}\n  - {type: STRING}\n",
			[]string{"fields[1].name FIELD_NAME_INVALID", "fields[2].name FIELD_NAME_INVALID", "fields[3].name FIELD_NAME_MISSING"}},
		{"duplicate field", valid + "  - {name: id, type: INT64}\n", []string{"fields[1].name FIELD_NAME_DUPLICATE"}},
		{"duplicate nested field", valid + "  - {name: o, type: OBJECT, fields: [{name: a, type: STRING}, {name: a, type: INT32}]}\n",
			[]string{"fields[1].fields[1].name FIELD_NAME_DUPLICATE"}},
		{"same name at different levels is fine", valid + "  - {name: o, type: OBJECT, fields: [{name: id, type: STRING}]}\n", nil},
		{"bad regex", valid + "  - {name: x, type: STRING, pattern: \"([a-z\"}\n", []string{"fields[1].pattern PATTERN_INVALID"}},
		{"pattern on a number", valid + "  - {name: x, type: INT64, pattern: \"^1\"}\n", []string{"fields[1].pattern PATTERN_WRONG_TYPE"}},
		{"enum on a number", valid + "  - {name: x, type: INT32, enum: [\"1\"]}\n", []string{"fields[1].enum ENUM_WRONG_TYPE"}},
		{"enum value against pattern", valid + "  - {name: x, type: STRING, pattern: \"^[A-Z]{3}$\", enum: [USD, eur]}\n", []string{"fields[1].enum[1] ENUM_VALUE_MISMATCH"}},
		{"enum value against length", valid + "  - {name: x, type: STRING, max_length: 2, enum: [DE, USA]}\n", []string{"fields[1].enum[1] ENUM_VALUE_MISMATCH"}},
		{"enum value twice", valid + "  - {name: x, type: STRING, enum: [a, a]}\n", []string{"fields[1].enum[1] ENUM_VALUE_DUPLICATE"}},
		{"min above max", valid + "  - {name: x, type: DOUBLE, min: 5, max: 1}\n", []string{"fields[1].min RANGE_INVALID"}},
		{"range on a string", valid + "  - {name: x, type: STRING, min: 1}\n", []string{"fields[1] RANGE_WRONG_TYPE"}},
		{"min_length above max_length", valid + "  - {name: x, type: STRING, min_length: 3, max_length: 2}\n", []string{"fields[1].min_length LENGTH_INVALID"}},
		{"negative length", valid + "  - {name: x, type: STRING, max_length: -1}\n", []string{"fields[1].max_length LENGTH_INVALID"}},
		{"length on a number", valid + "  - {name: x, type: INT64, max_length: 3}\n", []string{"fields[1] LENGTH_WRONG_TYPE"}},
		{"precision on a double", valid + "  - {name: x, type: DOUBLE, precision: 10}\n", []string{"fields[1] DECIMAL_DIGITS_WRONG_TYPE"}},
		{"scale without precision", valid + "  - {name: x, type: DECIMAL, scale: 2}\n", []string{"fields[1].scale DECIMAL_DIGITS_INVALID"}},
		{"scale above precision", valid + "  - {name: x, type: DECIMAL, precision: 3, scale: 4}\n", []string{"fields[1].scale DECIMAL_DIGITS_INVALID"}},
		{"precision zero", valid + "  - {name: x, type: DECIMAL, precision: 0}\n", []string{"fields[1].precision DECIMAL_DIGITS_INVALID"}},
		{"optional key", valid + "  - {name: x, type: STRING, key: true}\n", []string{"fields[1].key KEY_NOT_REQUIRED"}},
		{"key in optional object", valid + "  - {name: o, type: OBJECT, fields: [{name: k, type: STRING, required: true, key: true}]}\n", []string{"fields[1].fields[0].key KEY_NOT_REQUIRED"}},
		{"object key", valid + "  - {name: o, type: OBJECT, required: true, key: true, fields: [{name: a, type: STRING}]}\n", []string{"fields[1].key KEY_NOT_SCALAR"}},
		{"key in array", valid + "  - {name: a, type: ARRAY, required: true, items: {type: STRING, required: true, key: true}}\n", []string{"fields[1].items.key KEY_IN_ARRAY"}},
		{"identifier without namespace", valid + "  - {name: c, type: INT64, identifier: {format: legacy-int}}\n", []string{"fields[1].identifier.namespace IDENTIFIER_INCOMPLETE"}},
		{"identifier without format", valid + "  - {name: c, type: INT64, identifier: {namespace: customer}}\n", []string{"fields[1].identifier.format IDENTIFIER_INCOMPLETE"}},
		{"identifier with a slash", valid + "  - {name: c, type: INT64, identifier: {namespace: a/b, format: x}}\n", []string{"fields[1].identifier.namespace IDENTIFIER_INVALID"}},
		{"identifier on a double", valid + "  - {name: c, type: DOUBLE, identifier: {namespace: a, format: x}}\n", []string{"fields[1].identifier IDENTIFIER_WRONG_TYPE"}},
		{"object without fields is any object", valid + "  - {name: o, type: OBJECT}\n", nil},
		{"fields on a string", valid + "  - {name: o, type: STRING, fields: [{name: a, type: STRING}]}\n", []string{"fields[1].fields FIELDS_WRONG_TYPE"}},
		{"array without items", valid + "  - {name: a, type: ARRAY}\n", []string{"fields[1].items ARRAY_WITHOUT_ITEMS"}},
		{"items on a string", valid + "  - {name: a, type: STRING, items: {type: STRING}}\n", []string{"fields[1].items ITEMS_WRONG_TYPE"}},
		{"bad nested item", valid + "  - {name: a, type: ARRAY, items: {type: OBJECT, fields: [{name: z}]}}\n", []string{"fields[1].items.fields[0].type FIELD_TYPE_MISSING"}},
		{"layout on a string", valid + "  - {name: x, type: STRING, layout: RFC3339}\n", []string{"fields[1].layout LAYOUT_WRONG_TYPE"}},
		{"checks", valid + `checks:
  - {name: a, rule: r}
  - {name: a, rule: r}
  - {rule: r}
  - {name: Bad-Name, rule: r}
  - {name: b}
  - {name: c, rule: r, threshold: {count: -1}}
  - {name: d, rule: r, threshold: {fraction: 1.5}}
`, []string{"checks[1].name CHECK_NAME_DUPLICATE", "checks[2].name CHECK_NAME_MISSING", "checks[3].name CHECK_NAME_INVALID",
			"checks[4].rule CHECK_RULE_MISSING", "checks[5].threshold.count THRESHOLD_INVALID", "checks[6].threshold.fraction THRESHOLD_INVALID"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := mustLoad(t, []byte(tt.doc), "t.yaml")
			ps := contract.Validate(c)
			var got []string
			for _, p := range ps {
				got = append(got, p.Path+" "+p.Reason)
				if p.Message == "" {
					t.Errorf("%s %s has no message", p.Path, p.Reason)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Validate = %q, want %q\n%v", got, tt.want, ps)
			}
			if (ps.Err() == nil) != (len(tt.want) == 0) {
				t.Errorf("Err() = %v with %d problems", ps.Err(), len(ps))
			}
		})
	}
}

func TestValidateRejectsWireOnlyValues(t *testing.T) {
	t.Parallel()
	c := &contractv1.Contract{
		Subject: "a.b", Owner: "t", Compatibility: 42, AdditionalFields: 9,
		Fields: []*contractv1.Field{{Name: "x", Type: 99}},
		Checks: []*contractv1.Check{{Name: "c", Rule: "r", Policy: 7}},
	}
	var got []string
	for _, p := range contract.Validate(c) {
		got = append(got, p.Path+" "+p.Reason)
	}
	want := []string{"compatibility COMPATIBILITY_INVALID", "additional_fields ADDITIONAL_FIELDS_INVALID", "fields[0].type FIELD_TYPE_INVALID", "checks[0].policy CHECK_POLICY_INVALID"}
	if !slices.Equal(got, want) {
		t.Errorf("Validate = %q, want %q", got, want)
	}
	if ps := contract.Validate(nil); len(ps) != 1 || ps[0].Reason != contract.ReasonContractMissing {
		t.Errorf("Validate(nil) = %v, want one CONTRACT_MISSING", ps)
	}
}

func TestValidateTooDeep(t *testing.T) {
	t.Parallel()
	f := &contractv1.Field{Name: "leaf", Type: contractv1.FieldType_FIELD_TYPE_STRING}
	for range 100 {
		f = &contractv1.Field{Name: "o", Type: contractv1.FieldType_FIELD_TYPE_OBJECT, Fields: []*contractv1.Field{f}}
	}
	ps := contract.Validate(&contractv1.Contract{Subject: "a.b", Owner: "t", Fields: []*contractv1.Field{f}})
	if len(ps) != 1 || ps[0].Reason != contract.ReasonFieldTooDeep {
		t.Errorf("Validate(100 levels) = %v, want one FIELD_TOO_DEEP", ps)
	}
}

func TestValidateCanonicalModel(t *testing.T) {
	t.Parallel()
	m, err := contract.LoadCanonicalModel([]byte("name: Commerce Order\nfields: [{name: id, type: STRING, key: true}]\n"), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range contract.ValidateCanonicalModel(m) {
		got = append(got, p.Path+" "+p.Reason)
	}
	want := []string{"name NAME_INVALID", "owner OWNER_MISSING", "fields[0].key KEY_NOT_REQUIRED"}
	if !slices.Equal(got, want) {
		t.Errorf("ValidateCanonicalModel = %q, want %q", got, want)
	}
}

func TestProblemsError(t *testing.T) {
	t.Parallel()
	ps := contract.Problems{
		{Path: "fields[0].type", Reason: contract.ReasonFieldTypeMissing, Message: "field has no type"},
		{Path: "owner", Reason: contract.ReasonOwnerMissing, Message: "owner is empty"},
	}
	want := "2 problems:\n  fields[0].type: field has no type\n  owner: owner is empty"
	if g := ps.Error(); g != want {
		t.Errorf("Error() = %q, want %q", g, want)
	}
	if g := ps[:1].Error(); g != "fields[0].type: field has no type" {
		t.Errorf("single Error() = %q", g)
	}
	if err := contract.Problems(nil).Err(); err != nil {
		t.Errorf("empty Err() = %v, want nil", err)
	}
}

func TestParseNoticePeriod(t *testing.T) {
	t.Parallel()
	const day = 24 * 60 * 60 // seconds
	tests := []struct {
		in      string
		seconds int64
		wantErr string
	}{
		{"", 0, ""},
		{"336h", 14 * day, ""},
		{"14d", 14 * day, ""},
		{" 14d ", 14 * day, ""},
		{"1d12h", day + 12*3600, ""},
		{"0d", 0, ""},
		{"90m", 90 * 60, ""},
		{"1.5d", 0, "whole days"},
		{"-1d", 0, "whole days"},
		{"-5h", 0, "negative"},
		{"two weeks", 0, "want a duration"},
		{"d", 0, "whole days"},
		{"99999999999d", 0, "too long"},
		{"106751d24h", 0, "too long"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			d, err := contract.ParseNoticePeriod(tt.in)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("ParseNoticePeriod(%q) = %v, %v; want error containing %q", tt.in, d, err, tt.wantErr)
				}
			case err != nil:
				t.Errorf("ParseNoticePeriod(%q) error: %v", tt.in, err)
			case int64(d.Seconds()) != tt.seconds:
				t.Errorf("ParseNoticePeriod(%q) = %v, want %ds", tt.in, d, tt.seconds)
			}
		})
	}
}

func TestFieldsLookupKeysIdentifiers(t *testing.T) {
	t.Parallel()
	c, err := contract.Load([]byte(`
subject: a.b
fields:
  - {name: id, type: STRING, required: true, key: true}
  - name: addr
    type: OBJECT
    required: true
    fields:
      - {name: zip, type: STRING, required: true, key: true}
      - {name: owner, type: INT64, identifier: {namespace: customer, format: legacy-int}}
  - name: lines
    type: ARRAY
    items:
      type: OBJECT
      fields: [{name: sku, type: STRING, identifier: {namespace: product, format: sku}}]
`), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for ref := range contract.Fields(c.GetFields()) {
		got = append(got, fmt.Sprintf("%s %s array=%v optional=%v", ref.Name, ref.Path, ref.InArray, ref.Optional))
	}
	want := []string{
		"id fields[0] array=false optional=false",
		"addr fields[1] array=false optional=false",
		"addr.zip fields[1].fields[0] array=false optional=false",
		"addr.owner fields[1].fields[1] array=false optional=true",
		"lines fields[2] array=false optional=true",
		"lines[] fields[2].items array=true optional=true",
		"lines[].sku fields[2].items.fields[0] array=true optional=true",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Fields:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for name, wantType := range map[string]contractv1.FieldType{
		"addr.zip":    contractv1.FieldType_FIELD_TYPE_STRING,
		"lines[]":     contractv1.FieldType_FIELD_TYPE_OBJECT,
		"lines[].sku": contractv1.FieldType_FIELD_TYPE_STRING,
	} {
		if f := contract.Lookup(c.GetFields(), name); f.GetType() != wantType {
			t.Errorf("Lookup(%q) = %v, want a %s field", name, f, wantType)
		}
	}
	for _, name := range []string{"", "nope", "addr.nope", "id.x", "id[]", "lines.sku"} {
		if f := contract.Lookup(c.GetFields(), name); f != nil {
			t.Errorf("Lookup(%q) = %v, want nil", name, f)
		}
	}
	if g := contract.Keys(c); !slices.Equal(g, []string{"id", "addr.zip"}) {
		t.Errorf("Keys = %q, want [id addr.zip]", g)
	}
	var ids []string
	for _, r := range contract.Identifiers(c) {
		ids = append(ids, r.Name+"="+r.Ref())
	}
	if want := []string{"addr.owner=customer/legacy-int", "lines[].sku=product/sku"}; !slices.Equal(ids, want) {
		t.Errorf("Identifiers = %q, want %q", ids, want)
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	a, b, c := examples.ShopOrdersV1(), examples.ShopOrdersV1(), examples.ShopOrdersV2()
	fa, err := contract.Fingerprint(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, _ := contract.Fingerprint(b)
	fc, _ := contract.Fingerprint(c)
	if fa != fb || len(fa) != 64 {
		t.Errorf("equal contracts: fingerprints %q and %q, want equal 64-hex", fa, fb)
	}
	if fa == fc {
		t.Errorf("v1 and v2 share fingerprint %q", fa)
	}
	if _, err := contract.Fingerprint(&contractv1.Contract{Subject: "\xff"}); err == nil {
		t.Errorf("Fingerprint(invalid UTF-8) succeeded, want an error")
	}
}

func TestShortName(t *testing.T) {
	t.Parallel()
	if g := contract.ShortName(contractv1.FieldType_FIELD_TYPE_INT64); g != "INT64" {
		t.Errorf("ShortName(FIELD_TYPE_INT64) = %q, want INT64", g)
	}
	if g := contract.ShortName(contractv1.Policy_POLICY_BLOCK); g != "BLOCK" {
		t.Errorf("ShortName(POLICY_BLOCK) = %q, want BLOCK", g)
	}
	if g := contract.ShortName(contractv1.FieldType(99)); g != "99" {
		t.Errorf("ShortName(99) = %q, want 99", g)
	}
}
