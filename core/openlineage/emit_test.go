package openlineage_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/seamdata/seam/core/interop/interoptest"
	"github.com/seamdata/seam/core/openlineage"
)

// sink keeps what it is handed.
type sink struct {
	mu     sync.Mutex
	events [][]byte
}

func (s *sink) Enqueue(ev []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, ev)
	return true
}

// spec compiles the OpenLineage spec and every facet schema of the corpus.
type spec struct {
	schemas *interoptest.Schemas
	t       *testing.T
	cache   map[string]*sjs.Schema
}

func loadSpec(t *testing.T) *spec {
	t.Helper()
	dir := filepath.Join(interoptest.CorpusDir(t), "openlineage", "spec")
	files, err := filepath.Glob(filepath.Join(dir, "facets", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no facet schemas in %s: %v", dir, err)
	}
	return &spec{schemas: interoptest.NewSchemas(t, append(files, filepath.Join(dir, "OpenLineage.json"))...).AssertFormat(), t: t, cache: map[string]*sjs.Schema{}}
}

func (s *spec) compile(url string) *sjs.Schema {
	if sch, ok := s.cache[url]; ok {
		return sch
	}
	sch := s.schemas.Compile(s.t, url)
	s.cache[url] = sch
	return sch
}

const runEventURL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"

// validate checks an event against the RunEvent schema and each facet
// against the schema its _schemaURL names (Seam's own run facet against
// the spec's RunFacet), and returns the facet names it saw.
func (s *spec) validate(data []byte) []string {
	s.t.Helper()
	inst, err := sjs.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.compile(runEventURL).Validate(inst); err != nil {
		s.t.Fatalf("event does not validate against the RunEvent schema: %v\n%s", err, data)
	}
	var ev struct {
		Run     struct{ Facets map[string]json.RawMessage }
		Job     struct{ Facets map[string]json.RawMessage }
		Inputs  []struct{ Facets, InputFacets map[string]json.RawMessage }
		Outputs []struct{ Facets, OutputFacets map[string]json.RawMessage }
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		s.t.Fatal(err)
	}
	all := []map[string]json.RawMessage{ev.Run.Facets, ev.Job.Facets}
	for _, in := range ev.Inputs {
		all = append(all, in.Facets, in.InputFacets)
	}
	for _, out := range ev.Outputs {
		all = append(all, out.Facets, out.OutputFacets)
	}
	var names []string
	for _, facets := range all {
		for name, f := range facets {
			names = append(names, name)
			var base struct {
				SchemaURL string `json:"_schemaURL"`
			}
			if err := json.Unmarshal(f, &base); err != nil {
				s.t.Fatal(err)
			}
			url, _, _ := strings.Cut(base.SchemaURL, "#")
			wrapped := []byte(`{"` + name + `":` + string(f) + `}`)
			if !strings.HasPrefix(url, "https://openlineage.io/") {
				url, wrapped = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunFacet", f
			}
			fi, err := sjs.UnmarshalJSON(bytes.NewReader(wrapped))
			if err != nil {
				s.t.Fatal(err)
			}
			if err := s.compile(url).Validate(fi); err != nil {
				s.t.Fatalf("facet %s does not validate against %s: %v\n%s", name, url, err, f)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

var (
	t0 = time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	t1 = t0.Add(1500 * time.Millisecond)
)

func i64(n int64) *int64     { return &n }
func f64(x float64) *float64 { return &x }
func orders() openlineage.Source {
	return openlineage.Source{Subject: "shop.orders", ContractVersion: 1, Canonical: "commerce.order", CanonicalVersion: 1,
		Fields: []openlineage.SchemaField{{Name: "order_id", Type: "STRING"}, {Name: "customer_id", Type: "INT64"},
			{Name: "shipping", Type: "OBJECT", Fields: []openlineage.SchemaField{{Name: "country", Type: "STRING"}}}}}
}

// payments is a bank feed of our own whose contract binds it to the Kafka
// topic it arrives on.
func payments() openlineage.Source {
	return openlineage.Source{Subject: "bank.payments", ContractVersion: 3, Canonical: "banking.transaction", CanonicalVersion: 2,
		Labels: map[string]string{openlineage.LabelNamespace: "kafka://broker:9092", openlineage.LabelName: "payments.raw"}}
}

func batch(src openlineage.Source, id string) openlineage.Batch {
	return openlineage.Batch{BatchID: id, Status: "PARTIAL", Judged: openlineage.Judged{Source: src, Partition: "2026-03-02", Received: 3, Accepted: 2, Quarantined: 1,
		Checks: []openlineage.CheckResult{
			{Name: "customer_id.type", Rule: "type(customer_id, INT64)", Kind: "type", Field: "customer_id", Policy: "QUARANTINE", Passed: false, Failures: 1},
			{Name: "order_id.unique", Rule: "unique(order_id)", Kind: "unique", Field: "order_id", Policy: "QUARANTINE", Passed: true},
			{Name: "aov_drift", Rule: "mean_drift(amount, max_relative_change: 0.15, baseline: 7d)", Kind: "mean_drift", Field: "amount",
				Policy: "ALERT", Passed: false, Expected: "relative change at most 0.15", Actual: "0.2"},
		},
		Metrics: openlineage.Metrics{RowCount: 3, Bytes: 512, Columns: map[string]openlineage.ColumnMetrics{
			"customer_id": {NullCount: 0, Count: i64(3)},
			"amount":      {NullCount: 1, Count: i64(2), Sum: f64(104.5), Min: f64(19.5), Max: f64(85)},
		}},
		Started: t0, Finished: t1}}
}

// TestEventsValidate builds the events of every kind of run, for two
// sources, and validates each against the OpenLineage spec and facet
// schemas of the corpus; then reads them back with Parse.
func TestEventsValidate(t *testing.T) {
	sp := loadSpec(t)
	out := &sink{}
	em := openlineage.NewEmitter(openlineage.EmitterConfig{Version: "1.4.0"}, out)
	for _, src := range []openlineage.Source{orders(), payments()} {
		if err := em.BatchIngested(batch(src, "day2.ndjson@7fa2697273405899")); err != nil {
			t.Fatal(err)
		}
		blocked := batch(src, "day2-b")
		blocked.Status, blocked.Blocked, blocked.Reason = "BLOCKED", true, "check customer_present (required(customer_id)) failed 4000 of 1000000 records"
		if err := em.BatchIngested(blocked); err != nil {
			t.Fatal(err)
		}
		if err := em.PartitionSealed(openlineage.Seal{Generation: 1, Verdict: "PASSED", Judged: openlineage.Judged{Source: src, Partition: "2026-03-02",
			Received: 5, Accepted: 2, Quarantined: 3, Checks: []openlineage.CheckResult{
				{Name: "customer_match", Rule: "match_rate(customer_id, min: 0.9)", Kind: "match_rate", Field: "customer_id", Policy: "ALERT",
					Expected: "min 0.9", Actual: "0.02"},
				{Name: "volume", Rule: "row_count(min: 1)", Kind: "row_count", Policy: "BLOCK", Passed: true, Actual: "5"}},
			Metrics: openlineage.Metrics{Columns: map[string]openlineage.ColumnMetrics{"amount": {Sum: f64(math.Inf(1))}}},
			Started: t0, Finished: t1}}); err != nil {
			t.Fatal(err)
		}
		if err := em.Replayed(openlineage.Replay{Source: src, ReplayID: "b08215ac-e393-4cad-ab9f-1aeb4773bed5",
			PartitionFrom: "2026-03-02", PartitionTo: "2026-03-02", Held: 2, Released: 2, Rerun: []string{"features.customer_ltv"},
			Started: t0, Finished: t1}); err != nil {
			t.Fatal(err)
		}
		if err := em.Replayed(openlineage.Replay{Source: src, ReplayID: "nightly-7", PartitionFrom: "2026-02-01", PartitionTo: "2026-02-28",
			Err: "idmap unavailable", Started: t0, Finished: t1}); err != nil {
			t.Fatal(err)
		}
	}
	if len(out.events) != 20 {
		t.Fatalf("got %d events, want 20 (START and an end for 10 runs)", len(out.events))
	}
	seen := map[string]bool{}
	for _, data := range out.events {
		for _, f := range sp.validate(data) {
			seen[f] = true
		}
		if _, err := openlineage.Parse(data); err != nil {
			t.Errorf("Parse refuses an event Seam emitted: %v\n%s", err, data)
		}
	}
	for _, want := range []string{"dataQualityAssertions", "dataQualityMetrics", "outputStatistics", "version", "schema", "nominalTime",
		"processing_engine", "jobType", "errorMessage", "seam"} {
		if !seen[want] {
			t.Errorf("no event carried the %s facet", want)
		}
	}
}

// TestValidatorRefusesBrokenFacets shows the facet validation can fail:
// the corpus's own example passes, the same facet with a wrong type does
// not.
func TestValidatorRefusesBrokenFacets(t *testing.T) {
	sp := loadSpec(t)
	example, err := os.ReadFile(filepath.Join(interoptest.CorpusDir(t), "openlineage", "spec", "tests", "DataQualityAssertionsDatasetFacet", "1.json"))
	if err != nil {
		t.Fatal(err)
	}
	sch := sp.compile("https://openlineage.io/spec/facets/1-1-0/DataQualityAssertionsDatasetFacet.json")
	for _, tc := range []struct {
		doc  string
		good bool
	}{
		{string(example), true},
		{strings.Replace(string(example), `"success": true`, `"success": "yes"`, 1), false},
	} {
		inst, err := sjs.UnmarshalJSON(strings.NewReader(tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); (err == nil) != tc.good {
			t.Errorf("validate = %v, want valid %v", err, tc.good)
		}
	}
}

type event struct {
	EventType string `json:"eventType"`
	EventTime string `json:"eventTime"`
	Run       struct {
		RunID  string                     `json:"runId"`
		Facets map[string]json.RawMessage `json:"facets"`
	} `json:"run"`
	Job struct {
		Namespace, Name string
	} `json:"job"`
	Inputs []struct {
		Namespace, Name string
		InputFacets     struct {
			Assertions struct {
				Assertions []map[string]any `json:"assertions"`
			} `json:"dataQualityAssertions"`
			Metrics struct {
				RowCount      int64                     `json:"rowCount"`
				ColumnMetrics map[string]map[string]any `json:"columnMetrics"`
			} `json:"dataQualityMetrics"`
		} `json:"inputFacets"`
	} `json:"inputs"`
	Outputs []struct {
		Namespace, Name string
		OutputFacets    struct {
			Stats struct {
				RowCount int64 `json:"rowCount"`
			} `json:"outputStatistics"`
		} `json:"outputFacets"`
	} `json:"outputs"`
}

func decode(t *testing.T, raw [][]byte) []event {
	t.Helper()
	out := make([]event, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestRunShape checks what a reader of the events relies on: job names,
// datasets, event types, times, stable run ids, the assertions and the
// metrics.
func TestRunShape(t *testing.T) {
	t.Parallel()
	out := &sink{}
	em := openlineage.NewEmitter(openlineage.EmitterConfig{Namespace: "seam-prod"}, out)
	b := batch(payments(), "b-1")
	for _, bt := range []openlineage.Batch{b, b, batch(payments(), "b-2")} {
		if err := em.BatchIngested(bt); err != nil {
			t.Fatal(err)
		}
	}
	evs := decode(t, out.events)
	start, end := evs[0], evs[1]
	if start.EventType != "START" || end.EventType != "COMPLETE" || start.EventTime != "2026-03-02T08:00:00Z" || end.EventTime != "2026-03-02T08:00:01.5Z" {
		t.Errorf("events %s@%s, %s@%s; want START at the start and COMPLETE at the end", start.EventType, start.EventTime, end.EventType, end.EventTime)
	}
	if start.Run.RunID != end.Run.RunID || evs[2].Run.RunID != start.Run.RunID || evs[4].Run.RunID == start.Run.RunID {
		t.Errorf("run ids %s %s %s %s: want one id per batch, the same for a retried batch", start.Run.RunID, end.Run.RunID, evs[2].Run.RunID, evs[4].Run.RunID)
	}
	if end.Job.Namespace != "seam-prod" || end.Job.Name != "bank.payments.ingest" {
		t.Errorf("job %s/%s, want seam-prod/bank.payments.ingest", end.Job.Namespace, end.Job.Name)
	}
	if in := end.Inputs[0]; in.Namespace != "kafka://broker:9092" || in.Name != "payments.raw" {
		t.Errorf("input %s/%s, want the dataset the contract's labels bind (kafka://broker:9092/payments.raw)", in.Namespace, in.Name)
	}
	if o := end.Outputs[0]; o.Namespace != "seam" || o.Name != "banking.transaction" || o.OutputFacets.Stats.RowCount != 2 {
		t.Errorf("output %s/%s with %d rows, want seam/banking.transaction with the 2 accepted", o.Namespace, o.Name, o.OutputFacets.Stats.RowCount)
	}
	as := end.Inputs[0].InputFacets.Assertions.Assertions
	if len(as) != 3 || as[0]["assertion"] != "type" || as[0]["success"] != false || as[0]["column"] != "customer_id" ||
		as[0]["severity"] != "error" || as[2]["severity"] != "warn" || as[2]["actual"] != "0.2" || as[1]["success"] != true {
		t.Errorf("assertions %v: want type failed (error), unique passed, drift failed (warn, actual 0.2)", as)
	}
	m := end.Inputs[0].InputFacets.Metrics
	if m.RowCount != 3 || m.ColumnMetrics["amount"]["nullCount"] != 1.0 || m.ColumnMetrics["amount"]["sum"] != 104.5 {
		t.Errorf("metrics %+v, want 3 rows and amount with 1 null, sum 104.5", m)
	}
	if _, ok := start.Run.Facets["nominalTime"]; !ok {
		t.Errorf("the run of partition 2026-03-02 has no nominalTime facet")
	}

	// A nil emitter emits nothing; PartitionsOnly leaves batches out.
	var none *openlineage.Emitter
	if err := none.BatchIngested(b); err != nil {
		t.Fatal(err)
	}
	quiet := &sink{}
	po := openlineage.NewEmitter(openlineage.EmitterConfig{PartitionsOnly: true}, quiet)
	if err := po.BatchIngested(b); err != nil || len(quiet.events) != 0 {
		t.Errorf("PartitionsOnly: err %v, %d events; want none", err, len(quiet.events))
	}
	if err := po.PartitionSealed(openlineage.Seal{Judged: openlineage.Judged{Source: orders(), Partition: "2026-03-02", Blocked: true}}); err != nil || len(quiet.events) != 2 {
		t.Errorf("PartitionsOnly seal: err %v, %d events; want 2", err, len(quiet.events))
	}
	if got := decode(t, quiet.events)[1].EventType; got != "FAIL" {
		t.Errorf("a blocked partition's run ends with %s, want FAIL", got)
	}
}

// TestReplayRunID: a replay id that is a UUID is the run id; another is
// turned into one, the same every time.
func TestReplayRunID(t *testing.T) {
	t.Parallel()
	out := &sink{}
	em := openlineage.NewEmitter(openlineage.EmitterConfig{}, out)
	for _, id := range []string{"B08215AC-E393-4CAD-AB9F-1AEB4773BED5", "nightly-7", "nightly-7"} {
		if err := em.Replayed(openlineage.Replay{Source: orders(), ReplayID: id}); err != nil {
			t.Fatal(err)
		}
	}
	evs := decode(t, out.events)
	if evs[0].Run.RunID != "b08215ac-e393-4cad-ab9f-1aeb4773bed5" {
		t.Errorf("run id %s, want the replay id", evs[0].Run.RunID)
	}
	if evs[2].Run.RunID != evs[4].Run.RunID || len(evs[2].Run.RunID) != 36 || evs[2].Run.RunID[14] != '5' {
		t.Errorf("run ids %s and %s, want one version-5 UUID for replay nightly-7", evs[2].Run.RunID, evs[4].Run.RunID)
	}
}

// TestRefusals: a run that cannot be named is an error, not an event.
func TestRefusals(t *testing.T) {
	t.Parallel()
	em := openlineage.NewEmitter(openlineage.EmitterConfig{}, &sink{})
	for name, err := range map[string]error{
		"no subject":   em.BatchIngested(openlineage.Batch{BatchID: "b", Judged: openlineage.Judged{Partition: "p"}}),
		"no batch id":  em.BatchIngested(openlineage.Batch{Judged: openlineage.Judged{Source: orders(), Partition: "p"}}),
		"no partition": em.PartitionSealed(openlineage.Seal{Judged: openlineage.Judged{Source: orders()}}),
		"no replay id": em.Replayed(openlineage.Replay{Source: orders()}),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
