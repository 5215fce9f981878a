package record_test

import (
	"bytes"
	"testing"

	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/record/recordtest"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

func encodeAll(s *record.Schema, b *record.Batch) []byte {
	var out []byte
	for _, r := range b.Records {
		out = record.AppendJSON(out, s, r.Values)
		out = append(out, '\n')
	}
	return out
}

// A decoder reused with Recycle decodes every batch as a fresh decoder
// would, and without Recycle earlier batches stay intact.
func TestDecoderRecycle(t *testing.T) {
	t.Parallel()
	s := recordtest.OrderSchema()
	first := recordtest.OrdersNDJSON(700)
	// A second batch where half the records lack most fields: stale values
	// of the first batch must not show through.
	var second []byte
	for i, line := range bytes.Split(bytes.TrimSpace(recordtest.OrdersNDJSON(900)), []byte("\n")) {
		if i%2 == 0 {
			line = []byte(`{"order_id":"ORD-9999999999"}`)
		}
		second = append(append(second, line...), '\n')
	}
	want1 := encodeAll(s, mustDecode(t, record.NewDecoder(s, record.Options{}), first))
	want2 := encodeAll(s, mustDecode(t, record.NewDecoder(s, record.Options{}), second))

	d := record.NewDecoder(s, record.Options{})
	b1 := mustDecode(t, d, first)
	b2 := mustDecode(t, d, second)
	if got := encodeAll(s, b1); !bytes.Equal(got, want1) {
		t.Fatal("without Recycle, decoding a second batch changed the first")
	}
	if got := encodeAll(s, b2); !bytes.Equal(got, want2) {
		t.Fatal("second batch decoded differently by a used decoder")
	}
	for round := range 3 {
		d.Recycle()
		if got := encodeAll(s, mustDecode(t, d, second)); !bytes.Equal(got, want2) {
			t.Fatalf("round %d: recycled decoder decoded the sparse batch differently", round)
		}
		d.Recycle()
		if got := encodeAll(s, mustDecode(t, d, first)); !bytes.Equal(got, want1) {
			t.Fatalf("round %d: recycled decoder decoded the full batch differently", round)
		}
	}
}

func mustDecode(t *testing.T, d *record.Decoder, data []byte) *record.Batch {
	t.Helper()
	b, err := d.Decode(recordv1.Format_FORMAT_NDJSON, data, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A recycled decoder allocates nothing per record for a batch like the
// ones before it: its records and their values reuse the earlier batches'
// memory (the Batch itself is the one allocation left).
func TestDecoderRecycleAllocations(t *testing.T) {
	s := recordtest.OrderSchema()
	data := recordtest.OrdersNDJSON(500)
	d := record.NewDecoder(s, record.Options{})
	mustDecode(t, d, data)
	d.Recycle()
	allocs := testing.AllocsPerRun(10, func() {
		mustDecode(t, d, data)
		d.Recycle()
	})
	if allocs > 1 {
		t.Errorf("%.0f allocations a recycled batch of 500 records, want at most 1", allocs)
	}
}
