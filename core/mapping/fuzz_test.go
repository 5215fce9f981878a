package mapping_test

import (
	"encoding/json"
	"testing"

	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/mapping"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/record/recordtest"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// FuzzMapOrders maps arbitrary NDJSON with the shop.orders v2 plan: every
// record gets a result, a mapped record is valid JSON with a record id, and
// a failed one has errors and no values.
func FuzzMapOrders(f *testing.F) {
	f.Add(recordtest.OrdersNDJSON(3))
	f.Add([]byte(`{"order_id":"ORD-1","customer_id":"0b8e5f6a-1c2d-4e3f-8a9b-000000000007","created_at":"2025-02-30T00:00:00Z"}`))
	f.Add([]byte("{\"order_id\":\"\\u0000\\\"\",\"items\":1e400}\n{"))
	p, err := mapping.CompileVersion(examples.ShopOrdersV2(), examples.CommerceOrder(), 1, customerCatalog)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		batch, err := record.NewDecoder(p.Schema(), record.Options{MaxRecordBytes: 1 << 16}).Decode(recordv1.Format_FORMAT_NDJSON, data, 0)
		if err != nil {
			return
		}
		b := p.Map(batch.Records)
		for _, l := range b.Lookups() {
			values := make([]string, len(l.IDs))
			statuses := make([]idmapv1.TranslateStatus, len(l.IDs))
			for i, id := range l.IDs {
				switch len(id) % 3 {
				case 0:
					values[i], statuses[i] = id, idmapv1.TranslateStatus_TRANSLATE_STATUS_HIT
				case 1:
					statuses[i] = idmapv1.TranslateStatus_TRANSLATE_STATUS_MISS
				default:
					values[i], statuses[i] = "42", idmapv1.TranslateStatus_TRANSLATE_STATUS_HIT
				}
			}
			if err := l.Resolve(values, statuses); err != nil {
				t.Fatal(err)
			}
		}
		res, err := b.Results()
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != len(batch.Records) {
			t.Fatalf("%d results for %d records", len(res), len(batch.Records))
		}
		for i, r := range res {
			if r.OK() == (r.Values == nil) {
				t.Fatalf("record %d: ok %v with values %v", i, r.OK(), r.Values)
			}
			if r.OK() {
				if out := p.AppendJSON(nil, r.Values); !json.Valid(out) {
					t.Fatalf("record %d: invalid JSON %q", i, out)
				}
				if r.ID == (mapping.RecordID{}) {
					t.Fatalf("record %d: no record id", i)
				}
			}
		}
	})
}
