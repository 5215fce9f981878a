package gate

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/platform/storage/storagetest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// fleet.trips is a source of this test's own: taxi trips with a vehicle
// reference checked by a pattern ("VH-004711"), an odometer reading, a
// free-form driver code, a fare a partition may not lack and a note.
//
//go:embed testdata/fleet_trips_v1.yaml
var tripsV1YAML string

// tripsV2YAML is the fix of the vehicle switch: the pattern takes both
// the references and the UUIDs the source now sends.
var tripsV2YAML = strings.Replace(tripsV1YAML, `pattern: "^VH-[0-9]{6}$"`,
	`pattern: "^(VH-[0-9]{6}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$"`, 1)

//go:embed testdata/fleet_trip_model.yaml
var tripModelYAML string

// tripsDay describes one day of 40 trips.
type tripsDay struct {
	day int
	// uuidVehicles sends every vehicle as a UUID; stringOdometer every
	// reading as a JSON string; emailDrivers the first n drivers as
	// e-mail addresses; noFare the last n trips without a fare; nullNotes
	// the first n notes as null.
	uuidVehicles, stringOdometer bool
	emailDrivers, noFare         int
	nullNotes                    int
}

const tripsPerDay = 40

func tripsPart(d int) string { return fmt.Sprintf("2026-11-%02d", d) }

func (d tripsDay) lines() []string {
	out := make([]string, tripsPerDay)
	for i := range out {
		var b strings.Builder
		fmt.Fprintf(&b, `{"trip_id":"T-%d-%d"`, d.day, i)
		if d.uuidVehicles {
			fmt.Fprintf(&b, `,"vehicle_ref":"%08x-0000-4000-8000-%012d"`, i%7, i%7)
		} else {
			fmt.Fprintf(&b, `,"vehicle_ref":"VH-%06d"`, i%7)
		}
		if d.stringOdometer {
			fmt.Fprintf(&b, `,"odometer_km":"%d"`, 10000+d.day*100+i)
		} else {
			fmt.Fprintf(&b, `,"odometer_km":%d`, 10000+d.day*100+i)
		}
		if i < d.emailDrivers {
			fmt.Fprintf(&b, `,"driver_code":"driver%d@fleet.example"`, i%5)
		} else {
			fmt.Fprintf(&b, `,"driver_code":"DRV-%04d"`, i%5)
		}
		if i < tripsPerDay-d.noFare {
			fmt.Fprintf(&b, `,"fare":%d.50`, 10+i)
		}
		if i < d.nullNotes {
			b.WriteString(`,"note":null}`)
		} else {
			fmt.Fprintf(&b, `,"note":"trip %d"}`, i)
		}
		out[i] = b.String()
	}
	return out
}

func tripsIngest(part, batchID string, lines []string, seal bool) *gatev1.IngestRequest {
	return &gatev1.IngestRequest{Subject: "fleet.trips", Partition: part, Identity: &gatev1.IngestRequest_BatchId{BatchId: batchID}, SummaryOnly: true, Seal: seal,
		Batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: []byte(strings.Join(lines, "\n"))}}}}
}

func registerTrips(t *testing.T, p *peers, yaml string, override bool) {
	t.Helper()
	c, err := contract.Load([]byte(yaml), "fleet_trips.yaml")
	if err != nil {
		t.Fatalf("load fleet.trips: %v", err)
	}
	req := &registryv1.RegisterContractRequest{Contract: c}
	if override {
		req.Override = &registryv1.NoticeOverride{Reason: "INC-7: the fleet system already sends vehicle UUIDs"}
	}
	if _, err := p.registry.RegisterContract(context.Background(), req); err != nil {
		t.Fatalf("register fleet.trips: %v", err)
	}
}

// sendTrips sends a day in chunks of ten records, sealing with the last,
// and checks that no chunk before the seal raised an alert.
func sendTrips(t *testing.T, e *gateEnv, d tripsDay) *gatev1.PartitionState {
	t.Helper()
	lines := d.lines()
	var last *gatev1.IngestResponse
	for k, c := range chunksOf(lines, 10) {
		seal := k == len(lines)/10-1
		last = mustIngest(t, e, tripsIngest(tripsPart(d.day), fmt.Sprintf("day%d-%d", d.day, k), c, seal))
		if !seal && len(last.GetAlerts()) > 0 {
			t.Fatalf("chunk %d of day %d raised %v before the seal, want alerts only when the partition is judged", k, d.day, last.GetAlerts())
		}
	}
	return last.GetPartition()
}

func kindsAndFields(alerts []*gatev1.Alert) []string {
	var out []string
	for _, a := range alerts {
		out = append(out, a.GetKind()+" "+a.GetField()+" "+a.GetPartition())
	}
	slices.Sort(out)
	return out
}

