package check_test

import (
	"testing"

	"github.com/seamdata/seam/core/record/recordtest"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// BenchmarkValidateOrders runs every implied structural check of the
// 12-field orders contract (types, required, pattern, enum, range, length,
// RFC 3339 timestamps, key uniqueness) over batches of 1,000 decoded orders.
func BenchmarkValidateOrders(b *testing.B) {
	p := compile(b, orders())
	recs := decode(b, p, recordv1.Format_FORMAT_NDJSON, string(recordtest.OrdersNDJSON(1000)))
	b.ReportAllocs()
	for b.Loop() {
		if res := p.Validate(recs); res.Blocked || res.Records[999].Quarantined {
			b.Fatal("clean orders failed validation")
		}
	}
	n := float64(b.N * len(recs))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/record")
	b.ReportMetric(n/b.Elapsed().Seconds(), "records/s")
}
