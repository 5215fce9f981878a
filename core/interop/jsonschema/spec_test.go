package jsonschema_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/interop"
	"github.com/seamdata/seam/core/interop/jsonschema"
	"github.com/seamdata/seam/core/record"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// specCase is one schema of JSON Schema 2020-12, used as the property v of
// a record, and instances of v with the verdict the specification gives.
// An import may refuse the schema (what Seam cannot express), naming a
// JSON pointer inside it; if it imports, every verdict must agree.
type specCase struct {
	keyword, schema string
	valid, invalid  []string
	refused         bool // the import must refuse, naming where
}

// specCases are written from the JSON Schema 2020-12 specification
// (Validation, sections 6.1–6.5, and Core, 10.3.2), keyword by keyword.
var specCases = []specCase{
	// 6.1.1 type: numbers with a zero fraction are integers.
	{keyword: "type integer", schema: `{"type": "integer"}`, valid: []string{"1", "-7"}, invalid: []string{"1.5", `"1"`, "null"}},
	{keyword: "type number", schema: `{"type": "number"}`, valid: []string{"1", "1.5", "-0"}, invalid: []string{`"1"`, "true", "null"}},
	{keyword: "type string", schema: `{"type": "string"}`, valid: []string{`""`, `"a"`}, invalid: []string{"1", "null", "[]"}},
	{keyword: "type boolean", schema: `{"type": "boolean"}`, valid: []string{"true", "false"}, invalid: []string{"0", `"true"`}},
	{keyword: "type object", schema: `{"type": "object"}`, valid: []string{"{}", `{"a": 1}`}, invalid: []string{"[]", "1"}},
	{keyword: "type list with null", schema: `{"type": ["string", "null"]}`, valid: []string{`"a"`, "null"}, invalid: []string{"1"}},
	{keyword: "type null only", schema: `{"type": ["null"]}`, refused: true},
	{keyword: "type list of two", schema: `{"type": ["string", "integer"]}`, refused: true},
	// 6.1.2 enum, 6.1.3 const: equality as in 4.2.2 (1 and 1.0 are equal;
	// objects and arrays deeply).
	{keyword: "const 0.0", schema: `{"const": 0.0}`, valid: []string{"0", "0.0", "-0"}, invalid: []string{"1", `"0"`, "false", "null"}},
	{keyword: "const 1", schema: `{"const": 1}`, valid: []string{"1", "1.0"}, invalid: []string{"2", `"1"`, "true"}},
	{keyword: "const false", schema: `{"const": false}`, valid: []string{"false"}, invalid: []string{"0", "null"}},
	{keyword: "const string", schema: `{"const": "a"}`, valid: []string{`"a"`}, invalid: []string{`"b"`, "null"}},
	{keyword: "const null", schema: `{"const": null}`, refused: true},
	{keyword: "enum with null", schema: `{"enum": [6, null]}`, valid: []string{"6", "6.0", "null"}, invalid: []string{"7", `"6"`}},
	{keyword: "enum strings", schema: `{"enum": ["a", "b"]}`, valid: []string{`"a"`}, invalid: []string{`"c"`, "null", "1"}},
	{keyword: "enum numbers typed", schema: `{"type": "number", "enum": [1, 2.5]}`, valid: []string{"1", "1.0", "2.5"}, invalid: []string{"2", "null"}},
	{keyword: "enum mixed", schema: `{"enum": [1, "a"]}`, refused: true},
	{keyword: "const object", schema: `{"const": {"a": 1}}`, refused: true},
	{keyword: "enum with a list", schema: `{"enum": [[1], 2]}`, refused: true},
	// 6.2 numbers.
	{keyword: "minimum", schema: `{"type": "number", "minimum": 1.1}`, valid: []string{"1.1", "2"}, invalid: []string{"1", "null"}},
	{keyword: "exclusiveMinimum", schema: `{"type": "number", "exclusiveMinimum": 1.1}`, valid: []string{"1.2"}, invalid: []string{"1.1"}},
	{keyword: "exclusiveMaximum integer", schema: `{"type": "integer", "exclusiveMaximum": 3}`, valid: []string{"2"}, invalid: []string{"3"}},
	// 6.3 strings.
	{keyword: "maxLength", schema: `{"type": "string", "maxLength": 2}`, valid: []string{`"ab"`, `"é"`}, invalid: []string{`"abc"`}},
	{keyword: "minLength", schema: `{"type": "string", "minLength": 2}`, valid: []string{`"ab"`}, invalid: []string{`"a"`}},
	{keyword: "pattern", schema: `{"type": "string", "pattern": "^a+$"}`, valid: []string{`"aa"`}, invalid: []string{`"b"`}},
	// Core 10.3.2.1: properties constrain objects only; other types pass.
	{keyword: "properties without type", schema: `{"properties": {"a": {"type": "integer"}}}`, refused: true},
	// 10.3.2.3 additionalProperties: a schema for the other members.
	{keyword: "additionalProperties false", schema: `{"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": false}`,
		valid: []string{`{"a": 1}`, "{}"}, invalid: []string{`{"a": 1, "b": 2}`, `{"a": "x"}`}},
	{keyword: "additionalProperties schema", schema: `{"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "boolean"}}`, refused: true},
	{keyword: "additionalProperties empty schema", schema: `{"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {}}`,
		valid: []string{`{"a": 1, "b": "x"}`}, invalid: []string{`{"a": "x"}`, "[]"}},
	// 7.3.1 date-time is RFC 3339 section 5.6: T and Z in any case, leap
	// seconds, offsets within ±23:59.
	{keyword: "format date-time", schema: `{"type": "string", "format": "date-time"}`,
		valid:   []string{`"1963-06-19T08:30:06.283185Z"`, `"1963-06-19t08:30:06z"`, `"1998-12-31T23:59:60Z"`, `"1998-12-31T15:59:60.123-08:00"`, `"2020-01-01T00:00:00+23:59"`},
		invalid: []string{`"2020-01-01T00:00:00-24:00"`, `"2020-01-01T00:00:00+10:60"`, `"1963-06-19T08:30:06"`, `"2020-01-01 00:00:00Z"`, `"1990-02-31T15:59:59.123-08:00"`}},
	{keyword: "format date", schema: `{"type": "string", "format": "date"}`, valid: []string{`"2020-02-29"`}, invalid: []string{`"2021-02-29"`, `"2020-1-01"`}},
}

