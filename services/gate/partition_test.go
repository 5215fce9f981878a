package gate

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/seamdata/seam/platform/rpcerr"
	"github.com/seamdata/seam/platform/storage/storagetest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// payIngest is an NDJSON batch of bank.payments lines.
func payIngest(part, batchID string, lines []string) *gatev1.IngestRequest {
	return &gatev1.IngestRequest{Subject: "bank.payments", Partition: part, Identity: &gatev1.IngestRequest_BatchId{BatchId: batchID}, SummaryOnly: true,
		Batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: []byte(strings.Join(lines, "\n"))}}}}
}

func mustIngest(t *testing.T, e *gateEnv, req *gatev1.IngestRequest) *gatev1.IngestResponse {
	t.Helper()
	resp, err := e.as("pipeline").Ingest(context.Background(), req)
	if err != nil {
		t.Fatalf("Ingest %s/%s: %v", req.GetPartition(), req.GetBatchId(), err)
	}
	return resp
}

// A blocked day is resent corrected as a replacement: the new sending
// supersedes the first atomically, so the day counts once and passes; the
// first sending's held records are kept, SUPERSEDED, counted nowhere. A
// plain resend of keys already accepted quarantines them as duplicates.
func TestReplaceAndDuplicates(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, func(t *testing.T, url string) {
		e, _ := paymentsEnv(t, url, nil)
		ctx := context.Background()
		bad := paymentsDay{day: 3, n: 1000, missing: 6}.lines()
		mustIngest(t, e, payIngest(payDay(3), "a", bad[:500]))
		r := mustIngest(t, e, payIngest(payDay(3), "b", bad[500:]))
		if p := r.GetPartition(); p.GetCounts().GetQuarantined() != 6 || !strings.Contains(p.GetNotice(), "over a BLOCK threshold so far") {
			t.Fatalf("partition after the day = %v, want 6 quarantined and over its threshold so far", p)
		}
		if s := sealOf(t, e, "bank.payments", payDay(3)); s.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED {
			t.Fatalf("sealed = %v, want BLOCKED (6 of 1000 missing against 0.5%%)", s)
		}

		good := paymentsDay{day: 3, n: 1000}.lines()
		first := payIngest(payDay(3), "fix-a", good[:500])
		first.Replace = true
		r = mustIngest(t, e, first)
		if p := r.GetPartition(); p.GetAttempt() != 2 || p.GetStatus() != gatev1.PartitionStatus_PARTITION_STATUS_OPEN || p.GetCounts().GetReceived() != 500 {
			t.Fatalf("after the replacing batch: %v, want sending 2, open, 500 records", p)
		}
		last := payIngest(payDay(3), "fix-b", good[500:])
		last.Seal = true
		r = mustIngest(t, e, last)
		if p := r.GetPartition(); p.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED || p.GetCounts().GetReceived() != 1000 ||
			p.GetCounts().GetAccepted() != 1000 || p.GetCounts().GetDuplicates() != 0 {
			t.Fatalf("the corrected day = %v, want PASSED with 1000 records counted once", p)
		}
		// The first sending's block no longer holds: the replacement
		// resolved it.
		alerts, err := e.as("viewer").ListAlerts(ctx, &gatev1.ListAlertsRequest{Subject: "bank.payments", Kind: "PARTITION_BLOCKED"})
		if err != nil || len(alerts.GetAlerts()) != 1 || alerts.GetAlerts()[0].GetState() != gatev1.AlertState_ALERT_STATE_RESOLVED ||
			alerts.GetAlerts()[0].GetResolvedBy() != "partition "+payDay(3)+" attempt 2" {
			t.Fatalf("PARTITION_BLOCKED alerts after the replacement = %v (%v), want the first sending's, RESOLVED by partition %s attempt 2", alerts.GetAlerts(), err, payDay(3))
		}
		if m := monitorOf(t, e, "bank.payments", payDay(3)); m.GetReceived() != 1000 || m.GetQuarantined() != 0 || m.GetBlocked() != 0 || m.GetAttempt() != 2 {
			t.Fatalf("monitor = %v, want the second sending only", m)
		}
		if held := quarantineStats(t, e, &gatev1.QuarantineFilter{Subject: "bank.payments"}); held.GetTotal() != 0 {
			t.Fatalf("held after the replacement = %v, want none", held)
		}
		if superseded := quarantineList(t, e, &gatev1.QuarantineFilter{Subject: "bank.payments", State: gatev1.QuarantineState_QUARANTINE_STATE_SUPERSEDED}); len(superseded) != 6 {
			t.Fatalf("superseded = %d records, want the first sending's 6", len(superseded))
		}
		// A retried replacing batch does not replace again.
		if r := mustIngest(t, e, first); !r.GetSummary().GetRetried() || r.GetPartition().GetAttempt() != 2 {
			t.Fatalf("retried replacing batch = %v, partition %v; want a retry, still sending 2", r.GetSummary(), r.GetPartition())
		}

		// A plain resend of the accepted day: every key is already in.
		dup := mustIngest(t, e, payIngest(payDay(3), "resend", good[:300]))
		if s := dup.GetSummary(); s.GetAccepted() != 0 || s.GetQuarantined() != 300 || s.GetDuplicates() != 300 {
			t.Fatalf("plain resend = %v, want all 300 quarantined as duplicates", s)
		}
		if dup.GetPartition().GetAmendment() != 1 {
			t.Fatalf("the resend went to %v, want amendment 1 of the sealed day", dup.GetPartition())
		}
		m := monitorOf(t, e, "bank.payments", payDay(3))
		if m.GetAccepted() != 1000 || m.GetDuplicates() != 300 {
			t.Fatalf("monitor = %v, want 1000 accepted once and 300 duplicates", m)
		}
		list, err := e.as("viewer").ListQuarantine(ctx, &gatev1.ListQuarantineRequest{PageSize: 1, Filter: &gatev1.QuarantineFilter{Subject: "bank.payments", Reason: "DUPLICATE_KEY"}})
		if err != nil || len(list.GetRecords()) != 1 || list.GetRecords()[0].GetAmendment() != 1 {
			t.Fatalf("duplicates in quarantine = %v (%v), want held DUPLICATE_KEY records of amendment 1", list.GetRecords(), err)
		}
	})
}

