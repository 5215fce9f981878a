package gate

import (
	"bytes"
	"context"
	"testing"

	"github.com/klauspost/compress/s2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/rpcerr"
	"github.com/seamdata/seam/platform/storage/storagetest"
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

// A batch's canonical records are kept packed (ids as bytes, provenance
// once, nothing of the quarantined records but their place) and
// compressed, and a retry reads them back as they were answered; answers
// kept in the earlier forms (packed uncompressed, one record at a time)
// still read back.
func TestKeptAnswersPackedAndPerRecord(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, func(t *testing.T, url string) {
		p := newPeers(t)
		p.knowCustomers()
		e := startGate(t, p, url, nil)
		ctx := context.Background()
		db := e.srv.store.(*sqlStore).db
		req := ingest("shop.orders", "2025-03-01", "b1", orders{first: 1, n: 30, amount: 85, missing: 3})
		first, err := e.as("pipeline").Ingest(ctx, req)
		if err != nil || first.GetSummary().GetAccepted() != 27 {
			t.Fatalf("Ingest = %v (%v), want 27 accepted", first.GetSummary(), err)
		}
		var form int
		var kept []byte
		if err := db.SQL.QueryRowContext(ctx, `SELECT form, records FROM gate_answers WHERE batch_id = $1`, "b1").Scan(&form, &kept); err != nil {
			t.Fatal(err)
		}
		perRecord, err := encodeRecords(first.GetRecords())
		if err != nil {
			t.Fatal(err)
		}
		packed, err := s2.Decode(nil, kept)
		if answerForm(form) != answerPackedS2 || err != nil || len(packed) >= len(perRecord)*3/4 || len(kept) >= len(packed)/2 {
			t.Fatalf("kept answer: form %d, %d bytes, %d decompressed (%v); want packed and compressed, under 3/4 of the %d bytes kept per record, then under half",
				form, len(kept), len(packed), err, len(perRecord))
		}
		retry := func(what string) {
			t.Helper()
			again, err := e.as("pipeline").Ingest(ctx, req)
			if err != nil || !again.GetSummary().GetRetried() {
				t.Fatalf("%s: retry = %v (%v)", what, again.GetSummary(), err)
			}
			sameVerdicts(t, what, again.GetRecords(), first.GetRecords())
		}
		retry("packed kept answer")
		if _, err := db.SQL.ExecContext(ctx, `UPDATE gate_answers SET form = $1, records = $2 WHERE batch_id = $3`, int(answerPacked), packed, "b1"); err != nil {
			t.Fatal(err)
		}
		retry("answer kept packed, uncompressed")
		if _, err := db.SQL.ExecContext(ctx, `UPDATE gate_answers SET form = $1, records = $2 WHERE batch_id = $3`, int(answerPerRecord), perRecord, "b1"); err != nil {
			t.Fatal(err)
		}
		retry("answer kept per record")
	})
}

// Only an adapter's refusal of a call without a batch sends records raw
// from then on; a refusal of the decoded records is its error to report.
func TestPredatesDecoded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{rpcerr.InvalidArgument("invalid adapt request: batch: no records", rpcerr.FieldViolation{Field: "batch", Description: "no records"}), true},
		{rpcerr.InvalidArgument("decode packed records: record 3", rpcerr.FieldViolation{Field: "decoded", Description: "record 3"}), false},
		{status.Error(codes.InvalidArgument, "no details"), false},
		{status.Error(codes.Unavailable, "adapter down"), false},
		{nil, false},
	} {
		if got := predatesDecoded(tc.err); got != tc.want {
			t.Errorf("predatesDecoded(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// The identifiers the gate asks idmap about go packed in one buffer; an
// idmap that predates packed ids finds none and answers none, and the
// gate asks it a string per id from then on. Both ways count the same
// matches.
func TestIdmapGetsPackedIDsOrStringsFromALegacyIdmap(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.knowCustomers()
	ctx := context.Background()
	send := func(partition string) float64 {
		t.Helper()
		// Every 4th record's customer is one idmap does not know.
		resp, err := e.as("pipeline").Ingest(ctx, ingest("shop.orders", partition, "b1", orders{first: 1, n: 40, amount: 85, unknown: 4}))
		if err != nil || resp.GetSummary().GetReceived() != 40 {
			t.Fatalf("Ingest into %s = %v (%v)", partition, resp.GetSummary(), err)
		}
		return monitorOf(t, e, "shop.orders", partition).GetMatchRate()
	}
	packed := send("2025-03-01")
	if got := e.idmap.Packed(); got != 1 {
		t.Fatalf("idmap answered %d calls from packed ids, want 1", got)
	}
	e.idmap.SetLegacy(true)
	strs := send("2025-03-02")
	if !e.srv.idsAsStrings.Load() {
		t.Fatal("the gate did not note that idmap wants a string per id")
	}
	if packed != strs || packed <= 0 || packed >= 1 {
		t.Fatalf("match rate %v asked packed, %v asked a string per id; want the same, between 0 and 1", packed, strs)
	}
}
