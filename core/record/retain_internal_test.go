package record

import (
	"fmt"
	"testing"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// A decoder whose caller never calls Recycle keeps no batch's memory: the
// batches it returned are the caller's, and collected when dropped.
func TestDecoderWithoutRecycleRetainsNothing(t *testing.T) {
	s, err := NewSchema([]*contractv1.Field{
		{Name: "id", Type: contractv1.FieldType_FIELD_TYPE_STRING},
		{Name: "n", Type: contractv1.FieldType_FIELD_TYPE_INT64},
	})
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	for i := range 1000 {
		data = fmt.Appendf(data, `{"id":"r%d","n":%d,"extra%d":1}`+"\n", i, i, i%7)
	}
	d := NewDecoder(s, Options{})
	for range 20 {
		if _, err := d.Decode(recordv1.Format_FORMAT_NDJSON, data, 0); err != nil {
			t.Fatal(err)
		}
	}
	if len(d.slabs) != 0 {
		t.Fatalf("a decoder never recycled keeps %d value slabs alive", len(d.slabs))
	}
	// The names of undeclared fields refer into the batch's bytes.
	if len(d.names) > 1000 {
		t.Fatalf("a decoder never recycled keeps %d names of undeclared fields, and the batches they refer into", len(d.names))
	}
	for range 20 {
		d.Recycle()
		if _, err := d.Decode(recordv1.Format_FORMAT_NDJSON, data, 0); err != nil {
			t.Fatal(err)
		}
	}
	if len(d.slabs) > 4 {
		t.Fatalf("a decoder recycled before every batch holds %d slabs; one batch needs 4", len(d.slabs))
	}
	if len(d.names) > 1000 {
		t.Fatalf("a decoder recycled before every batch holds %d names of undeclared fields; one batch has 1000", len(d.names))
	}
}
