package gate

import (
	"context"
	"testing"

	"github.com/klauspost/compress/s2"

	"github.com/seamdata/seam/platform/storage/storagetest"
)

// Records that passed the checks go to the adapter as the values the gate
// decoded, not as bytes for it to parse again.
func TestAdapterGetsDecodedRecords(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	resp, err := e.as("pipeline").Ingest(context.Background(), ingest("shop.orders", "2025-03-01", "b1", orders{first: 1, n: 40, amount: 85}))
	if err != nil || resp.GetSummary().GetAccepted() != 40 {
		t.Fatalf("Ingest = %v (%v), want 40 accepted", resp.GetSummary(), err)
	}
	if got, all := e.adapter.Decoded(), e.adapter.Records(); got != 40 || all != 40 {
		t.Fatalf("the adapter got %d records decoded of %d, want all 40", got, all)
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
		e := startGate(t, knownPeers(t), url, nil)
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

// The identifiers the gate asks idmap about go packed in one buffer, one
// call per identifier field, and the matches count as idmap answered.
func TestIdmapGetsPackedIDs(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	// Every 4th record's customer is one idmap does not know.
	resp, err := e.as("pipeline").Ingest(context.Background(), ingest("shop.orders", "2025-03-01", "b1", orders{first: 1, n: 40, amount: 85, unknown: 4}))
	if err != nil || resp.GetSummary().GetReceived() != 40 {
		t.Fatalf("Ingest = %v (%v)", resp.GetSummary(), err)
	}
	if got := e.idmap.Packed(); got != 1 {
		t.Fatalf("idmap answered %d calls from packed ids, want 1", got)
	}
	if rate := monitorOf(t, e, "shop.orders", "2025-03-01").GetMatchRate(); rate != 0.75 {
		t.Fatalf("match rate %v, want 0.75 (every 4th customer unknown)", rate)
	}
}
