package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.opentelemetry.io/otel/attribute"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
	"github.com/seamdata/seam/core/examples"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// observabilityDir is deploy/observability, from this package's folder.
var observabilityDir = filepath.Join("..", "..", "..", "..", "deploy", "observability")

// scrapeMetrics drives a node through what the rules and the dashboard
// watch (an ingest with a quarantined record, a seal, a containment, a
// replay that releases) and returns its /metrics as metric name → label
// names, histograms under their _bucket, _sum and _count names too.
func scrapeMetrics(t *testing.T) map[string]map[string]bool {
	t.Helper()
	n := seamtest.StartOrders(t)
	ctx := context.Background()
	conn := n.Conn(t, n.Admin)
	gate := gatev1.NewGateServiceClient(conn)

	good := seamtest.OrderLines(1)[0]
	bad := strings.Replace(seamtest.OrderLines(2)[1], `"email":"customer100001@example.com"`, `"email":"not an email"`, 1)
	resp, err := gate.Ingest(ctx, &gatev1.IngestRequest{
		Subject: "shop.orders", Partition: "p001", Identity: &gatev1.IngestRequest_BatchId{BatchId: "b-1"}, SummaryOnly: true, Seal: true,
		Batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: []byte(good + "\n" + bad + "\n")}}},
	})
	if err != nil || resp.GetSummary().GetQuarantined() != 1 {
		t.Fatalf("ingest = %v, %v; want 1 quarantined", resp.GetSummary(), err)
	}
	v2 := examples.ShopOrdersV1()
	for _, f := range v2.GetFields() {
		if f.GetName() == "email" {
			f.Pattern = ""
		}
	}
	reg, err := registryv1.NewRegistryServiceClient(conn).RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: v2})
	if err != nil {
		t.Fatalf("register the relaxed v2: %v", err)
	}
	stream, err := gate.Replay(ctx, &gatev1.ReplayRequest{Window: &gatev1.ReplayWindow{Subject: "shop.orders", PartitionFrom: "p001", PartitionTo: "p001",
		ContractVersion: reg.GetVersion().GetVersion()}, ReplayId: "fix-1"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := stream.Recv(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("replay: %v", err)
		}
	}
	if _, err := gate.Contain(ctx, &gatev1.ContainRequest{Subject: "shop.orders", Reason: "rules test"}); err != nil {
		t.Fatalf("contain: %v", err)
	}
	// A batch of the contained source: held, SOURCE_CONTAINED.
	if _, err := gate.Ingest(ctx, &gatev1.IngestRequest{
		Subject: "shop.orders", Partition: "p002", Identity: &gatev1.IngestRequest_BatchId{BatchId: "b-2"}, SummaryOnly: true,
		Batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: []byte(good + "\n")}}},
	}); err != nil {
		t.Fatalf("ingest while contained: %v", err)
	}
	// A REST call that fails, for the HTTP metrics.
	n.REST(t, "GET", "/v1/subjects/no.such.subject/contract", n.Admin, "")

	code, body := n.REST(t, "GET", "/metrics", "", "")
	if code != 200 {
		t.Fatalf("GET /metrics = %d", code)
	}
	text := body["text"].(string)
	if os.Getenv("SEAM_DUMP_METRICS") != "" {
		t.Log(text)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("/metrics is not valid exposition text: %v", err)
	}
	out := map[string]map[string]bool{}
	for name, f := range families {
		labels := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		names := []string{name}
		switch f.GetType().String() {
		case "HISTOGRAM":
			names = append(names, name+"_bucket", name+"_sum", name+"_count")
			labels["le"] = true
		case "SUMMARY":
			names = append(names, name+"_sum", name+"_count")
		}
		for _, n := range names {
			out[n] = labels
		}
	}
	return out
}

