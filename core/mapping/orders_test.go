package mapping_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/mapping"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/record/recordtest"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// customerCatalog is the customer namespace as idmap has it.
var customerCatalog = mapping.StaticCatalog{"customer": {
	{Name: "legacy-int", Kind: idmapv1.FormatKind_FORMAT_KIND_INT},
	{Name: "uuid", Kind: idmapv1.FormatKind_FORMAT_KIND_UUID},
}}

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

// table answers translations from a map, as an idmap lookup table would.
func resolveAll(t testing.TB, b *mapping.Batch, table map[string]string) {
	t.Helper()
	for _, l := range b.Lookups() {
		values := make([]string, len(l.IDs))
		statuses := make([]idmapv1.TranslateStatus, len(l.IDs))
		for i, id := range l.IDs {
			if v, ok := table[id]; ok {
				values[i], statuses[i] = v, idmapv1.TranslateStatus_TRANSLATE_STATUS_HIT
			} else {
				statuses[i] = idmapv1.TranslateStatus_TRANSLATE_STATUS_MISS
			}
		}
		if err := l.Resolve(values, statuses); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOrdersV1AndV2AgreeOnCanonical is the source document's case: the same
// orders sent by v1 (integer customer ids) and by v2 (UUIDs, translated
// through the idmap table) become byte-identical canonical records with the
// same record ids, so nothing downstream notices the format change.
func TestOrdersV1AndV2AgreeOnCanonical(t *testing.T) {
	t.Parallel()
	canonical := examples.CommerceOrder()
	v1, err := mapping.CompileVersion(examples.ShopOrdersV1(), canonical, 1, customerCatalog)
	if err != nil {
		t.Fatalf("compile v1: %v", err)
	}
	v2, err := mapping.CompileVersion(examples.ShopOrdersV2(), canonical, 1, customerCatalog)
	if err != nil {
		t.Fatalf("compile v2: %v", err)
	}
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
	resolveAll(t, b2, table)
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
