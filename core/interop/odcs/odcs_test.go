package odcs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/internal/goldentest"
	"github.com/seamdata/seam/core/interop"
	"github.com/seamdata/seam/core/interop/interoptest"
	"github.com/seamdata/seam/core/interop/odcs"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// corpusOutcome is what importing each ODCS example of the corpus must give:
// contracts for the listed objects, or a refusal naming why.
var corpusOutcome = map[string]struct {
	objects []string
	refused string
}{
	"all/full-example.odcs.yaml":                      {objects: []string{"tbl", "receivers"}},
	"fundamentals/table-column-description.odcs.yaml": {objects: []string{"tbl"}},
	"quality/column-accuracy.odcs.yaml":               {objects: []string{"Air_Quality"}},
	"quality/column-completeness.odcs.yaml":           {objects: []string{"Air_Quality"}},
	"quality/column-custom.odcs.yaml":                 {objects: []string{"Air_Quality"}},
	"quality/column-validity.odcs.yaml":               {objects: []string{"Air_Quality"}},
	"roles/service-and-operational-roles.odcs.yaml":   {refused: "no schema objects"},
	"schema/all-schema-types.odcs.yaml":               {objects: []string{"tbl", "AnObject", "AnotherObject"}},
	"schema/kafka-schema.odcs.yaml":                   {objects: []string{"Orders"}},
	"schema/kafka-schemaregistry.odcs.yaml":           {refused: "no schema object has properties"},
	"schema/table-column.odcs.yaml":                   {objects: []string{"tbl"}},
	"schema/table-columns-with-partition.odcs.yaml":   {objects: []string{"tbl"}},
	"server/azure-server.odcs.yaml":                   {refused: "no schema objects"},
	"server/kafka-server.odcs.yaml":                   {refused: "no schema object has properties"},
	"sla/database-table-sla.odcs.yaml":                {refused: "no schema objects"},
	"stakeholders/basic-four-dpo.odcs.yaml":           {refused: "no schema objects"},
}

