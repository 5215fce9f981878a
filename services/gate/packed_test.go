package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/verdict"
	"github.com/seamdata/seam/platform/rpcerr"
	"github.com/seamdata/seam/platform/storage/storagetest"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// The gate asks the real adapter for packed answers; the canonical records
// it returns are those the adapter answers one message per record, with
// the gate's provenance, and summary-only answers count the same without
// any. (Failures through the real adapter: the real-peers scenarios.)
func TestPackedAnswerMatchesPerRecordAnswer(t *testing.T) {
	t.Parallel()
	p := newPeers(t)
	importPairs(t, useRealPeers(t, p))
	e := startGate(t, p, storagetest.SQLiteURL(t), func(*Config) {})
	data := orders{first: 1, n: 40, amount: 85, unknown: 3}.ndjson()
	batch := &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: data}}}
	ctx := context.Background()
	got, err := e.as("pipeline").Ingest(ctx, &gatev1.IngestRequest{Subject: "shop.orders", Partition: "2025-03-01", Batch: batch,
		Identity: &gatev1.IngestRequest_BatchId{BatchId: "packed"}})
	if err != nil {
		t.Fatal(err)
	}
	summary, err := e.as("pipeline").Ingest(ctx, &gatev1.IngestRequest{Subject: "shop.orders", Partition: "2025-03-02", Batch: batch, SummaryOnly: true,
		Identity: &gatev1.IngestRequest_BatchId{BatchId: "packed"}})
	if err != nil {
		t.Fatal(err)
	}
	if g, w := summary.GetSummary().GetAccepted(), got.GetSummary().GetAccepted(); g != w || g == 0 {
		t.Fatalf("summary-only accepted %d, with records %d; want equal and some", g, w)
	}
	for _, v := range summary.GetRecords() {
		if v.GetRecord() != nil {
			t.Fatalf("summary-only answer carries a canonical record: %v", v)
		}
	}
	want, err := adapterv1.NewAdapterServiceClient(dial(t, p.adptAddr, "")).Adapt(ctx, &adapterv1.AdaptRequest{Subject: "shop.orders", Batch: batch,
		Partition: "2025-03-01", BatchId: "packed", Answer: adapterv1.AdaptAnswer_ADAPT_ANSWER_RESULTS})
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for i, v := range got.GetRecords() {
		w := want.GetResults()[i]
		if v.GetStatus() != gatev1.RecordStatus_RECORD_STATUS_ACCEPTED {
			continue
		}
		if w.GetRecord() == nil {
			t.Fatalf("record %d: the gate accepted it, the adapter answered %v", i, w.GetErrors())
		}
		if !proto.Equal(v.GetRecord(), w.GetRecord()) {
			t.Errorf("record %d: packed %v, per record %v", i, v.GetRecord(), w.GetRecord())
		}
		compared++
	}
	if compared == 0 {
		t.Fatal("no accepted record compared")
	}
}

