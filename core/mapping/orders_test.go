package mapping_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/mapping"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/record/recordtest"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// customerUUID is the UUID the new customer service gave legacy customer n.
func customerUUID(n int) string {
	return fmt.Sprintf("0b8e5f6a-1c2d-4e3f-8a9b-%012x", n)
}

// decode decodes data with p's schema, failing the test on a batch error.
func decode(t testing.TB, p *mapping.Plan, format recordv1.Format, data []byte) []record.Record {
	t.Helper()
	b, err := record.NewDecoder(p.Schema(), record.Options{}).Decode(format, data, 0)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return b.Records
}

// compileOrders compiles the shop.orders contract source to the
// commerce.order canonical model as version 1.
func compileOrders(t testing.TB, source *contractv1.Contract, catalog mapping.IDCatalog) *mapping.Plan {
	t.Helper()
	p, err := mapping.CompileVersion(source, examples.CommerceOrder(), 1, catalog)
	if err != nil {
		t.Fatalf("compile %s: %v", source.GetSubject(), err)
	}
	return p
}

// resolveAll answers every lookup of b, id by id, as an idmap lookup
// table would.
func resolveAll(t testing.TB, b *mapping.Batch, answer func(id string) (string, idmapv1.TranslateStatus)) {
	t.Helper()
	for _, l := range b.Lookups() {
		values := make([]string, len(l.IDs))
		statuses := make([]idmapv1.TranslateStatus, len(l.IDs))
		for i, id := range l.IDs {
			values[i], statuses[i] = answer(id)
		}
		if err := l.Resolve(values, statuses); err != nil {
			t.Fatal(err)
		}
	}
}

// fromTable answers translations from a map: a hit when it holds the id.
func fromTable(table map[string]string) func(string) (string, idmapv1.TranslateStatus) {
	return func(id string) (string, idmapv1.TranslateStatus) {
		if v, ok := table[id]; ok {
			return v, idmapv1.TranslateStatus_TRANSLATE_STATUS_HIT
		}
		return "", idmapv1.TranslateStatus_TRANSLATE_STATUS_MISS
	}
}

// TestOrdersV1AndV2AgreeOnCanonical is the source document's case: the same
// orders sent by v1 (integer customer ids) and by v2 (UUIDs, translated
// through the idmap table) become byte-identical canonical records with the
// same record ids, so nothing downstream notices the format change.
func TestOrdersV1AndV2AgreeOnCanonical(t *testing.T) {
	t.Parallel()
	v1 := compileOrders(t, examples.ShopOrdersV1(), examples.CustomerCatalog())
	v2 := compileOrders(t, examples.ShopOrdersV2(), examples.CustomerCatalog())
	const n = 500
	var in1, in2 []byte
	table := map[string]string{}
	for i := range n {
		order := recordtest.OrderJSON(nil, i)
		in1 = append(append(in1, order...), '\n')
		legacy := fmt.Sprint(100000 + i%50000)
		table[customerUUID(100000+i%50000)] = legacy
		in2 = append(in2, bytes.Replace(order, []byte(`"customer_id":`+legacy), []byte(`"customer_id":"`+customerUUID(100000+i%50000)+`"`), 1)...)
		in2 = append(in2, '\n')
	}
	b1 := v1.Map(decode(t, v1, recordv1.Format_FORMAT_NDJSON, in1))
	if got := len(b1.Lookups()); got != 0 {
		t.Fatalf("v1 needs %d lookups, want 0", got)
	}
	r1, err := b1.Results()
	if err != nil {
		t.Fatal(err)
	}
	b2 := v2.Map(decode(t, v2, recordv1.Format_FORMAT_NDJSON, in2))
	if got := len(b2.Lookups()); got != 1 {
		t.Fatalf("v2 needs %d lookups, want 1 (one idmap call per batch and format pair)", got)
	}
	if got := len(b2.Lookups()[0].IDs); got != n {
		t.Fatalf("v2 lookup has %d distinct ids, want %d", got, n)
	}
	resolveAll(t, b2, fromTable(table))
	r2, err := b2.Results()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if !r1[i].OK() || !r2[i].OK() {
			t.Fatalf("record %d: v1 errors %v, v2 errors %v; want none", i, r1[i].RecordErrors(), r2[i].RecordErrors())
		}
		j1, j2 := v1.AppendJSON(nil, r1[i].Values), v2.AppendJSON(nil, r2[i].Values)
		if !bytes.Equal(j1, j2) {
			t.Fatalf("record %d: v2 gives %s, v1 gives %s; want identical", i, j2, j1)
		}
		if r1[i].ID != r2[i].ID {
			t.Fatalf("record %d: v2 id %s, v1 id %s; want identical", i, r2[i].ID, r1[i].ID)
		}
	}
	want := `{"order_id":"ORD-0000000007","customer_id":100007,"amount":27.07,"currency":"EUR","status":"cancelled","created_at":"2025-03-08T07:07:49Z","country":"FR","item_count":8,"discount":0.07,"channel":"app","email":"customer100007@example.com"}`
	if got := string(v1.AppendJSON(nil, r1[7].Values)); got != want {
		t.Errorf("record 7:\n got %s\nwant %s", got, want)
	}
}

