package gate

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/seamdata/seam/platform/storage/storagetest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Two legal amounts of 1.7e308, in two batches of one partition, have the
// mean 1.7e308: the partition keeps a mean, not a sum that overflows to
// infinity, on both stores.
func TestPartitionMeanDoesNotOverflow(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, func(t *testing.T, url string) {
		p := newPeers(t)
		p.knowCustomers()
		e := startGate(t, p, url, nil)
		ctx := context.Background()
		for i := range 2 {
			line := fmt.Sprintf(`{"order_id":"ORD-%010d","customer_id":7,"amount":1.7e308,"currency":"EUR","status":"paid","created_at":"2025-03-01T10:00:00Z","items":1}`, i+1)
			req := &gatev1.IngestRequest{Subject: "shop.orders", Partition: "2025-03-01", Identity: &gatev1.IngestRequest_BatchId{BatchId: fmt.Sprint("huge-", i)},
				Batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: []byte(line)}}}}
			if resp, err := e.as("pipeline").Ingest(ctx, req); err != nil || resp.GetSummary().GetAccepted() != 1 {
				t.Fatalf("Ingest %d = %v (%v), want it accepted", i, resp.GetSummary(), err)
			}
		}
		m := monitorOf(t, e, "shop.orders", "2025-03-01")
		var mean float64
		for _, f := range m.GetFields() {
			if f.GetField() == "amount" {
				mean = f.GetMean()
			}
		}
		if math.IsInf(mean, 0) || math.Abs(mean-1.7e308)/1.7e308 > 1e-12 {
			t.Fatalf("mean of amount = %v, want 1.7e308", mean)
		}
	})
}