// A partition the watermark has already passed, sent in several batches
// (a replacement of an old day, or an old day sent for the first time),
// is one unit judged whole: the watermark does not seal it between its
// own batches, and the seal judges all of it.
func TestWatermarkDoesNotSealALatePartitionBetweenItsBatches(t *testing.T) {
	t.Parallel()
	e, _ := paymentsEnv(t, storagetest.SQLiteURL(t), nil)
	for d := range 4 {
		req := payIngest(payDay(d), "day", paymentsDay{day: d, n: 200}.lines())
		req.Seal = true
		mustIngest(t, e, req)
	}
	for _, tc := range []struct {
		name    string
		day     int
		replace bool
	}{{"replacement of a sealed day", 0, true}, {"first sending of a day the watermark passed", 5, false}} {
		// Day 5 is sent after day 6 moved the watermark past it.
		if tc.day == 5 {
			mustIngest(t, e, payIngest(payDay(6), "day", paymentsDay{day: 6, n: 200}.lines()))
		}
		lines := paymentsDay{day: tc.day, n: 200}.lines()
		for i, part := range [][]string{lines[:100], lines[100:]} {
			req := payIngest(payDay(tc.day), fmt.Sprintf("again-%d", i), part)
			req.Replace = tc.replace && i == 0
			req.Seal = i == 1
			r := mustIngest(t, e, req)
			if i == 0 && r.GetPartition().GetStatus() != gatev1.PartitionStatus_PARTITION_STATUS_OPEN {
				t.Fatalf("%s: after its first batch the partition is %v, want open", tc.name, r.GetPartition())
			}
			if i == 1 {
				p := r.GetPartition()
				if p.GetAmendment() != 0 || p.GetCounts().GetReceived() != 200 || p.GetSealCause() != gatev1.SealCause_SEAL_CAUSE_REQUEST {
					t.Errorf("%s: sealed as %v, want amendment 0 holding all 200 records, sealed on request", tc.name, p)
				}
			}
		}
	}
}

