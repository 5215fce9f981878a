package gate

import (
	"bytes"
	"context"
	"testing"
)

// Records that passed the checks go to the adapter as the values the gate
// decoded; an adapter that predates decoded records refuses them, and the
// gate sends records to it as raw bytes from then on. Both ways give the
// same canonical records.
func TestAdapterGetsDecodedRecordsOrRawFromALegacyAdapter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.knowCustomers()
	ctx := context.Background()
	send := func(partition string) [][]byte {
		t.Helper()
		resp, err := e.as("pipeline").Ingest(ctx, ingest("shop.orders", partition, "b1", orders{first: 1, n: 40, amount: 85}))
		if err != nil || resp.GetSummary().GetAccepted() != 40 {
			t.Fatalf("Ingest into %s = %v (%v), want 40 accepted", partition, resp.GetSummary(), err)
		}
		var out [][]byte
		for _, v := range resp.GetRecords() {
			out = append(out, v.GetRecord().GetJson())
		}
		return out
	}
	decoded := send("2025-03-01")
	if got := e.adapter.Decoded(); got != 40 {
		t.Fatalf("the adapter got %d records decoded, want all 40", got)
	}
	e.adapter.SetLegacy(true)
	raw := send("2025-03-02")
	if got, all := e.adapter.Decoded(), e.adapter.Records(); got != 40 || all != 80 {
		t.Fatalf("after the adapter refused decoded records: %d decoded of %d adapted, want 40 of 80", got, all)
	}
	if e.srv.rawToAdapter.Load() != true {
		t.Fatal("the gate did not note that the adapter wants raw bytes")
	}
	for i := range decoded {
		if len(decoded[i]) == 0 || !bytes.Equal(decoded[i], raw[i]) {
			t.Fatalf("record %d: %s decoded, %s raw", i, decoded[i], raw[i])
		}
	}
}
