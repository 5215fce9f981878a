package gate

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// The reference scenarios of DESIGN.md, through the real registry and the
// gate over gRPC (idmap and adapter are the gatetest stand-ins).

// day returns the partition name of day i after 2025-01-01.
func day(i int) string {
	return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i).Format("2006-01-02")
}

// waitEvent waits until the registry's event log holds an event of typ
// for shop.orders and returns the events of that type.
func waitEvent(t *testing.T, p *peers, typ registryv1.EventType) []*registryv1.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := p.registry.ListEvents(context.Background(), &registryv1.ListEventsRequest{Subjects: []string{"shop.orders"}, Types: []registryv1.EventType{typ}})
		if err != nil {
			t.Fatalf("ListEvents: %v", err)
		}
		if len(resp.GetEvents()) > 0 {
			return resp.GetEvents()
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event reached the registry", typ)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func alertsOf(alerts []*gatev1.Alert, kind string) []*gatev1.Alert {
	var out []*gatev1.Alert
	for _, a := range alerts {
		if a.GetKind() == kind {
			out = append(out, a)
		}
	}
	return out
}

// Scenario 2: a partition in which 0.4% of the orders lack the required
// customer_id (a BLOCK check tolerating no failure) is BLOCKED whole at its
// seal. The batch that crosses the threshold is told at once that the
// partition will be blocked, so a pipeline can stop; the failing records
// are quarantined, the others judged as usual, and the verdict says which
// check decided, with its counts and first positions.
func TestScenarioMissingKeyBlocksPartition(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	ctx := context.Background()
	req := ingest("shop.orders", "2025-03-01", "big", orders{first: 1, n: 10000, amount: 85, missing: 40})
	req.SummaryOnly = true
	for attempt := range 2 {
		resp, err := e.as("pipeline").Ingest(ctx, req)
		if err != nil {
			t.Fatalf("attempt %d: Ingest: %v", attempt, err)
		}
		if s := resp.GetSummary(); s.GetAccepted() != 9960 || s.GetQuarantined() != 40 || s.GetRetried() != (attempt == 1) {
			t.Fatalf("attempt %d: summary = %v, want 9960 accepted and 40 quarantined", attempt, s)
		}
		p := resp.GetPartition()
		if !p.GetWillBlock() || p.GetStatus() != gatev1.PartitionStatus_PARTITION_STATUS_OPEN || !strings.Contains(p.GetNotice(), "will be BLOCKED") ||
			len(p.GetChecks()) != 1 || p.GetChecks()[0].GetFailures() != 40 || p.GetChecks()[0].GetRows() != 10000 {
			t.Fatalf("attempt %d: partition = %v, want it open and told it will be BLOCKED by 40 of 10000", attempt, p)
		}
	}
	sealed := sealOf(t, e, "shop.orders", "2025-03-01")
	if sealed.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED || sealed.GetCounts().GetReceived() != 10000 {
		t.Fatalf("sealed = %v, want BLOCKED with 10000 records", sealed)
	}
	var decided *gatev1.CheckOutcome
	for _, c := range sealed.GetChecks() {
		if c.GetExceeded() && c.GetPolicy() == 1 {
			decided = c
		}
	}
	if decided == nil || !strings.Contains(decided.GetCheck(), "customer") || decided.GetFailures() != 40 || decided.GetRows() != 10000 ||
		len(decided.GetSamplePositions()) == 0 || decided.GetSamplePositions()[0] != 1 {
		t.Fatalf("deciding check = %v, want a customer_id check failing 40 of 10000 from position 1", decided)
	}
	if len(alertsOf(sealed.GetAlerts(), "PARTITION_BLOCKED")) != 1 {
		t.Fatalf("seal alerts = %v, want one PARTITION_BLOCKED", sealed.GetAlerts())
	}
	m := monitorOf(t, e, "shop.orders", "2025-03-01")
	if m.GetReceived() != 10000 || m.GetBlocked() != 9960 || m.GetAccepted() != 0 || m.GetQuarantined() != 40 || m.GetBatches() != 1 ||
		m.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED {
		t.Fatalf("monitor = %v, want the 9960 accepted records of a BLOCKED partition held back, 40 quarantined, in 1 batch", m)
	}
}

