package jsonschema_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/interop"
	"github.com/seamdata/seam/core/interop/interoptest"
	"github.com/seamdata/seam/core/interop/jsonschema"
	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// TestSameVerdictsAsAValidator imports JSON Schemas of two sources — the
// orders record (draft 2020-12, and the same schema as draft-07) and a bank
// payments feed of our own (draft-07) — compiles Seam's checks from each
// contract and drives both the JSON Schema validator and Seam's checks over
// the same records: they must flag exactly the same ones. Both schemas close
// the record and nested objects with additionalProperties: false and leave
// another nested object open.
func TestSameVerdictsAsAValidator(t *testing.T) {
	schema2020 := readFile(t, "orders.schema.json")
	draft7 := strings.NewReplacer(
		"https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#",
		`"$defs"`, `"definitions"`, "#/$defs/", "#/definitions/").Replace(string(schema2020))
	tests := []struct {
		name, data string
		doc        []byte
		opts       jsonschema.ImportOptions
		// closed are the nested objects the contract must close.
		closed      []string
		minFlagged  int
		minAccepted int
	}{
		{"orders draft 2020-12", "orders.ndjson", schema2020, jsonschema.ImportOptions{Subject: "shop.orders", Owner: "team-checkout"}, []string{"shipping"}, 25, 8},
		{"orders draft-07", "orders.ndjson", []byte(draft7), jsonschema.ImportOptions{Subject: "shop.orders", Owner: "team-checkout"}, []string{"shipping"}, 25, 8},
		{"payments draft-07", "payments.ndjson", readFile(t, "payments.schema.json"), jsonschema.ImportOptions{}, []string{"payer", "payer.address"}, 15, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lines := readLines(t, filepath.Join("testdata", tt.data))
			tt.opts.Source = tt.name
			res, err := jsonschema.Import(tt.doc, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Contract.GetAdditionalFields(); got != contractv1.AdditionalFields_ADDITIONAL_FIELDS_QUARANTINE {
				t.Errorf("additional_fields = %v, want QUARANTINE for the record's additionalProperties: false", got)
			}
			var closed []string
			for _, c := range res.Contract.GetChecks() {
				if obj, ok := strings.CutPrefix(c.GetRule(), "additional_fields("); ok {
					closed = append(closed, strings.TrimSuffix(obj, ")"))
				}
			}
			if !slices.Equal(closed, tt.closed) {
				t.Errorf("closed objects %q, want %q", closed, tt.closed)
			}
			if hasNote(res.Report.Notes, "additionalProperties", "") {
				t.Errorf("the report still has a note on additionalProperties:\n%v", res.Report.Notes)
			}
			verdicts := seamSays(t, res.Contract, bytes.Join(lines, []byte("\n")))
			validator := compile(t, tt.doc)
			var seamOnly, validatorOnly []string
			flagged := 0
			for i, line := range lines {
				verr := validatorSays(t, validator, line)
				rr := verdicts[i]
				switch {
				case rr.Quarantined && verr == nil:
					seamOnly = append(seamOnly, fmt.Sprintf("line %d: %v", i+1, rr.Failures))
				case !rr.Quarantined && verr != nil:
					validatorOnly = append(validatorOnly, fmt.Sprintf("line %d: %v", i+1, verr))
				}
				if verr != nil {
					flagged++
				}
			}
			if len(seamOnly) > 0 || len(validatorOnly) > 0 {
				t.Errorf("verdicts differ\nflagged by Seam only:\n  %s\nflagged by the validator only:\n  %s",
					strings.Join(seamOnly, "\n  "), strings.Join(validatorOnly, "\n  "))
			}
			if flagged < tt.minFlagged || len(lines)-flagged < tt.minAccepted {
				t.Errorf("the validator flags %d of %d records; want at least %d flagged and %d accepted, or the test is not testing",
					flagged, len(lines), tt.minFlagged, tt.minAccepted)
			}
		})
	}
}

