package gate

import (
	"context"
	"errors"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/seamdata/seam/platform/storage/storagetest"
	"github.com/seamdata/seam/platform/telemetry"
	"github.com/seamdata/seam/platform/telemetry/telemetrytest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// find returns the log lines whose msg is msg and whose attributes
// include want.
func findLogs(lines []map[string]any, msg string, want map[string]any) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["msg"] != msg {
			continue
		}
		ok := true
		for k, v := range want {
			if l[k] != v {
				ok = false
			}
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// The gauges an operator pages on come from the store: a subject's
// counters exist at 0 for every verdict from its first batch; the latest
// verdict names the blocked partition; the open alerts by severity
// drop when one is acknowledged; and a gate started again on the same store, before
// any batch, reports the same match rate, latest verdict and open alerts.
func TestAlarmGaugesSurviveRestart(t *testing.T) {
	t.Parallel()
	for _, store := range []struct {
		name string
		url  func(testing.TB) string
	}{{"sqlite", storagetest.SQLiteURL}, {"postgres", storagetest.PostgresURL}} {
		t.Run(store.name, func(t *testing.T) {
			t.Parallel()
			url := store.url(t)
			reader := sdkmetric.NewManualReader()
			withReader := func(r *sdkmetric.ManualReader) func(*Config) {
				return func(c *Config) { c.Meter = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)).Meter("test") }
			}
			e, _ := paymentsEnv(t, url, withReader(reader))
			ctx := context.Background()

			good := payIngest(payDay(2), "b-good", paymentsDay{day: 2, n: 100}.lines())
			good.Seal = true
			mustIngest(t, e, good)
			for _, v := range []string{"PASSED", "PASSED_WITH_ALERTS", "BLOCKED"} {
				if _, ok := point(t, reader, "seam.gate.partitions", map[string]string{"subject": "bank.payments", "verdict": v}); !ok {
					t.Errorf("seam.gate.partitions{verdict=%s} is not reported after the subject's first batch; want it at 0", v)
				}
			}
			bad := payIngest(payDay(3), "b-bad", paymentsDay{day: 3, n: 100, missing: 1}.lines())
			bad.Seal = true
			resp := mustIngest(t, e, bad)
			if resp.GetPartition().GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED {
				t.Fatalf("day 3 = %v, want BLOCKED", resp.GetPartition().GetVerdict())
			}
			rate := resp.GetPartition().GetMatchRate()

			latest := map[string]string{"subject": "bank.payments", "partition": payDay(3), "verdict": "BLOCKED"}
			if v, ok := point(t, reader, "seam.gate.latest.verdict", latest); !ok || v != 1 {
				t.Errorf("seam.gate.latest.verdict%v = %v (reported %t), want 1", latest, v, ok)
			}
			critical := map[string]string{"subject": "bank.payments", "severity": "critical"}
			openCritical, ok := point(t, reader, "seam.gate.alerts.open", critical)
			if !ok || openCritical < 1 {
				t.Fatalf("seam.gate.alerts.open{critical} = %v (reported %t), want the block's alert at least", openCritical, ok)
			}
			var blocked int64
			for _, a := range resp.GetAlerts() {
				if a.GetKind() == "PARTITION_BLOCKED" {
					blocked = a.GetSequence()
				}
			}
			if _, err := e.as("operator").AcknowledgeAlert(ctx, &gatev1.AcknowledgeAlertRequest{Sequence: blocked, Reason: "resending it"}); err != nil {
				t.Fatalf("AcknowledgeAlert: %v", err)
			}
			if v, _ := point(t, reader, "seam.gate.alerts.open", critical); v != openCritical-1 {
				t.Errorf("seam.gate.alerts.open{critical} = %v after acknowledging one of %v, want %v", v, openCritical, openCritical-1)
			}

			e.stop()
			again := sdkmetric.NewManualReader()
			startGate(t, e.peers, url, withReader(again))
			point(t, again, "seam.gate.partitions", nil) // the first scrape creates the counters at 0
			if v, ok := point(t, again, "seam.gate.match.rate", map[string]string{"subject": "bank.payments", "field": "account_ref"}); !ok || v != rate {
				t.Errorf("after a restart seam.gate.match.rate{account_ref} = %v (reported %t), want day 3's %v from the store", v, ok, rate)
			}
			if v, ok := point(t, again, "seam.gate.latest.verdict", latest); !ok || v != 1 {
				t.Errorf("after a restart seam.gate.latest.verdict%v = %v (reported %t), want 1", latest, v, ok)
			}
			if v, ok := point(t, again, "seam.gate.alerts.open", critical); !ok || v != openCritical-1 {
				t.Errorf("after a restart seam.gate.alerts.open{critical} = %v (reported %t), want %v", v, ok, openCritical-1)
			}
			if v, ok := point(t, again, "seam.gate.partitions", map[string]string{"subject": "bank.payments", "verdict": "BLOCKED"}); !ok || v != 0 {
				t.Errorf("after a restart seam.gate.partitions{BLOCKED} = %v (reported %t), want 0 before any batch", v, ok)
			}
		})
	}
}

