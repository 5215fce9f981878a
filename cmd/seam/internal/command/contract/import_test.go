package contract_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/interop/interoptest"
)

// TestImportRoundTripCorpus imports every ODCS example of the corpus that
// has tables into a folder, and for each contract written: seam validate
// --contract accepts it, a real seam registers it, and its ODCS export,
// imported again, gives the same contract.
func TestImportRoundTripCorpus(t *testing.T) {
	t.Parallel()
	corpus := interoptest.CorpusDir(t)
	files, err := filepath.Glob(filepath.Join(corpus, "odcs", "examples", "*", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no ODCS examples in %s", corpus)
	}
	n := seamtest.StartNode(t)
	data := seamtest.WriteFile(t, "one.ndjson", "{}\n")
	imported := 0
	for _, file := range files {
		dir := t.TempDir()
		out, errOut, code := seamtest.Run(context.Background(), "contract", "import", "--owner", "data-team", "--out-dir", dir, file)
		if code != exit.OK {
			if !strings.Contains(errOut, "no schema object") {
				t.Errorf("import %s: exit %d\n%s", file, code, errOut)
			}
			continue
		}
		for _, written := range strings.Fields(out) {
			imported++
			_, verr, vcode := seamtest.Run(context.Background(), "validate", "--contract", written, data)
			if vcode == exit.Invalid || vcode == exit.Usage {
				t.Errorf("validate --contract %s: exit %d\n%s", written, vcode, verr)
				continue
			}
			c, err := contract.LoadFile(written)
			if err != nil {
				t.Fatal(err)
			}
			// Corpus examples share subjects (seller.tbl); each gets its own.
			c.Subject = "corpus.t" + strings.ReplaceAll(strings.TrimSuffix(filepath.Base(written), ".yaml"), ".", "_") + "_" + strings.NewReplacer("-", "_", ".", "_").Replace(strings.TrimSuffix(filepath.Base(file), ".odcs.yaml"))
			c.Subject = strings.ToLower(c.Subject)
			b, err := contract.MarshalYAML(c)
			if err != nil {
				t.Fatal(err)
			}
			reg := seamtest.WriteFile(t, "c.yaml", string(b))
			n.MustCLI(t, 0, "contract", "register", "-f", reg)
			export := n.MustCLI(t, 0, "contract", "export", "--to", "odcs", c.Subject)
			exp := filepath.Join(t.TempDir(), "back.odcs.yaml")
			if err := os.WriteFile(exp, []byte(export), 0o644); err != nil {
				t.Fatal(err)
			}
			again, errOut, code := seamtest.Run(context.Background(), "contract", "import", exp)
			if code != exit.OK {
				t.Errorf("import of the export of %s: exit %d\n%s", c.Subject, code, errOut)
				continue
			}
			back, err := contract.Load([]byte(again), "again")
			if err != nil {
				t.Errorf("import of the export of %s does not load: %v\n%s", c.Subject, err, again)
				continue
			}
			if !proto.Equal(back, c) {
				t.Errorf("%s: register → export → import changed it:\ngot  %v\nwant %v", c.Subject, back, c)
			}
		}
	}
	if imported < 10 {
		t.Errorf("got %d contracts from the corpus, want every table of it", imported)
	}
}

// TestImportCanonicalIngest imports an ODCS contract with --canonical and
// registers what it wrote; records are ingested at once, with no mapping
// written by hand, and a bad one is quarantined.
func TestImportCanonicalIngest(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	doc := seamtest.WriteFile(t, "visits.odcs.yaml", `apiVersion: v3.1.0
kind: DataContract
id: 2f7d7f4e-0000-4000-8000-000000000003
version: 1.0.0
status: active
schema:
  - name: visits
    properties:
      - {name: id, logicalType: integer, physicalType: int8, primaryKey: true, required: true}
      - {name: seen_at, logicalType: date, physicalType: timestamptz, required: true}
      - {name: code, logicalType: string, physicalType: "varchar[3]"}
`)
	dir := t.TempDir()
	out, errOut, code := seamtest.Run(context.Background(), "contract", "import", "--owner", "team-web", "--subject", "web.visits", "--canonical", "web.visit", "--out-dir", dir, doc)
	if code != exit.OK {
		t.Fatalf("import: exit %d\n%s", code, errOut)
	}
	model, con := filepath.Join(dir, "web.visit.canonical.yaml"), filepath.Join(dir, "web.visits.yaml")
	if !strings.Contains(out, model) || !strings.Contains(out, con) {
		t.Fatalf("import wrote %q, want %s and %s", out, model, con)
	}
	n.MustCLI(t, 0, "canonical", "register", "-f", model)
	n.MustCLI(t, 0, "contract", "register", "-f", con)
	records := seamtest.WriteFile(t, "visits.ndjson", `{"id": 1, "seen_at": "2026-12-01T10:00:00Z", "code": "abc"}
{"id": 2, "seen_at": "2026-12-01T11:30:00+01:00", "code": "de"}
{"id": 3, "seen_at": "2026-12-01", "code": "toolong"}
`)
	resp := n.MustJSON(t, "gate", "ingest", "web.visits", records, "--partition", "2026-12-01")
	counts, _ := resp["partition"].(map[string]any)["counts"].(map[string]any)
	if got := seamtest.JSONInt(counts["accepted"]); got != 2 {
		t.Errorf("ingest: got %d accepted, want 2 (the third has a date for a timestamp and a code too long)\n%v", got, resp)
	}
	if got := seamtest.JSONInt(counts["quarantined"]); got != 1 {
		t.Errorf("ingest: got %d quarantined, want 1\n%v", got, resp)
	}
}

// TestImportTables: a document of several tables is one contract per
// table, chosen with --table or written into a folder; never several
// documents in one stream that register would refuse.
func TestImportTables(t *testing.T) {
	t.Parallel()
	doc := twoTableODCS(t, "v3.1.0", "4")
	_, errOut, code := seamtest.Run(context.Background(), "contract", "import", "--owner", "team", doc)
	if code != exit.Usage || !strings.Contains(errOut, "--table") || !strings.Contains(errOut, "orders") {
		t.Errorf("import of two tables to stdout: exit %d, want %d naming the tables and --table\n%s", code, exit.Usage, errOut)
	}
	out, errOut, code := seamtest.Run(context.Background(), "contract", "import", "--owner", "team", "--table", "orders", doc)
	if code != exit.OK || !strings.Contains(out, "max_length: 11\n") || strings.Contains(out, "lines") {
		t.Errorf("import --table orders: exit %d\n%s\n%s", code, out, errOut)
	}
	dir := t.TempDir()
	if _, errOut, code := seamtest.Run(context.Background(), "contract", "import", "--owner", "team", "--out-dir", dir, doc); code != exit.OK {
		t.Fatalf("import --out-dir: exit %d\n%s", code, errOut)
	}
	for _, name := range []string{"shop.orders.yaml", "shop.lines.yaml"} {
		if _, err := contract.LoadFile(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestRegisterODCSDocument: register -f sends an ODCS document of several
// tables and no team, with --table and --owner saying what Seam needs.
func TestRegisterODCSDocument(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	doc := twoTableODCS(t, "v3.0.2", "5")
	if _, errOut, code := n.CLI(t, "contract", "register", "-f", doc); code != exit.Invalid || !strings.Contains(errOut, "--owner") {
		t.Errorf("register without a team: exit %d, want %d naming --owner\n%s", code, exit.Invalid, errOut)
	}
	if _, errOut, code := n.CLI(t, "contract", "register", "-f", doc, "--owner", "team-shop"); code != exit.Invalid || !strings.Contains(errOut, "--table") {
		t.Errorf("register of two tables: exit %d, want %d naming --table\n%s", code, exit.Invalid, errOut)
	}
	n.MustCLI(t, 0, "contract", "register", "-f", doc, "--table", "lines", "--owner", "team-shop")
	got := n.MustJSON(t, "contract", "get", "shop.lines")
	c := got["version"].(map[string]any)["contract"].(map[string]any)
	if c["owner"] != "team-shop" || c["fields"].([]any)[0].(map[string]any)["type"] != "FIELD_TYPE_INT32" {
		t.Errorf("registered shop.lines: %v", c)
	}
}

// twoTableODCS writes an ODCS document of the given version with two
// tables, shop.orders and shop.lines, and no team; idSuffix ends its id.
func twoTableODCS(t *testing.T, apiVersion, idSuffix string) string {
	return seamtest.WriteFile(t, "two.odcs.yaml", `apiVersion: `+apiVersion+`
kind: DataContract
id: 2f7d7f4e-0000-4000-8000-00000000000`+idSuffix+`
version: 1.0.0
status: active
domain: shop
schema:
  - name: orders
    properties: [{name: id, logicalType: string, physicalType: "varchar(11)", primaryKey: true}]
  - name: lines
    properties: [{name: n, logicalType: integer, physicalType: int4}]
`)
}
