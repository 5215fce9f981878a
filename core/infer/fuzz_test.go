package infer_test

import (
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/infer"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Whatever the held records hold — broken JSON, deep nesting, odd names,
// invalid UTF-8, CSV of any shape — a proposal is made without a panic,
// and it is a valid contract whose YAML loads back to it.
func FuzzPropose(f *testing.F) {
	// An execution allocates about 250 kB over a live heap of a few MB,
	// so at the default GOGC a fuzz worker collected garbage every dozen
	// executions; a larger heap target lets it spend that time fuzzing.
	old := debug.SetGCPercent(400)
	f.Cleanup(func() { debug.SetGCPercent(old) })
	f.Add([]byte(`{"settlement_id":"SET-00000001","merchant_id":"MER-00000001","amount":1.5,"currency":"CHF","extra":{"a":[1,{"b":null}]}}`), false)
	f.Add([]byte(`{"a.b":1,"":2,"merchant_id":"3f2504e0-4f89-41d3-9a0c-0305e82c3301","x":[[[[]]]]}`), false)
	f.Add([]byte("settlement_id,merchant_id,amount\nSET-00000001,\"12\",1e400"), true)
	f.Add([]byte("\"a,b\nc"), true)
	f.Add([]byte(`{"merchant_id":9223372036854775808,"amount":"12.50","currency":"\u0000"}`), false)
	active, err := contract.Load([]byte(settlementsV1), "v1")
	if err != nil {
		f.Fatal(err)
	}
	model, err := contract.LoadCanonicalModel([]byte(settlementModel), "model")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte, csv bool) {
		format := recordv1.Format_FORMAT_NDJSON
		if csv {
			format = recordv1.Format_FORMAT_CSV
		}
		// One record, and one record is enough to be a change
		// (MinCount 1, and it is all of them: 100%), so any deviation
		// it shows counts and the proposal has to express it. Holding
		// DefaultMinCount copies of it would propose the same version
		// at several times the cost of an execution.
		recs := []infer.Record{{Format: format, Raw: raw, Partition: "p"}}
		p, err := infer.Propose(infer.Input{Active: active, ActiveVersion: 1, Canonical: model, Namespaces: []*idmapv1.Namespace{merchantNS}, Held: recs, Options: infer.Options{MinCount: 1}})
		if err != nil {
			t.Fatalf("Propose: %v", err)
		}
		back, err := contract.Load(p.YAML, "proposal.yaml")
		if err != nil {
			t.Fatalf("YAML does not load: %v\n%s", err, p.YAML)
		}
		if !proto.Equal(back, p.Contract) {
			t.Fatalf("YAML loads to another contract\n%s", p.YAML)
		}
	})
}

// A template read off a string compiles as a shape template, and its
// pattern matches the string it came from.
func FuzzTemplates(f *testing.F) {
	for _, s := range []string{"ACC-00012345", "ab-12_cd", "X{1}", "12", "ü-1", "a b 1", strings.Repeat("a1", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fp := infer.ProfileRecords(nil, []infer.Record{{Format: recordv1.Format_FORMAT_JSON, Raw: []byte(`{"v":` + quote(s) + `}`)}}).Field("v")
		if fp == nil {
			return
		}
		tmpl, n := fp.Template()
		if n == 0 {
			return
		}
		pat, err := check.CompileTemplate(tmpl)
		if err != nil {
			t.Fatalf("template %q of %q does not compile: %v", tmpl, s, err)
		}
		if !regexp.MustCompile(pat).MatchString(s) {
			t.Fatalf("template %q (%s) does not match %q", tmpl, pat, s)
		}
	})
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < ' ':
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Whatever the pairs, inference never panics, and a rule it proposes is
// one idmap compiles, right on at least all but a hundredth of the pairs.
func FuzzInferRule(f *testing.F) {
	f.Add("12", "ACC-00000012", "13", "ACC-00000013", 0)
	f.Add("3f2504e0-4f89-41d3-9a0c-0305e82c3301", "7", "0000cafe-0000-0001-0000-000000000001", "1", 1)
	f.Add("a", "A", "b ", "B", 2)
	kinds := []idmapv1.FormatKind{idmapv1.FormatKind_FORMAT_KIND_INT, idmapv1.FormatKind_FORMAT_KIND_UUID, idmapv1.FormatKind_FORMAT_KIND_STRING}
	f.Fuzz(func(t *testing.T, a1, b1, a2, b2 string, k int) {
		if k < 0 {
			k = -k
		}
		from := &idmapv1.Format{Name: "from", Kind: kinds[k%3]}
		to := &idmapv1.Format{Name: "to", Kind: kinds[(k/3)%3]}
		fd, err := infer.InferRule(infer.RuleQuery{Namespace: "ns", From: from, To: to, Pairs: []infer.Pair{{a1, b1}, {a2, b2}}})
		if err != nil || fd.Rule == nil {
			return
		}
		if fd.Matched < 2 {
			t.Fatalf("rule %v proposed on %d of 2 pairs", fd.Rule, fd.Matched)
		}
	})
}
