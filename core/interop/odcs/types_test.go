package odcs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/interop/interoptest"
	"github.com/seamdata/seam/core/interop/odcs"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

var backticked = regexp.MustCompile("`([^`]*)`")

// TestTypeMappingTable imports a one-property ODCS document for every
// logicalType and physicalType of the table in docs/contract.md, and
// wants the Seam type and bounds that row promises. Each generated
// document is first checked against the ODCS v3.0.2 and v3.1.0 schemas,
// when the corpus is at hand.
func TestTypeMappingTable(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "contract.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "<!-- odcs-types:")
	if !ok {
		t.Fatal("docs/contract.md has no odcs-types table")
	}
	rows := 0
	for _, line := range strings.Split(table, "\n")[3:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 4 {
			t.Fatalf("row %q: want 4 cells", line)
		}
		logical := strings.Trim(strings.TrimSpace(cells[0]), "`")
		if logical == "(none)" {
			logical = ""
		}
		var physicals []string
		if strings.Contains(cells[1], "(none)") {
			physicals = append(physicals, "")
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			physicals = append(physicals, m[1])
		}
		want := strings.TrimSpace(cells[2])
		bounds := strings.TrimSpace(cells[3])
		for _, phys := range physicals {
			rows++
			name := logical + "/" + phys
			doc := oneProperty(logical, phys)
			for _, doc := range validateODCS(t, name, logical, doc) {
				res, err := odcs.Import([]byte(doc), odcs.ImportOptions{Source: name})
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				f := res.Contracts[0].Contract.GetFields()[1]
				if got := strings.TrimPrefix(f.GetType().String(), "FIELD_TYPE_"); got != want {
					t.Errorf("%s: got %s, want %s", name, got, want)
				}
				checkBounds(t, name, f, bounds)
				c := res.Contracts[0].Contract
				seamRoundTrip(t, name, c)
				roundTrip(t, name, c, schemaCache(t, filepath.Join(interoptest.CorpusDir(t), "odcs", "odcs-json-schema-v3.1.0.json")))
			}
		}
	}
	if rows < 80 {
		t.Errorf("got %d type mappings from docs/contract.md, want the whole table", rows)
	}
}

func checkBounds(t *testing.T, name string, f *contractv1.Field, bounds string) {
	t.Helper()
	var n int64
	var items string
	switch {
	case bounds == "—":
		if f.MaxLength != nil || f.GetPattern() != "" || f.Min != nil || f.Max != nil || f.Precision != nil || f.Scale != nil {
			t.Errorf("%s: got bounds %v, want none", name, f)
		}
	case strings.HasPrefix(bounds, "digits"):
		var p, s int32
		if _, err := fmt.Sscanf(bounds, "digits %d,%d", &p, &s); err != nil {
			t.Fatalf("%s: bounds %q: %v", name, bounds, err)
		}
		if f.Precision == nil || f.Scale == nil || f.GetPrecision() != p || f.GetScale() != s {
			t.Errorf("%s: got precision %v and scale %v, want %d and %d", name, f.Precision, f.Scale, p, s)
		}
	case strings.HasPrefix(bounds, "max_length"):
		if _, err := fmt.Sscanf(bounds, "max_length %d", &n); err != nil {
			t.Fatalf("%s: bounds %q: %v", name, bounds, err)
		}
		if f.GetMaxLength() != n || f.MaxLength == nil {
			t.Errorf("%s: got max_length %v, want %d", name, f.MaxLength, n)
		}
	case strings.HasPrefix(bounds, "items"):
		if _, err := fmt.Sscanf(bounds, "items %s", &items); err != nil {
			t.Fatalf("%s: bounds %q: %v", name, bounds, err)
		}
		if got := strings.TrimPrefix(f.GetItems().GetType().String(), "FIELD_TYPE_"); got != items {
			t.Errorf("%s: got items %s, want %s", name, got, items)
		}
	case strings.HasPrefix(bounds, "pattern"):
		for _, s := range []string{"09:30", "23:59:59", "00:00:00.125"} {
			if !regexp.MustCompile(f.GetPattern()).MatchString(s) {
				t.Errorf("%s: pattern %q refuses the time %s", name, f.GetPattern(), s)
			}
		}
		if regexp.MustCompile(f.GetPattern()).MatchString("24:00") {
			t.Errorf("%s: pattern %q takes 24:00", name, f.GetPattern())
		}
	default:
		t.Fatalf("%s: unknown bounds %q in docs/contract.md", name, bounds)
	}
}

// oneProperty is an ODCS v3.1.0 document of one table with a key and the
// property under test.
func oneProperty(logical, phys string) string {
	p := "      - name: v\n"
	if logical != "" {
		p += "        logicalType: " + logical + "\n"
	}
	if phys != "" {
		p += fmt.Sprintf("        physicalType: %q\n", phys)
	}
	return documentHead(1) + `  - name: t
    properties:
      - {name: id, logicalType: string, primaryKey: true, required: true}
` + p
}

