package gate

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/platform/storage/storagetest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// TestStoreConformance runs the gate's store behaviour on the embedded
// SQLite file and on PostgreSQL (set SEAM_TEST_POSTGRES_URL).
func TestStoreConformance(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, func(t *testing.T, url string) {
		p := knownPeers(t)
		a := startGate(t, p, url, nil)
		b := startGate(t, p, url, nil) // a second replica on the same store
		t.Run("replicas race one batch", func(t *testing.T) { raceReplicas(t, a, b) })
		t.Run("replicas race one partition's keys and seal", func(t *testing.T) { raceKeys(t, a, b) })
		t.Run("quarantine list, filter, page, stats, discard", func(t *testing.T) { quarantineQueries(t, a, b) })
		t.Run("alerts list and watch across replicas", func(t *testing.T) { watchAlerts(t, a, b) })
		t.Run("replicas race one replay", func(t *testing.T) { raceReplays(t, a, b) })
	})
}

// race makes n calls of do at once, alternately on replicas a and b (a
// first), and returns each call's answer and error by its number.
func race[T any](n int, a, b *gateEnv, do func(i int, e *gateEnv) (T, error)) ([]T, []error) {
	var wg sync.WaitGroup
	answers, errs := make([]T, n), make([]error, n)
	for i := range n {
		e := a
		if i%2 == 1 {
			e = b
		}
		wg.Go(func() { answers[i], errs[i] = do(i, e) })
	}
	wg.Wait()
	return answers, errs
}

// raceReplicas sends the same batch to two replicas at once, several
// times: the unique key decides, so it is written once and every answer
// is the same.
func raceReplicas(t *testing.T, a, b *gateEnv) {
	ctx := context.Background()
	req := ingest("shop.orders", "2025-02-01", "race", orders{first: 1, n: 200, amount: 85, uuids: 20})
	answers, errs := race(8, a, b, func(_ int, e *gateEnv) (*gatev1.IngestResponse, error) {
		return e.as("pipeline").Ingest(ctx, req)
	})
	fresh := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Ingest %d: %v", i, err)
		}
		if !answers[i].GetSummary().GetRetried() {
			fresh++
		}
		got := proto.CloneOf(answers[i])
		got.Summary.Retried = false
		want := proto.CloneOf(answers[0])
		want.Summary.Retried = false
		if !proto.Equal(got, want) {
			t.Fatalf("answer %d differs from answer 0: %v vs %v", i, got.GetSummary(), want.GetSummary())
		}
	}
	if fresh != 1 {
		t.Fatalf("%d of 8 concurrent sends were written, want exactly 1", fresh)
	}
	m := monitorOf(t, a, "shop.orders", "2025-02-01")
	if m.GetReceived() != 200 || m.GetBatches() != 1 || m.GetQuarantined() != 20 {
		t.Fatalf("monitor = %v, want the batch once: 200 received, 20 quarantined", m)
	}
}

// raceKeys sends the same records under eight batch ids to one partition
// through two replicas at once: the partition's key index, not a cache,
// decides, so each record is accepted exactly once and the rest are
// duplicates; two replicas sealing it at once agree on its verdict.
func raceKeys(t *testing.T, a, b *gateEnv) {
	ctx := context.Background()
	answers, errs := race(8, a, b, func(i int, e *gateEnv) (*gatev1.IngestResponse, error) {
		req := ingest("shop.orders", "2025-02-02", fmt.Sprint("keys-", i), orders{first: 1, n: 200, amount: 85})
		req.SummaryOnly = true
		return e.as("pipeline").Ingest(ctx, req)
	})
	var accepted, duplicates int64
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Ingest %d: %v", i, err)
		}
		accepted += answers[i].GetSummary().GetAccepted()
		duplicates += answers[i].GetSummary().GetDuplicates()
	}
	if accepted != 200 || duplicates != 1400 {
		t.Fatalf("accepted %d and %d duplicates over 8 sendings of 200 records, want 200 and 1400", accepted, duplicates)
	}
	states, errs := race(2, a, b, func(_ int, e *gateEnv) (*gatev1.SealPartitionResponse, error) {
		return e.as("pipeline").SealPartition(ctx, &gatev1.SealPartitionRequest{Subject: "shop.orders", Partition: "2025-02-02"})
	})
	for i, st := range states {
		if p := st.GetPartition(); errs[i] != nil || p.GetStatus() != gatev1.PartitionStatus_PARTITION_STATUS_SEALED || p.GetCounts().GetAccepted() != 200 ||
			p.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED {
			t.Fatalf("seal on replica %d = %v (%v), want the partition sealed PASSED with 200 accepted", i, p, errs[i])
		}
	}
}