// selectorsOf returns the metric names an expression selects, each with
// the label names it matches on, and the labels it groups or matches by,
// or an error naming what does not parse.
func selectorsOf(expr string) (map[string][]string, []string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, nil, err
	}
	out := map[string][]string{}
	var grouping []string
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			var labels []string
			for _, m := range n.LabelMatchers {
				if m.Name != model.MetricNameLabel {
					labels = append(labels, m.Name)
				}
			}
			out[n.Name] = append(out[n.Name], labels...)
		case *parser.AggregateExpr:
			if !n.Without {
				grouping = append(grouping, n.Grouping...)
			}
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				grouping = append(grouping, n.VectorMatching.MatchingLabels...)
				grouping = append(grouping, n.VectorMatching.Include...)
			}
		}
		return nil
	})
	return out, grouping, nil
}

// checkExpr reports each metric or label of expr that the node does not
// export; where says which rule or panel it is.
func checkExpr(t *testing.T, exported map[string]map[string]bool, where, expr string) {
	t.Helper()
	sel, grouping, err := selectorsOf(expr)
	if err != nil {
		t.Errorf("%s: %q does not parse: %v", where, expr, err)
		return
	}
	if len(sel) == 0 {
		t.Errorf("%s: %q selects no metric", where, expr)
	}
	all := map[string]bool{}
	for name := range sel {
		labels, ok := exported[name]
		if !ok {
			t.Errorf("%s: metric %s is not exported by seam (see /metrics)", where, name)
			continue
		}
		maps.Copy(all, labels)
		for _, l := range sel[name] {
			if !labels[l] {
				t.Errorf("%s: metric %s has no label %q; it has %v", where, name, l, slices.Sorted(maps.Keys(labels)))
			}
		}
	}
	// A grouping label must be a label of some metric of the expression.
	for _, g := range grouping {
		if !all[g] {
			t.Errorf("%s: groups by %q, which none of its metrics has", where, g)
		}
	}
}

// grafanaVars are the dashboard's variables, as PromQL can parse them.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h", "${subject}", "x", "$subject", "x")