// A packed answer that does not account for each record once is refused
// as the adapter's fault.
func TestUnpackRefusesInconsistentAnswers(t *testing.T) {
	t.Parallel()
	recs := []*record.Record{{Index: 0, Position: 1}, {Index: 1, Position: 2}, {Index: 2, Position: 3}}
	id := make([]byte, 32)
	fail := func(i int64) *adapterv1.AdaptResult {
		return &adapterv1.AdaptResult{Index: i, Errors: []*recordv1.RecordError{{Code: recordv1.ErrorCode_ERROR_CODE_CAST_FAILED}}}
	}
	ok := &adapterv1.PackedResults{Json: []byte(`{}{}`), JsonEnds: []uint32{2, 4}, RecordIds: append(append([]byte{}, id...), id...), Failures: []*adapterv1.AdaptResult{fail(1)}}
	for _, tc := range []struct {
		name    string
		records bool
		edit    func(p *adapterv1.PackedResults)
		want    string
	}{
		{"consistent", true, func(*adapterv1.PackedResults) {}, ""},
		{"failures only", false, func(p *adapterv1.PackedResults) { p.Json, p.JsonEnds, p.RecordIds = nil, nil, nil }, ""},
		{"an id short", true, func(p *adapterv1.PackedResults) { p.RecordIds = p.RecordIds[:32] }, "ids for 3 records"},
		{"an end past the buffer", true, func(p *adapterv1.PackedResults) { p.JsonEnds[1] = 9 }, "outside"},
		{"a failure out of range", true, func(p *adapterv1.PackedResults) { p.Failures[0] = fail(7) }, "out of order or out of range"},
		{"a failure without errors", false, func(p *adapterv1.PackedResults) { p.Failures[0] = &adapterv1.AdaptResult{Index: 1} }, "without an error"},
		{"more failures than records", false, func(p *adapterv1.PackedResults) {
			p.Failures = []*adapterv1.AdaptResult{fail(0), fail(1), fail(2), fail(2)}
		}, "failures"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := proto.CloneOf(ok)
			tc.edit(p)
			target := adaptTarget{cv: &compiled{subject: "s"}, records: tc.records}
			a := &adapted{results: make([]*adapterv1.AdaptResult, len(recs)), canon: make([]canonical, len(recs))}
			err := unpack(target, &adapterv1.AdaptResponse{Packed: p}, recs, a)
			if err == nil && tc.records {
				a.messages(target, recs)
			}
			out := a.results
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unpack: %v", err)
			case tc.want == "" && (slices.Contains(out, nil) || len(out[1].GetErrors()) == 0 || (out[2].GetRecord() != nil) != tc.records):
				t.Fatalf("unpack = %v", out)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("unpack error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// expand is a packed answer's verdicts as the per-record answer says them.
func expand(t *testing.T, p *gatev1.PackedVerdicts) []*gatev1.RecordVerdict {
	t.Helper()
	vs, err := verdict.Expand(p)
	if err != nil {
		t.Fatalf("Expand: %v", err)
	}
	return vs
}

// sameVerdicts fails unless got and want are equal verdict for verdict.
func sameVerdicts(t *testing.T, what string, got, want []*gatev1.RecordVerdict) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d verdicts, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !proto.Equal(got[i], want[i]) {
			t.Fatalf("%s: verdict %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

// A batch asked packed answers, accepted and quarantined records alike,
// what the per-record answer says, first time and on retry in either
// form, and the retry asked packed answers what the first answer did.
func TestIngestPackedAnswersWhatRecordsAnswer(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	ctx := context.Background()
	c := e.as("pipeline")
	for i, first := range []gatev1.IngestAnswer{gatev1.IngestAnswer_INGEST_ANSWER_PACKED, gatev1.IngestAnswer_INGEST_ANSWER_UNSPECIFIED} {
		t.Run(first.String(), func(t *testing.T) {
			// Orders 1..10 are in the partition already: the batch's first
			// 3 (orders 6..8) lack their customer, and orders 9 and 10 are
			// duplicates.
			part := fmt.Sprintf("2025-03-0%d", i+1)
			if _, err := c.Ingest(ctx, ingest("shop.orders", part, "seed", orders{first: 1, n: 10, amount: 85})); err != nil {
				t.Fatal(err)
			}
			req := ingest("shop.orders", part, "mixed", orders{first: 6, n: 40, amount: 85, missing: 3})
			req.Answer = first
			got, err := c.Ingest(ctx, req)
			if err != nil {
				t.Fatalf("Ingest: %v", err)
			}
			sum := got.GetSummary()
			if sum.GetAccepted() != 35 || sum.GetQuarantined() != 5 || sum.GetDuplicates() != 2 {
				t.Fatalf("summary = %v, want 35 accepted, 5 quarantined of which 2 duplicates", sum)
			}
			retry := func(a gatev1.IngestAnswer) *gatev1.IngestResponse {
				t.Helper()
				r := proto.CloneOf(req)
				r.Answer = a
				resp, err := c.Ingest(ctx, r)
				if err != nil {
					t.Fatalf("retry asking %s: %v", a, err)
				}
				if !resp.GetSummary().GetRetried() {
					t.Fatalf("retry asking %s: summary %v, want retried", a, resp.GetSummary())
				}
				return resp
			}
			packed, records := retry(gatev1.IngestAnswer_INGEST_ANSWER_PACKED), retry(gatev1.IngestAnswer_INGEST_ANSWER_RECORDS)
			if first == gatev1.IngestAnswer_INGEST_ANSWER_PACKED {
				p := got.GetPacked()
				if len(got.GetRecords()) != 0 || len(p.GetJsonEnds()) != 35 || len(p.GetOthers()) != 5 || p.GetProvenance().GetBatchId() != req.GetBatchId() {
					t.Fatalf("packed answer: %d records, %d canonical records, %d others, provenance %v; want none, 35, 5 and the batch's",
						len(got.GetRecords()), len(p.GetJsonEnds()), len(p.GetOthers()), p.GetProvenance())
				}
				for _, v := range p.GetOthers() {
					if v.GetStatus() != gatev1.RecordStatus_RECORD_STATUS_QUARANTINED || len(v.GetReasons()) == 0 || v.GetReasons()[0].GetMessage() == "" {
						t.Fatalf("record not accepted %v, want QUARANTINED with its reasons", v)
					}
				}
				if !proto.Equal(packed.GetPacked(), p) {
					t.Fatal("the retry asked packed answers other verdicts than the first answer")
				}
				sameVerdicts(t, "first answer packed, retry per record", expand(t, p), records.GetRecords())
			} else {
				sameVerdicts(t, "first answer per record, retry packed", expand(t, packed.GetPacked()), got.GetRecords())
			}
			sameVerdicts(t, "retries", expand(t, packed.GetPacked()), records.GetRecords())
		})
	}
}

// A stream asked packed answers each chunk's verdicts packed in its
// chunk result: the same as the stream asked per record, chunk by chunk.
func TestIngestStreamPackedAnswersWhatRecordsAnswer(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	ctx := context.Background()
	chunks := []streamChunk{{0, orders{first: 1, n: 30, amount: 85, missing: 2}.ndjson()}, {1, orders{first: 31, n: 30, amount: 85}.ndjson()}}
	h := &gatev1.IngestHeader{Subject: "shop.orders", Partition: "2025-03-01", BatchId: "load", Format: recordv1.Format_FORMAT_NDJSON,
		Answer: gatev1.IngestAnswer_INGEST_ANSWER_PACKED}
	packed, err := sendStream(ctx, e, h, chunks)
	if err != nil {
		t.Fatalf("IngestStream packed: %v", err)
	}
	h.Answer = gatev1.IngestAnswer_INGEST_ANSWER_RECORDS
	records, err := sendStream(ctx, e, h, chunks)
	if err != nil {
		t.Fatalf("IngestStream resent per record: %v", err)
	}
	if len(packed.GetRecords()) != 0 || len(packed.GetChunkResults()) != 2 {
		t.Fatalf("packed stream answer: %d records, %d chunk results; want none and 2", len(packed.GetRecords()), len(packed.GetChunkResults()))
	}
	var got []*gatev1.RecordVerdict
	for _, cr := range packed.GetChunkResults() {
		if p := cr.GetPacked(); p.GetSequence() != cr.GetSequence() || p.GetProvenance().GetBatchId() != fmt.Sprintf("load#%d", cr.GetSequence()) {
			t.Fatalf("chunk %d packed as sequence %d, provenance %v", cr.GetSequence(), p.GetSequence(), p.GetProvenance())
		}
		got = append(got, expand(t, cr.GetPacked())...)
	}
	if n := packed.GetSummary().GetAccepted(); n != 58 {
		t.Fatalf("accepted %d, want 58", n)
	}
	sameVerdicts(t, "stream packed, resent per record", got, records.GetRecords())
}

// A summary-only batch asked packed answers in the summary form: the
// accepted records' positions, and the verdicts of the others, expanding
// to what the per-record summary-only answer says, first time and on
// retry. A retry asking packed canonical records of a batch first sent
// summary-only is told they are gone, as a retry asking per-record ones
// is; a summary-only stream has nothing to pack.
func TestIngestPackedSummaryOnly(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	ctx := context.Background()
	c := e.as("pipeline")
	req := ingest("shop.orders", "2025-03-01", "b1", orders{first: 1, n: 30, amount: 85, missing: 4})
	req.SummaryOnly, req.Answer = true, gatev1.IngestAnswer_INGEST_ANSWER_PACKED
	got, err := c.Ingest(ctx, req)
	if err != nil {
		t.Fatalf("summary_only asked packed: %v", err)
	}
	p := got.GetPacked()
	if len(got.GetRecords()) != 0 || len(p.GetPositions()) != 26 || len(p.GetOthers()) != 4 || len(p.GetJson()) != 0 || len(p.GetRecordIds()) != 0 || p.GetProvenance() != nil {
		t.Fatalf("packed summary: %d records, %d positions, %d others, %d JSON bytes, %d id bytes, provenance %v; want 0, 26, 4 and nothing else",
			len(got.GetRecords()), len(p.GetPositions()), len(p.GetOthers()), len(p.GetJson()), len(p.GetRecordIds()), p.GetProvenance())
	}
	perRecord := proto.CloneOf(req)
	perRecord.Answer = gatev1.IngestAnswer_INGEST_ANSWER_UNSPECIFIED
	want, err := c.Ingest(ctx, perRecord)
	if err != nil || !want.GetSummary().GetRetried() {
		t.Fatalf("per-record retry: %v (%v), want a retry", want.GetSummary(), err)
	}
	sameVerdicts(t, "summary packed, retry per record", expand(t, p), want.GetRecords())
	again, err := c.Ingest(ctx, req)
	if err != nil || !proto.Equal(again.GetPacked(), p) {
		t.Fatalf("packed retry: %v (%v), want the first packed answer", again.GetPacked(), err)
	}

	req.Answer = gatev1.IngestAnswer(9)
	if _, err := c.Ingest(ctx, req); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("an unknown answer form: %v, want InvalidArgument", err)
	}
	req.SummaryOnly, req.Answer = false, gatev1.IngestAnswer_INGEST_ANSWER_PACKED
	if _, err := c.Ingest(ctx, req); rpcerr.Reason(err) != "ANSWER_EXPIRED" {
		t.Fatalf("packed retry of a summary-only batch: %v, want ANSWER_EXPIRED", err)
	}
	h := &gatev1.IngestHeader{Subject: "shop.orders", Partition: "2025-03-02", BatchId: "load", Format: recordv1.Format_FORMAT_NDJSON,
		SummaryOnly: true, Answer: gatev1.IngestAnswer_INGEST_ANSWER_PACKED}
	if _, err := sendStream(ctx, e, h, []streamChunk{{0, orders{first: 1, n: 3, amount: 85}.ndjson()}}); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "nothing to pack") {
		t.Fatalf("summary-only stream asked packed: %v, want InvalidArgument", err)
	}
}

// Over REST a packed answer comes out as protojson says bytes: base64
// strings, which read back into the same verdicts as the per-record
// answer.
func TestIngestPackedOverREST(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	base := startREST(t, e)
	lines := strings.Split(strings.TrimSpace(string(orders{first: 1, n: 12, amount: 85, missing: 2}.ndjson())), "\n")
	body := map[string]any{"partition": "2025-03-01", "batch_id": "rest", "answer": "INGEST_ANSWER_PACKED",
		"batch": map[string]any{"objects": map[string]any{"records": json.RawMessage("[" + strings.Join(lines, ",") + "]")}}}
	var raw json.RawMessage
	if code := postJSON(t, e, base+"/v1/subjects/shop.orders:ingest", "pipeline", body, &raw); code != http.StatusOK {
		t.Fatalf("POST ingest: %d %s", code, raw)
	}
	var shape struct {
		Records []any `json:"records"`
		Packed  struct {
			JSON      string `json:"json"`
			RecordIDs string `json:"record_ids"`
		} `json:"packed"`
	}
	if err := json.Unmarshal(raw, &shape); err != nil || len(shape.Records) != 0 || shape.Packed.JSON == "" || shape.Packed.RecordIDs == "" {
		t.Fatalf("REST packed answer %s (%v): want packed with base64 json and record_ids, no records", raw, err)
	}
	got := &gatev1.IngestResponse{}
	if err := protojson.Unmarshal(raw, got); err != nil {
		t.Fatalf("the REST answer does not read back: %v", err)
	}
	want, err := e.as("pipeline").Ingest(context.Background(), &gatev1.IngestRequest{Subject: "shop.orders", Partition: "2025-03-01",
		Identity: &gatev1.IngestRequest_BatchId{BatchId: "rest"}, Batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{
			Format: recordv1.Format_FORMAT_JSON, Data: []byte("[" + strings.Join(lines, ",") + "]")}}}})
	if err != nil {
		t.Fatalf("retry per record over gRPC: %v", err)
	}
	if len(want.GetRecords()) != 12 || want.GetSummary().GetQuarantined() != 2 {
		t.Fatalf("per-record answer: %d verdicts, %v; want 12, 2 quarantined", len(want.GetRecords()), want.GetSummary())
	}
	sameVerdicts(t, "REST packed, gRPC per record", expand(t, got.GetPacked()), want.GetRecords())
}

// A batch with records answered packed packs the canonical records
// straight from the adapter's packed answers; what it says is what the
// same batch answered a record at a time says, whether the accepted
// records lie side by side in one adapter answer or not (records failing
// a check, several adapter calls), and when the partition's key index
// turns some into duplicates.
func TestPackedStraightFromTheAdapterMatchesPerRecord(t *testing.T) {
	t.Parallel()
	// Under the smallest message limit, 1 MiB, the gate asks the adapter
	// about at most 256 KiB of records a call: the 1,500 records of the
	// first batch take two calls.
	for _, limit := range []int{DefaultMaxMessageBytes, 1 << 20} {
		t.Run(fmt.Sprintf("message limit %d", limit), func(t *testing.T) {
			t.Parallel()
			p := newPeers(t)
			importPairs(t, useRealPeers(t, p))
			small := func(c *Config) { c.MaxMessageBytes = limit }
			packedGate, perRecordGate := startGate(t, p, storagetest.SQLiteURL(t), small), startGate(t, p, storagetest.SQLiteURL(t), small)
			ctx := context.Background()
			for _, b := range []struct {
				id string
				o  orders
			}{
				{"all pass", orders{first: 100, n: 1500, amount: 85}},
				{"some fail", orders{first: 1, n: 40, amount: 85, unknown: 7, missing: 3}},
				{"duplicates", orders{first: 1, n: 30, amount: 85}},
			} {
				req := ingest("shop.orders", "2025-03-01", b.id, b.o)
				req.Answer = gatev1.IngestAnswer_INGEST_ANSWER_PACKED
				packed, err := packedGate.as("pipeline").Ingest(ctx, req)
				if err != nil {
					t.Fatalf("%s: packed: %v", b.id, err)
				}
				req.Answer = gatev1.IngestAnswer_INGEST_ANSWER_RECORDS
				perRecord, err := perRecordGate.as("pipeline").Ingest(ctx, req)
				if err != nil {
					t.Fatalf("%s: per record: %v", b.id, err)
				}
				if !proto.Equal(packed.GetSummary(), perRecord.GetSummary()) || packed.GetSummary().GetAccepted() == 0 {
					t.Fatalf("%s: summary packed %v, per record %v", b.id, packed.GetSummary(), perRecord.GetSummary())
				}
				if b.id == "duplicates" && packed.GetSummary().GetDuplicates() == 0 {
					t.Fatalf("%s: no duplicates in %v", b.id, packed.GetSummary())
				}
				got := expand(t, packed.GetPacked())
				if len(got) != len(perRecord.GetRecords()) {
					t.Fatalf("%s: %d verdicts packed, %d per record", b.id, len(got), len(perRecord.GetRecords()))
				}
				for i, v := range got {
					if !proto.Equal(v, perRecord.GetRecords()[i]) {
						t.Fatalf("%s: record %d packed %v, per record %v", b.id, i, v, perRecord.GetRecords()[i])
					}
				}
				repacked, err := verdict.Pack(perRecord.GetRecords())
				if err != nil || !proto.Equal(repacked, packed.GetPacked()) {
					t.Fatalf("%s: packed answer differs from the per-record answer packed (%v)", b.id, err)
				}
			}
		})
	}
}