// TestIntegerCaveat: the report's caveat on integers is true — a JSON Schema
// validator accepts 2.0 and 1e1 for an integer, Seam refuses them — and it
// is the only difference: the same records written as 2 and 10 pass both.
// It is not a loss, so strict mode accepts a schema with integers.
func TestIntegerCaveat(t *testing.T) {
	t.Parallel()
	doc := readFile(t, "payments.schema.json")
	res, err := jsonschema.Import(doc, jsonschema.ImportOptions{Strict: true})
	if err != nil {
		t.Fatalf("strict import of a schema whose every keyword carries over: %v", err)
	}
	var caveat *interop.Note
	for i, n := range res.Report.Notes {
		if n.Kind == interop.Caveat {
			caveat = &res.Report.Notes[i]
		}
	}
	if caveat == nil || caveat.Path != "properties.amount_cents" || !strings.Contains(caveat.Message, "12.0") {
		t.Fatalf("caveat %+v, want one at properties.amount_cents about 12.0; notes:\n%v", caveat, res.Report.Notes)
	}
	validator := compile(t, doc)
	for _, tc := range []struct {
		amount   string
		seamFail bool
	}{{"2", false}, {"10", false}, {"2.0", true}, {"1e1", true}} {
		line := `{"payment_id":"0b9e5c8e-3f0d-4a4e-9d43-1f3c2a6f6b01","account_ref":"ACC-00012345","amount_cents":` + tc.amount +
			`,"currency":"EUR","booked_at":"2026-03-01T10:00:00Z","payer":{"iban":"DE44500105175407324931"}}`
		if verr := validatorSays(t, validator, []byte(line)); verr != nil {
			t.Errorf("amount_cents %s: the validator refuses it (%v); the caveat says it accepts it", tc.amount, verr)
		}
		if got := seamSays(t, res.Contract, []byte(line))[0].Quarantined; got != tc.seamFail {
			t.Errorf("amount_cents %s: Seam quarantines %v, want %v", tc.amount, got, tc.seamFail)
		}
	}
}

