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
	"github.com/seamdata/seam/core/interop/jsonschema"
	"github.com/seamdata/seam/core/record"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// pendingAdditionalFields are records (1-based lines) that only a JSON Schema
// validator refuses today: they carry a field the schema does not declare,
// under additionalProperties: false. Seam's contract format cannot refuse
// undeclared fields yet (the gate counts them), and the import reports so.
// When contracts can reject additional fields this list must become empty.
var pendingAdditionalFields = []int{40}

// TestSameVerdictsAsAValidator imports a JSON Schema of the orders record
// (draft 2020-12, and the same schema as draft-07), compiles Seam's checks
// from the contract and drives both the JSON Schema validator and Seam's
// checks over the same records: they must flag exactly the same ones.
func TestSameVerdictsAsAValidator(t *testing.T) {
	schema2020, err := os.ReadFile(filepath.Join("testdata", "orders.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	draft7 := strings.NewReplacer(
		"https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#",
		`"$defs"`, `"definitions"`, "#/$defs/", "#/definitions/").Replace(string(schema2020))
	lines := readLines(t, filepath.Join("testdata", "orders.ndjson"))
	for name, doc := range map[string][]byte{"draft 2020-12": schema2020, "draft-07": []byte(draft7)} {
		t.Run(name, func(t *testing.T) {
			res, err := jsonschema.Import(doc, jsonschema.ImportOptions{Source: name, Subject: "shop.orders", Owner: "team-checkout"})
			if err != nil {
				t.Fatal(err)
			}
			plan, err := check.Compile(res.Contract)
			if err != nil {
				t.Fatal(err)
			}
			batch, err := record.NewDecoder(plan.Schema(), record.Options{}).Decode(recordv1.Format_FORMAT_NDJSON, bytes.Join(lines, []byte("\n")), 0)
			if err != nil {
				t.Fatal(err)
			}
			verdicts := plan.Validate(batch.Records)
			validator := compile(t, doc)
			var seamOnly, validatorOnly []string
			for i, line := range lines {
				inst, err := sjs.UnmarshalJSON(bytes.NewReader(line))
				if err != nil {
					t.Fatalf("line %d: %v", i+1, err)
				}
				verr := validator.Validate(inst)
				rr := verdicts.Records[i]
				seam := rr.Quarantined
				switch {
				case seam && verr == nil:
					seamOnly = append(seamOnly, fmt.Sprintf("line %d: %v", i+1, rr.Failures))
				case !seam && verr != nil && !slices.Contains(pendingAdditionalFields, i+1):
					validatorOnly = append(validatorOnly, fmt.Sprintf("line %d: %v", i+1, verr))
				case seam && slices.Contains(pendingAdditionalFields, i+1):
					t.Errorf("line %d: Seam now refuses the undeclared field; empty pendingAdditionalFields", i+1)
				case !seam && verr == nil && slices.Contains(pendingAdditionalFields, i+1):
					t.Errorf("line %d is listed as pending but the validator passes it", i+1)
				}
			}
			if len(seamOnly) > 0 || len(validatorOnly) > 0 {
				t.Errorf("verdicts differ\nflagged by Seam only:\n  %s\nflagged by the validator only:\n  %s",
					strings.Join(seamOnly, "\n  "), strings.Join(validatorOnly, "\n  "))
			}
			flagged := 0
			for _, r := range verdicts.Records {
				if r.Quarantined {
					flagged++
				}
			}
			if flagged < 20 {
				t.Errorf("Seam flagged %d records; the file has more than 20 bad ones, so the test is not testing", flagged)
			}
			if !hasNote(res.Report.Notes, "additionalProperties", "not refused yet") {
				t.Errorf("the report does not say that additionalProperties: false is not enforced:\n%v", res.Report.Notes)
			}
			if got := res.Contract.GetLabels()[jsonschema.LabelClosedObjects]; got != "$" {
				t.Errorf("label %s = %q, want \"$\"", jsonschema.LabelClosedObjects, got)
			}
		})
	}
}

func compile(t *testing.T, doc []byte) *sjs.Schema {
	t.Helper()
	c := sjs.NewCompiler()
	c.AssertFormat()
	v, err := sjs.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("file:///orders.schema.json", v); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("file:///orders.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
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

// TestUnsupportedKeywords are reported, and strict mode refuses them.
func TestUnsupportedKeywords(t *testing.T) {
	t.Parallel()
	doc := `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
	  "properties": {
	    "id": {"type": "string", "format": "hostname"},
	    "kind": {"oneOf": [{"type": "string"}, {"type": "integer"}], "type": "string"},
	    "meta": {"type": "object"},
	    "ratio": {"type": "number", "multipleOf": 0.5}
	  }, "required": ["id"], "x-owner-team": "t"}`
	res, err := jsonschema.Import([]byte(doc), jsonschema.ImportOptions{Subject: "ops.events", Owner: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range [][2]string{
		{"properties.id.format", "not checked"},
		{"properties.kind.oneOf", "not checked"},
		{"properties.meta", "declares no properties"},
		{"properties.ratio.multipleOf", "multipleOf"},
		{"x-owner-team", "not one Seam reads"},
	} {
		if !hasNote(res.Report.Notes, want[0], want[1]) {
			t.Errorf("no note at %s saying %q; notes:\n%v", want[0], want[1], res.Report.Notes)
		}
	}
	_, err = jsonschema.Import([]byte(doc), jsonschema.ImportOptions{Subject: "ops.events", Owner: "ops", Strict: true})
	var le *interop.LossError
	if !errors.As(err, &le) {
		t.Fatalf("strict import: got %v, want a loss error", err)
	}
}

// TestRefusals are schemas that cannot become contracts.
func TestRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, doc, want string }{
		{"no subject", `{"type":"object","properties":{"a":{"type":"string"}}}`, "subject"},
		{"not an object", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array","items":{"type":"string"},"x-seam-subject":"a.b","x-seam-owner":"o"}`, "type object"},
		{"draft-04", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"a":{"type":"string"}},"x-seam-subject":"a.b","x-seam-owner":"o"}`, "not a draft"},
		{"two types", `{"type":"object","properties":{"a":{"type":["string","integer"]}},"x-seam-subject":"a.b","x-seam-owner":"o"}`, "several types"},
		{"dangling ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/nope"}},"x-seam-subject":"a.b","x-seam-owner":"o"}`, "does not resolve"},
		{"ref cycle", `{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"$ref":"#/$defs/x"}},"x-seam-subject":"a.b","x-seam-owner":"o"}`, "cycle"},
		{"bad name", `{"type":"object","properties":{"first name":{"type":"string"}},"x-seam-subject":"a.b","x-seam-owner":"o"}`, "not a valid field name"},
		{"malformed", `{"type":"object",`, "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := jsonschema.Import([]byte(tc.doc), jsonschema.ImportOptions{Source: "s.schema.json"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
