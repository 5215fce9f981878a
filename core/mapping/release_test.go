package mapping_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/mapping"
	"github.com/seamdata/seam/core/record"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// mapOnce maps data with plan p and returns each record's JSON or errors,
// one line per record.
func mapOnce(t *testing.T, p *mapping.Plan, data []byte, release bool) []byte {
	t.Helper()
	b, err := record.NewDecoder(p.Schema(), record.Options{}).Decode(recordv1.Format_FORMAT_NDJSON, data, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := p.Map(b.Records)
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
		p, err := mapping.CompileVersion(examples.ShopOrdersV1(), examples.CommerceOrder(), 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		return mapOnce(t, p, data, false)
	}
	wantFull, wantSparse := fresh(full), fresh(sparse)

	p, err := mapping.CompileVersion(examples.ShopOrdersV1(), examples.CommerceOrder(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		if got := mapOnce(t, p, bytes.Repeat(full, 50), true); !bytes.Equal(got, bytes.Repeat(wantFull, 50)) {
			t.Fatalf("round %d: full batch\n%s\nwant\n%s", round, got, wantFull)
		}
		if got := mapOnce(t, p, sparse, true); !bytes.Equal(got, wantSparse) {
			t.Fatalf("round %d: sparse batch after a released full one\n%s\nwant\n%s", round, got, wantSparse)
		}
	}
}
