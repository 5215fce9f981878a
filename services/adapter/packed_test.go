package adapter_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"testing"

	"google.golang.org/protobuf/proto"

	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	"github.com/seamdata/seam/services/adapter"
)

// A packed answer holds what the per-record answer holds: the same
// canonical JSON and ids for the adapted records, in order, and the same
// failures; a failures-only answer holds the failures alone.
func TestPackedAnswersMatchPerRecordAnswers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, adapter.Config{}, nil)
	_, in2 := orders(200)
	// Customers the table does not hold fail their records.
	for _, i := range []int{3, 150} {
		in2[i] = bytes.Replace(in2[i], []byte(`"customer_id":"0b8e5f6a`), []byte(`"customer_id":"0b8e5f6b`), 1)
	}
	batch := rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in2))
	ask := func(answer adapterv1.AdaptAnswer) *adapterv1.AdaptResponse {
		resp, err := e.client.Adapt(context.Background(), &adapterv1.AdaptRequest{Subject: "shop.orders", Version: e.v2, Batch: batch, Answer: answer})
		if err != nil {
			t.Fatalf("Adapt %v: %v", answer, err)
		}
		return resp
	}
	want := ask(adapterv1.AdaptAnswer_ADAPT_ANSWER_RESULTS)
	if want.GetFailed() == 0 || want.GetAdapted() == 0 || want.GetPacked() != nil {
		t.Fatalf("per-record answer: %d adapted, %d failed, packed %v; want some of each and nothing packed", want.GetAdapted(), want.GetFailed(), want.GetPacked() != nil)
	}
	var failures []*adapterv1.AdaptResult
	var json []byte
	var ends []uint32
	var ids []byte
	for _, r := range want.GetResults() {
		if len(r.GetErrors()) > 0 {
			failures = append(failures, &adapterv1.AdaptResult{Index: r.GetIndex(), Position: r.GetPosition(), Errors: r.GetErrors()})
			continue
		}
		json = append(json, r.GetRecord().GetJson()...)
		ends = append(ends, uint32(len(json)))
		id, err := hex.DecodeString(r.GetRecord().GetRecordId())
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id...)
	}
	prov := want.GetResults()[0].GetRecord().GetProvenance()
	wantPacked := &adapterv1.PackedResults{Canonical: prov.GetCanonical(), CanonicalVersion: prov.GetCanonicalVersion(), Json: json, JsonEnds: ends, RecordIds: ids, Failures: failures}
	for _, tc := range []struct {
		answer adapterv1.AdaptAnswer
		want   *adapterv1.PackedResults
	}{
		{adapterv1.AdaptAnswer_ADAPT_ANSWER_PACKED, wantPacked},
		{adapterv1.AdaptAnswer_ADAPT_ANSWER_FAILURES, &adapterv1.PackedResults{Canonical: prov.GetCanonical(), CanonicalVersion: prov.GetCanonicalVersion(), Failures: failures}},
	} {
		got := ask(tc.answer)
		if len(got.GetResults()) != 0 || got.GetAdapted() != want.GetAdapted() || got.GetFailed() != want.GetFailed() || got.GetVersion() != want.GetVersion() {
			t.Errorf("%v: %d results, %d adapted, %d failed, version %d; want none, %d, %d, %d", tc.answer, len(got.GetResults()), got.GetAdapted(), got.GetFailed(), got.GetVersion(),
				want.GetAdapted(), want.GetFailed(), want.GetVersion())
		}
		if !proto.Equal(got.GetPacked(), tc.want) {
			t.Errorf("%v: packed answer differs from the per-record answer:\ngot  %v\nwant %v", tc.answer, got.GetPacked(), tc.want)
		}
	}
}

// BenchmarkAdaptAnswer adapts a 1,000-record v2 batch (one idmap lookup)
// over gRPC in each answer form: what the per-record messages cost.
func BenchmarkAdaptAnswer(b *testing.B) {
	e := newEnv(b, adapter.Config{}, nil)
	_, in2 := orders(1000)
	batch := rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in2))
	for _, answer := range []adapterv1.AdaptAnswer{adapterv1.AdaptAnswer_ADAPT_ANSWER_RESULTS, adapterv1.AdaptAnswer_ADAPT_ANSWER_PACKED, adapterv1.AdaptAnswer_ADAPT_ANSWER_FAILURES} {
		b.Run(answer.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp, err := e.client.Adapt(context.Background(), &adapterv1.AdaptRequest{Subject: "shop.orders", Version: e.v2, Batch: batch, Answer: answer})
				if err != nil || resp.GetAdapted() != 1000 {
					b.Fatalf("Adapt: %v (%d adapted)", err, resp.GetAdapted())
				}
			}
			b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
