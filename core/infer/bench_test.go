package infer_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/infer"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// BenchmarkPropose is a proposal from 10,000 held records (the default
// window of `seam contract infer`) whose merchant ids became template
// strings: profile, checks before and after, rule, YAML.
func BenchmarkPropose(b *testing.B) {
	active, model := loadContract(b, settlementsV1), loadModel(b, settlementModel)
	lines := make([]string, 10_000)
	for i := range lines {
		lines[i] = settlement(i, fmt.Sprintf(`"MER-%08d"`, 1000+i))
	}
	in := infer.Input{Active: active, ActiveVersion: 1, Canonical: model, Namespaces: []*idmapv1.Namespace{merchantNS}, Held: ndjson("2026-03-08", lines...)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := infer.Propose(in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(lines)*b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkInferRule verifies every candidate on 100,000 pairs.
func BenchmarkInferRule(b *testing.B) {
	pairs := make([]infer.Pair, 100_000)
	for i := range pairs {
		pairs[i] = infer.Pair{From: strconv.Itoa(i * 7), To: fmt.Sprintf("ACC-%08d", i*7)}
	}
	q := infer.RuleQuery{Namespace: "account", From: intFmt, To: accFmt, Pairs: pairs}
	b.ReportAllocs()
	for b.Loop() {
		if f, err := infer.InferRule(q); err != nil || f.Rule == nil {
			b.Fatal(f, err)
		}
	}
	b.ReportMetric(float64(len(pairs)*b.N)/b.Elapsed().Seconds(), "pairs/s")
}

// BenchmarkProposeFewRecords is one execution of FuzzPropose on its first
// seed: a proposal from one held record that counts as a change
// (MinCount 1), and its YAML loaded back. Its time bounds the fuzz
// target's executions a second (the house issue asks for 1,000 on a
// two-core machine, two workers); run it with
// -gcflags=all=-d=libfuzzer to time it as instrumented for fuzzing.
func BenchmarkProposeFewRecords(b *testing.B) {
	active, model := loadContract(b, settlementsV1), loadModel(b, settlementModel)
	raw := []byte(`{"settlement_id":"SET-00000001","merchant_id":"MER-00000001","amount":1.5,"currency":"CHF","extra":{"a":[1,{"b":null}]}}`)
	recs := []infer.Record{{Format: recordv1.Format_FORMAT_NDJSON, Raw: raw, Partition: "p"}}
	b.ReportAllocs()
	for b.Loop() {
		p, err := infer.Propose(infer.Input{Active: active, ActiveVersion: 1, Canonical: model, Namespaces: []*idmapv1.Namespace{merchantNS}, Held: recs, Options: infer.Options{MinCount: 1}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := contract.Load(p.YAML, "proposal.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInferRuleFewPairs is FuzzInferRule's seed inputs, one of each
// kind of pair: its time bounds that target's executions a second.
func BenchmarkInferRuleFewPairs(b *testing.B) {
	queries := []infer.RuleQuery{
		{Namespace: "ns", From: &idmapv1.Format{Name: "from", Kind: idmapv1.FormatKind_FORMAT_KIND_INT}, To: &idmapv1.Format{Name: "to", Kind: idmapv1.FormatKind_FORMAT_KIND_STRING},
			Pairs: []infer.Pair{{From: "12", To: "ACC-00000012"}, {From: "13", To: "ACC-00000013"}}},
		{Namespace: "ns", From: &idmapv1.Format{Name: "from", Kind: idmapv1.FormatKind_FORMAT_KIND_UUID}, To: &idmapv1.Format{Name: "to", Kind: idmapv1.FormatKind_FORMAT_KIND_INT},
			Pairs: []infer.Pair{{From: "3f2504e0-4f89-41d3-9a0c-0305e82c3301", To: "7"}, {From: "0000cafe-0000-0001-0000-000000000001", To: "1"}}},
		{Namespace: "ns", From: &idmapv1.Format{Name: "from", Kind: idmapv1.FormatKind_FORMAT_KIND_STRING}, To: &idmapv1.Format{Name: "to", Kind: idmapv1.FormatKind_FORMAT_KIND_STRING},
			Pairs: []infer.Pair{{From: "a", To: "A"}, {From: "b ", To: "B"}}},
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, q := range queries {
			if _, err := infer.InferRule(q); err != nil {
				b.Fatal(err)
			}
		}
	}
}
