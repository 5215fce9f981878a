package gate_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/node"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
	"github.com/seamdata/seam/core/interop/interoptest"
	"github.com/seamdata/seam/platform/lineage/lineagetest"
)

const runEventSchema = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"

// With --openlineage-url the gate reports every sealing of a partition as
// an OpenLineage run: START, then COMPLETE when it passed or FAIL when it
// is BLOCKED, valid against the spec and facet schemas of the corpus,
// with the seal's verdict and counts; a seal answered again from a sealed
// partition is no new run.
func TestSealsEmitOpenLineageRuns(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(interoptest.CorpusDir(t), "openlineage", "spec")
	facets, err := filepath.Glob(filepath.Join(dir, "facets", "*.json"))
	if err != nil || len(facets) == 0 {
		t.Fatalf("no facet schemas in %s: %v", dir, err)
	}
	schemas := interoptest.NewSchemas(t, append(facets, filepath.Join(dir, "OpenLineage.json"))...).AssertFormat()
	compiled := map[string]*sjs.Schema{}
	compile := func(url string) *sjs.Schema {
		if s, ok := compiled[url]; ok {
			return s
		}
		compiled[url] = schemas.Compile(t, url)
		return compiled[url]
	}

	col := &lineagetest.Collector{}
	srv := httptest.NewServer(col)
	t.Cleanup(srv.Close)
	n := seamtest.StartNodeWith(t, func(c *node.Config) {
		c.OpenLineageURL, c.OpenLineageAPIKey, c.OpenLineageNamespace = srv.URL, "ol-key", "seam-test"
	})
	n.SetupOrders(t)
	good := seamtest.WriteLines(t, "good.ndjson", seamtest.OrderLines(20))
	n.MustCLI(t, exit.OK, "gate", "ingest", "shop.orders", good, "--partition", "2026-03-01")
	lines := seamtest.OrderLines(20)
	lines[3] = strings.Replace(lines[3], fmt.Sprintf(`"customer_id":%d,`, 100003), ``, 1)
	bad := seamtest.WriteLines(t, "bad.ndjson", lines)
	n.MustCLI(t, exit.Failed, "gate", "ingest", "shop.orders", bad, "--partition", "2026-03-02")
	// Sealing a sealed partition answers its verdict; it is no new run.
	n.MustCLI(t, exit.OK, "gate", "seal", "shop.orders", "2026-03-01")

	reqs := col.Await(t, 4, 20*time.Second)
	type event struct {
		EventType string
		Run       struct {
			RunID  string
			Facets map[string]json.RawMessage
		}
		Job    struct{ Namespace, Name string }
		Inputs []struct {
			InputFacets struct {
				Assertions struct {
					Assertions []struct {
						Name, Expected string
						Success        bool
					}
				} `json:"dataQualityAssertions"`
				Metrics struct {
					ColumnMetrics map[string]struct {
						NullCount, Count int64
						Sum              *float64
					}
				} `json:"dataQualityMetrics"`
			}
		}
		Outputs []struct {
			OutputFacets struct {
				OutputStatistics *struct{ RowCount int64 } `json:"outputStatistics"`
			}
		}
	}
	var got []string
	runs := map[string]bool{}
	for i, r := range reqs {
		if sent := r.Method + " " + r.Path + " " + r.Header.Get("Authorization"); sent != "POST /api/v1/lineage Bearer ol-key" {
			t.Errorf("event %d sent as %q, want POST /api/v1/lineage with the API key", i, sent)
		}
		b := r.Body
		inst, err := sjs.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := compile(runEventSchema).Validate(inst); err != nil {
			t.Fatalf("event %d does not validate against the RunEvent schema: %v\n%s", i, err, b)
		}
		var ev event
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatal(err)
		}
		for name, f := range ev.Run.Facets {
			var base struct {
				SchemaURL string `json:"_schemaURL"`
			}
			if err := json.Unmarshal(f, &base); err != nil {
				t.Fatal(err)
			}
			url, _, _ := strings.Cut(base.SchemaURL, "#")
			doc := []byte(`{"` + name + `":` + string(f) + `}`)
			if !strings.HasPrefix(url, "https://openlineage.io/") {
				url, doc = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunFacet", f
			}
			fi, err := sjs.UnmarshalJSON(bytes.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			if err := compile(url).Validate(fi); err != nil {
				t.Fatalf("run facet %s of event %d does not validate against %s: %v\n%s", name, i, url, err, f)
			}
		}
		runs[ev.Run.RunID] = true
		desc := ev.EventType + " " + ev.Job.Namespace + "/" + ev.Job.Name
		if s, ok := ev.Run.Facets["seam"]; ok {
			var sf struct {
				Partition, Verdict string
				Received, Accepted int64
			}
			if err := json.Unmarshal(s, &sf); err != nil {
				t.Fatal(err)
			}
			desc += fmt.Sprintf(" %s %s %d/%d", sf.Partition, sf.Verdict, sf.Accepted, sf.Received)
			// The terminal event lists every check of the contract with
			// its result (the statistical ones with what they expected),
			// the partition's column metrics, and the rows published:
			// none of a blocked partition.
			in := ev.Inputs[0].InputFacets
			checks := map[string]string{}
			for _, a := range in.Assertions.Assertions {
				checks[a.Name] = fmt.Sprintf("%v %s", a.Success, a.Expected)
			}
			if !strings.HasPrefix(checks["aov_drift"], "true within a relative change of 0.15") || !strings.HasPrefix(checks["order_id.pattern"], "true") {
				t.Errorf("%s: assertions %v, want every check, aov_drift with what it expected", desc, checks)
			}
			if amount := in.Metrics.ColumnMetrics["amount"]; amount.Count != sf.Received || amount.Sum == nil {
				t.Errorf("%s: column metrics of amount = %+v, want %d values and their sum", desc, amount, sf.Received)
			}
			published := sf.Accepted
			if sf.Verdict == "BLOCKED" {
				published = 0
			}
			if o := ev.Outputs[0].OutputFacets.OutputStatistics; o == nil || o.RowCount != published {
				t.Errorf("%s: output statistics %+v, want %d rows published", desc, o, published)
			}
		}
		got = append(got, desc)
	}
	want := []string{
		"START seam-test/shop.orders.seal",
		"COMPLETE seam-test/shop.orders.seal 2026-03-01 PASSED_WITH_ALERTS 20/20",
		"START seam-test/shop.orders.seal",
		"FAIL seam-test/shop.orders.seal 2026-03-02 BLOCKED 19/20",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(runs) != 2 {
		t.Errorf("%d run ids, want one per sealing (2)", len(runs))
	}
}