// TestSpecification imports each case and, unless it is refused, wants
// Seam's verdict on every instance to be the specification's, checked
// against a JSON Schema validator too so the cases themselves are right.
func TestSpecification(t *testing.T) {
	t.Parallel()
	for _, tc := range specCases {
		t.Run(tc.keyword, func(t *testing.T) {
			t.Parallel()
			doc := `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"id": {"type": "integer"}, "v": ` + tc.schema + `}, "required": ["id"]}`
			validator := compileString(t, doc)
			res, err := jsonschema.Import([]byte(doc), jsonschema.ImportOptions{Source: tc.keyword, Subject: "spec.v", Owner: "spec"})
			if tc.refused {
				var ie *interop.Error
				if !errors.As(err, &ie) || !strings.HasPrefix(ie.Path, "properties.v") {
					t.Fatalf("import: got %v, want a refusal at properties.v…", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("import: %v", err)
			}
			plan, err := check.Compile(res.Contract)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []struct {
				insts []string
				valid bool
			}{{tc.valid, true}, {tc.invalid, false}} {
				for _, inst := range want.insts {
					line := `{"id": 1, "v": ` + inst + `}`
					parsed, err := sjs.UnmarshalJSON(strings.NewReader(line))
					if err != nil {
						t.Fatal(err)
					}
					if verr := validator.Validate(parsed); (verr == nil) != want.valid {
						t.Fatalf("the case is wrong: the validator says %v for %s", verr, inst)
					}
					batch, err := record.NewDecoder(plan.Schema(), record.Options{}).Decode(recordv1.Format_FORMAT_NDJSON, []byte(line), 0)
					if err != nil {
						t.Fatal(err)
					}
					rr := plan.Validate(batch.Records).Records[0]
					if rr.Quarantined == want.valid {
						t.Errorf("v = %s: got quarantined=%v (%v), want valid=%v\ncontract: %v", inst, rr.Quarantined, rr.Failures, want.valid, res.Contract)
					}
				}
			}
		})
	}
}

func compileString(t *testing.T, doc string) *sjs.Schema {
	t.Helper()
	c := sjs.NewCompiler()
	c.AssertFormat()
	v, err := sjs.UnmarshalJSON(bytes.NewReader([]byte(doc)))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("file:///spec.json", v); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("file:///spec.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCheckNamesDoNotCollide: a_b and a.b both give the name a_b_not_null;
// the import numbers the second, so the contract compiles as it is.
func TestCheckNamesDoNotCollide(t *testing.T) {
	t.Parallel()
	doc := `{"type": "object", "properties": {"a_b": {"type": "string"}, "a": {"type": "object", "properties": {"b": {"type": "string"}}}}}`
	res, err := jsonschema.Import([]byte(doc), jsonschema.ImportOptions{Subject: "spec.names", Owner: "spec"})
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	var names []string
	for _, c := range res.Contract.GetChecks() {
		names = append(names, c.GetName())
	}
	if strings.Join(names, " ") != "a_b_not_null a_b_not_null_2 a_not_null" {
		t.Errorf("got checks %v, want a_b_not_null a_b_not_null_2 a_not_null", names)
	}
	if _, err := check.Compile(res.Contract); err != nil {
		t.Error(err)
	}
}