// An on-call engineer finds every alarm in the logs: a BLOCKED seal at
// WARN and each raised alert (critical: ERROR) with the trace id,
// subject, partition and check; acknowledgements, resolutions and
// discards by id are audit lines with who, why and the record ids.
func TestAlarmLogs(t *testing.T) {
	t.Parallel()
	logs := &telemetrytest.LogBuffer{}
	e, _ := paymentsEnv(t, storagetest.SQLiteURL(t), func(c *Config) {
		log, err := telemetry.NewLogger(logs, "json", "info")
		if err != nil {
			t.Fatal(err)
		}
		c.Logger = log
		c.TracerProvider = sdktrace.NewTracerProvider()
	})
	ctx := context.Background()
	bad := payIngest(payDay(3), "b-bad", paymentsDay{day: 3, n: 100, missing: 1}.lines())
	bad.Seal = true
	resp := mustIngest(t, e, bad)
	day := payDay(3)

	lines := logs.Lines(t)
	seals := findLogs(lines, "partition sealed", map[string]any{"subject": "bank.payments", "partition": day})
	blockedBy := ""
	for _, a := range resp.GetAlerts() {
		if a.GetKind() == "PARTITION_BLOCKED" {
			blockedBy = a.GetCheck()
		}
	}
	if len(seals) == 0 || seals[0]["level"] != "WARN" || seals[0]["trace_id"] == nil || blockedBy == "" || !strings.Contains(seals[0]["check"].(string), blockedBy) {
		t.Errorf("the BLOCKED seal's log line = %v, want WARN with trace_id and the blocking check", seals)
	}
	for _, a := range resp.GetAlerts() {
		got := findLogs(lines, "alert raised", map[string]any{"subject": "bank.payments", "partition": day, "kind": a.GetKind(), "check": a.GetCheck()})
		level := "WARN"
		if a.GetSeverity() == gatev1.Severity_SEVERITY_CRITICAL {
			level = "ERROR"
		}
		if len(got) != 1 || got[0]["level"] != level || got[0]["trace_id"] == nil {
			t.Errorf("alert %d (%s %s): log lines %v, want one at %s with trace_id", a.GetSequence(), a.GetKind(), a.GetCheck(), got, level)
		}
	}
	if len(resp.GetAlerts()) == 0 {
		t.Fatal("the blocked day raised no alert")
	}

	seq := resp.GetAlerts()[0].GetSequence()
	if _, err := e.as("operator").AcknowledgeAlert(ctx, &gatev1.AcknowledgeAlertRequest{Sequence: seq, Reason: "on it"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.as("operator").ResolveAlert(ctx, &gatev1.ResolveAlertRequest{Sequence: seq, Reason: "resent corrected"}); err != nil {
		t.Fatal(err)
	}
	held, err := e.as("operator").ListQuarantine(ctx, &gatev1.ListQuarantineRequest{Filter: &gatev1.QuarantineFilter{Subject: "bank.payments"}})
	if err != nil || len(held.GetRecords()) == 0 {
		t.Fatalf("ListQuarantine = %v, %v; want the held records", held, err)
	}
	id := held.GetRecords()[0].GetId()
	if _, err := e.as("operator").DiscardQuarantined(ctx, &gatev1.DiscardQuarantinedRequest{Ids: []string{id}, Reason: "test record"}); err != nil {
		t.Fatal(err)
	}

	if _, err := replayAll(ctx, e, &gatev1.ReplayRequest{Window: &gatev1.ReplayWindow{Subject: "bank.payments", PartitionFrom: day, PartitionTo: day},
		ReplayId: "retry-1", Reason: "retry the held payments"}); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if _, err := e.as("operator").Contain(ctx, &gatev1.ContainRequest{Subject: "bank.payments", Reason: "INC-9"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.as("operator").Release(ctx, &gatev1.ReleaseRequest{Subject: "bank.payments", Reason: "INC-9 fixed"}); err != nil {
		t.Fatal(err)
	}

	lines = logs.Lines(t)
	for _, c := range []struct {
		msg  string
		want map[string]any
	}{
		{"alert acknowledged", map[string]any{"audit": true, "event": "alert_acknowledged", "by": "operator", "reason": "on it", "subject": "bank.payments", "partition": day}},
		{"alert resolved", map[string]any{"audit": true, "event": "alert_resolved", "by": "operator", "reason": "resent corrected", "subject": "bank.payments", "partition": day}},
		{"quarantined records discarded", map[string]any{"audit": true, "event": "discard", "by": "operator", "reason": "test record"}},
		{"replay finished", map[string]any{"audit": true, "event": "replay", "by": "operator", "reason": "retry the held payments", "replay_id": "retry-1"}},
		{"containment changed", map[string]any{"audit": true, "event": "containment", "by": "operator", "reason": "INC-9", "contained": true}},
		{"containment changed", map[string]any{"audit": true, "event": "containment", "by": "operator", "reason": "INC-9 fixed", "contained": false}},
	} {
		if len(findLogs(lines, c.msg, c.want)) != 1 {
			t.Errorf("no audit line %q with %v", c.msg, c.want)
		}
	}
	discards := findLogs(lines, "quarantined records discarded", nil)
	if len(discards) != 1 || discards[0]["subject"] != nil || len(discards[0]["ids"].([]any)) != 1 || discards[0]["ids"].([]any)[0] != id {
		t.Errorf("the discard by id logged %v, want the record id %s and no made-up subject", discards, id)
	}
}

// retriedStore runs every transaction twice, as the store does after a
// conflict: the first attempt rolls back, the second commits.
type retriedStore struct{ gateStore }

var errConflict = errors.New("test: a conflict rolls this attempt back")

func (r retriedStore) InTx(ctx context.Context, fn func(tx storeTx) error) error {
	return r.twice(fn, func(fn func(tx storeTx) error) error { return r.gateStore.InTx(ctx, fn) })
}

func (r retriedStore) InPartitionTx(ctx context.Context, subject, part string, fn func(tx storeTx) error) error {
	return r.twice(fn, func(fn func(tx storeTx) error) error { return r.gateStore.InPartitionTx(ctx, subject, part, fn) })
}

func (retriedStore) twice(fn func(tx storeTx) error, run func(func(tx storeTx) error) error) error {
	err := run(func(tx storeTx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return errConflict
	})
	if !errors.Is(err, errConflict) {
		return err
	}
	return run(fn)
}

// A seal whose transaction ran twice is one seal: seam.gate.partitions
// counts it once and one "partition sealed" line logs it, whether the
// batch sealed its partition or a SealPartition call did.
func TestSealReportedOnceWhenItsTransactionRunsTwice(t *testing.T) {
	storagetest.EachParallel(t, sealReportedOnce)
}

func sealReportedOnce(t *testing.T, url string) {
	logs := &telemetrytest.LogBuffer{}
	reader := sdkmetric.NewManualReader()
	e, _ := paymentsEnv(t, url, func(c *Config) {
		log, err := telemetry.NewLogger(logs, "json", "info")
		if err != nil {
			t.Fatal(err)
		}
		c.Logger = log
		c.Meter = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
		c.wrapStore = func(s gateStore) gateStore { return retriedStore{s} }
	})

	bad := payIngest(payDay(3), "b-bad", paymentsDay{day: 3, n: 100, missing: 1}.lines())
	bad.Seal = true
	if v := mustIngest(t, e, bad).GetPartition().GetVerdict(); v != gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED {
		t.Fatalf("day 3 = %v, want BLOCKED", v)
	}
	mustIngest(t, e, payIngest(payDay(4), "b-good", paymentsDay{day: 4, n: 100}.lines()))
	if v := sealOf(t, e, "bank.payments", payDay(4)).GetVerdict(); v != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED {
		t.Fatalf("day 4 = %v, want PASSED", v)
	}

	lines := logs.Lines(t)
	for _, c := range []struct{ day, verdict string }{{payDay(3), "BLOCKED"}, {payDay(4), "PASSED"}} {
		if got := findLogs(lines, "partition sealed", map[string]any{"subject": "bank.payments", "partition": c.day}); len(got) != 1 {
			t.Errorf("partition %s: %d \"partition sealed\" lines, want 1: %v", c.day, len(got), got)
		}
		if v, ok := point(t, reader, "seam.gate.partitions", map[string]string{"subject": "bank.payments", "verdict": c.verdict}); v != 1 {
			t.Errorf("seam.gate.partitions{verdict=%s} = %v (reported %t), want 1", c.verdict, v, ok)
		}
	}
}