// documentHead is the start of a test document, up to its schema list;
// n numbers its id.
func documentHead(n int) string {
	return fmt.Sprintf(`apiVersion: v3.1.0
kind: DataContract
id: 2f7d7f4e-0000-4000-8000-%012d
version: 1.0.0
status: active
team: {name: data-team}
schema:
`, n)
}

// validateODCS checks a generated document against both ODCS schemas of
// the corpus, so the importer is held to documents ODCS calls valid, and
// returns it in each version that has its logicalType (v3.0.2 has no
// timestamp nor time).
func validateODCS(t *testing.T, name, logical, doc string) []string {
	t.Helper()
	var docs []string
	dir := filepath.Join(interoptest.CorpusDir(t), "odcs")
	for _, v := range []string{"v3.0.2", "v3.1.0"} {
		file := filepath.Join(dir, "odcs-json-schema-"+v+".json")
		sch := schemaCache(t, file)
		d := doc
		if v == "v3.0.2" {
			if logical == "timestamp" || logical == "time" {
				continue
			}
			d = strings.Replace(d, "apiVersion: v3.1.0", "apiVersion: v3.0.2", 1)
			d = strings.Replace(d, "team: {name: data-team}", "team: [{username: data-team, role: owner}]", 1)
		}
		if err := interoptest.ValidateYAML(sch, []byte(d)); err != nil {
			t.Errorf("%s: the generated document is not valid ODCS %s: %v\n%s", name, v, err, d)
		}
		docs = append(docs, d)
	}
	return docs
}

var (
	schemasMu sync.Mutex
	schemas   = map[string]*jsonschema.Schema{}
)

// schemaCache compiles each ODCS schema once for the whole test binary.
func schemaCache(t *testing.T, file string) *jsonschema.Schema {
	t.Helper()
	schemasMu.Lock()
	defer schemasMu.Unlock()
	if s, ok := schemas[file]; ok {
		return s
	}
	s := interoptest.NewSchemas(t, file).Compile(t, file)
	schemas[file] = s
	return s
}

// seamRoundTrip wants an imported contract valid as the registry judges
// it, and written as Seam YAML, read back the same.
func seamRoundTrip(t *testing.T, name string, c *contractv1.Contract) {
	t.Helper()
	if problems := contract.Validate(c); len(problems) > 0 {
		t.Errorf("%s: imported contract is invalid: %v", name, problems)
	}
	out, err := contract.MarshalYAML(c)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	back, err := contract.Load(out, name)
	if err != nil {
		t.Errorf("%s: the import's own YAML does not load: %v\n%s", name, err, out)
		return
	}
	if !proto.Equal(back, c) {
		t.Errorf("%s: YAML round trip changed the contract:\ngot  %v\nwant %v", name, back, c)
	}
}

// TestImportKeepsMeaning imports the constructs that ODCS allows and an
// earlier importer refused or changed: string bounds on times and dates,
// an object that lists no properties, and lengths and widths that
// only the physical type gives.
func TestImportKeepsMeaning(t *testing.T) {
	t.Parallel()
	doc := documentHead(2) + `  - name: visits
    properties:
      - {name: id, logicalType: integer, physicalType: int4, primaryKey: true, required: true}
      - {name: opens, logicalType: time, logicalTypeOptions: {minimum: "08:00:00", maximum: "17:00:00"}}
      - {name: day, logicalType: date, logicalTypeOptions: {minimum: "2020-01-01"}}
      - {name: seen_at, logicalType: date, physicalType: timestamp}
      - {name: score, logicalType: number, physicalType: int4}
      - {name: code, logicalType: string, physicalType: "varchar[50]"}
      - {name: attrs, logicalType: object}
      - {name: email, logicalType: object, physicalType: citext}
`
	validateODCS(t, "visits", "time", doc)
	res, err := odcs.Import([]byte(doc), odcs.ImportOptions{Source: "visits"})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Contracts[0].Contract
	want := map[string]string{"id": "INT32", "opens": "STRING", "day": "DATE", "seen_at": "TIMESTAMP", "score": "INT32", "code": "STRING", "attrs": "OBJECT", "email": "STRING"}
	for _, f := range c.GetFields() {
		if got := strings.TrimPrefix(f.GetType().String(), "FIELD_TYPE_"); got != want[f.GetName()] {
			t.Errorf("%s: got %s, want %s", f.GetName(), got, want[f.GetName()])
		}
	}
	if n := c.GetFields()[5].GetMaxLength(); n != 50 {
		t.Errorf("code: got max_length %d, want 50", n)
	}
	var dropped []string
	for _, n := range res.Report.Notes {
		if strings.Contains(n.Message, "bounds on dates, times") {
			dropped = append(dropped, n.Path)
		}
	}
	if fmt.Sprint(dropped) != "[schema[0].properties[1].logicalTypeOptions.minimum schema[0].properties[1].logicalTypeOptions.maximum schema[0].properties[2].logicalTypeOptions.minimum]" {
		t.Errorf("got notes on dropped bounds at %v", dropped)
	}
	seamRoundTrip(t, "visits", c)
	roundTrip(t, "visits", c, schemaCache(t, filepath.Join(interoptest.CorpusDir(t), "odcs", "odcs-json-schema-v3.1.0.json")))
}