// Records for a sealed partition open an amendment, judged and sealed on
// its own; the partition's own verdict stays. With a partition time, the
// watermark seals a day once records a day (the allowed lateness) past
// its end arrive, and records must belong to the day they are sent for.
func TestAmendmentsAndWatermark(t *testing.T) {
	t.Parallel()
	e, _ := paymentsEnv(t, storagetest.SQLiteURL(t), nil)
	ctx := context.Background()
	for d := range 3 {
		r := mustIngest(t, e, payIngest(payDay(d), "day", paymentsDay{day: d, n: 200}.lines()))
		if st := r.GetPartition().GetStatus(); st != gatev1.PartitionStatus_PARTITION_STATUS_OPEN {
			t.Fatalf("day %d: %v, want open", d, st)
		}
	}
	// Day 2's records reach 2026-10-03 23:52, past day 0's end plus a day.
	got := func(d int) *gatev1.PartitionState {
		resp, err := e.as("viewer").GetPartition(ctx, &gatev1.GetPartitionRequest{Subject: "bank.payments", Partition: payDay(d)})
		if err != nil {
			t.Fatalf("GetPartition %s: %v", payDay(d), err)
		}
		return resp.GetPartition()
	}
	if p := got(0); p.GetStatus() != gatev1.PartitionStatus_PARTITION_STATUS_SEALED || p.GetSealCause() != gatev1.SealCause_SEAL_CAUSE_WATERMARK || p.GetSealedBy() != "gate" {
		t.Fatalf("day 0 = %v, want sealed by the watermark", p)
	}
	if p := got(1); p.GetStatus() != gatev1.PartitionStatus_PARTITION_STATUS_OPEN {
		t.Fatalf("day 1 = %v, want still open (its lateness has not passed)", p)
	}

	// A late file for day 0: an amendment, sealed on its own.
	late := paymentsDay{day: 0, n: 200}.lines()
	for i := range late {
		late[i] = strings.Replace(late[i], `"payment_id":"PAY-0000`, `"payment_id":"PAY-0009`, 1) // new keys
	}
	req := payIngest(payDay(0), "late", late[:50])
	req.Seal = true
	r := mustIngest(t, e, req)
	if p := r.GetPartition(); p.GetAmendment() != 1 || p.GetStatus() != gatev1.PartitionStatus_PARTITION_STATUS_SEALED ||
		p.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED || p.GetCounts().GetReceived() != 50 {
		t.Fatalf("late file = %v, want amendment 1 sealed PASSED on its own 50 records (no row count judged)", p)
	}
	zero := int32(0)
	orig, err := e.as("viewer").GetPartition(ctx, &gatev1.GetPartitionRequest{Subject: "bank.payments", Partition: payDay(0), Amendment: &zero})
	if err != nil || orig.GetPartition().GetCounts().GetReceived() != 200 || orig.GetAmendments() != 1 {
		t.Fatalf("day 0 itself = %v (%v), want its 200 records and one amendment", orig, err)
	}

	// A record of day 5 sent for day 1 is misplaced.
	wrong := payIngest(payDay(1), "wrong", paymentsDay{day: 5, n: 3}.lines())
	r = mustIngest(t, e, wrong)
	if v := r.GetRecords()[0]; v.GetStatus() != gatev1.RecordStatus_RECORD_STATUS_QUARANTINED || v.GetReasons()[0].GetCode() != recordv1.ErrorCode_ERROR_CODE_OUTSIDE_PARTITION {
		t.Fatalf("a day-5 record sent for day 1: %v, want OUTSIDE_PARTITION", v)
	}
	// A partition name that is not a day is refused.
	if _, err := e.as("pipeline").Ingest(ctx, payIngest("October 1st", "x", late[:1])); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("partition \"October 1st\" = %v, want InvalidArgument", err)
	}
}