// baseline ingests and seals seven ordinary days before partition
// 2025-01-08.
func baseline(t *testing.T, e *gateEnv) {
	t.Helper()
	for i := range 7 {
		req := ingest("shop.orders", day(i), "b", orders{first: i * 1000, n: 200, amount: 85, unknown: 50})
		req.Seal = true
		resp, err := e.as("pipeline").Ingest(context.Background(), req)
		if err != nil {
			t.Fatalf("baseline day %s: %v", day(i), err)
		}
		if n := len(resp.GetAlerts()); n != 0 || resp.GetPartition().GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED {
			t.Fatalf("baseline day %s raised %d alerts (%v), verdict %v; want none, PASSED", day(i), n, resp.GetAlerts(), resp.GetPartition().GetVerdict())
		}
	}
}

// Scenario 3: the average order value moves from 85 to 102; the records
// pass and a MEAN_DRIFT alert is raised with the observed and baseline
// values, also to the registry's event stream.
func TestScenarioDriftAlertsAndPasses(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	baseline(t, e)
	req := ingest("shop.orders", day(7), "b", orders{first: 7000, n: 200, amount: 102, unknown: 50})
	req.Seal = true
	resp, err := e.as("pipeline").Ingest(context.Background(), req)
	if err != nil {
		t.Fatalf("Ingest: %v", err)
	}
	if s := resp.GetSummary(); s.GetAccepted() != 200 || s.GetStatus() != gatev1.BatchStatus_BATCH_STATUS_ACCEPTED {
		t.Fatalf("summary = %v, want all 200 accepted", s)
	}
	if v := resp.GetPartition().GetVerdict(); v != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED_WITH_ALERTS {
		t.Fatalf("verdict = %v, want PASSED_WITH_ALERTS", v)
	}
	drift := alertsOf(resp.GetAlerts(), "MEAN_DRIFT")
	if len(drift) != 1 {
		t.Fatalf("alerts = %v, want one MEAN_DRIFT", resp.GetAlerts())
	}
	a := drift[0]
	if a.GetCheck() != "aov_drift" || a.GetObserved() < 101.9 || a.GetObserved() > 102.1 || a.GetBaseline() < 84.9 || a.GetBaseline() > 85.1 || a.GetSeverity() != gatev1.Severity_SEVERITY_WARNING {
		t.Fatalf("alert = %v, want aov_drift observed 102 against baseline 85", a)
	}
	listed, err := e.as("viewer").ListAlerts(context.Background(), &gatev1.ListAlertsRequest{Subject: "shop.orders"})
	if err != nil || len(listed.GetAlerts()) != 1 || listed.GetAlerts()[0].GetSequence() != a.GetSequence() {
		t.Fatalf("ListAlerts = %v (%v), want the one alert", listed.GetAlerts(), err)
	}
	ev := waitEvent(t, e.peers, registryv1.EventType_EVENT_TYPE_ALERT_RAISED)
	if ev[0].GetAttributes()["kind"] != "MEAN_DRIFT" {
		t.Fatalf("registry event = %v, want the MEAN_DRIFT alert", ev[0])
	}
	// Every seal is in the stream with its verdict: seven PASSED days,
	// then this one.
	var sealed []string
	deadline := time.Now().Add(10 * time.Second)
	for len(sealed) < 8 && time.Now().Before(deadline) {
		sealed = nil
		for _, e := range waitEvent(t, e.peers, registryv1.EventType_EVENT_TYPE_PARTITION_SEALED) {
			sealed = append(sealed, e.GetPartitionFrom()+" "+e.GetAttributes()["verdict"])
		}
		time.Sleep(20 * time.Millisecond)
	}
	want := []string{}
	for i := range 7 {
		want = append(want, day(i)+" PASSED")
	}
	want = append(want, day(7)+" PASSED_WITH_ALERTS")
	if !slices.Equal(sealed, want) {
		t.Fatalf("PARTITION_SEALED events = %v, want %v", sealed, want)
	}
}

