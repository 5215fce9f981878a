package classify_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/classify"
	"github.com/seamdata/seam/core/contract/contracttest"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// BenchmarkClassify1000Fields classifies two 1,000-field versions that
// differ by a realistic mix (see contracttest.Evolve) under FULL, which
// levels every change in both directions. Target: under 5 ms per op.
func BenchmarkClassify1000Fields(b *testing.B) {
	old := contracttest.Wide(1000)
	new := contracttest.Evolve(old)
	history := []*contractv1.Contract{old}
	var n int
	b.ReportAllocs()
	for b.Loop() {
		res := classify.Classify(history, new, contractv1.Compatibility_COMPATIBILITY_FULL)
		n = len(res.Changes)
	}
	b.ReportMetric(float64(n), "changes/op")
}

func TestEvolveProducesAMix(t *testing.T) {
	t.Parallel()
	old := contracttest.Wide(1000)
	new := contracttest.Evolve(old)
	counts := map[string]int{}
	for _, ch := range classify.Compare(old, proto.Clone(new).(*contractv1.Contract)) {
		counts[ch.GetRule()]++
	}
	for _, rule := range []string{classify.FieldAddedOptional, classify.FieldRemoved, classify.FieldTypeWidened,
		classify.FieldMadeRequired, classify.EnumValueAdded, classify.ConstraintTightened, classify.DescriptionChanged} {
		if counts[rule] == 0 {
			t.Errorf("the benchmark's evolution produces no %s; got %v", rule, counts)
		}
	}
}
