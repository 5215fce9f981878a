package infer_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/seamdata/seam/core/idrule"
	"github.com/seamdata/seam/core/infer"
	"github.com/seamdata/seam/core/record/recordtest"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

var (
	intFmt  = &idmapv1.Format{Name: "legacy-int", Kind: idmapv1.FormatKind_FORMAT_KIND_INT}
	uuidFmt = &idmapv1.Format{Name: "uuid", Kind: idmapv1.FormatKind_FORMAT_KIND_UUID}
	accFmt  = &idmapv1.Format{Name: "acc-ref", Kind: idmapv1.FormatKind_FORMAT_KIND_STRING}
)

func pairsOf(n int, f func(i int) infer.Pair) []infer.Pair {
	out := make([]infer.Pair, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

func TestInferRule(t *testing.T) {
	t.Parallel()
	dns, _ := idrule.ParseUUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
	// The namespace a service would derive from its own name.
	own := idrule.UUIDv5(dns, "account")
	tests := []struct {
		name     string
		from, to *idmapv1.Format
		pairs    []infer.Pair
		extraNS  []string
		want     string // DescribeRule of the proposed rule, "" for a table
		answers  bool
		wrong    int
		why      string // part of Why
	}{
		{"zero-padded template", intFmt, accFmt, pairsOf(300, func(i int) infer.Pair {
			return infer.Pair{From: strconv.Itoa(i * 41), To: fmt.Sprintf("ACC-%08d", i*41)}
		}), nil, "legacy-int→acc-ref template ACC-{int:08} (reversible)", true, 0, "written as ACC-{int:08}"},
		{"template read backwards", accFmt, intFmt, pairsOf(50, func(i int) infer.Pair {
			return infer.Pair{From: fmt.Sprintf("ACC-%08d-DE", i), To: strconv.Itoa(i)}
		}), nil, "legacy-int→acc-ref template ACC-{int:08}-DE (reversible)", true, 0, ""},
		{"unpadded with prefix", intFmt, accFmt, pairsOf(50, func(i int) infer.Pair {
			return infer.Pair{From: strconv.Itoa(i * 997), To: "C" + strconv.Itoa(i*997)}
		}), nil, "legacy-int→acc-ref template C{int} (reversible)", true, 0, ""},
		{"uuid in a template", uuidFmt, accFmt, pairsOf(20, func(i int) infer.Pair {
			u := strings.ToLower(recordtest.RandomUUID(i))
			return infer.Pair{From: u, To: "urn:acct:" + u}
		}), nil, "uuid→acc-ref template urn:acct:{uuid} (reversible)", true, 0, ""},
		{"integer embedded in a UUID", uuidFmt, intFmt, pairsOf(40, func(i int) infer.Pair {
			return infer.Pair{From: fmt.Sprintf("0000cafe-0000-0001-0000-%012x", i*1000), To: strconv.Itoa(i * 1000)}
		}), nil, "legacy-int→uuid uuid_embed 0000cafe00000001 (reversible)", true, 0, "low 64 bits"},
		{"uuidv5 of the id in the DNS namespace", intFmt, uuidFmt, pairsOf(30, func(i int) infer.Pair {
			return infer.Pair{From: strconv.Itoa(i), To: idrule.FormatUUID(idrule.UUIDv5(dns, strconv.Itoa(i)))}
		}), nil, "legacy-int→uuid uuid_v5 6ba7b810-9dad-11d1-80b4-00c04fd430c8", true, 0, "DNS namespace"},
		{"uuidv5 in a namespace named after the idmap namespace, asked backwards", uuidFmt, intFmt, pairsOf(30, func(i int) infer.Pair {
			return infer.Pair{From: idrule.FormatUUID(idrule.UUIDv5(own, strconv.Itoa(i))), To: strconv.Itoa(i)}
		}), nil, "legacy-int→uuid uuid_v5 " + idrule.FormatUUID(own), false, 0, `UUIDv5(DNS, "account")`},
		{"uuidv5 in a namespace given", intFmt, uuidFmt, pairsOf(10, func(i int) infer.Pair {
			ns, _ := idrule.ParseUUID("12345678-1234-5678-1234-567812345678")
			return infer.Pair{From: strconv.Itoa(i), To: idrule.FormatUUID(idrule.UUIDv5(ns, strconv.Itoa(i)))}
		}), []string{"12345678-1234-5678-1234-567812345678"}, "legacy-int→uuid uuid_v5 12345678-1234-5678-1234-567812345678", true, 0, "given"},
		{"upper case", accFmt, &idmapv1.Format{Name: "acc-upper", Kind: idmapv1.FormatKind_FORMAT_KIND_STRING}, pairsOf(10, func(i int) infer.Pair {
			return infer.Pair{From: fmt.Sprintf("acc-%d-x", i), To: fmt.Sprintf("ACC-%d-X", i)}
		}), nil, "acc-ref→acc-upper normalize upper (reversible)", true, 0, "upper case"},
		{"random UUIDs need a table", uuidFmt, intFmt, pairsOf(100, func(i int) infer.Pair {
			return infer.Pair{From: recordtest.RandomUUID(i), To: strconv.Itoa(i)}
		}), nil, "", false, 0, "random (version 4)"},
		{"one bad pair among 200 is an exception", intFmt, accFmt, pairsOf(200, func(i int) infer.Pair {
			if i == 17 {
				return infer.Pair{From: "17", To: "ACC-00000071"}
			}
			return infer.Pair{From: strconv.Itoa(i), To: fmt.Sprintf("ACC-%08d", i)}
		}), nil, "legacy-int→acc-ref template ACC-{int:08} (reversible)", true, 1, "gets 1 of 200 pairs wrong"},
		{"a tenth wrong is no rule", intFmt, accFmt, pairsOf(100, func(i int) infer.Pair {
			if i%10 == 0 {
				return infer.Pair{From: strconv.Itoa(i), To: fmt.Sprintf("ACC-%08d", i+1)}
			}
			return infer.Pair{From: strconv.Itoa(i), To: fmt.Sprintf("ACC-%08d", i)}
		}), nil, "", false, 0, "fits only 90 of 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := infer.InferRule(infer.RuleQuery{Namespace: "account", From: tt.from, To: tt.to, Pairs: tt.pairs, NamespaceUUIDs: tt.extraNS})
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if f.Rule != nil {
				got = infer.DescribeRule(f.Rule)
			}
			if got != tt.want || f.Answers != tt.answers || f.Wrong != tt.wrong || !strings.Contains(f.Why, tt.why) {
				t.Fatalf("rule %q answers %v wrong %d why %q; want %q answers %v wrong %d why containing %q\ntried: %q",
					got, f.Answers, f.Wrong, f.Why, tt.want, tt.answers, tt.wrong, tt.why, f.Tried)
			}
			if f.Rule == nil {
				if !strings.Contains(f.Why, "seam idmap import account") {
					t.Errorf("a table-only finding does not say how to import the table: %q", f.Why)
				}
				return
			}
			// The rule as proposed is one idmap takes: it compiles and
			// passes SetRule's check on its samples.
			fmts := map[string]*idmapv1.Format{tt.from.GetName(): tt.from, tt.to.GetName(): tt.to}
			from, _ := idrule.NewFormat("f", fmts[f.Rule.GetFromFormat()])
			to, _ := idrule.NewFormat("t", fmts[f.Rule.GetToFormat()])
			c, err := idrule.Compile(f.Rule, from, to)
			if err != nil {
				t.Fatalf("proposed rule does not compile: %v", err)
			}
			if _, err := c.Verify(f.Samples); err != nil || len(f.Samples) == 0 {
				t.Errorf("proposed rule fails SetRule's samples %q: %v", f.Samples, err)
			}
		})
	}
}

func TestInferRuleAlternatives(t *testing.T) {
	t.Parallel()
	// Every number has eight digits and none is padded: "{int}" and
	// "{int:08}" fit alike, and the finding says so.
	f, err := infer.InferRule(infer.RuleQuery{Namespace: "account", From: intFmt, To: accFmt, Pairs: pairsOf(20, func(i int) infer.Pair {
		return infer.Pair{From: strconv.Itoa(10000000 + i), To: fmt.Sprintf("ACC-%d", 10000000+i)}
	})})
	if err != nil {
		t.Fatal(err)
	}
	if f.Rule.GetTemplate().GetTemplate() != "ACC-{int:08}" || len(f.Alternatives) != 1 || !strings.Contains(f.Alternatives[0], "ACC-{int}") {
		t.Errorf("rule %v alternatives %q; want ACC-{int:08} with ACC-{int} as the alternative", f.Rule, f.Alternatives)
	}
}

func TestInferRuleBadInput(t *testing.T) {
	t.Parallel()
	if _, err := infer.InferRule(infer.RuleQuery{From: intFmt, To: intFmt}); err == nil {
		t.Error("a rule between a format and itself gave no error")
	}
	if _, err := infer.InferRule(infer.RuleQuery{From: &idmapv1.Format{Name: "Bad Name"}, To: intFmt}); err == nil {
		t.Error("an invalid format gave no error")
	}
	f, err := infer.InferRule(infer.RuleQuery{From: intFmt, To: accFmt})
	if err != nil || f.Rule != nil || !strings.Contains(f.Why, "no pairs") {
		t.Errorf("no pairs: %+v, %v; want no rule, saying there are no pairs", f, err)
	}
	// Pairs that do not fit their formats are exceptions, not a crash.
	f, err = infer.InferRule(infer.RuleQuery{Namespace: "a", From: intFmt, To: uuidFmt, Pairs: []infer.Pair{{"x", "y"}, {"007", "not-a-uuid"}}})
	if err != nil || f.Rule != nil || f.Wrong != 2 {
		t.Errorf("invalid pairs: %+v, %v; want no rule and 2 exceptions", f, err)
	}
}

func TestRuleFromValues(t *testing.T) {
	t.Parallel()
	codes := func(n int, format string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf(format, i*13)
		}
		return out
	}
	mer := &idmapv1.Format{Name: "mer", Kind: idmapv1.FormatKind_FORMAT_KIND_STRING, Pattern: "^MER-[0-9]{8}$"}
	f := infer.RuleFromValues("merchant", intFmt, mer, codes(100, "MER-%08d"), nil, nil)
	if f.TableOnly() || f.Rule.GetTemplate().GetTemplate() != "MER-{int:08}" || f.Matched != 100 {
		t.Errorf("template from values: %+v", f)
	}
	// A value the template cannot have written (a padded number longer
	// than the width) is an exception.
	vals := append(codes(99, "MER-%08d"), "MER-012345678")
	f = infer.RuleFromValues("merchant", intFmt, &idmapv1.Format{Name: "mer", Kind: idmapv1.FormatKind_FORMAT_KIND_STRING}, vals, nil, nil)
	if f.TableOnly() || f.Wrong != 1 || f.Exceptions[0].Pair.From != "MER-012345678" {
		t.Errorf("template with one odd value: %+v", f)
	}
	embedded := make([]string, 30)
	for i := range embedded {
		embedded[i] = fmt.Sprintf("000000aa-0000-0000-0000-%012x", i+7)
	}
	f = infer.RuleFromValues("merchant", intFmt, uuidFmt, embedded, nil, nil)
	if f.TableOnly() || f.Rule.GetUuidEmbed().GetPrefix() != "000000aa00000000" {
		t.Errorf("embedded integers: %+v", f)
	}
	random := make([]string, 30)
	for i := range random {
		random[i] = recordtest.RandomUUID(i)
	}
	f = infer.RuleFromValues("merchant", intFmt, uuidFmt, random, nil, nil)
	if !f.TableOnly() || !strings.Contains(f.Why, "random (version 4)") {
		t.Errorf("random UUIDs: %+v", f)
	}
	// UUIDv5 of known ids: found, and the reverse table generated.
	url, _ := idrule.ParseUUID("6ba7b811-9dad-11d1-80b4-00c04fd430c8")
	known := make([]string, 50)
	derived := make([]string, 40)
	for i := range known {
		known[i] = strconv.Itoa(100 + i)
		if i < 40 {
			derived[i] = idrule.FormatUUID(idrule.UUIDv5(url, known[i]))
		}
	}
	f = infer.RuleFromValues("merchant", intFmt, uuidFmt, derived, known, nil)
	if f.Rule.GetUuidV5().GetNamespaceUuid() != "6ba7b811-9dad-11d1-80b4-00c04fd430c8" || f.Answers || !strings.Contains(f.Why, "lookup table, generated from the 50 known") {
		t.Errorf("uuidv5 of known ids: %+v", f)
	}
	pairs, err := infer.UUIDv5Pairs(f.Rule.GetUuidV5().GetNamespaceUuid(), known)
	if err != nil || len(pairs) != 50 || pairs[0].From != derived[0] || pairs[0].To != "100" {
		t.Errorf("generated table: %v, %v", pairs[:1], err)
	}
}