// Scenario 1: the source switches customer_id to UUIDs unannounced. The
// records are quarantined, not nulled; the unannounced-change and match
// rate alerts are raised when the day is sealed, judged whole; the
// operator contains the source; after v2 and the lookup table, a replay of
// the day releases every releasable record exactly once, re-seals the day,
// and its match rate is back near 98% and its verdict PASSED.
func TestScenarioIdentifierChange(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	ctx := context.Background()
	for _, c := range []*registryv1.Consumer{
		{Name: "features.customer_ltv", Owner: "team-ml", Produces: []string{"ltv_daily"}, Inputs: []*registryv1.Input{
			{Source: &registryv1.Input_Subject{Subject: "shop.orders"}, Fields: []string{"customer_id"}, Usage: registryv1.UsageKind_USAGE_KIND_JOIN_KEY}}},
		{Name: "reports.weekly", Owner: "team-bi", Inputs: []*registryv1.Input{
			{Source: &registryv1.Input_Dataset{Dataset: "ltv_daily"}, Usage: registryv1.UsageKind_USAGE_KIND_FEATURE}}},
	} {
		if _, err := e.registry.RegisterConsumer(ctx, &registryv1.RegisterConsumerRequest{Consumer: c}); err != nil {
			t.Fatalf("RegisterConsumer %s: %v", c.GetName(), err)
		}
	}
	baseline(t, e)
	the := day(7)

	// Batch 1: 490 of 500 customer ids are UUIDs.
	b1, err := e.as("pipeline").Ingest(ctx, ingest("shop.orders", the, "b1", orders{first: 1, n: 500, amount: 85, uuids: 490}))
	if err != nil {
		t.Fatalf("Ingest b1: %v", err)
	}
	if s := b1.GetSummary(); s.GetAccepted() != 10 || s.GetQuarantined() != 490 || s.GetStatus() != gatev1.BatchStatus_BATCH_STATUS_PARTIAL {
		t.Fatalf("b1 summary = %v, want 10 accepted, 490 quarantined", s)
	}
	accepted := map[string]bool{}
	for _, v := range b1.GetRecords() {
		switch v.GetStatus() {
		case gatev1.RecordStatus_RECORD_STATUS_ACCEPTED:
			if !strings.Contains(string(v.GetRecord().GetJson()), `"customer_id":`) {
				t.Fatalf("accepted record %d has no customer_id: %s", v.GetIndex(), v.GetRecord().GetJson())
			}
			accepted[v.GetRecord().GetRecordId()] = true
		case gatev1.RecordStatus_RECORD_STATUS_QUARANTINED:
			if r := v.GetReasons(); len(r) == 0 || r[0].GetCode() != recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH || r[0].GetField() != "customer_id" {
				t.Fatalf("quarantined record %d reasons = %v, want TYPE_MISMATCH of customer_id", v.GetIndex(), r)
			}
		}
	}
	if len(b1.GetAlerts()) != 0 {
		t.Fatalf("b1 raised %v; nothing statistical is judged on a partial partition", b1.GetAlerts())
	}

	// Batch 2, the same day.
	b2, err := e.as("pipeline").Ingest(ctx, ingest("shop.orders", the, "b2", orders{first: 501, n: 200, amount: 85, uuids: 200}))
	if err != nil {
		t.Fatalf("Ingest b2: %v", err)
	}
	if b2.GetSummary().GetQuarantined() != 200 || len(b2.GetAlerts()) != 0 {
		t.Fatalf("b2 = %v with alerts %v, want 200 quarantined and no alert yet", b2.GetSummary(), b2.GetAlerts())
	}

	// The operator contains the source; what it sends now is held.
	if _, err := e.as("operator").Contain(ctx, &gatev1.ContainRequest{Subject: "shop.orders", Reason: "INC-1: customer_id is a UUID"}); err != nil {
		t.Fatalf("Contain: %v", err)
	}
	adapted := e.adapter.Records()
	b3, err := e.as("pipeline").Ingest(ctx, ingest("shop.orders", the, "b3", orders{first: 701, n: 100, amount: 85, uuids: 100}))
	if err != nil {
		t.Fatalf("Ingest b3: %v", err)
	}
	if s := b3.GetSummary(); s.GetQuarantined() != 100 || s.GetStatus() != gatev1.BatchStatus_BATCH_STATUS_QUARANTINED || b3.GetRecords()[0].GetReasons()[0].GetCode() != recordv1.ErrorCode_ERROR_CODE_SOURCE_CONTAINED {
		t.Fatalf("b3 = %v, want all quarantined with SOURCE_CONTAINED", s)
	}
	if e.adapter.Records() != adapted {
		t.Fatalf("the adapter saw records of a contained source")
	}
	// Held records are records whose customer does not resolve: the day's
	// match rate is 10 of 800, not 10 of the 700 looked up.
	if m := monitorOf(t, e, "shop.orders", the); m.GetMatchRate() != 10.0/800 {
		t.Fatalf("match rate while contained = %v, want 10/800 = %v", m.GetMatchRate(), 10.0/800)
	}
	waitEvent(t, e.peers, registryv1.EventType_EVENT_TYPE_SOURCE_CONTAINED)

	// The day is sealed: judged whole, the change is caught the day it
	// starts.
	day7 := sealOf(t, e, "shop.orders", the)
	change := alertsOf(day7.GetAlerts(), "UNANNOUNCED_CHANGE")
	rate := alertsOf(day7.GetAlerts(), "MATCH_RATE")
	if len(change) != 1 || change[0].GetField() != "customer_id" || !strings.Contains(change[0].GetMessage(), "uuid") || change[0].GetCount() != 690 || change[0].GetFirstSeen() == nil {
		t.Fatalf("unannounced-change alerts = %v, want one naming customer_id as uuid, 690 records", change)
	}
	if len(rate) != 1 || rate[0].GetObserved() != 10.0/800 || rate[0].GetSeverity() != gatev1.Severity_SEVERITY_CRITICAL {
		t.Fatalf("match-rate alerts = %v, want one observing the day's 10 of 800", rate)
	}
	if day7.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED_WITH_ALERTS {
		t.Fatalf("verdict of the day = %v, want PASSED_WITH_ALERTS", day7.GetVerdict())
	}
	ev := waitEvent(t, e.peers, registryv1.EventType_EVENT_TYPE_UNANNOUNCED_CHANGE)
	if len(ev) != 1 || ev[0].GetAttributes()["field"] != "customer_id" {
		t.Fatalf("UNANNOUNCED_CHANGE events = %v, want one for customer_id", ev)
	}

	// Before the fix nothing would pass.
	window := &gatev1.ReplayWindow{Subject: "shop.orders", PartitionFrom: the, PartitionTo: the}
	plan, err := e.as("viewer").PlanReplay(ctx, &gatev1.PlanReplayRequest{Window: window})
	if err != nil || plan.GetHeld() != 790 || plan.GetWouldRelease() != 0 {
		t.Fatalf("PlanReplay before the fix = %v (%v), want 790 held, none would pass", plan, err)
	}

	// The fix: v2 with a uuid → legacy-int translation, and the lookup
	// table, which lacks ten customers not yet synced.
	e.registerV2(t)
	e.loadLookup(101, 102, 103, 104, 105, 106, 107, 108, 109, 110)
	plan, err = e.as("viewer").PlanReplay(ctx, &gatev1.PlanReplayRequest{Window: window})
	if err != nil {
		t.Fatalf("PlanReplay: %v", err)
	}
	if plan.GetHeld() != 790 || plan.GetWouldRelease() != 780 || plan.GetWouldRemain() != 10 || len(plan.GetRemainReasons()) != 1 || plan.GetRemainReasons()[0].GetKey() != "ID_UNMAPPED" {
		t.Fatalf("PlanReplay = %v, want 780 of 790 to pass and 10 ID_UNMAPPED", plan)
	}

	released := replay(t, e, window, "r1")
	if len(released.records) != 780 || released.summary.GetReleased() != 780 || released.summary.GetRemaining() != 10 {
		t.Fatalf("replay r1 = %d records, summary %v; want 780 released, 10 remaining", len(released.records), released.summary)
	}
	if got := strings.Join(released.summary.GetRerunConsumers(), ","); got != "features.customer_ltv,reports.weekly" {
		t.Fatalf("rerun consumers = %s, want features.customer_ltv,reports.weekly", got)
	}
	ids := map[string]bool{}
	for _, r := range released.records {
		id := r.GetRecordId()
		if ids[id] || accepted[id] {
			t.Fatalf("record %s delivered twice", id)
		}
		ids[id] = true
		if r.GetProvenance().GetPartition() != the || r.GetProvenance().GetContractVersion() != 2 {
			t.Fatalf("released provenance = %v, want partition %s through v2", r.GetProvenance(), the)
		}
	}
	if len(ids)+len(accepted)+10 != 800 {
		t.Fatalf("accepted %d + released %d + held 10 = %d, want all 800 records of the day", len(accepted), len(ids), len(ids)+len(accepted)+10)
	}

	// A retried replay re-sends what it released; a new one releases nothing.
	again := replay(t, e, window, "r1")
	if len(again.records) != 780 || again.summary.GetReleased() != 780 {
		t.Fatalf("retried replay r1 = %d records, summary %v; want the same 780 again", len(again.records), again.summary)
	}
	for _, r := range again.records {
		if !ids[r.GetRecordId()] {
			t.Fatalf("retried replay sent a record %s the first run did not", r.GetRecordId())
		}
	}
	second := replay(t, e, window, "r2")
	if len(second.records) != 0 || second.summary.GetReleased() != 0 || second.summary.GetRemaining() != 10 {
		t.Fatalf("second replay = %d records, summary %v; want nothing new", len(second.records), second.summary)
	}

	m := monitorOf(t, e, "shop.orders", the)
	if m.GetReleased() != 780 || m.GetMatchRate() < 0.97 || m.GetMatchRate() > 0.99 {
		t.Fatalf("monitor after the replay = %v, want 780 released and a match rate near 0.98", m)
	}
	// The replay re-sealed the day: it reads as the backfill left it.
	got, err := e.as("viewer").GetPartition(ctx, &gatev1.GetPartitionRequest{Subject: "shop.orders", Partition: the})
	if p := got.GetPartition(); err != nil || p.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED || p.GetSealCause() != gatev1.SealCause_SEAL_CAUSE_REPLAY ||
		p.GetMatchRate() < 0.97 || p.GetCounts().GetReleased() != 780 {
		t.Fatalf("day after the replay = %v (%v), want PASSED, re-sealed by the replay, match rate near 0.98", p, err)
	}
	// What the source sent on the day stays readable: the verdict and
	// match rate of the first seal.
	if p := got.GetPartition(); p.GetSealedVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED_WITH_ALERTS || p.GetSealedMatchRate() > 0.2 {
		t.Fatalf("day after the replay as sealed = %s, match rate %v; want PASSED_WITH_ALERTS and the day's low match rate", p.GetSealedVerdict(), p.GetSealedMatchRate())
	}
	bf := waitEvent(t, e.peers, registryv1.EventType_EVENT_TYPE_BACKFILL_COMPLETED)
	if len(bf) != 1 || bf[0].GetPartitionFrom() != the || strings.Join(bf[0].GetConsumers(), ",") != "features.customer_ltv,reports.weekly" {
		t.Fatalf("BACKFILL_COMPLETED events = %v, want one for %s naming the consumers in order", bf, the)
	}
	if got := bf[0].GetAttributes()["reason"]; got != "fix r1" || !strings.Contains(bf[0].GetMessage(), "reason: fix r1") {
		t.Fatalf("BACKFILL_COMPLETED reason = %q in %q, want the replay's reason \"fix r1\"", got, bf[0].GetMessage())
	}
	if released.summary.GetEventSequence() != bf[0].GetSequence() {
		t.Fatalf("summary event sequence = %d, want the registry's %d", released.summary.GetEventSequence(), bf[0].GetSequence())
	}
}