// TestIntegerCaveatBeyond64Bits: an integer property without bounds takes
// any integer in JSON Schema; Seam's INT64 refuses one beyond 64 bits.
func TestIntegerCaveatBeyond64Bits(t *testing.T) {
	t.Parallel()
	doc := []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","x-seam-subject":"ops.counters","x-seam-owner":"ops",
	  "required":["n"],"properties":{"n":{"type":"integer"}}}`)
	res, err := jsonschema.Import(doc, jsonschema.ImportOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if !hasNote(res.Report.Notes, "properties.n", "beyond 64 bits") {
		t.Fatalf("no caveat on n beyond 64 bits:\n%v", res.Report.Notes)
	}
	line := []byte(`{"n":9223372036854775808}`)
	if verr := validatorSays(t, compile(t, doc), line); verr != nil {
		t.Fatalf("the validator refuses 2^63 (%v); the caveat says it accepts it", verr)
	}
	if !seamSays(t, res.Contract, line)[0].Quarantined {
		t.Fatal("Seam passes 2^63 as INT64; the caveat says it refuses it")
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func compile(t *testing.T, doc []byte) *sjs.Schema {
	t.Helper()
	return compileAt(t, "file:///orders.schema.json", doc)
}

// compileAt compiles doc as the schema at url, formats asserted.
func compileAt(t *testing.T, url string, doc []byte) *sjs.Schema {
	t.Helper()
	c := sjs.NewCompiler()
	c.AssertFormat()
	v, err := sjs.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource(url, v); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// validatorSays is the reference validator's verdict on one JSON
// document: nil when it is valid.
func validatorSays(t *testing.T, v *sjs.Schema, doc []byte) error {
	t.Helper()
	inst, err := sjs.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	return v.Validate(inst)
}

// seamSays is Seam's verdict on NDJSON records under the imported
// contract: the result of each record, in order.
func seamSays(t *testing.T, c *contractv1.Contract, ndjson []byte) []check.RecordResult {
	t.Helper()
	plan, err := check.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := record.NewDecoder(plan.Schema(), record.Options{}).Decode(recordv1.Format_FORMAT_NDJSON, ndjson, 0)
	if err != nil {
		t.Fatal(err)
	}
	return plan.Validate(batch.Records).Records
}

func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			out = append(out, bytes.Clone(sc.Bytes()))
		}
	}
	return out
}

func hasNote(notes []interop.Note, path, text string) bool {
	for _, n := range notes {
		if strings.Contains(n.Path, path) && strings.Contains(n.Message, text) {
			return true
		}
	}
	return false
}

// TestAnnotationsAndStrict: keywords that assert nothing (annotations,
// OpenAPI formats, keywords no vocabulary defines) are noted and the schema
// imports; a strict import refuses them. Assertions Seam cannot check are
// refused with or without strict, at their JSON pointer.
func TestAnnotationsAndStrict(t *testing.T) {
	t.Parallel()
	doc := `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
	  "properties": {
	    "id": {"type": "string", "examples": ["a"]},
	    "n": {"type": "integer", "format": "int32", "default": 0},
	    "meta": {"type": "object"}
	  }, "required": ["id"], "x-owner-team": "t"}`
	res, err := jsonschema.Import([]byte(doc), jsonschema.ImportOptions{Subject: "ops.events", Owner: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range [][2]string{
		{"properties.id.examples", "example"},
		{"properties.n.format", "OpenAPI"},
		{"properties.n.default", "mapping"},
		{"x-owner-team", "validators ignore it"},
	} {
		if !hasNote(res.Report.Notes, want[0], want[1]) {
			t.Errorf("no note at %s saying %q; notes:\n%v", want[0], want[1], res.Report.Notes)
		}
	}
	if f := res.Contract.GetFields()[1]; f.GetType() != contractv1.FieldType_FIELD_TYPE_INT64 {
		t.Errorf("n: got %v, want INT64: format int32 is OpenAPI's and JSON Schema validators take any integer", f.GetType())
	}
	if f := res.Contract.GetFields()[2]; f.GetName() != "meta" || f.GetType() != contractv1.FieldType_FIELD_TYPE_OBJECT || len(f.GetFields()) != 0 {
		t.Errorf("meta: got %v, want an OBJECT without fields (any object)", f)
	}
	_, err = jsonschema.Import([]byte(doc), jsonschema.ImportOptions{Subject: "ops.events", Owner: "ops", Strict: true})
	var le *interop.LossError
	if !errors.As(err, &le) {
		t.Fatalf("strict import: got %v, want a loss error", err)
	}

	for _, tc := range []struct{ name, doc, pointer, want string }{
		{"oneOf", `{"type": "object", "properties": {"kind": {"oneOf": [{"type": "string"}, {"type": "integer"}], "type": "string"}}}`, "/properties/kind/oneOf", "oneOf"},
		{"format", `{"type": "object", "properties": {"id": {"type": "string", "format": "hostname"}}}`, "/properties/id/format", "hostname"},
		{"multipleOf", `{"type": "object", "properties": {"ratio": {"type": "number", "multipleOf": 0.5}}}`, "/properties/ratio/multipleOf", "multipleOf"},
		{"root allOf", `{"type": "object", "properties": {"a": {"type": "string"}}, "allOf": [{"required": ["a"]}]}`, "/allOf", "allOf"},
		{"key with a slash", `{"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}, "patternProperties": {"x/y~": {}}}}}`, "/properties/a/patternProperties", "pattern"},
		{"deep", `{"type": "object", "properties": {"o": {"type": "object", "properties": {"p": {"type": "string", "not": {"const": "x"}}}}}}`, "/properties/o/properties/p/not", "negated"},
	} {
		_, err := jsonschema.Import([]byte(tc.doc), jsonschema.ImportOptions{Subject: "ops.events", Owner: "ops"})
		var ie *interop.Error
		if !errors.As(err, &ie) || ie.Path != tc.pointer || !strings.Contains(ie.Message, tc.want) {
			t.Errorf("%s: got %v, want a refusal at %s saying %q", tc.name, err, tc.pointer, tc.want)
		}
	}
}

