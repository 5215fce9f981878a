package gate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/platform/storage/storagetest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// monthV1YAML is bank.payments with the account reference's pattern
// declared (so UUIDs are held, not passed) and judged by the documented
// relative match rule alone: no absolute floor, so only an honest
// baseline keeps an outage alerting. monthV2YAML is the fix: the account
// as a UUID, translated back.
var (
	monthV1YAML = strings.NewReplacer(
		`rule: "match_rate(account_ref, min: 0.9)"`, `rule: "match_rate(account_ref, max_point_change: 5, direction: drop, baseline: 7)"`,
		"    identifier: {namespace: account, format: ref}\n", "    identifier: {namespace: account, format: ref}\n    pattern: \"^ACC-[0-9]{8}$\"\n",
	).Replace(paymentsV1YAML)
	monthV2YAML = strings.Replace(paymentsV2YAML,
		`rule: "match_rate(account_ref, min: 0.9)"`, `rule: "match_rate(account_ref, max_point_change: 5, direction: drop, baseline: 7)"`, 1)
)

// The month's days, as indexes of payDay (day 0 is 2026-10-01).
const (
	monthDays      = 30
	monthDriftDay  = 11 // 2026-10-12: amounts 25% above the usual mean
	monthBlockDay  = 16 // 2026-10-17: 0.6% of payments lack the account
	monthSwitchDay = 21 // 2026-10-22 on: account UUIDs, unannounced
	monthRestart   = 24 // the gate restarts after this day
	monthContain   = 25 // an operator contains the source for this day and the next
)

// TestMonthOfAlarms is a month of a source as an on-call engineer lives
// it, on both stores and across a restart: a drift day, a blocked day,
// and an identifier switch from day 22 to the end, judged by the relative
// match rule alone, with the source contained for two of those days.
// Every alarm is a fact about its partition: the drift alert of 10-12 is
// still open on day 30; each day of the outage raises its own MATCH_RATE
// alert, because the trailing baseline holds only days that passed the
// check uncontained (the outage never becomes the new normal); nothing
// resolves before the fix. The fix (v2 from the switch's data date, a
// replay of 10-22..10-30) resolves every MATCH_RATE and the
// UNANNOUNCED_CHANGE alert of those days, and only those.
func TestMonthOfAlarms(t *testing.T) {
	t.Parallel()
	for name, url := range map[string]func(testing.TB) string{"sqlite": storagetest.SQLiteURL, "postgres": storagetest.PostgresURL} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			monthOfAlarms(t, url(t))
		})
	}
}