type replayed struct {
	records []*recordv1.CanonicalRecord
	summary *gatev1.ReplaySummary
}

func replay(t *testing.T, e *gateEnv, w *gatev1.ReplayWindow, id string) replayed {
	t.Helper()
	return replayOf(t, e, &gatev1.ReplayRequest{Window: w, ReplayId: id, Reason: "fix " + id})
}

// replayOf runs req as the operator and returns the records and the
// summary it streamed.
func replayOf(t *testing.T, e *gateEnv, req *gatev1.ReplayRequest) replayed {
	t.Helper()
	id := req.GetReplayId()
	out, err := replayAll(context.Background(), e, req)
	if err != nil {
		t.Fatalf("Replay %s: %v", id, err)
	}
	if out.summary == nil {
		t.Fatalf("Replay %s ended without a summary", id)
	}
	return out
}

// replayAll runs req as the operator and reads its stream to the end: the
// records, then the summary.
func replayAll(ctx context.Context, e *gateEnv, req *gatev1.ReplayRequest) (replayed, error) {
	var out replayed
	stream, err := e.as("operator").Replay(ctx, req)
	if err != nil {
		return out, err
	}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if r := msg.GetRecord(); r != nil {
			if out.summary != nil {
				return out, errors.New("record after the summary")
			}
			out.records = append(out.records, r)
		}
		if s := msg.GetSummary(); s != nil {
			out.summary = s
		}
	}
}