// TestRootRef: a root that refers to its record's schema in $defs imports
// as that schema; a keyword beside it that asserts is refused.
func TestRootRef(t *testing.T) {
	t.Parallel()
	doc := `{"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": "#/$defs/Order", "title": "orders",
	  "$defs": {"Order": {"type": "object", "required": ["id"], "additionalProperties": false,
	    "properties": {"id": {"type": "integer"}, "note": {"type": "string", "maxLength": 3}}}}}`
	res, err := jsonschema.Import([]byte(doc), jsonschema.ImportOptions{Subject: "shop.orders", Owner: "o"})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Contract
	if len(c.GetFields()) != 2 || !c.GetFields()[0].GetRequired() || c.GetFields()[1].GetMaxLength() != 3 ||
		c.GetAdditionalFields() != contractv1.AdditionalFields_ADDITIONAL_FIELDS_QUARANTINE {
		t.Errorf("got %v, want the fields of $defs/Order, id required, note at most 3, the record closed", c)
	}
	_, err = jsonschema.Import([]byte(strings.Replace(doc, `"title": "orders",`, `"required": ["x"],`, 1)), jsonschema.ImportOptions{Subject: "shop.orders", Owner: "o"})
	var ie *interop.Error
	if !errors.As(err, &ie) || ie.Path != "/required" {
		t.Errorf("got %v, want a refusal at /required", err)
	}
}

// TestPointerEscapes: a JSON pointer escapes ~ and / in keys (RFC 6901).
func TestPointerEscapes(t *testing.T) {
	t.Parallel()
	doc := `{"type": "object", "properties": {"a/b~c": {"type": "object", "properties": {"x": {"type": "string"}}, "minProperties": 1}}}`
	_, err := jsonschema.Import([]byte(doc), jsonschema.ImportOptions{Subject: "ops.events", Owner: "ops"})
	var ie *interop.Error
	if !errors.As(err, &ie) || ie.Path != "/properties/a~1b~0c/minProperties" {
		t.Fatalf("got %v, want a refusal at /properties/a~1b~0c/minProperties", err)
	}
}

// TestRefusals are schemas that cannot become contracts.
func TestRefusals(t *testing.T) {
	t.Parallel()
	interoptest.Refuses(t, jsonschema.Import, jsonschema.ImportOptions{Source: "s.schema.json"}, []interoptest.Refusal{
		{Name: "no subject", Doc: `{"type":"object","properties":{"a":{"type":"string"}}}`, Want: "subject"},
		{Name: "not an object", Doc: `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array","items":{"type":"string"},"x-seam-subject":"a.b","x-seam-owner":"o"}`, Want: "type object"},
		{Name: "draft-04", Doc: `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"a":{"type":"string"}},"x-seam-subject":"a.b","x-seam-owner":"o"}`, Want: "not a draft"},
		{Name: "unknown type in a list", Doc: `{"type":"object","properties":{"a":{"type":["string","date"]}},"x-seam-subject":"a.b","x-seam-owner":"o"}`, Want: "unknown type"},
		{Name: "dangling ref", Doc: `{"type":"object","properties":{"a":{"$ref":"#/$defs/nope"}},"x-seam-subject":"a.b","x-seam-owner":"o"}`, Want: "does not resolve"},
		{Name: "ref cycle", Doc: `{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"$ref":"#/$defs/x"}},"x-seam-subject":"a.b","x-seam-owner":"o"}`, Want: "cycle"},
		{Name: "bad name", Doc: `{"type":"object","properties":{"first name":{"type":"string"}},"x-seam-subject":"a.b","x-seam-owner":"o"}`, Want: "not a valid field name"},
		{Name: "malformed", Doc: `{"type":"object",`, Want: "malformed"},
	})
}