// WaitPartition returns as soon as the partition is sealed, on any
// replica's seal, and says so when its timeout passes first.
func TestWaitPartition(t *testing.T) {
	t.Parallel()
	e, _ := paymentsEnv(t, storagetest.SQLiteURL(t), nil)
	ctx := context.Background()
	mustIngest(t, e, payIngest(payDay(4), "a", paymentsDay{day: 4, n: 100}.lines()))
	short, err := e.as("viewer").WaitPartition(ctx, &gatev1.WaitPartitionRequest{Subject: "bank.payments", Partition: payDay(4), Timeout: durationpb.New(50 * time.Millisecond)})
	if err != nil || short.GetSealed() || short.GetPartition().GetStatus() != gatev1.PartitionStatus_PARTITION_STATUS_OPEN {
		t.Fatalf("wait with a short timeout = %v (%v), want open, not sealed", short, err)
	}
	done := make(chan *gatev1.WaitPartitionResponse, 1)
	go func() {
		resp, err := e.as("viewer").WaitPartition(ctx, &gatev1.WaitPartitionRequest{Subject: "bank.payments", Partition: payDay(4), Timeout: durationpb.New(20 * time.Second)})
		if err != nil {
			t.Errorf("WaitPartition: %v", err)
		}
		done <- resp
	}()
	time.Sleep(100 * time.Millisecond)
	began := time.Now()
	sealOf(t, e, "bank.payments", payDay(4))
	select {
	case resp := <-done:
		if !resp.GetSealed() || resp.GetPartition().GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED {
			t.Fatalf("wait = %v, want sealed PASSED", resp)
		}
		if waited := time.Since(began); waited > 5*time.Second {
			t.Fatalf("the wait answered %s after the seal", waited)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("WaitPartition did not return after the seal")
	}
	if _, err := e.as("viewer").GetPartition(ctx, &gatev1.GetPartitionRequest{Subject: "bank.payments", Partition: payDay(9)}); status.Code(err) != codes.NotFound {
		t.Fatalf("GetPartition of a day never sent = %v, want NotFound", err)
	}
}

// Canonical records of an answer are kept for the answer's time only:
// a retry after it asking for them is told they expired, never given
// something else; summary-only retries still get the verdicts. Retention
// deletes expired answers, idempotency rows and settled quarantine, and
// keeps what is held.
func TestAnswersExpireAndRetention(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, func(t *testing.T, url string) {
		e, _ := paymentsEnv(t, url, func(c *Config) {
			c.AnswerTTL, c.BatchRetention, c.QuarantineRetention = time.Hour, 2*time.Hour, 3*time.Hour
		})
		ctx := context.Background()
		lines := paymentsDay{day: 6, n: 100, missing: 1}.lines()
		req := payIngest(payDay(6), "a", lines)
		req.SummaryOnly = false
		first := mustIngest(t, e, req)
		if again := mustIngest(t, e, req); !again.GetSummary().GetRetried() || string(again.GetRecords()[1].GetRecord().GetJson()) != string(first.GetRecords()[1].GetRecord().GetJson()) {
			t.Fatalf("retry within the answer's time = %v, want the same canonical records", again.GetSummary())
		}
		e.clock.Add(61 * time.Minute)
		if _, err := e.as("pipeline").Ingest(ctx, req); status.Code(err) != codes.FailedPrecondition || rpcerr.Reason(err) != "ANSWER_EXPIRED" {
			t.Fatalf("retry for canonical records after their time = %v, want FailedPrecondition ANSWER_EXPIRED", err)
		}
		req.SummaryOnly = true
		if r := mustIngest(t, e, req); !r.GetSummary().GetRetried() || r.GetRecords()[0].GetStatus() != gatev1.RecordStatus_RECORD_STATUS_QUARANTINED {
			t.Fatalf("summary-only retry = %v, want the stored verdicts", r.GetSummary())
		}

		// Discard the held record, then let everything age.
		if _, err := e.as("operator").DiscardQuarantined(ctx, &gatev1.DiscardQuarantinedRequest{Filter: &gatev1.QuarantineFilter{Subject: "bank.payments"}, Reason: "test"}); err != nil {
			t.Fatalf("Discard: %v", err)
		}
		mustIngest(t, e, payIngest(payDay(7), "held", paymentsDay{day: 7, n: 50, missing: 1}.lines()))
		e.clock.Add(4 * time.Hour)
		now := e.clock.Now()
		n, err := e.srv.store.Expire(ctx, now, now.Add(-e.srv.cfg.BatchRetention), now.Add(-e.srv.cfg.QuarantineRetention))
		if err != nil || n < 3 {
			t.Fatalf("Expire = %d (%v), want the answer, two idempotency rows and the discarded record", n, err)
		}
		if _, ok, err := e.srv.store.Batch(ctx, batchKey{"bank.payments", payDay(6), "a"}); err != nil || ok {
			t.Fatalf("idempotency row after its retention: found %v (%v), want it gone", ok, err)
		}
		if stats := quarantineStats(t, e, &gatev1.QuarantineFilter{Subject: "bank.payments"}); stats.GetTotal() != 1 {
			t.Fatalf("held after retention = %v, want the one still held", stats)
		}
		if gone := quarantineList(t, e, &gatev1.QuarantineFilter{Subject: "bank.payments", State: gatev1.QuarantineState_QUARANTINE_STATE_DISCARDED}); len(gone) != 0 {
			t.Fatalf("discarded after retention = %d, want none", len(gone))
		}
		// The day's keys are still in its index: a batch resent after its
		// idempotency row is gone counts nothing twice.
		r := mustIngest(t, e, req)
		if s := r.GetSummary(); s.GetRetried() || s.GetAccepted() != 0 || s.GetDuplicates() != 99 {
			t.Fatalf("resend after retention = %v, want its 99 accepted records quarantined as duplicates", s)
		}
	})
}

