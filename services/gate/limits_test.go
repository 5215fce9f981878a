package gate

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/rpcerr"
	"github.com/seamdata/seam/platform/storage/storagetest"
)

// A batch whose canonical answer from the adapter is larger than one
// message (the test's gRPC clients take 4 MiB) is mapped in several
// adapter calls: it succeeds instead of failing as Unavailable, which
// pipelines retry forever.
func TestLargeBatchIsAdaptedInParts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.knowCustomers()
	o := orders{first: 1, n: 15000, amount: 85}
	req := ingest("shop.orders", "2025-03-01", "big", o)
	req.SummaryOnly = true
	if n := len(o.ndjson()); n > 4<<20 || n < 3<<20 {
		t.Fatalf("test batch is %d bytes, want between 3 and 4 MiB", n)
	}
	resp, err := e.as("pipeline").Ingest(context.Background(), req)
	if err != nil {
		t.Fatalf("Ingest of a %d-record batch: %v", o.n, err)
	}
	if s := resp.GetSummary(); s.GetAccepted() != int64(o.n) {
		t.Fatalf("summary = %v, want all %d accepted", s, o.n)
	}
}

// An answer with canonical records that cannot fit in one message is
// refused with ResourceExhausted naming the limit, before anything is
// written; the same batch asked for with summary_only then goes through.
func TestAnswerOverTheMessageLimitIsRefused(t *testing.T) {
	t.Parallel()
	p := newPeers(t)
	p.knowCustomers()
	e := startGate(t, p, storagetest.SQLiteURL(t), func(c *Config) { c.MaxMessageBytes = 1 << 20 })
	o := orders{first: 1, n: 5000, amount: 85}
	req := ingest("shop.orders", "2025-03-01", "wide", o)
	_, err := e.as("pipeline").Ingest(context.Background(), req)
	if status.Code(err) != codes.ResourceExhausted || rpcerr.Reason(err) != "ANSWER_TOO_LARGE" {
		t.Fatalf("Ingest with canonical records over 1 MiB = %v, want ResourceExhausted ANSWER_TOO_LARGE", err)
	}
	req.SummaryOnly = true
	resp, err := e.as("pipeline").Ingest(context.Background(), req)
	if err != nil || resp.GetSummary().GetRetried() || resp.GetSummary().GetAccepted() != int64(o.n) {
		t.Fatalf("summary-only Ingest = %v (%v), want %d accepted, not a retry", resp.GetSummary(), err, o.n)
	}
}
