package dryrun

import (
	"testing"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

func TestNewestWindow(t *testing.T) {
	t.Parallel()
	parts := []*gatev1.QuarantineCount{{Key: "2026-03-08", Count: 150}, {Key: "2026-03-01", Count: 500}, {Key: "2026-03-09", Count: 100}}
	tests := []struct {
		n    int
		want string
	}{
		{50, "2026-03-09"},
		{100, "2026-03-09"},
		{200, "2026-03-08"},
		{1000, "2026-03-01"}, // fewer held than asked: everything
	}
	for _, tt := range tests {
		if got := newestWindow(parts, tt.n); got != tt.want {
			t.Errorf("newestWindow(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
	if got := newestWindow(nil, 10); got != "" {
		t.Errorf("newestWindow of nothing = %q, want empty", got)
	}
}

// group rebuilds batches as the gate's replay does: JSON records as NDJSON
// lines, CSV rows under their own header, a broken record left out as
// MALFORMED.
func TestGroup(t *testing.T) {
	t.Parallel()
	sample := []*gatev1.QuarantinedRecord{
		{Id: "a", Format: recordv1.Format_FORMAT_NDJSON, Raw: []byte(`{"txn_id": "TX-1",` + "\n" + ` "memo": "two\nlines"}`)},
		{Id: "b", Format: recordv1.Format_FORMAT_CSV, Raw: []byte("txn_id,account_ref\nTX-2,ACC-00000002\r\n")},
		{Id: "c", Format: recordv1.Format_FORMAT_JSON, Raw: []byte(`{"txn_id":"TX-3"}`)},
		{Id: "d", Format: recordv1.Format_FORMAT_CSV, Raw: []byte("txn_id,account_ref\nTX-4,ACC-00000004")},
		{Id: "e", Format: recordv1.Format_FORMAT_CSV, Raw: []byte("no header line")},
		{Id: "f", Format: recordv1.Format_FORMAT_NDJSON, Raw: []byte(`{"txn_id":`)},
	}
	res := &Result{Remain: map[string]int{}}
	batches := group(sample, res)
	if len(batches) != 2 {
		t.Fatalf("%d batches, want json then the CSV header", len(batches))
	}
	if got := string(batches[0].Data); got != `{"txn_id":"TX-1","memo":"two\nlines"}`+"\n"+`{"txn_id":"TX-3"}`+"\n" {
		t.Errorf("json batch %q", got)
	}
	csv := batches[1]
	if csv.Format != recordv1.Format_FORMAT_CSV || string(csv.Data) != "txn_id,account_ref\nTX-2,ACC-00000002\nTX-4,ACC-00000004\n" || len(csv.Rows) != 2 || csv.Rows[1] != 3 {
		t.Errorf("csv batch %q rows %v", csv.Data, csv.Rows)
	}
	if res.Sampled != 2 || res.Remain["MALFORMED"] != 2 || len(res.Examples) != 2 || res.Examples[0].ID != "e" {
		t.Errorf("broken records: sampled %d remain %v examples %v, want e and f MALFORMED", res.Sampled, res.Remain, res.Examples)
	}
}
