package infer_test

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"testing"
	"testing/quick"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/infer"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/shape"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// profileOf profiles values of one field "v".
func profileOf(values []string) *infer.FieldProfile {
	recs := make([]infer.Record, len(values))
	for i, s := range values {
		recs[i] = infer.Record{Format: recordv1.Format_FORMAT_JSON, Raw: []byte(`{"v":` + quote(s) + `}`)}
	}
	return infer.ProfileRecords(nil, recs).Field("v")
}

// Inference names shapes as the gate and a one_of check do: every shape
// of a profile is a name core/shape gives the value, one_of takes it, and
// the values hold it.
func TestProfileShapesAreTheClassifiersNames(t *testing.T) {
	f := func(seed uint64, text string) bool {
		r := rand.New(rand.NewPCG(seed, 8))
		values := []string{text, fmt.Sprintf("name-%d", r.IntN(1e6)), fmt.Sprintf("VH-%06d", r.IntN(1e5)),
			fmt.Sprintf("%x", r.Uint64()|1<<63), fmt.Sprint(r.Uint64()), fmt.Sprintf("%.2f", r.Float64())}
		counted := map[string]int{}
		for _, s := range values {
			counted[shape.OfText(s)]++
		}
		fp := profileOf(values)
		if len(fp.Shapes) != len(counted) {
			t.Logf("profile shapes %v, classifier %v", fp.Shapes, counted)
			return false
		}
		for name, n := range fp.Shapes {
			if counted[name] != n {
				t.Logf("profile shapes %v, classifier %v", fp.Shapes, counted)
				return false
			}
			arg := name
			if shape.IsTemplate(name) {
				arg = fmt.Sprintf("%q", name)
			}
			if _, err := check.Compile(oneOfContract(arg)); err != nil {
				t.Logf("shape %q: one_of does not take it: %v", name, err)
				return false
			}
		}
		for _, s := range values {
			m, err := shape.Matcher(shape.OfText(s))
			if err != nil || !m(record.StringValue([]byte(s))) {
				t.Logf("%q is not in the set of its shape %q (%v)", s, shape.OfText(s), err)
				return false
			}
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 300}); err != nil {
		t.Error(err)
	}
}

// A template inferred from names that have not yet crossed a power of ten
// takes the names after it: the digits of a number that is not
// zero-padded are {digits}. Zero-padded codes keep their width.
func TestInferredTemplatesAcrossPowersOfTen(t *testing.T) {
	f := func(k8, n8 uint8) bool {
		k := 2 + int(k8)%12
		edge := int64(1)
		for range k {
			edge *= 10
		}
		n := min(10+int64(n8), edge/2)
		var before []string
		for i := edge - n; i < edge; i++ {
			before = append(before, fmt.Sprintf("name-%d", i))
		}
		tmpl, c := profileOf(before).Template()
		if tmpl != "name-{digits}" || c != len(before) {
			t.Logf("template of %s…%s = %q (%d), want name-{digits}", before[0], before[len(before)-1], tmpl, c)
			return false
		}
		pat, err := check.CompileTemplate(tmpl)
		if err != nil {
			t.Logf("%q: %v", tmpl, err)
			return false
		}
		for i := edge; i < edge+n; i++ {
			if s := fmt.Sprintf("name-%d", i); !regexp.MustCompile(pat).MatchString(s) {
				t.Logf("template %q (%s) does not take %q", tmpl, pat, s)
				return false
			}
		}
		var padded []string
		for i := range n {
			padded = append(padded, fmt.Sprintf("ACC-%0*d", k, i*7919%(edge/10)))
		}
		if tmpl, _ := profileOf(padded).Template(); tmpl != fmt.Sprintf("ACC-{digits:%d}", k) {
			t.Logf("template of zero-padded %v = %q, want ACC-{digits:%d}", padded[:3], tmpl, k)
			return false
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 200}); err != nil {
		t.Error(err)
	}
}

// oneOfContract is a contract whose one check is one_of(v, shape).
func oneOfContract(shapeArg string) *contractv1.Contract {
	return &contractv1.Contract{Subject: "t.shapes", Fields: []*contractv1.Field{{Name: "v", Type: contractv1.FieldType_FIELD_TYPE_STRING}},
		Checks: []*contractv1.Check{{Name: "shape", Rule: "one_of(v, " + shapeArg + ")"}}}
}
