package gate

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/platform/rpcerr"

	"github.com/seamdata/seam/core/examples"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

func monitorOf(t *testing.T, e *gateEnv, subject, partition string) *gatev1.PartitionMonitor {
	t.Helper()
	resp, err := e.as("viewer").GetMonitor(context.Background(), &gatev1.GetMonitorRequest{Subject: subject, PartitionFrom: partition, PartitionTo: partition})
	if err != nil {
		t.Fatalf("GetMonitor: %v", err)
	}
	if len(resp.GetPartitions()) != 1 {
		t.Fatalf("GetMonitor(%s) partitions = %d, want 1", partition, len(resp.GetPartitions()))
	}
	return resp.GetPartitions()[0]
}

func TestIngestAcceptsAndRetryReturnsStoredVerdicts(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	ctx := context.Background()
	req := ingest("shop.orders", "2025-03-01", "b1", orders{first: 1, n: 100, amount: 85})
	first, err := e.as("pipeline").Ingest(ctx, req)
	if err != nil {
		t.Fatalf("Ingest: %v", err)
	}
	sum := first.GetSummary()
	if sum.GetAccepted() != 100 || sum.GetQuarantined() != 0 || sum.GetStatus() != gatev1.BatchStatus_BATCH_STATUS_ACCEPTED || sum.GetRetried() || sum.GetContractVersion() != 1 {
		t.Fatalf("summary = %v, want 100 accepted of v1, not retried", sum)
	}
	ids := map[string]bool{}
	for _, v := range first.GetRecords() {
		if v.GetStatus() != gatev1.RecordStatus_RECORD_STATUS_ACCEPTED || len(v.GetRecord().GetRecordId()) != 64 || len(v.GetRecord().GetJson()) == 0 {
			t.Fatalf("verdict %d = %v, want ACCEPTED with a canonical record", v.GetIndex(), v)
		}
		ids[v.GetRecord().GetRecordId()] = true
	}
	if len(ids) != 100 {
		t.Fatalf("distinct record ids = %d, want 100", len(ids))
	}

	again, err := e.as("pipeline").Ingest(ctx, req)
	if err != nil {
		t.Fatalf("retried Ingest: %v", err)
	}
	if !again.GetSummary().GetRetried() {
		t.Fatalf("retried summary = %v, want retried", again.GetSummary())
	}
	again.Summary.Retried = false
	if !proto.Equal(again, first) {
		t.Fatalf("retry answered differently:\n got %v\nwant %v", again.GetSummary(), first.GetSummary())
	}
	m := monitorOf(t, e, "shop.orders", "2025-03-01")
	if m.GetReceived() != 100 || m.GetBatches() != 1 || m.GetAccepted() != 100 {
		t.Fatalf("monitor after a retry = %v, want the batch counted once (100 received, 1 batch)", m)
	}
	if m.GetMatchRate() != 1 {
		t.Fatalf("match rate = %v, want 1", m.GetMatchRate())
	}
}

func TestIngestRefusesBadRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	good := orders{first: 1, n: 3, amount: 85}
	tests := []struct {
		name   string
		req    *gatev1.IngestRequest
		code   codes.Code
		reason string
	}{
		{"no subject", ingest("", "p", "b", good), codes.InvalidArgument, ""},
		{"no partition", ingest("shop.orders", "", "b", good), codes.InvalidArgument, ""},
		{"no identity", &gatev1.IngestRequest{Subject: "shop.orders", Partition: "p", Batch: good.batch()}, codes.InvalidArgument, ""},
		{"unknown subject", ingest("shop.nothing", "p", "b", good), codes.NotFound, ""},
		{"unknown version", func() *gatev1.IngestRequest {
			r := ingest("shop.orders", "p", "b", good)
			r.ContractVersion = 9
			return r
		}(), codes.NotFound, ""},
		{"undelimitable JSON", &gatev1.IngestRequest{Subject: "shop.orders", Partition: "p", Identity: &gatev1.IngestRequest_BatchId{BatchId: "j"},
			Batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_JSON, Data: []byte(`[{"order_id": "x"}, {`)}}}}, codes.InvalidArgument, ""},
		{"no format", &gatev1.IngestRequest{Subject: "shop.orders", Partition: "p", Identity: &gatev1.IngestRequest_BatchId{BatchId: "f"},
			Batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Data: []byte(`{}`)}}}}, codes.InvalidArgument, ""},
	}
	for _, tt := range tests {
		_, err := e.as("pipeline").Ingest(ctx, tt.req)
		if status.Code(err) != tt.code {
			t.Errorf("%s: code = %v (%v), want %v", tt.name, status.Code(err), err, tt.code)
		}
	}
	if _, err := e.as("viewer").Ingest(ctx, ingest("shop.orders", "p", "b", good)); status.Code(err) != codes.PermissionDenied {
		t.Errorf("viewer Ingest: code = %v, want PermissionDenied", status.Code(err))
	}
}

// A retry of a batch whose peers failed must find nothing written.
func TestIngestPeerUnavailableWritesNothing(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	ctx := context.Background()
	req := ingest("shop.orders", "2025-03-01", "b1", orders{first: 1, n: 50, amount: 85})
	for _, peer := range []string{"adapter", "idmap"} {
		if peer == "adapter" {
			e.adapter.SetDown(true)
		} else {
			e.idmap.SetDown(true)
		}
		_, err := e.as("pipeline").Ingest(ctx, req)
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("%s down: code = %v (%v), want Unavailable", peer, status.Code(err), err)
		}
		e.adapter.SetDown(false)
		e.idmap.SetDown(false)
	}
	resp, err := e.as("viewer").GetMonitor(ctx, &gatev1.GetMonitorRequest{Subject: "shop.orders"})
	if err != nil || len(resp.GetPartitions()) != 0 {
		t.Fatalf("monitor after refused batches = %v (%v), want no partition", resp.GetPartitions(), err)
	}
	ok, err := e.as("pipeline").Ingest(ctx, req)
	if err != nil || ok.GetSummary().GetRetried() || ok.GetSummary().GetAccepted() != 50 {
		t.Fatalf("Ingest after recovery = %v (%v), want 50 accepted, not a retry", ok.GetSummary(), err)
	}
}

// A batch that pins a version the registry has only scheduled is refused
// until that version takes effect; then it is validated with it.
func TestIngestPinnedVersionMustBeEffective(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	e.loadLookup()
	ctx := context.Background()
	effective := start.Add(15 * 24 * time.Hour)
	if _, err := e.owner.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: examples.ShopOrdersV2(), EffectiveTime: timestamppb.New(effective)}); err != nil {
		t.Fatalf("register v2: %v", err)
	}
	req := ingest("shop.orders", "2025-03-20", "b", orders{first: 1, n: 10, amount: 85, uuids: 10})
	req.ContractVersion = 2
	_, err := e.as("pipeline").Ingest(ctx, req)
	if status.Code(err) != codes.FailedPrecondition || rpcerr.Reason(err) != "VERSION_NOT_EFFECTIVE" {
		t.Fatalf("Ingest pinned to scheduled v2 = %v, want FailedPrecondition VERSION_NOT_EFFECTIVE", err)
	}
	e.clock.Add(16 * 24 * time.Hour)
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := e.as("pipeline").Ingest(ctx, req)
		if err == nil {
			if s := resp.GetSummary(); s.GetContractVersion() != 2 || s.GetAccepted() != 10 {
				t.Fatalf("summary = %v, want 10 accepted under v2", s)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Ingest after v2 took effect: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // the registry's scheduler activates v2
	}
}