func quarantineQueries(t *testing.T, a, b *gateEnv) {
	ctx := context.Background()
	for i, part := range []string{"2025-02-10", "2025-02-11", "2025-02-12"} {
		if _, err := a.as("pipeline").Ingest(ctx, ingest("shop.orders", part, "q", orders{first: 10000 + i*100, n: 50, amount: 85, uuids: 30})); err != nil {
			t.Fatalf("Ingest %s: %v", part, err)
		}
	}
	f := &gatev1.QuarantineFilter{Subject: "shop.orders", PartitionFrom: "2025-02-10", PartitionTo: "2025-02-12"}
	var all []*gatev1.QuarantinedRecord
	tok := ""
	for page := 0; ; page++ {
		resp, err := b.as("viewer").ListQuarantine(ctx, &gatev1.ListQuarantineRequest{Filter: f, PageSize: 7, PageToken: tok})
		if err != nil {
			t.Fatalf("ListQuarantine page %d: %v", page, err)
		}
		all = append(all, resp.GetRecords()...)
		if tok = resp.GetNextPageToken(); tok == "" {
			break
		}
		if page > 20 {
			t.Fatalf("paging does not end")
		}
	}
	if len(all) != 90 {
		t.Fatalf("listed %d records over pages, want 90", len(all))
	}
	seen := map[string]bool{}
	for i, q := range all {
		if seen[q.GetId()] {
			t.Fatalf("record %s listed twice", q.GetId())
		}
		seen[q.GetId()] = true
		if i > 0 && q.GetPartition() < all[i-1].GetPartition() {
			t.Fatalf("records out of partition order at %d", i)
		}
		if q.GetState() != gatev1.QuarantineState_QUARANTINE_STATE_HELD || q.GetContractVersion() != 1 || q.GetFormat() != recordv1.Format_FORMAT_NDJSON || len(q.GetRaw()) == 0 || q.GetPosition() < 1 {
			t.Fatalf("record = %v, want HELD, v1, NDJSON, raw bytes and a position", q)
		}
	}
	one, err := b.as("viewer").GetQuarantinedRecord(ctx, &gatev1.GetQuarantinedRecordRequest{Id: all[0].GetId()})
	if err != nil || !proto.Equal(one.GetRecord(), all[0]) {
		t.Fatalf("GetQuarantinedRecord = %v (%v), want the listed record", one.GetRecord(), err)
	}
	if _, err := b.as("viewer").GetQuarantinedRecord(ctx, &gatev1.GetQuarantinedRecordRequest{Id: "nope"}); status.Code(err) != codes.NotFound {
		t.Fatalf("GetQuarantinedRecord(nope) = %v, want NotFound", err)
	}
	byReason, err := b.as("viewer").ListQuarantine(ctx, &gatev1.ListQuarantineRequest{Filter: &gatev1.QuarantineFilter{Subject: "shop.orders", Reason: "TYPE_MISMATCH", Check: "customer_id.type", PartitionFrom: "2025-02-11", PartitionTo: "2025-02-11"}})
	if err != nil || len(byReason.GetRecords()) != 30 {
		t.Fatalf("filter by reason/check/partition = %d records (%v), want 30", len(byReason.GetRecords()), err)
	}
	// A check filter matches one check name exactly: LIKE wildcards in it
	// match only themselves, and a discard through them discards nothing.
	for _, pattern := range []string{"%", "customer_id%", "c_stomer_id.type", "customer_id.typ"} {
		f := &gatev1.QuarantineFilter{Subject: "shop.orders", Check: pattern}
		got, err := b.as("viewer").ListQuarantine(ctx, &gatev1.ListQuarantineRequest{Filter: f})
		if err != nil || len(got.GetRecords()) != 0 {
			t.Fatalf("check filter %q listed %d records (%v), want 0", pattern, len(got.GetRecords()), err)
		}
		d, err := a.as("operator").DiscardQuarantined(ctx, &gatev1.DiscardQuarantinedRequest{Filter: f, Reason: "pattern test"})
		if err != nil || d.GetDiscarded() != 0 {
			t.Fatalf("discard by check filter %q = %v (%v), want 0", pattern, d, err)
		}
	}
	if _, err := b.as("viewer").ListQuarantine(ctx, &gatev1.ListQuarantineRequest{Filter: &gatev1.QuarantineFilter{Reason: "NOPE"}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("unknown reason = %v, want InvalidArgument", err)
	}
	stats, err := a.as("viewer").GetQuarantineStats(ctx, &gatev1.GetQuarantineStatsRequest{Filter: f})
	if err != nil || stats.GetTotal() != 90 || len(stats.GetByPartition()) != 3 || stats.GetByReason()[0].GetKey() != "TYPE_MISMATCH" || stats.GetByCheck()[0].GetKey() != "customer_id.type" {
		t.Fatalf("stats = %v (%v), want 90 in 3 partitions, all TYPE_MISMATCH of customer_id.type", stats, err)
	}

	if _, err := a.as("pipeline").DiscardQuarantined(ctx, &gatev1.DiscardQuarantinedRequest{Ids: []string{all[0].GetId()}, Reason: "x"}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("pipeline discard = %v, want PermissionDenied", err)
	}
	if _, err := a.as("operator").DiscardQuarantined(ctx, &gatev1.DiscardQuarantinedRequest{Ids: []string{all[0].GetId()}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("discard without reason = %v, want InvalidArgument", err)
	}
	d, err := a.as("operator").DiscardQuarantined(ctx, &gatev1.DiscardQuarantinedRequest{Filter: &gatev1.QuarantineFilter{Subject: "shop.orders", PartitionFrom: "2025-02-12", PartitionTo: "2025-02-12"}, Reason: "test orders"})
	if err != nil || d.GetDiscarded() != 30 {
		t.Fatalf("discard by filter = %v (%v), want 30", d, err)
	}
	d, err = a.as("operator").DiscardQuarantined(ctx, &gatev1.DiscardQuarantinedRequest{Filter: &gatev1.QuarantineFilter{Subject: "shop.orders", PartitionFrom: "2025-02-12", PartitionTo: "2025-02-12"}, Reason: "again"})
	if err != nil || d.GetDiscarded() != 0 {
		t.Fatalf("second discard = %v (%v), want 0", d, err)
	}
	gone, err := b.as("viewer").ListQuarantine(ctx, &gatev1.ListQuarantineRequest{Filter: &gatev1.QuarantineFilter{Subject: "shop.orders", PartitionFrom: "2025-02-12", PartitionTo: "2025-02-12", State: gatev1.QuarantineState_QUARANTINE_STATE_DISCARDED}})
	if err != nil || len(gone.GetRecords()) != 30 || gone.GetRecords()[0].GetStateReason() != "test orders" || gone.GetRecords()[0].GetStateBy() != "operator" {
		t.Fatalf("discarded records = %d (%v), want 30 with reason and operator", len(gone.GetRecords()), err)
	}
	var audited int
	if err := a.srv.store.(*sqlStore).db.SQL.QueryRowContext(ctx, `SELECT COUNT(*) FROM gate_audit WHERE action = 'DISCARD' AND principal = 'operator'`).Scan(&audited); err != nil || audited != 6 {
		t.Fatalf("audit rows = %d (%v), want 6 (four pattern discards of nothing, two real ones)", audited, err)
	}
}

func watchAlerts(t *testing.T, a, b *gateEnv) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	listed, err := a.as("viewer").ListAlerts(ctx, &gatev1.ListAlertsRequest{Subject: "shop.orders"})
	if err != nil {
		t.Fatalf("ListAlerts: %v", err)
	}
	after := int64(0)
	if n := len(listed.GetAlerts()); n > 0 {
		after = listed.GetAlerts()[n-1].GetSequence()
	}
	stream, err := b.as("viewer").WatchAlerts(ctx, &gatev1.WatchAlertsRequest{Subject: "shop.orders", AfterSequence: after})
	if err != nil {
		t.Fatalf("WatchAlerts: %v", err)
	}
	// A new partition whose identifiers all miss raises a match-rate alert
	// at its seal on replica a; the watcher on replica b must see it.
	req := ingest("shop.orders", "2025-02-20", "w", orders{first: 20000, n: 50, amount: 85, unknown: 1})
	req.Seal = true
	if _, err := a.as("pipeline").Ingest(ctx, req); err != nil {
		t.Fatalf("Ingest: %v", err)
	}
	msg, err := stream.Recv()
	if err != nil {
		t.Fatalf("WatchAlerts Recv: %v", err)
	}
	if msg.GetAlert().GetKind() != "MATCH_RATE" || msg.GetAlert().GetPartition() != "2025-02-20" || msg.GetAlert().GetSequence() <= after {
		t.Fatalf("watched alert = %v, want the MATCH_RATE alert of 2025-02-20", msg.GetAlert())
	}
}

// raceReplays runs two replays of one window on two replicas at once:
// every record is released by exactly one of them.
func raceReplays(t *testing.T, a, b *gateEnv) {
	ctx := context.Background()
	if _, err := a.as("pipeline").Ingest(ctx, ingest("shop.orders.race", "x", "x", orders{})); status.Code(err) != codes.NotFound {
		t.Fatalf("unregistered subject = %v, want NotFound", err)
	}
	for i := range 4 {
		if _, err := a.as("pipeline").Ingest(ctx, ingest("shop.orders", fmt.Sprintf("2025-02-2%d", 5+i), "r", orders{first: 30000 + i*100, n: 60, amount: 85, uuids: 60})); err != nil {
			t.Fatalf("Ingest: %v", err)
		}
	}
	a.registerV2(t)
	a.loadLookup()
	w := &gatev1.ReplayWindow{Subject: "shop.orders", PartitionFrom: "2025-02-25", PartitionTo: "2025-02-28"}
	got, errs := race(2, a, b, func(i int, e *gateEnv) ([]*recordv1.CanonicalRecord, error) {
		r, err := replayAll(ctx, e, &gatev1.ReplayRequest{Window: w, ReplayId: fmt.Sprint("race-", i)})
		return r.records, err
	})
	for _, err := range errs {
		if err != nil {
			t.Fatalf("Replay: %v", err)
		}
	}
	ids := map[string]int{}
	for _, rs := range got {
		for _, r := range rs {
			ids[r.GetRecordId()]++
		}
	}
	if len(ids) != 240 {
		t.Fatalf("released %d distinct records, want 240", len(ids))
	}
	for id, n := range ids {
		if n != 1 {
			t.Fatalf("record %s released %d times", id, n)
		}
	}
}