// TestAdditionalPropertiesEdges: where Seam can close an object exactly as
// the schema does it does, with the contract's additional_fields, a check
// additional_fields(OBJECT), or a CEL check naming the members a nested
// object may have when some take any value; where it cannot, the import is
// refused where the schema says it.
func TestAdditionalPropertiesEdges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, props string
		root        contractv1.AdditionalFields
		rules       []string
		refused     string // JSON pointer of the refusal
	}{
		{"a record member that takes any value is a JSON field, so the record closes",
			`"properties":{"a":{"type":"string"},"b":true},"additionalProperties":false`,
			contractv1.AdditionalFields_ADDITIONAL_FIELDS_QUARANTINE, nil, ""},
		{"a record cannot check its other members against a schema",
			`"properties":{"a":{"type":"string"}},"additionalProperties":{"type":"string"}`,
			0, nil, "/additionalProperties"},
		{"pattern properties are refused",
			`"properties":{"a":{"type":"string"}},"patternProperties":{"^x-":{"type":"string"}},"additionalProperties":false`,
			0, nil, "/patternProperties"},
		{"array elements are not looked into",
			`"properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{"type":"string"}},"additionalProperties":false}}}`,
			0, nil, "/properties/a/items/properties"},
		{"an empty schema for additional properties leaves the object open",
			`"properties":{"o":{"type":"object","properties":{"b":{"type":"string"}},"additionalProperties":{}}}`,
			contractv1.AdditionalFields_ADDITIONAL_FIELDS_UNSPECIFIED, nil, ""},
		{"true leaves the object open",
			`"properties":{"o":{"type":"object","properties":{"b":{"type":"string"}},"additionalProperties":true}},"additionalProperties":true`,
			contractv1.AdditionalFields_ADDITIONAL_FIELDS_UNSPECIFIED, nil, ""},
		{"nested objects close one by one",
			`"properties":{"o":{"type":"object","additionalProperties":false,"properties":{"p":{"type":"object","properties":{"q":{"type":"string"}}}}}}`,
			contractv1.AdditionalFields_ADDITIONAL_FIELDS_UNSPECIFIED, []string{"additional_fields(o)"}, ""},
		{"a nested object with members of any value closes as the others",
			`"properties":{"o":{"type":"object","additionalProperties":false,"properties":{"p":{},"q":{"type":"string"}}}}`,
			contractv1.AdditionalFields_ADDITIONAL_FIELDS_UNSPECIFIED, []string{"additional_fields(o)"}, ""},
		{"the record closes",
			`"properties":{"a":{"type":"string"}},"additionalProperties":false`,
			contractv1.AdditionalFields_ADDITIONAL_FIELDS_QUARANTINE, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := `{"type":"object","x-seam-subject":"ops.events","x-seam-owner":"ops",` + tt.props + `}`
			res, err := jsonschema.Import([]byte(doc), jsonschema.ImportOptions{})
			if tt.refused != "" {
				var ie *interop.Error
				if !errors.As(err, &ie) || ie.Path != tt.refused {
					t.Fatalf("got %v, want a refusal at %s", err, tt.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Contract.GetAdditionalFields(); got != tt.root {
				t.Errorf("additional_fields = %v, want %v", got, tt.root)
			}
			var rules []string
			for _, c := range res.Contract.GetChecks() {
				if strings.HasSuffix(c.GetName(), "additional_fields") {
					rules = append(rules, c.GetRule())
				}
			}
			if !slices.Equal(rules, tt.rules) {
				t.Errorf("checks %q, want %q", rules, tt.rules)
			}
		})
	}
}