func listAlerts(t *testing.T, e *gateEnv, states ...gatev1.AlertState) []*gatev1.Alert {
	t.Helper()
	resp, err := e.as("viewer").ListAlerts(context.Background(), &gatev1.ListAlertsRequest{Subject: "fleet.trips", States: states})
	if err != nil {
		t.Fatalf("ListAlerts: %v", err)
	}
	return resp.GetAlerts()
}

// A source's fields are learned from what passed, and a move to another
// shape is one UNANNOUNCED_CHANGE naming the field on the first partition
// of the move: a pattern-checked reference that becomes a UUID, an
// integer that arrives as a string, a free-form code that becomes an
// e-mail address (which no check catches). A blocked partition teaches
// nothing. After the fix and a replay the alerts that no longer hold are
// RESOLVED by the replay; the others stay listed as holding.
func TestUnannouncedChangesAndAlertLifecycle(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, testUnannouncedChanges)
}

func testUnannouncedChanges(t *testing.T, url string) {
	p := newPeers(t)
	useRealPeers(t, p)
	m, err := contract.LoadCanonicalModel([]byte(tripModelYAML), "fleet_trip.yaml")
	if err != nil {
		t.Fatalf("load fleet.trip: %v", err)
	}
	if _, err := p.registry.RegisterCanonicalModel(context.Background(), &registryv1.RegisterCanonicalModelRequest{Model: m}); err != nil {
		t.Fatalf("register fleet.trip: %v", err)
	}
	registerTrips(t, p, tripsV1YAML, false)
	e := startGate(t, p, url, nil)
	ctx := context.Background()

	changes := func() []string { return kindsAndFields(alertsOf(listAlerts(t, e), "UNANNOUNCED_CHANGE")) }
	expectDay := func(d tripsDay, verdict gatev1.PartitionVerdict, want ...string) *gatev1.PartitionState {
		t.Helper()
		st := sendTrips(t, e, d)
		if st.GetVerdict() != verdict || !slices.Equal(kindsAndFields(st.GetAlerts()), want) {
			t.Fatalf("day %d: %s with alerts %v, want %s with %v", d.day, st.GetVerdict(), kindsAndFields(st.GetAlerts()), verdict, want)
		}
		return st
	}

	// Two ordinary days: the shapes are learned, nothing is raised.
	expectDay(tripsDay{day: 1}, gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED)
	expectDay(tripsDay{day: 2}, gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED)
	// A day blocked for missing fares, where 16 of the trips that passed
	// have e-mail drivers: under the share that makes a change, and never
	// learned, since nothing of a blocked day is published.
	expectDay(tripsDay{day: 3, noFare: 20, emailDrivers: 16}, gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED, "PARTITION_BLOCKED  "+tripsPart(3))
	// Every driver is an e-mail address: no check fails, the shape is new.
	// Half the notes are null too.
	day4 := expectDay(tripsDay{day: 4, emailDrivers: tripsPerDay, nullNotes: 20}, gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED_WITH_ALERTS,
		"NULL_RATE note "+tripsPart(4), "UNANNOUNCED_CHANGE driver_code "+tripsPart(4))
	if msg := alertsOf(day4.GetAlerts(), "UNANNOUNCED_CHANGE")[0].GetMessage(); !strings.Contains(msg, "are email") || !strings.Contains(msg, "DRV-{digits:4}") ||
		!strings.Contains(msg, "reach consumers") {
		t.Errorf("driver change message = %q, want the new shape, the learned one, and that the values passed", msg)
	}
	// The vehicles switch to UUIDs; the notes are back. The first day of
	// the switch raises one change naming vehicle_ref; this day's note
	// rate passing says nothing of day 4's, whose NULL_RATE alert stays.
	day5 := expectDay(tripsDay{day: 5, uuidVehicles: true, emailDrivers: tripsPerDay}, gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED_WITH_ALERTS,
		"UNANNOUNCED_CHANGE vehicle_ref "+tripsPart(5))
	vehicle := alertsOf(day5.GetAlerts(), "UNANNOUNCED_CHANGE")[0]
	if msg := vehicle.GetMessage(); !strings.Contains(msg, "40 of 40 values of vehicle_ref") || !strings.Contains(msg, "are uuid") || !strings.Contains(msg, "VH-{digits:6}") ||
		!strings.Contains(msg, "quarantined") {
		t.Errorf("vehicle change message = %q, want 40 of 40 values moved to uuid from VH-{digits:6}, quarantined", msg)
	}
	// The next day of the same change raises nothing new; the odometer
	// arriving as strings is a change of its own, raised once.
	expectDay(tripsDay{day: 6, uuidVehicles: true, emailDrivers: tripsPerDay, stringOdometer: true}, gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED_WITH_ALERTS,
		"UNANNOUNCED_CHANGE odometer_km "+tripsPart(6))
	expectDay(tripsDay{day: 7, uuidVehicles: true, emailDrivers: tripsPerDay, stringOdometer: true}, gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED_WITH_ALERTS)
	wantChanges := []string{"UNANNOUNCED_CHANGE driver_code " + tripsPart(4), "UNANNOUNCED_CHANGE odometer_km " + tripsPart(6), "UNANNOUNCED_CHANGE vehicle_ref " + tripsPart(5)}
	if got := changes(); !slices.Equal(got, wantChanges) {
		t.Fatalf("UNANNOUNCED_CHANGE alerts = %v, want exactly %v", got, wantChanges)
	}
	for _, a := range listAlerts(t, e) {
		if a.GetKind() == "NULL_RATE" && (a.GetState() != gatev1.AlertState_ALERT_STATE_OPEN || a.GetPartition() != tripsPart(4)) {
			t.Errorf("day 4's NULL_RATE alert is %s by %q on %s, want OPEN on %s: a later day passing does not undo day 4", a.GetState(), a.GetResolvedBy(), a.GetPartition(), tripsPart(4))
		}
	}

	// The fix: v2 takes the vehicle UUIDs. The replay releases day 5 (its
	// trips only failed the pattern); days 6 and 7 stay held for the
	// odometer, and their reasons now say only that.
	registerTrips(t, p, tripsV2YAML, true)
	sum := replayOf(t, e, &gatev1.ReplayRequest{Window: &gatev1.ReplayWindow{Subject: "fleet.trips", PartitionFrom: tripsPart(5), PartitionTo: tripsPart(7)},
		ReplayId: "fix-1", SummaryOnly: true, Reason: "INC-7"}).summary
	if sum.GetReleased() != tripsPerDay || sum.GetRemaining() != 2*tripsPerDay {
		t.Fatalf("replay released %d and left %d, want %d released (day 5) and %d held (days 6 and 7)", sum.GetReleased(), sum.GetRemaining(), tripsPerDay, 2*tripsPerDay)
	}
	held := quarantineStats(t, e, &gatev1.QuarantineFilter{Subject: "fleet.trips",
		PartitionFrom: tripsPart(5), PartitionTo: tripsPart(7), State: gatev1.QuarantineState_QUARANTINE_STATE_HELD})
	var reasons []string
	for _, c := range held.GetByCheck() {
		reasons = append(reasons, fmt.Sprintf("%s=%d", c.GetKey(), c.GetCount()))
	}
	if !slices.Equal(reasons, []string{fmt.Sprintf("odometer_km.type=%d", 2*tripsPerDay)}) {
		t.Errorf("held records by check after the replay = %v, want only odometer_km.type: the pattern no longer holds them", reasons)
	}

	// What still holds: day 4's null notes and the driver change (nothing
	// fixed them), the odometer change (its records are held), day 3's
	// block. The vehicle change is RESOLVED by the replay.
	holding := []gatev1.AlertState{gatev1.AlertState_ALERT_STATE_OPEN, gatev1.AlertState_ALERT_STATE_ACKNOWLEDGED}
	want := []string{"NULL_RATE note " + tripsPart(4), "PARTITION_BLOCKED  " + tripsPart(3), "UNANNOUNCED_CHANGE driver_code " + tripsPart(4), "UNANNOUNCED_CHANGE odometer_km " + tripsPart(6)}
	if got := kindsAndFields(listAlerts(t, e, holding...)); !slices.Equal(got, want) {
		t.Fatalf("holding alerts after the replay = %v, want %v", got, want)
	}
	for _, a := range listAlerts(t, e, gatev1.AlertState_ALERT_STATE_RESOLVED) {
		if a.GetKind() == "UNANNOUNCED_CHANGE" && (a.GetField() != "vehicle_ref" || a.GetResolvedBy() != "replay fix-1" || a.GetResolveTime() == nil) {
			t.Errorf("resolved change %s by %q at %v, want vehicle_ref resolved by replay fix-1", a.GetField(), a.GetResolvedBy(), a.GetResolveTime())
		}
	}

	// People acknowledge and resolve, once each; a viewer may not.
	var driver, odometer *gatev1.Alert
	for _, a := range listAlerts(t, e, holding...) {
		switch a.GetField() {
		case "driver_code":
			driver = a
		case "odometer_km":
			odometer = a
		}
	}
	if _, err := e.as("viewer").AcknowledgeAlert(ctx, &gatev1.AcknowledgeAlertRequest{Sequence: odometer.GetSequence()}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("a viewer's AcknowledgeAlert = %v, want PermissionDenied", err)
	}
	ack, err := e.as("operator").AcknowledgeAlert(ctx, &gatev1.AcknowledgeAlertRequest{Sequence: odometer.GetSequence(), Reason: "asked the fleet team"})
	if err != nil || ack.GetAlert().GetState() != gatev1.AlertState_ALERT_STATE_ACKNOWLEDGED || ack.GetAlert().GetAcknowledgedBy() != "operator" {
		t.Fatalf("AcknowledgeAlert = %v (%v), want ACKNOWLEDGED by operator", ack, err)
	}
	if _, err := e.as("operator").ResolveAlert(ctx, &gatev1.ResolveAlertRequest{Sequence: driver.GetSequence()}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("ResolveAlert without a reason = %v, want InvalidArgument", err)
	}
	res, err := e.as("operator").ResolveAlert(ctx, &gatev1.ResolveAlertRequest{Sequence: driver.GetSequence(), Reason: "drivers log in by e-mail now; v3 declares it"})
	if err != nil || res.GetAlert().GetState() != gatev1.AlertState_ALERT_STATE_RESOLVED || res.GetAlert().GetResolvedBy() != "operator" ||
		res.GetAlert().GetResolution() != "drivers log in by e-mail now; v3 declares it" {
		t.Fatalf("ResolveAlert = %v (%v), want RESOLVED by operator with the reason", res, err)
	}
	if _, err := e.as("operator").AcknowledgeAlert(ctx, &gatev1.AcknowledgeAlertRequest{Sequence: driver.GetSequence()}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("acknowledging a resolved alert = %v, want FailedPrecondition", err)
	}
	if _, err := e.as("operator").ResolveAlert(ctx, &gatev1.ResolveAlertRequest{Sequence: 99999, Reason: "x"}); status.Code(err) != codes.NotFound {
		t.Errorf("resolving no alert = %v, want NotFound", err)
	}
	want = []string{"NULL_RATE note " + tripsPart(4), "PARTITION_BLOCKED  " + tripsPart(3), "UNANNOUNCED_CHANGE odometer_km " + tripsPart(6)}
	if got := kindsAndFields(listAlerts(t, e, holding...)); !slices.Equal(got, want) {
		t.Fatalf("holding alerts at the end = %v, want %v", got, want)
	}
	// Over REST: the holding alerts by state, and a resolution.
	base := startREST(t, e)
	req, err := http.NewRequest(http.MethodGet, base+"/v1/alerts?subject=fleet.trips&states=ALERT_STATE_OPEN&states=ALERT_STATE_ACKNOWLEDGED", nil)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	req.Header.Set("Authorization", "Bearer "+e.tokens["viewer"])
	hresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /v1/alerts: %v", err)
	}
	var listed struct {
		Alerts []struct{ Kind, Field, State string }
	}
	err = json.NewDecoder(hresp.Body).Decode(&listed)
	hresp.Body.Close()
	if err != nil || len(listed.Alerts) != 3 || listed.Alerts[2].Field != "odometer_km" || listed.Alerts[2].State != "ALERT_STATE_ACKNOWLEDGED" {
		t.Fatalf("GET /v1/alerts holding = %+v (%v), want the block, day 4's null notes and the acknowledged odometer change", listed, err)
	}
	var resolvedREST struct {
		Alert struct {
			State      string
			ResolvedBy string `json:"resolved_by"`
		}
	}
	if code := postJSON(t, e, fmt.Sprintf("%s/v1/alerts/%d:resolve", base, odometer.GetSequence()), "operator", map[string]string{"reason": "fleet team resends"}, &resolvedREST); code != http.StatusOK ||
		resolvedREST.Alert.State != "ALERT_STATE_RESOLVED" || resolvedREST.Alert.ResolvedBy != "operator" {
		t.Fatalf("POST :resolve = %d %+v, want 200 and RESOLVED by operator", code, resolvedREST)
	}

	// Each change is an event in the registry's stream: the replay's
	// resolution and the operator's.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ev, err := p.registry.ListEvents(ctx, &registryv1.ListEventsRequest{Subjects: []string{"fleet.trips"},
			Types: []registryv1.EventType{registryv1.EventType_EVENT_TYPE_ALERT_ACKNOWLEDGED, registryv1.EventType_EVENT_TYPE_ALERT_RESOLVED}})
		if err != nil {
			t.Fatalf("ListEvents: %v", err)
		}
		var by []string
		for _, e := range ev.GetEvents() {
			by = append(by, strings.TrimPrefix(e.GetType().String(), "EVENT_TYPE_")+" by "+e.GetAttributes()["by"])
		}
		slices.Sort(by)
		want := []string{"ALERT_ACKNOWLEDGED by operator", "ALERT_RESOLVED by operator", "ALERT_RESOLVED by operator", "ALERT_RESOLVED by replay fix-1"}
		if slices.Equal(by, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alert events = %v, want %v", by, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
