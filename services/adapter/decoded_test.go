package adapter_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/record"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	"github.com/seamdata/seam/services/adapter"
)

// decodedOf decodes an NDJSON batch by v2's schema, as the gate does, and
// packs every record's values.
func decodedOf(t *testing.T, data []byte) *adapterv1.DecodedRecords {
	t.Helper()
	s, err := record.NewSchema(examples.ShopOrdersV2().GetFields())
	if err != nil {
		t.Fatal(err)
	}
	b, err := record.NewDecoder(s, record.Options{}).Decode(recordv1.Format_FORMAT_NDJSON, data, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := &adapterv1.DecodedRecords{Count: int64(len(b.Records))}
	for i := range s.Len() {
		d.Fields = append(d.Fields, s.Field(i).Path)
	}
	for _, r := range b.Records {
		d.Values = record.AppendPacked(d.Values, r.Values)
	}
	return d
}

// Records sent decoded are adapted as the same records sent as NDJSON
// are: the same canonical JSON, ids and failures.
func TestDecodedRecordsAdaptAsRawOnes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, adapter.Config{}, nil)
	_, in2 := orders(300)
	in2[7] = bytes.Replace(in2[7], []byte(`"customer_id":"0b8e5f6a`), []byte(`"customer_id":"0b8e5f6b`), 1) // not in the table
	data := ndjson(in2)
	for _, answer := range []adapterv1.AdaptAnswer{adapterv1.AdaptAnswer_ADAPT_ANSWER_PACKED, adapterv1.AdaptAnswer_ADAPT_ANSWER_FAILURES} {
		want, err := e.client.Adapt(context.Background(), &adapterv1.AdaptRequest{Subject: "shop.orders", Version: e.v2, Batch: rawBatch(recordv1.Format_FORMAT_NDJSON, data), Answer: answer})
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.client.Adapt(context.Background(), &adapterv1.AdaptRequest{Subject: "shop.orders", Version: e.v2, Decoded: decodedOf(t, data), Answer: answer})
		if err != nil {
			t.Fatalf("Adapt decoded: %v", err)
		}
		if want.GetFailed() != 1 || want.GetAdapted() != 299 {
			t.Fatalf("raw batch: %d adapted, %d failed; want 299 and 1", want.GetAdapted(), want.GetFailed())
		}
		// Positions are the sender's to set: decoded records carry none.
		for _, f := range append(got.GetPacked().GetFailures(), want.GetPacked().GetFailures()...) {
			f.Position = 0
		}
		if !proto.Equal(got, want) {
			t.Errorf("%v: decoded records answered\n%v\nraw ones\n%v", answer, got, want)
		}
	}
}

func TestDecodedRecordsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, adapter.Config{}, nil)
	_, in2 := orders(3)
	good := decodedOf(t, ndjson(in2))
	for _, tc := range []struct {
		name string
		edit func(r *adapterv1.AdaptRequest)
		want string
	}{
		{"batch and decoded", func(r *adapterv1.AdaptRequest) { r.Batch = rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in2)) }, "both batch and decoded"},
		{"unknown field", func(r *adapterv1.AdaptRequest) { r.Decoded.Fields[0] = "no_such_field" }, `field "no_such_field" is not declared`},
		{"count past the data", func(r *adapterv1.AdaptRequest) { r.Decoded.Count = 1 << 40 }, "cannot fit"},
		{"cut short", func(r *adapterv1.AdaptRequest) { r.Decoded.Values = r.Decoded.Values[:len(r.Decoded.Values)-3] }, "record 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &adapterv1.AdaptRequest{Subject: "shop.orders", Version: e.v2, Decoded: proto.CloneOf(good), Answer: adapterv1.AdaptAnswer_ADAPT_ANSWER_PACKED}
			tc.edit(req)
			_, err := e.client.Adapt(context.Background(), req)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Adapt = %v, want InvalidArgument saying %q", err, tc.want)
			}
		})
	}
}