// mapOnce maps data with plan p and returns each record's JSON or errors,
// one line per record.
func mapOnce(t *testing.T, p *mapping.Plan, data []byte, release bool) []byte {
	t.Helper()
	m := p.Map(decode(t, p, recordv1.Format_FORMAT_NDJSON, data))
	res, err := m.Results()
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, r := range res {
		if len(r.Errors) > 0 {
			out = fmt.Appendf(out, "error %v\n", r.Errors[0].Err.GetCode())
			continue
		}
		out = append(p.AppendJSON(out, r.Values), '\n')
	}
	if release {
		m.Release()
	}
	return out
}

// A plan reusing released buffers maps every batch as a fresh plan would:
// nothing of an earlier batch shows through.
func TestReleasedBuffersDoNotLeak(t *testing.T) {
	t.Parallel()
	full := []byte(`{"order_id":"ORD-0000000001","customer_id":7,"amount":10.5,"currency":"EUR","status":"paid","created_at":"2026-03-01T10:00:00Z","country":"DE","items":2,"discount":0.5,"channel":"app","email":"a@b.example","coupon":"X"}` + "\n")
	sparse := []byte(`{"order_id":"ORD-0000000002","customer_id":8,"amount":3,"currency":"USD","status":"placed","created_at":"2026-03-02T10:00:00Z","items":1}` + "\n" +
		`{"order_id":"ORD-0000000003","amount":3,"currency":"USD","status":"placed","created_at":"2026-03-02T10:00:00Z","items":1}` + "\n")
	fresh := func(data []byte) []byte {
		return mapOnce(t, compileOrders(t, examples.ShopOrdersV1(), nil), data, false)
	}
	wantFull, wantSparse := fresh(full), fresh(sparse)

	p := compileOrders(t, examples.ShopOrdersV1(), nil)
	for round := range 3 {
		if got := mapOnce(t, p, bytes.Repeat(full, 50), true); !bytes.Equal(got, bytes.Repeat(wantFull, 50)) {
			t.Fatalf("round %d: full batch\n%s\nwant\n%s", round, got, wantFull)
		}
		if got := mapOnce(t, p, sparse, true); !bytes.Equal(got, wantSparse) {
			t.Fatalf("round %d: sparse batch after a released full one\n%s\nwant\n%s", round, got, wantSparse)
		}
	}
}

// FuzzMapOrders maps arbitrary NDJSON with the shop.orders v2 plan: every
// record gets a result, a mapped record is valid JSON with a record id, and
// a failed one has errors and no values.
func FuzzMapOrders(f *testing.F) {
	f.Add(recordtest.OrdersNDJSON(3))
	f.Add([]byte(`{"order_id":"ORD-1","customer_id":"0b8e5f6a-1c2d-4e3f-8a9b-000000000007","created_at":"2025-02-30T00:00:00Z"}`))
	f.Add([]byte("{\"order_id\":\"\\u0000\\\"\",\"items\":1e400}\n{"))
	p := compileOrders(f, examples.ShopOrdersV2(), examples.CustomerCatalog())
	f.Fuzz(func(t *testing.T, data []byte) {
		batch, err := record.NewDecoder(p.Schema(), record.Options{MaxRecordBytes: 1 << 16}).Decode(recordv1.Format_FORMAT_NDJSON, data, 0)
		if err != nil {
			return
		}
		b := p.Map(batch.Records)
		resolveAll(t, b, func(id string) (string, idmapv1.TranslateStatus) {
			switch len(id) % 3 {
			case 0:
				return id, idmapv1.TranslateStatus_TRANSLATE_STATUS_HIT
			case 1:
				return "", idmapv1.TranslateStatus_TRANSLATE_STATUS_MISS
			default:
				return "42", idmapv1.TranslateStatus_TRANSLATE_STATUS_HIT
			}
		})
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
