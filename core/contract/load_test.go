package contract_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/contract/contracttest"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

func TestLoadAcceptsShortAndFullEnumNames(t *testing.T) {
	t.Parallel()
	want := &contractv1.Contract{
		Subject:       "a.b",
		Compatibility: contractv1.Compatibility_COMPATIBILITY_FULL_TRANSITIVE,
		Fields: []*contractv1.Field{
			{Name: "x", Type: contractv1.FieldType_FIELD_TYPE_STRING, Enum: []string{"NO", "SE", "yes", "1.10"}},
		},
		Checks: []*contractv1.Check{{Name: "c", Rule: "required(x)", Policy: contractv1.Policy_POLICY_QUARANTINE}},
		Mapping: &contractv1.Mapping{Fields: map[string]*contractv1.FieldMapping{
			"y": {From: "x", Cast: &contractv1.Cast{To: contractv1.FieldType_FIELD_TYPE_INT64, Rounding: contractv1.Rounding_ROUNDING_HALF_UP}},
		}},
	}
	// The same contract spelled with each form of enum name; the enum
	// values NO, yes and 1.10 stay text however YAML would read them.
	yamlDoc := func(compat, typ, enum, policy, to, rounding string) string {
		return fmt.Sprintf(`
subject: a.b
compatibility: %s
fields: [{name: x, type: %s, enum: %s}]
checks: [{name: c, rule: required(x), policy: %s}]
mapping: {fields: {y: {from: x, cast: {to: %s, rounding: %s}}}}
`, compat, typ, enum, policy, to, rounding)
	}
	tests := []struct{ name, doc string }{
		{"short", yamlDoc("FULL_TRANSITIVE", "STRING", "[NO, SE, yes, 1.10]", "QUARANTINE", "INT64", "HALF_UP")},
		{"full", yamlDoc("COMPATIBILITY_FULL_TRANSITIVE", "FIELD_TYPE_STRING", `["NO", "SE", "yes", "1.10"]`, "POLICY_QUARANTINE", "FIELD_TYPE_INT64", "ROUNDING_HALF_UP")},
		{"lower case", yamlDoc("full_transitive", "string", "[NO, SE, yes, 1.10]", "quarantine", "int64", "half_up")},
		{"json with camelCase keys", `{"subject": "a.b", "compatibility": "FULL_TRANSITIVE",
 "fields": [{"name": "x", "type": "STRING", "enum": ["NO", "SE", "yes", "1.10"]}],
 "checks": [{"name": "c", "rule": "required(x)", "policy": "QUARANTINE"}],
 "mapping": {"fields": {"y": {"from": "x", "cast": {"to": "INT64", "rounding": "ROUNDING_HALF_UP"}}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := mustLoad(t, []byte(tt.doc), "t.yaml")
			if !proto.Equal(got, want) {
				t.Errorf("Load = %v, want %v", got, want)
			}
		})
	}
}

func TestLoadValues(t *testing.T) {
	t.Parallel()
	c := mustLoad(t, []byte(`
subject: a.b
labels: {team: x}
fields:
  - {name: n, type: INT32, min: -1.5, max: 1e3, min_length: 0x10}
checks:
  - {name: c, rule: r, threshold: {fraction: 0.25}}
mapping:
  renamed_from: {n: m}
  fields:
    n: {from: m, default: {a: [1, "two", null, true]}, constant: 3}
`), "t.yaml")
	f := c.GetFields()[0]
	if f.GetMin() != -1.5 || f.GetMax() != 1000 || f.GetMinLength() != 16 {
		t.Errorf("min, max, min_length = %v, %v, %v; want -1.5, 1000, 16", f.GetMin(), f.GetMax(), f.GetMinLength())
	}
	if g := c.GetChecks()[0].GetThreshold().GetFraction(); g != 0.25 {
		t.Errorf("threshold fraction = %v, want 0.25", g)
	}
	def := c.GetMapping().GetFields()["n"].GetDefault().GetStructValue().GetFields()["a"].GetListValue().GetValues()
	if len(def) != 4 || def[0].GetNumberValue() != 1 || def[1].GetStringValue() != "two" || !def[3].GetBoolValue() {
		t.Errorf("default = %v, want [1, \"two\", null, true]", def)
	}
	if g := c.GetMapping().GetRenamedFrom()["n"]; g != "m" {
		t.Errorf("renamed_from[n] = %q, want m", g)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc  string
		line, col  int
		path, want string
	}{
		{"empty", "  \n", 0, 0, "", "empty document"},
		{"only a comment", "# nothing\n", 0, 0, "", "empty document"},
		{"malformed", "subject: [a\n", 1, 0, "", "malformed YAML"},
		{"bad indentation", "subject: a\n  owner: b\n", 2, 0, "", "malformed YAML"},
		{"two documents", "subject: a\n---\nsubject: b\n", 2, 1, "", "second YAML document"},
		{"not a mapping", "- a\n- b\n", 1, 1, "", "want a mapping of Contract fields"},
		{"unknown key", "subject: a\nfields:\n  - {name: a, typo: 1}\n", 3, 15, "fields[0].typo", `unknown field "typo" of Field`},
		{"unknown top key", "subjekt: a\n", 1, 1, "subjekt", "known fields are subject, owner"},
		{"unknown type", "fields:\n  - name: a\n    type: STRNG\n", 3, 11, "fields[0].type", `unknown FieldType "STRNG"; want one of STRING, INT32`},
		{"unknown policy", "checks: [{name: c, policy: STOP}]\n", 1, 28, "checks[0].policy", "want one of BLOCK, QUARANTINE, ALERT"},
		{"fields not a list", "fields: {a: 1}\n", 1, 9, "fields", "want a list, got a mapping"},
		{"bool as yes", "fields: [{name: a, required: yes}]\n", 1, 30, "fields[0].required", `want true or false, got "yes"`},
		{"text for a number", "fields: [{name: a, min: low}]\n", 1, 25, "fields[0].min", `want a number, got "low"`},
		{"fraction for an integer", "fields: [{name: a, min_length: 1.5}]\n", 1, 32, "fields[0].min_length", "want a whole number"},
		{"int32 overflow", "mapping: {canonical_version: 3000000000}\n", 1, 30, "mapping.canonical_version", "does not fit a 32-bit integer"},
		{"list for a scalar", "subject: [a, b]\n", 1, 10, "subject", "want a single value, got a list"},
		{"mapping for a message list item", "fields: [a]\n", 1, 10, "fields[0]", "want a mapping of Field fields"},
		{"duplicate key", "subject: a\nsubject: b\n", 2, 1, "subject", "given twice (first on line 1)"},
		{"camel and snake duplicate", "fields: [{name: a, minLength: 1, min_length: 2}]\n", 1, 34, "fields[0].min_length", "given twice"},
		{"both threshold limits", "checks: [{name: c, threshold: {count: 1, fraction: 0.5}}]\n", 1, 42, "checks[0].threshold.fraction", "count and fraction are alternatives"},
		{"empty list item", "fields:\n  -\n", 2, 4, "fields[0]", "empty list item"},
		{"map value missing", "labels: {team: }\n", 1, 0, "labels.team", "empty value"},
		{"odd map key path", "labels: {\"a b\": [1]}\n", 1, 17, `labels["a b"]`, "want a single value"},
		{"NaN in a Value", "mapping: {fields: {x: {constant: .nan}}}\n", 1, 34, "mapping.fields.x.constant", "not a JSON number"},
		{"unknown alias", "subject: *nope\n", 0, 0, "", "malformed YAML"},
		{"deep nesting", "fields: [" + strings.Repeat("{name: a, type: OBJECT, fields: [", 70) + strings.Repeat("]}", 70) + "]\n", 1, 0, "", "nested deeper than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := contract.Load([]byte(tt.doc), "shop.yaml")
			if err == nil {
				t.Fatalf("Load = %v, nil; want an error containing %q", c, tt.want)
			}
			var le *contract.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("error %T %v is not a *LoadError", err, err)
			}
			if le.Source != "shop.yaml" || !strings.HasPrefix(err.Error(), "shop.yaml") {
				t.Errorf("error %q does not name the source shop.yaml", err)
			}
			if !strings.Contains(le.Message, tt.want) {
				t.Errorf("message = %q, want it to contain %q", le.Message, tt.want)
			}
			if tt.path != "" && le.Path != tt.path {
				t.Errorf("path = %q, want %q", le.Path, tt.path)
			}
			if tt.line != 0 && le.Line != tt.line {
				t.Errorf("line = %d, want %d (%v)", le.Line, tt.line, err)
			}
			if tt.col != 0 && le.Column != tt.col {
				t.Errorf("column = %d, want %d (%v)", le.Column, tt.col, err)
			}
		})
	}
}

// repeated anchors one long text and repeats it n times.
func repeated(n, textBytes int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "subject: shop.bomb\ndescription: &d %q\nmapping:\n  fields:\n    x:\n      constant: [", strings.Repeat("x", textBytes))
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("*d")
	}
	b.WriteString("]\n")
	return b.String()
}

// TestAliasBombsAreRefusedCheaply: a document whose aliases would expand
// it far beyond what it says is refused with an error naming the alias,
// before anything is expanded: a 400 KB file once drove `seam validate`
// to 24 GB.
func TestAliasBombsAreRefusedCheaply(t *testing.T) {
	tests := []struct {
		name, doc string
	}{
		{"billion laughs", string(contracttest.AliasBomb(9, "lol"))},
		{"one long text repeated", repeated(2000, 16<<10)},
		{"laughs of long text", string(contracttest.AliasBomb(5, strings.Repeat("x", 4000)))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := contract.Load([]byte(tt.doc), "bomb.yaml")
			runtime.ReadMemStats(&after)
			var le *contract.LoadError
			if !errors.As(err, &le) || !strings.Contains(le.Message, "alias") {
				t.Fatalf("Load of a %d-byte alias bomb: %v, want a LoadError about its aliases", len(tt.doc), err)
			}
			if le.Line == 0 {
				t.Errorf("the error %v does not locate the alias", err)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
				t.Errorf("refusing a %d-byte document allocated %d MB, want next to nothing", len(tt.doc), grew>>20)
			}
		})
	}
}

// TestAliasesWithinBoundsStillLoad: anchors used the way people use them,
// to repeat a value a few times, keep working.
func TestAliasesWithinBoundsStillLoad(t *testing.T) {
	t.Parallel()
	doc := `
subject: pay.settlements
fields:
  - {name: amount, type: DOUBLE, required: true, min: &zero 0}
  - {name: fee, type: DOUBLE, min: *zero}
  - {name: currency, type: STRING, enum: &iso [EUR, USD, GBP]}
  - {name: fee_currency, type: STRING, enum: *iso}
`
	c := mustLoad(t, []byte(doc), "settlements.yaml")
	if got := c.GetFields()[3].GetEnum(); len(got) != 3 || got[2] != "GBP" {
		t.Errorf("fee_currency enum through an alias = %v, want [EUR USD GBP]", got)
	}
}

// TestDocumentSizeLimit: a document over MaxDocumentBytes is refused, and
// ReadFile reads no more of a larger file than the limit.
func TestDocumentSizeLimit(t *testing.T) {
	// Not parallel: it measures allocations.
	big := "subject: shop.big\ndescription: " + strings.Repeat("x", contract.MaxDocumentBytes) + "\n"
	if _, err := contract.Load([]byte(big), "big.yaml"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Load of a %d-byte document: %v, want it refused for its size", len(big), err)
	}
	path := filepath.Join(t.TempDir(), "huge.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8 << 30); err != nil { // sparse: 8 GB of zeros on no disk
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = contract.LoadFile(path)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "larger than") || !strings.Contains(err.Error(), "huge.yaml") {
		t.Errorf("LoadFile of an 8 GB file: %v, want it refused for its size, naming the file", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
		t.Errorf("LoadFile of an 8 GB file allocated %d MB, want a few times the 1 MiB limit at most", grew>>20)
	}
}

func TestLoadFile(t *testing.T) {
	t.Parallel()
	if _, err := contract.LoadFile("testdata/does-not-exist.yaml"); err == nil || !strings.Contains(err.Error(), "does-not-exist.yaml") {
		t.Errorf("LoadFile(missing) error = %v, want one naming the file", err)
	}
	for _, name := range []string{"../examples/shop_orders_v1.yaml", "../examples/shop_orders_v2.yaml"} {
		c, err := contract.LoadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := contract.Validate(c).Err(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if len(c.GetFields()) != 12 || len(c.GetChecks()) != 3 || c.GetMapping().GetCanonical() != "commerce.order" {
			t.Errorf("%s: %d fields, %d checks, mapping to %q; want 12, 3, commerce.order", name, len(c.GetFields()), len(c.GetChecks()), c.GetMapping().GetCanonical())
		}
	}
	m, err := contract.LoadCanonicalModelFile("../examples/commerce_order.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := contract.ValidateCanonicalModel(m).Err(); err != nil {
		t.Error(err)
	}
	// Every canonical field the shop.orders mapping produces exists.
	v1, err := contract.LoadFile("../examples/shop_orders_v1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, fm := range v1.GetMapping().GetFields() {
		if contract.Lookup(m.GetFields(), name) == nil {
			t.Errorf("mapping produces canonical field %q, which commerce.order lacks", name)
		}
		if contract.Lookup(v1.GetFields(), fm.GetFrom()) == nil {
			t.Errorf("mapping of %q reads source field %q, which shop.orders lacks", name, fm.GetFrom())
		}
	}
}

func TestLoadRoundTripsWideContract(t *testing.T) {
	t.Parallel()
	got, err := contract.Load(contracttest.WideYAML(200), "wide.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want := contracttest.Wide(200); !proto.Equal(got, want) {
		t.Errorf("Load(WideYAML(200)) differs from Wide(200)")
	}
}

func BenchmarkLoad1000Fields(b *testing.B) {
	doc := contracttest.WideYAML(1000)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := contract.Load(doc, "wide.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}