// Without a partition time, versions take effect by wall clock: a batch
// pinning a later version than the open partition's (a change-data
// capture stream whose schema changed mid-day) seals the open part under
// its version and opens an amendment judged by the later one. A batch
// pinning an earlier version than the open amendment's is refused.
func TestLaterVersionSealsOpenPartition(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	ctx := context.Background()
	const part = "2025-03-01"
	first := ingest("shop.orders", part, "b1", orders{first: 1, n: 20, amount: 50})
	first.ContractVersion = 1
	if r := mustIngest(t, e, first); r.GetPartition().GetContractVersion() != 1 || r.GetPartition().GetStatus() != gatev1.PartitionStatus_PARTITION_STATUS_OPEN {
		t.Fatalf("first batch's partition = %v, want open under v1", r.GetPartition())
	}
	e.registerV2(t)
	e.loadLookup()
	later := ingest("shop.orders", part, "b2", orders{first: 21, n: 20, amount: 50, uuids: 20})
	later.ContractVersion = 2
	r := mustIngest(t, e, later)
	if p := r.GetPartition(); p.GetAmendment() != 1 || p.GetContractVersion() != 2 || r.GetSummary().GetAccepted() != 20 {
		t.Fatalf("v2 batch: summary %v, partition %v; want 20 accepted into amendment 1 under v2", r.GetSummary(), p)
	}
	zero := int32(0)
	got, err := e.as("viewer").GetPartition(ctx, &gatev1.GetPartitionRequest{Subject: "shop.orders", Partition: part, Amendment: &zero})
	if err != nil {
		t.Fatal(err)
	}
	if p := got.GetPartition(); p.GetStatus() != gatev1.PartitionStatus_PARTITION_STATUS_SEALED || p.GetSealCause() != gatev1.SealCause_SEAL_CAUSE_VERSION ||
		p.GetContractVersion() != 1 || p.GetCounts().GetAccepted() != 20 {
		t.Fatalf("the v1 part = %v, want sealed by the version change under v1 with its 20 records", p)
	}
	// Retrying the v2 batch answers it again; it seals nothing more.
	if r := mustIngest(t, e, later); !r.GetSummary().GetRetried() || r.GetPartition().GetAmendment() != 1 {
		t.Fatalf("retried v2 batch = %v, partition %v", r.GetSummary(), r.GetPartition())
	}
	back := ingest("shop.orders", part, "b3", orders{first: 41, n: 5, amount: 50})
	back.ContractVersion = 1
	_, err = e.as("pipeline").Ingest(ctx, back)
	if status.Code(err) != codes.FailedPrecondition || rpcerr.Reason(err) != "PARTITION_VERSION_MISMATCH" {
		t.Fatalf("v1 batch into the v2 amendment: %v, want FailedPrecondition PARTITION_VERSION_MISMATCH", err)
	}
}
