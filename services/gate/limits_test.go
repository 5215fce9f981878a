package gate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/rpcerr"
	"github.com/seamdata/seam/platform/storage/storagetest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// A batch whose canonical answer from the adapter is larger than one
// message (the test's gRPC clients take 4 MiB) is mapped in several
// adapter calls: it succeeds instead of failing as Unavailable, which
// pipelines retry forever.
func TestLargeBatchIsAdaptedInParts(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
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
	e := startGate(t, knownPeers(t), storagetest.SQLiteURL(t), func(c *Config) { c.MaxMessageBytes = 1 << 20 })
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

// bigRecord is one shop.orders record of about size bytes that the gate
// quarantines (its currency is not in the enum).
func bigRecord(n, size int) []byte {
	return fmt.Appendf(nil, `{"order_id":"ORD-%010d","customer_id":7,"amount":1,"currency":"XXX","status":"paid","created_at":"2025-03-01T10:00:00Z","items":1,"coupon":"%s"}`,
		n, strings.Repeat("c", size))
}

// Huge quarantined records keep only their first bytes (with their size
// and SHA-256), and a page of quarantine list ends once its records reach
// the page byte limit, so a few huge records cannot make the quarantine
// unreadable (two 3 MB records in one page exceed the 4 MiB a client
// takes by default).
func TestQuarantineBoundsRecordsAndPages(t *testing.T) {
	t.Parallel()
	e := startGate(t, knownPeers(t), storagetest.SQLiteURL(t), func(c *Config) { c.MaxPageBytes = 3 << 19 })
	ctx := context.Background()
	send := func(id string, records ...[]byte) {
		t.Helper()
		req := &gatev1.IngestRequest{Subject: "shop.orders", Partition: "2025-03-01", Identity: &gatev1.IngestRequest_BatchId{BatchId: id}, SummaryOnly: true,
			Batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: bytes.Join(records, []byte("\n"))}}}}
		if resp, err := e.as("pipeline").Ingest(ctx, req); err != nil || resp.GetSummary().GetQuarantined() != int64(len(records)) {
			t.Fatalf("Ingest %s = %v (%v), want every record quarantined", id, resp.GetSummary(), err)
		}
	}
	huge := [][]byte{bigRecord(1, 3<<20), bigRecord(2, 3<<20)}
	send("huge-1", huge[0])
	send("huge-2", huge[1])
	list, err := e.as("viewer").ListQuarantine(ctx, &gatev1.ListQuarantineRequest{Filter: &gatev1.QuarantineFilter{Subject: "shop.orders"}})
	if err != nil {
		t.Fatalf("ListQuarantine of two 3 MB records: %v", err)
	}
	if len(list.GetRecords()) != 2 {
		t.Fatalf("listed %d records, want 2", len(list.GetRecords()))
	}
	for i, q := range list.GetRecords() {
		sum := sha256.Sum256(huge[i])
		if !q.GetRawTruncated() || len(q.GetRaw()) != DefaultQuarantineMaxRaw || q.GetRawSize() != int64(len(huge[i])) || q.GetRawSha256() != hex.EncodeToString(sum[:]) {
			t.Fatalf("record %d: truncated %v, %d raw bytes of %d, sha256 %s; want the first %d bytes, the full size and digest",
				i, q.GetRawTruncated(), len(q.GetRaw()), q.GetRawSize(), q.GetRawSha256(), DefaultQuarantineMaxRaw)
		}
	}

	// Pages end on bytes: five 700 kB records in pages of at most 1.5 MiB.
	var mid [][]byte
	for i := range 5 {
		mid = append(mid, bigRecord(10+i, 700<<10))
	}
	send("mid", mid...)
	tok, pages, total := "", 0, 0
	for {
		resp, err := e.as("viewer").ListQuarantine(ctx, &gatev1.ListQuarantineRequest{PageToken: tok,
			Filter: &gatev1.QuarantineFilter{Subject: "shop.orders", PartitionFrom: "2025-03-01", PartitionTo: "2025-03-01"}})
		if err != nil {
			t.Fatalf("ListQuarantine page %d: %v", pages, err)
		}
		pages++
		total += len(resp.GetRecords())
		if n := pageBytes(resp.GetRecords()); n > 3<<19+DefaultQuarantineMaxRaw {
			t.Fatalf("page %d holds %d raw bytes, over the limit and one record", pages, n)
		}
		if tok = resp.GetNextPageToken(); tok == "" {
			break
		}
	}
	if total != 7 || pages < 3 {
		t.Fatalf("listed %d records in %d pages, want 7 in at least 3", total, pages)
	}
}