// Scenario 4: a fix for the last 40 of 400 daily partitions replays only
// those 40, idempotently.
func TestScenarioScopedBackfill(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	ctx := context.Background()
	for i := range 400 {
		resp, err := e.as("pipeline").Ingest(ctx, ingest("shop.orders", day(i), "b", orders{first: i * 10, n: 5, amount: 85, uuids: 5}))
		if err != nil {
			t.Fatalf("Ingest day %d: %v", i, err)
		}
		if resp.GetSummary().GetQuarantined() != 5 {
			t.Fatalf("day %d: %v, want 5 quarantined", i, resp.GetSummary())
		}
	}
	e.registerV2(t)
	e.loadLookup()
	before := e.adapter.Records()
	window := &gatev1.ReplayWindow{Subject: "shop.orders", PartitionFrom: day(360), PartitionTo: day(399)}
	r := replay(t, e, window, "last-40")
	if r.summary.GetPartitions() != 40 || r.summary.GetReleased() != 200 || len(r.records) != 200 {
		t.Fatalf("replay = %d records, summary %v; want 40 partitions, 200 released", len(r.records), r.summary)
	}
	if n := e.adapter.Records() - before; n != 200 {
		t.Fatalf("the replay adapted %d records, want only the window's 200", n)
	}
	for i := 1; i < len(r.records); i++ {
		if r.records[i].GetProvenance().GetPartition() < r.records[i-1].GetProvenance().GetPartition() {
			t.Fatalf("records out of partition order at %d", i)
		}
	}
	stats := quarantineStats(t, e, &gatev1.QuarantineFilter{Subject: "shop.orders"})
	if stats.GetTotal() != 1800 || len(stats.GetByPartition()) != 360 || stats.GetByPartition()[359].GetKey() != day(359) {
		t.Fatalf("held after the replay: %d in %d partitions, want 1800 in the 360 outside the window", stats.GetTotal(), len(stats.GetByPartition()))
	}
	again := replay(t, e, window, "last-40-again")
	if again.summary.GetReleased() != 0 || e.adapter.Records()-before != 200 {
		t.Fatalf("a repeated replay released %d and adapted %d more; want nothing", again.summary.GetReleased(), e.adapter.Records()-before-200)
	}

	// The window's rows are found by the (subject, state, part) index, not
	// by scanning the quarantine.
	rows, err := e.srv.store.(*sqlStore).db.SQL.QueryContext(ctx, `EXPLAIN QUERY PLAN SELECT id FROM gate_quarantine WHERE subject = $1 AND state = $2 AND part = $3 AND (batch_id, idx) > ($4, $5) ORDER BY batch_id, idx LIMIT 10`,
		"shop.orders", 1, day(360), "", -1)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	defer rows.Close()
	var planText []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatalf("explain: %v", err)
		}
		planText = append(planText, detail)
	}
	if got := strings.Join(planText, "; "); !strings.Contains(got, "USING INDEX gate_quarantine_window") || strings.Contains(got, "SCAN gate_quarantine") {
		t.Fatalf("query plan %q, want a search of gate_quarantine_window", got)
	}
}