// TestCorpusExamples imports every ODCS example of the corpus, exports each
// contract, validates the export against the ODCS v3.1.0 JSON Schema and
// imports it again: the contract must come back the same. The notes of
// every import are kept in a golden file, the list of what Seam cannot
// represent.
func TestCorpusExamples(t *testing.T) {
	dir := filepath.Join(interoptest.CorpusDir(t), "odcs")
	schema := filepath.Join(dir, "odcs-json-schema-v3.1.0.json")
	sch := interoptest.NewSchemas(t, schema).Compile(t, schema)
	files, err := filepath.Glob(filepath.Join(dir, "examples", "*", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no ODCS examples under %s (%v)", dir, err)
	}
	var golden strings.Builder
	seen := map[string]bool{}
	for _, file := range files {
		rel, _ := filepath.Rel(filepath.Join(dir, "examples"), file)
		rel = filepath.ToSlash(rel)
		seen[rel] = true
		want, known := corpusOutcome[rel]
		if !known {
			t.Errorf("%s: a new corpus example; add its expected outcome to corpusOutcome", rel)
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		res, err := odcs.Import(data, odcs.ImportOptions{Source: rel, Owner: "data-team"})
		fmt.Fprintf(&golden, "== %s\n", rel)
		if want.refused != "" {
			var ie *interop.Error
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), want.refused) {
				t.Errorf("%s: got error %v, want a refusal saying %q", rel, err, want.refused)
			}
			if err != nil {
				fmt.Fprintf(&golden, "refused: %v\n", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: import: %v", rel, err)
			continue
		}
		var objects []string
		for _, c := range res.Contracts {
			objects = append(objects, c.Object)
		}
		if fmt.Sprint(objects) != fmt.Sprint(want.objects) {
			t.Errorf("%s: imported objects %v, want %v", rel, objects, want.objects)
		}
		for _, n := range res.Report.Notes {
			fmt.Fprintf(&golden, "%s\n", n)
		}
		for _, c := range res.Contracts {
			js, _ := protojson.MarshalOptions{UseProtoNames: true}.Marshal(c.Contract)
			var indented bytes.Buffer
			_ = json.Indent(&indented, js, "", "  ") // protojson varies its spacing on purpose
			fmt.Fprintf(&golden, "-- %s:\n%s\n", c.Object, indented.String())
			roundTrip(t, rel+"#"+c.Object, c.Contract, sch)
		}
	}
	for rel := range corpusOutcome {
		if !seen[rel] {
			t.Errorf("%s: expected in the corpus, not found", rel)
		}
	}
	goldentest.Check(t, "corpus.golden", golden.String())
}

// roundTrip exports c as YAML and as JSON, validates both against the ODCS
// schema, imports them (a Seam export must carry everything) and
// wants c back; a second export must equal the first byte for byte.
func roundTrip(t *testing.T, name string, c *contractv1.Contract, sch *jsonschema.Schema) {
	t.Helper()
	for _, asJSON := range []bool{false, true} {
		out, _, err := odcs.Export(c, odcs.ExportOptions{JSON: asJSON})
		if err != nil {
			t.Errorf("%s: export: %v", name, err)
			return
		}
		if err := interoptest.ValidateYAML(sch, out); err != nil {
			t.Errorf("%s: export does not validate against ODCS v3.1.0: %v\n%s", name, err, out)
			return
		}
		back, err := odcs.Import(out, odcs.ImportOptions{Source: name + " export"})
		if err != nil {
			t.Errorf("%s: import of the export: %v\n%s", name, err, out)
			return
		}
		// A Seam export carries everything; the one note that stays is about
		// Seam itself (the gate does not look inside array elements).
		for _, n := range back.Report.Losses() {
			if !strings.Contains(n.Message, "each array element") {
				t.Errorf("%s: import of the export lost %s", name, n)
			}
		}
		if len(back.Contracts) != 1 {
			t.Errorf("%s: import of the export gave %d contracts, want 1", name, len(back.Contracts))
			return
		}
		if got := back.Contracts[0].Contract; !proto.Equal(got, c) {
			t.Errorf("%s: import → export → import changed the contract:\ngot  %v\nwant %v\nexport:\n%s", name, got, c, out)
			return
		}
		again, _, err := odcs.Export(back.Contracts[0].Contract, odcs.ExportOptions{JSON: asJSON})
		if err != nil || string(again) != string(out) {
			t.Errorf("%s: second export differs (%v):\n%s\nfirst:\n%s", name, err, again, out)
		}
	}
}

// TestExportSeamExamples exports Seam's own example contracts: the result
// validates against ODCS v3.1.0, imports strictly (nothing lost) and gives
// the same contract, apart from the ODCS metadata labels import adds (id,
// version, status, object name).
func TestExportSeamExamples(t *testing.T) {
	dir := filepath.Join(interoptest.CorpusDir(t), "odcs")
	schema := filepath.Join(dir, "odcs-json-schema-v3.1.0.json")
	sch := interoptest.NewSchemas(t, schema).Compile(t, schema)
	bank, err := contract.Load([]byte(bankTransactions), "bank.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*contractv1.Contract{"shop.orders v1": examples.ShopOrdersV1(), "shop.orders v2": examples.ShopOrdersV2(), "bank.transactions": bank} {
		c.Labels = map[string]string{"openlineage.namespace": "kafka://broker:9092", "openlineage.name": c.GetSubject()}
		out, rep, err := odcs.Export(c, odcs.ExportOptions{Version: 2})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := interoptest.ValidateYAML(sch, out); err != nil {
			t.Fatalf("%s: export does not validate: %v\n%s", name, err, out)
		}
		if losses := rep.Losses(); len(losses) > 0 {
			t.Errorf("%s: export reports losses %v, want none", name, losses)
		}
		res, err := odcs.Import(out, odcs.ImportOptions{Strict: true})
		if err != nil {
			t.Fatalf("%s: strict import of the export: %v\n%s", name, err, out)
		}
		got := res.Contracts[0].Contract
		for k := range got.GetLabels() {
			if strings.HasPrefix(k, "odcs.") {
				delete(got.Labels, k)
			}
		}
		want := proto.Clone(c).(*contractv1.Contract)
		sort.SliceStable(want.Checks, func(i, j int) bool { return want.Checks[i].GetName() < want.Checks[j].GetName() })
		if !proto.Equal(got, want) {
			t.Errorf("%s: export then import changed the contract:\ngot  %v\nwant %v\n%s", name, got, want, out)
		}
	}
}

// bankTransactions is a bank feed of our own that refuses undeclared fields
// at the top level and in one nested object; ODCS has no word for either,
// so they travel as a custom property and a custom quality rule.
const bankTransactions = `
subject: bank.transactions
owner: team-payments
additional_fields: reject
fields:
  - {name: txn_id, type: STRING, required: true, key: true, pattern: "^TX-[0-9]{10}$"}
  - {name: account_ref, type: STRING, required: true, identifier: {namespace: account, format: acc-ref}}
  - {name: amount_cents, type: INT64, required: true}
  - name: counterparty
    type: OBJECT
    fields:
      - {name: iban, type: STRING}
      - {name: name, type: STRING}
checks:
  - {name: counterparty_closed, rule: additional_fields(counterparty), policy: QUARANTINE}
`

// TestImportPayments imports an ODCS v3.0.2 payments feed of our own and
// checks the contract field by field, then drives records through the
// checks compiled from it.
func TestImportPayments(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "payments.odcs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := odcs.Import(data, odcs.ImportOptions{Source: "payments.odcs.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Contracts[0].Contract
	want := `subject:"finance.payments" owner:"ana@bank.example" description:"One record per settled payment." notice_period:"30d" ` +
		`fields:{name:"payment_id" type:FIELD_TYPE_UUID required:true key:true} ` +
		`fields:{name:"account_ref" type:FIELD_TYPE_STRING required:true pattern:"^[A-Z]{2}[0-9]{2}[A-Z0-9]{4,30}$" max_length:34 identifier:{namespace:"account" format:"iban"}} ` +
		`fields:{name:"amount" type:FIELD_TYPE_DECIMAL required:true min:0 precision:18 scale:2} ` +
		`fields:{name:"fee_cents" type:FIELD_TYPE_INT64 min:0} ` +
		`fields:{name:"currency" type:FIELD_TYPE_STRING required:true enum:"EUR" enum:"USD" enum:"GBP"} ` +
		`fields:{name:"booked_at" type:FIELD_TYPE_TIMESTAMP required:true layout:"2006-01-02T15:04:05Z07:00"} ` +
		`fields:{name:"value_date" type:FIELD_TYPE_DATE} ` +
		`fields:{name:"payer" type:FIELD_TYPE_OBJECT fields:{name:"name" type:FIELD_TYPE_STRING max_length:140} fields:{name:"country" type:FIELD_TYPE_STRING required:true min_length:2 max_length:2}} ` +
		`fields:{name:"tags" type:FIELD_TYPE_ARRAY max_length:5 items:{type:FIELD_TYPE_STRING}} ` +
		`fields:{name:"reference" type:FIELD_TYPE_STRING} ` +
		`checks:{name:"fee_drift" rule:"mean_drift(fee_cents, max_relative_change: 0.2, baseline: 7)" policy:POLICY_ALERT} ` +
		`checks:{name:"payments_row_count" rule:"row_count(min: 101)"} ` +
		`checks:{name:"payments_unique" rule:"unique(account_ref, booked_at)"} ` +
		`checks:{name:"reference_present" rule:"required(reference)" policy:POLICY_ALERT}`
	stripped := proto.Clone(c).(*contractv1.Contract)
	stripped.Labels = nil
	if g := normalizeSpace(stripped.String()); g != normalizeSpace(want) {
		t.Errorf("imported contract\ngot  %s\nwant %s", g, want)
	}
	if c.GetLabels()["odcs.version"] != "2.1.0" || c.GetLabels()["odcs.domain"] != "finance" {
		t.Errorf("labels %v, want odcs.version 2.1.0 and odcs.domain finance", c.GetLabels())
	}
	wantNotes := []string{
		"DROPPED team: Seam keeps one owner",
		"DROPPED schema[0].quality[3]: Seam does not run SQL queries",
		"APPROXIMATED schema[0].quality[0]: Seam counts rows per partition",
	}
	for _, w := range wantNotes {
		if !slicesContainsPrefix(res.Report.Notes, w) {
			t.Errorf("report lacks %q; got:\n%s", w, notesText(res.Report.Notes))
		}
	}
	// numeric(18,2) is checked as such now: no note about its digits.
	if slicesContainsPrefix(res.Report.Notes, "APPROXIMATED schema[0].properties[2].physicalType") {
		t.Errorf("report notes the digits of amount, which are checked:\n%s", notesText(res.Report.Notes))
	}
}

func normalizeSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

func slicesContainsPrefix(notes []interop.Note, prefix string) bool {
	for _, n := range notes {
		if strings.HasPrefix(n.String(), prefix) {
			return true
		}
	}
	return false
}

func notesText(notes []interop.Note) string {
	var b strings.Builder
	for _, n := range notes {
		b.WriteString(n.String() + "\n")
	}
	return b.String()
}

// TestImportRefusals feeds documents that cannot become contracts: each
// is an error that says where and why, never a panic or a partial result.
func TestImportRefusals(t *testing.T) {
	t.Parallel()
	interoptest.Refuses(t, odcs.Import, odcs.ImportOptions{Source: "doc.odcs.yaml"}, []interoptest.Refusal{
		{Name: "malformed", Doc: "apiVersion: v3.1.0\nschema: [\n", Want: "malformed YAML"},
		{Name: "not utf-8", Doc: "apiVersion: v3.1.0\nid: \xff\n", Want: "not valid UTF-8"},
		{Name: "v2", Doc: "apiVersion: v2.2.2\nkind: DataContract\nid: x\n", Want: "not supported"},
		{Name: "no api version", Doc: "kind: DataContract\nid: x\n", Want: "apiVersion is missing"},
		{Name: "wrong kind", Doc: "apiVersion: v3.1.0\nkind: Pipeline\n", Want: "kind is \"Pipeline\""},
		{Name: "schema not a list", Doc: "apiVersion: v3.1.0\nschema: {name: x}\n", Want: "want a list of schema objects"},
		{Name: "no owner", Doc: "apiVersion: v3.1.0\nschema: [{name: t, properties: [{name: a, logicalType: string}]}]\n", Want: "no owner"},
		{Name: "bad field name", Doc: "apiVersion: v3.1.0\nteam: {name: t}\nschema: [{name: t, properties: [{name: first-name, logicalType: string}]}]\n", Want: "not a valid field name"},
		{Name: "unknown logical type", Doc: "apiVersion: v3.1.0\nteam: {name: t}\nschema: [{name: t, properties: [{name: a, logicalType: money}]}]\n", Want: "unknown logicalType"},
		{Name: "bad seam rule", Doc: "apiVersion: v3.1.0\nteam: {name: t}\nschema: [{name: t, properties: [{name: a, logicalType: string}], quality: [{type: custom, engine: seam, implementation: \"mean_drift(nope)\"}]}]\n", Want: "do not compile"},
		{Name: "deep", Doc: "apiVersion: v3.1.0\nx: " + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "\n", Want: "nested deeper"},
		{Name: "two documents", Doc: "apiVersion: v3.1.0\n---\nid: x\n", Want: "second YAML document"},
	})
}

// TestStrict refuses a document with losses and lists them.
func TestStrict(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "payments.odcs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = odcs.Import(data, odcs.ImportOptions{Strict: true})
	var le *interop.LossError
	if !errors.As(err, &le) || len(le.Notes) == 0 || !strings.Contains(err.Error(), "SQL") {
		t.Fatalf("got %v, want a loss error listing the SQL rule among others", err)
	}
}

// fuzzSeeds are small documents that together reach what the payments
// feed reaches: v3.0 teams and SLAs, types and their options, nested and
// array properties, quality rules, Seam's custom properties, and an alias
// bomb. They are small on purpose: the fuzzer minimizes every new input it
// finds, in time quadratic in its size, and a 3 KB seed kept it minimizing
// (at 0 execs/s) for a minute at a time.
var fuzzSeeds = []string{
	`apiVersion: v3.0.2
id: p
version: 2.1.0
domain: finance
team: [{username: ana@b.x, role: owner}, {username: bo@b.x, role: steward}]
slaProperties: [{property: noticePeriod, value: 30, unit: days}]
schema: [{name: p, physicalType: topic, properties: [{name: id, logicalType: string, physicalType: uuid, primaryKey: true, required: true}]}]`,
	`apiVersion: v3.1.0
team: {name: t}
schema: [{name: p, properties: [
 {name: a, logicalType: string, physicalType: varchar(34), logicalTypeOptions: {pattern: "^[A-Z]{2}$", maxLength: 3}, customProperties: [{property: seamIdentifier, value: account/iban}]},
 {name: b, logicalType: number, physicalType: decimal(18,2), logicalTypeOptions: {minimum: 0}},
 {name: c, logicalType: integer, logicalTypeOptions: {format: i64, exclusiveMinimum: -1}},
 {name: d, logicalType: timestamp, logicalTypeOptions: {format: "yyyy-MM-dd'T'HH:mm:ssXXX"}},
 {name: e, logicalType: date}]}]`,
	`apiVersion: v3.1.0
team: {name: t}
schema: [{name: t, properties: [{name: a, logicalType: array, items: {logicalType: object, properties: [{name: b}]}},
 {name: o, logicalType: object, properties: [{name: c, logicalType: string}], logicalTypeOptions: {required: [c]}},
 {name: g, logicalType: array, items: {logicalType: string}, logicalTypeOptions: {maxItems: 5}}]}]`,
	`apiVersion: v3.1.0
team: {name: t}
schema: [{name: p, properties: [{name: a, logicalType: string, quality: [{metric: invalidValues, arguments: {validValues: [X, Y]}, mustBe: 0}, {rule: nullCheck, mustBe: 0, severity: warning, name: a present}]}],
 quality: [{rule: rowCount, mustBeGreaterThan: 100}, {rule: duplicateCount, mustBe: 0, arguments: {properties: [a]}},
  {type: custom, engine: seam, name: f, implementation: "row_count(min: 1)", severity: warning}, {type: sql, query: SELECT 1, mustBe: 0}]}]`,
	`apiVersion: v3.1.0
team: {name: t}
customProperties: [{property: seamCompatibility, value: FULL}, {property: seamLabels, value: {tier: gold}}, {property: x, value: y}]
schema: [{name: p, customProperties: [{property: seamSubject, value: a.b}, {property: seamAdditionalFields, value: REJECT},
 {property: seamMapping, value: {canonical: c, fields: {a: {from: a}}}}], properties: [{name: a, logicalType: string}]}]`,
	"a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n" +
		"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n",
}

// TestFuzzSeedsImport: every seed but the bomb is a contract, so the fuzzer
// starts from documents that get past parsing.
func TestFuzzSeedsImport(t *testing.T) {
	t.Parallel()
	for i, s := range fuzzSeeds[:len(fuzzSeeds)-1] {
		res, err := odcs.Import([]byte(s), odcs.ImportOptions{Owner: "o"})
		if err != nil {
			t.Errorf("seed %d: %v", i, err)
			continue
		}
		if len(res.Contracts) != 1 {
			t.Errorf("seed %d: %d contracts, want 1", i, len(res.Contracts))
		}
	}
}

func FuzzImport(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		res, err := odcs.Import(doc, odcs.ImportOptions{Owner: "o"})
		if err != nil {
			return
		}
		for _, c := range res.Contracts {
			if _, _, err := odcs.Export(c.Contract, odcs.ExportOptions{}); err != nil {
				t.Fatalf("an imported contract does not export: %v", err)
			}
		}
	})
}
