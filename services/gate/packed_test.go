package gate

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/record"
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
			out := map[int64]*adapterv1.AdaptResult{}
			err := unpack(adaptTarget{cv: &compiled{subject: "s"}, records: tc.records}, &adapterv1.AdaptResponse{Packed: p}, recs, out)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unpack: %v", err)
			case tc.want == "" && (len(out) != 3 || len(out[1].GetErrors()) == 0 || (out[2].GetRecord() != nil) != tc.records):
				t.Fatalf("unpack = %v", out)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("unpack error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