func monthOfAlarms(t *testing.T, url string) {
	ctx := context.Background()
	p := newPeers(t)
	p.clock.Add(firstDay.AddDate(0, 0, 60).Sub(p.clock.Now()))
	idc := useRealPeers(t, p)
	registerPaymentsAs(t, p, idc, monthV1YAML)
	e := startGate(t, p, url, nil)
	n := 500
	for d := range monthDays {
		day := paymentsDay{day: d, n: n, uuids: d >= monthSwitchDay}
		switch d {
		case monthDriftDay:
			day.mean = 85 * 1.25
		case monthBlockDay:
			day.missing = n * 6 / 1000
		}
		if d == monthContain {
			if _, err := e.as("operator").Contain(ctx, &gatev1.ContainRequest{Subject: "bank.payments", Reason: "INC-22: account_ref is a UUID"}); err != nil {
				t.Fatalf("Contain: %v", err)
			}
		}
		st := unarySender(t, e, "", payDay(d), "day", day.lines(), 200, false)
		if st.GetStatus() != gatev1.PartitionStatus_PARTITION_STATUS_SEALED {
			t.Fatalf("day %s is %v after its last batch, want sealed", payDay(d), st)
		}
		if d == monthContain+1 {
			if _, err := e.as("operator").Release(ctx, &gatev1.ReleaseRequest{Subject: "bank.payments", Reason: "INC-22: contained long enough, the fix is coming"}); err != nil {
				t.Fatalf("Release: %v", err)
			}
		}
		if d == monthRestart {
			// Nothing of the judgment lives in memory.
			e.stop()
			e = startGate(t, p, url, nil)
		}
	}

	alerts := monthAlerts(t, e)
	// Each day of the outage has its own MATCH_RATE alert, and none of the
	// month's alerts was resolved by a later day.
	var outage []string
	for d := monthSwitchDay; d < monthDays; d++ {
		outage = append(outage, "MATCH_RATE "+payDay(d)+" OPEN")
	}
	if got := alertLines(alerts, "MATCH_RATE"); !slices.Equal(got, outage) {
		t.Fatalf("MATCH_RATE alerts on day 30 = %v, want one OPEN alert for each day of the outage: %v", got, outage)
	}
	want := map[string][]string{
		"MEAN_DRIFT":         {"MEAN_DRIFT " + payDay(monthDriftDay) + " OPEN"},
		"PARTITION_BLOCKED":  {"PARTITION_BLOCKED " + payDay(monthBlockDay) + " OPEN"},
		"UNANNOUNCED_CHANGE": {"UNANNOUNCED_CHANGE " + payDay(monthSwitchDay) + " OPEN"},
	}
	for kind, w := range want {
		if got := alertLines(alerts, kind); !slices.Equal(got, w) {
			t.Errorf("%s alerts on day 30 = %v, want %v", kind, got, w)
		}
	}

	// The baselines say where they came from: the last day's match rate is
	// judged against the seven days before the switch, the day after the
	// drift against the seven days before it but the drift day.
	if from := baselineOf(t, e, payDay(monthDays-1), "account_match"); !slices.Equal(from, dayRange(monthSwitchDay-7, monthSwitchDay-1)) {
		t.Errorf("account_match baseline of %s = %v, want the seven days before the switch %v", payDay(monthDays-1), from, dayRange(monthSwitchDay-7, monthSwitchDay-1))
	}
	wantDrift := append(dayRange(monthDriftDay-6, monthDriftDay-1), payDay(monthDriftDay+1))
	if from := baselineOf(t, e, payDay(monthDriftDay+2), "amount_drift"); !slices.Equal(from, wantDrift) {
		t.Errorf("amount_drift baseline of %s = %v, want %v: the drift day left out", payDay(monthDriftDay+2), from, wantDrift)
	}

	// The fix, on day 31: v2 takes the UUIDs from the switch's data date,
	// and the outage is replayed.
	if _, err := e.registry.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: loadPayments(t, monthV2YAML),
		Override:          &registryv1.NoticeOverride{Reason: "INC-22: the source sends account UUIDs since 10-22"},
		DataEffectiveTime: timestamppb.New(firstDay.AddDate(0, 0, monthSwitchDay)), DataEffectiveReason: "INC-22: the switch began on 2026-10-22"}); err != nil {
		t.Fatalf("register v2: %v", err)
	}
	e.clock.Add(time.Second) // the gate asks the registry again
	sum := replayOf(t, e, &gatev1.ReplayRequest{Window: &gatev1.ReplayWindow{Subject: "bank.payments",
		PartitionFrom: payDay(monthSwitchDay), PartitionTo: payDay(monthDays - 1)}, ReplayId: "inc-22", SummaryOnly: true, Reason: "INC-22 fixed by v2"}).summary
	// Every held payment of the outage whose account the table knows is
	// released; the accounts the source's sync did not cover stay held.
	unmapped := 0
	for d := monthSwitchDay; d < monthDays; d++ {
		unmapped += unknownAccounts(paymentsDay{day: d, n: n, uuids: true}.lines())
	}
	if held := int64(n * (monthDays - monthSwitchDay)); sum.GetHeld() != held || sum.GetReleased() != held-int64(unmapped) || sum.GetRemaining() != int64(unmapped) {
		t.Fatalf("replay of the outage = %v, want all %d held payments but the %d of unknown accounts released", sum, held, unmapped)
	}
	alerts = monthAlerts(t, e)
	for _, a := range alerts {
		inOutage := a.GetPartition() >= payDay(monthSwitchDay)
		resolved := a.GetState() == gatev1.AlertState_ALERT_STATE_RESOLVED
		switch {
		case inOutage && (a.GetKind() == "MATCH_RATE" || a.GetKind() == "UNANNOUNCED_CHANGE"):
			if !resolved || a.GetResolvedBy() != "replay inc-22" {
				t.Errorf("%s of %s is %s by %q after the fix, want RESOLVED by replay inc-22", a.GetKind(), a.GetPartition(), a.GetState(), a.GetResolvedBy())
			}
		case resolved:
			t.Errorf("%s of %s was RESOLVED by %q: only the replayed days' alerts are", a.GetKind(), a.GetPartition(), a.GetResolvedBy())
		}
	}
	if got := alertLines(alerts, "MEAN_DRIFT"); !slices.Equal(got, want["MEAN_DRIFT"]) {
		t.Errorf("the drift alert after the fix = %v, want it still %v", got, want["MEAN_DRIFT"])
	}
}

func monthAlerts(t *testing.T, e *gateEnv) []*gatev1.Alert {
	t.Helper()
	resp, err := e.as("viewer").ListAlerts(context.Background(), &gatev1.ListAlertsRequest{Subject: "bank.payments"})
	if err != nil {
		t.Fatalf("ListAlerts: %v", err)
	}
	return resp.GetAlerts()
}

// alertLines are the alerts of a kind as "KIND partition STATE", by
// partition.
func alertLines(alerts []*gatev1.Alert, kind string) []string {
	var out []string
	for _, a := range alerts {
		if a.GetKind() == kind {
			out = append(out, fmt.Sprintf("%s %s %s", kind, a.GetPartition(), strings.TrimPrefix(a.GetState().String(), "ALERT_STATE_")))
		}
	}
	slices.Sort(out)
	return out
}

// baselineOf names the partitions a sealed partition's check was judged
// against.
func baselineOf(t *testing.T, e *gateEnv, part, name string) []string {
	t.Helper()
	resp, err := e.as("viewer").GetPartition(context.Background(), &gatev1.GetPartitionRequest{Subject: "bank.payments", Partition: part})
	if err != nil {
		t.Fatalf("GetPartition %s: %v", part, err)
	}
	for _, c := range resp.GetPartition().GetChecks() {
		if c.GetCheck() == name {
			return c.GetBaselinePartitions()
		}
	}
	t.Fatalf("partition %s lists no outcome of %s: %v", part, name, resp.GetPartition().GetChecks())
	return nil
}

// dayRange names payDay(from)..payDay(to).
func dayRange(from, to int) []string {
	var out []string
	for d := from; d <= to; d++ {
		out = append(out, payDay(d))
	}
	return out
}
