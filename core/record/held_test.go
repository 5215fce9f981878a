package record_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/seamdata/seam/core/record"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// TestHeldBatches: held records are regrouped as the gate's replay reads
// them: JSON records as compact NDJSON lines, CSV rows under their own
// header (without a trailing line break), in the order of each batch's
// first record; a broken record goes in no batch.
func TestHeldBatches(t *testing.T) {
	t.Parallel()
	held := []record.Held{
		{ID: "a", Format: recordv1.Format_FORMAT_NDJSON, Raw: []byte(`{"txn_id": "TX-1",` + "\n" + ` "memo": "two\nlines"}`)},
		{ID: "b", Format: recordv1.Format_FORMAT_CSV, Raw: []byte("txn_id,account_ref\nTX-2,ACC-00000002\r\n")},
		{ID: "c", Format: recordv1.Format_FORMAT_JSON, Raw: []byte(`{"txn_id":"TX-3"}`)},
		{ID: "d", Format: recordv1.Format_FORMAT_CSV, Raw: []byte("txn_id,account_ref\nTX-4,ACC-00000004")},
		{ID: "e", Format: recordv1.Format_FORMAT_CSV, Raw: []byte("no header line")},
		{ID: "f", Position: 7, Format: recordv1.Format_FORMAT_NDJSON, Raw: []byte(`{"txn_id":`)},
		{ID: "g", Format: recordv1.Format_FORMAT_CSV, Raw: []byte("account_ref\nACC-00000005")},
	}
	var g record.HeldBatches
	var errs []string
	for i, h := range held {
		if err := g.Add(i, h); err != nil {
			errs = append(errs, err.Error())
		}
	}
	type want struct {
		format recordv1.Format
		header string
		data   string
		rows   []int
	}
	wants := []want{
		{recordv1.Format_FORMAT_NDJSON, "", `{"txn_id":"TX-1","memo":"two\nlines"}` + "\n" + `{"txn_id":"TX-3"}` + "\n", []int{0, 2}},
		{recordv1.Format_FORMAT_CSV, "txn_id,account_ref", "txn_id,account_ref\nTX-2,ACC-00000002\nTX-4,ACC-00000004\n", []int{1, 3}},
		{recordv1.Format_FORMAT_CSV, "account_ref", "account_ref\nACC-00000005\n", []int{6}},
	}
	if len(g.Batches) != len(wants) {
		t.Fatalf("%d batches, want %d", len(g.Batches), len(wants))
	}
	for i, w := range wants {
		b := g.Batches[i]
		if b.Format != w.format || string(b.Header) != w.header || string(b.Data) != w.data || !slices.Equal(b.Rows, w.rows) {
			t.Errorf("batch %d: %v header %q data %q rows %v; want %v header %q data %q rows %v", i, b.Format, b.Header, b.Data, b.Rows, w.format, w.header, w.data, w.rows)
		}
	}
	if len(errs) != 2 || errs[0] != "held CSV record e has no header line" ||
		!strings.HasPrefix(errs[1], "held record f at position 7 is not a JSON object: ") {
		t.Errorf("errors %q, want e without its header line and f not a JSON object", errs)
	}
}