// The alert rules and the dashboard name only metrics and labels that a
// running Seam exports, and the rules are valid Prometheus rules.
func TestRulesAndDashboard(t *testing.T) {
	t.Parallel()
	exported := scrapeMetrics(t)

	rulesFile := filepath.Join(observabilityDir, "prometheus", "rules.yml")
	groups, errs := rulefmt.ParseFile(rulesFile, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("%s: %v", rulesFile, errors.Join(errs...))
	}
	alerts := map[string]bool{}
	for _, g := range groups.Groups {
		if g.Name == "seam-cdc" {
			continue // the PostgreSQL source's metrics: sources/postgres checks this group
		}
		for _, r := range g.Rules {
			name := r.Alert + r.Record
			alerts[r.Alert] = true
			checkExpr(t, exported, "rule "+name, r.Expr)
			if r.Alert != "" && (r.Annotations["summary"] == "" || r.Annotations["runbook"] == "") {
				t.Errorf("alert %s: want a summary and a runbook annotation", r.Alert)
			}
		}
	}
	for _, want := range []string{"SeamMatchRateDrop", "SeamQuarantineGrowing", "SeamSourceContained", "SeamRegistryUnreachable", "SeamEventsStuck", "SeamErrorRate"} {
		if !alerts[want] {
			t.Errorf("no alert %s in %s", want, rulesFile)
		}
	}

	dashFile := filepath.Join(observabilityDir, "grafana", "dashboards", "seam.json")
	raw, err := os.ReadFile(dashFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", dashFile, err)
	}
	exprs := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs++
			checkExpr(t, exported, "panel "+p.Title, grafanaVars.Replace(tg.Expr))
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((\w+),\s*(\w+)\)$`)
	for _, v := range dash.Templating.List {
		q, _ := v.Query.(string)
		if m := labelValues.FindStringSubmatch(q); m != nil {
			checkExpr(t, exported, "variable "+v.Name, m[1]+"{"+m[2]+`!=""}`)
		}
	}
	if exprs < 6 {
		t.Errorf("the dashboard has %d queries, want its panels (match rate, verdicts, quarantine, latency, ...)", exprs)
	}
}

// Scrapes and probes make no traces; a REST call does.
func TestProbesMakeNoSpans(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
		if code, _ := n.REST(t, "GET", path, "", ""); code != 200 {
			t.Fatalf("GET %s = %d", path, code)
		}
	}
	if _, err := healthpb.NewHealthClient(n.Conn(t, "")).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("health check: %v", err)
	}
	n.REST(t, "GET", "/v1/whoami", n.Admin, "")
	n.Stop()
	var whoami bool
	for _, s := range n.Spans.Ended() {
		name := s.Name()
		if strings.Contains(name, "/metrics") || strings.Contains(name, "/healthz") || strings.Contains(name, "/readyz") || strings.Contains(name, "grpc.health.v1") {
			t.Errorf("probe span %q", name)
		}
		whoami = whoami || strings.Contains(name, "/v1/whoami")
	}
	if !whoami {
		t.Error("no span for GET /v1/whoami: the HTTP server is not traced at all")
	}
}

// One ingest through the real services is one trace in which the gate's
// span names the batch, the adapter's says how many records it adapted
// and idmap's how many identifiers it found.
func TestIngestTraceTellsTheStory(t *testing.T) {
	t.Parallel()
	n := seamtest.StartOrders(t)
	gate := gatev1.NewGateServiceClient(n.Conn(t, n.Admin))
	lines := strings.Join(seamtest.OrderLines(3), "\n")
	if _, err := gate.Ingest(context.Background(), &gatev1.IngestRequest{
		Subject: "shop.orders", Partition: "p001", Identity: &gatev1.IngestRequest_BatchId{BatchId: "trace-me"}, SummaryOnly: true,
		Batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: []byte(lines)}}},
	}); err != nil {
		t.Fatalf("ingest: %v", err)
	}
	n.Stop()
	spans := n.Spans.Ended()
	attrsOf := func(s interface {
		Attributes() []attribute.KeyValue
	}) map[string]attribute.Value {
		out := map[string]attribute.Value{}
		for _, kv := range s.Attributes() {
			out[string(kv.Key)] = kv.Value
		}
		return out
	}
	var traceID string
	for _, s := range spans {
		if a := attrsOf(s); s.Name() == "gate.ingest" && a["seam.batch.id"].AsString() == "trace-me" {
			traceID = s.SpanContext().TraceID().String()
			if a["seam.records.accepted"].AsInt64() != 3 || a["seam.contract.version"].AsInt64() != 1 {
				t.Errorf("gate.ingest attributes = %v, want 3 accepted under version 1", s.Attributes())
			}
		}
	}
	if traceID == "" {
		t.Fatal("no gate.ingest span with seam.batch.id=trace-me")
	}
	var adapted, looked bool
	for _, s := range spans {
		if s.SpanContext().TraceID().String() != traceID {
			continue
		}
		a := attrsOf(s)
		if v, ok := a["seam.records.adapted"]; ok && v.AsInt64() == 3 {
			adapted = true
		}
		for _, ev := range s.Events() {
			for _, kv := range ev.Attributes {
				if kv.Key == "seam.records.adapted" && kv.Value.AsInt64() == 3 {
					adapted = true
				}
			}
		}
		if v, ok := a["seam.ids.hits"]; ok && a["seam.ids"].AsInt64() == 3 && v.AsInt64() >= 0 {
			looked = true
		}
	}
	if !adapted {
		t.Error("no span of the ingest's trace says the adapter adapted 3 records (seam.records.adapted)")
	}
	if !looked {
		t.Error("no span of the ingest's trace says idmap looked up 3 identifiers (seam.ids, seam.ids.hits)")
	}
}
