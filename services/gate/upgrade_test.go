package gate

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/platform/rpcerr"
	"github.com/seamdata/seam/platform/storage"
	"github.com/seamdata/seam/platform/storage/storagetest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// storeAtSchema opens the gate's store at url with the gate's schema as of
// version, for a test to write rows as a gate of that version did.
func storeAtSchema(t *testing.T, url string, version int) *storage.DB {
	t.Helper()
	db, err := storage.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if err := db.Migrate(context.Background(), "gate", migrations[:version]); err != nil {
		t.Fatalf("migrate to %d: %v", version, err)
	}
	return db
}

// A store written by the gate before partitions were judged (schema 4)
// opens under schema 5: each partition's counters and field statistics
// become its open amendment 0, a batch stored whole is answered as it was
// (a blocked one refused again), and new batches count on top.
func TestUpgradeFromSchema4(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := storeAtSchema(t, url, 4)
		answer, err := proto.Marshal(&gatev1.IngestResponse{Summary: &gatev1.BatchSummary{Received: 2, Accepted: 2, ContractVersion: 1, Status: gatev1.BatchStatus_BATCH_STATUS_ACCEPTED},
			Records: []*gatev1.RecordVerdict{{Index: 0, Position: 1, Status: gatev1.RecordStatus_RECORD_STATUS_ACCEPTED}, {Index: 1, Position: 2, Status: gatev1.RecordStatus_RECORD_STATUS_ACCEPTED}}})
		if err != nil {
			t.Fatal(err)
		}
		blocked, err := proto.Marshal(&gatev1.BlockedDetail{Check: "customer_present", Failures: 1, Received: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO gate_partitions (subject, part, received, accepted, quarantined, blocked, released, batches, id_checked, id_matched, updated_at)
VALUES ('shop.orders', '2025-02-01', 5, 2, 0, 3, 0, 2, 2, 2, $1)`, []any{start.UnixNano()}},
			{`INSERT INTO gate_field_stats (subject, part, field, count, nulls, numbers, total, mean, ids, matched)
VALUES ('shop.orders', '2025-02-01', 'amount', 2, 0, 2, 170, 85, 0, 0)`, nil},
			{`INSERT INTO gate_batches (subject, part, batch_id, status, contract_version, received, accepted, quarantined, response, created_at)
VALUES ('shop.orders', '2025-02-01', 'old', 1, 1, 2, 2, 0, $1, $2)`, []any{answer, start.UnixNano()}},
			{`INSERT INTO gate_batches (subject, part, batch_id, status, contract_version, received, accepted, quarantined, response, created_at)
VALUES ('shop.orders', '2025-02-01', 'old-blocked', 4, 1, 3, 0, 0, $1, $2)`, []any{blocked, start.UnixNano()}},
		} {
			if _, err := db.SQL.ExecContext(ctx, q.sql, q.args...); err != nil {
				t.Fatalf("write schema-4 rows: %v", err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}

		e := startGate(t, knownPeers(t), url, nil)
		m := monitorOf(t, e, "shop.orders", "2025-02-01")
		var mean float64
		for _, f := range m.GetFields() {
			if f.GetField() == "amount" {
				mean = f.GetMean()
			}
		}
		if m.GetReceived() != 2 || m.GetAccepted() != 2 || m.GetBatches() != 2 || m.GetStatus() != gatev1.PartitionStatus_PARTITION_STATUS_OPEN || mean != 85 {
			t.Fatalf("upgraded partition = %v, want its 2 records taken (not the 3 of the blocked batch), open, mean 85", m)
		}
		old := &gatev1.IngestRequest{Subject: "shop.orders", Partition: "2025-02-01", Identity: &gatev1.IngestRequest_BatchId{BatchId: "old"},
			Batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: []byte("{}")}}}}
		resp, err := e.as("pipeline").Ingest(ctx, old)
		if err != nil || !resp.GetSummary().GetRetried() || resp.GetSummary().GetAccepted() != 2 || len(resp.GetRecords()) != 2 {
			t.Fatalf("retry of a schema-4 batch = %v (%v), want its stored answer", resp.GetSummary(), err)
		}
		old.Identity = &gatev1.IngestRequest_BatchId{BatchId: "old-blocked"}
		if _, err := e.as("pipeline").Ingest(ctx, old); status.Code(err) != codes.FailedPrecondition || rpcerr.Reason(err) != "BATCH_BLOCKED" {
			t.Fatalf("retry of a batch blocked under schema 4 = %v, want it refused as before", err)
		}
		if _, err := e.as("pipeline").Ingest(ctx, ingest("shop.orders", "2025-02-01", "new", orders{first: 500, n: 10, amount: 85})); err != nil {
			t.Fatalf("Ingest after the upgrade: %v", err)
		}
		if m := monitorOf(t, e, "shop.orders", "2025-02-01"); m.GetReceived() != 12 || m.GetBatches() != 3 {
			t.Fatalf("partition after a new batch = %v, want 12 records in 3 batches", m)
		}
		if s := sealOf(t, e, "shop.orders", "2025-02-01"); s.GetStatus() != gatev1.PartitionStatus_PARTITION_STATUS_SEALED || s.GetContractVersion() != 1 {
			t.Fatalf("sealed = %v, want sealed under v1", s)
		}
	})
}
