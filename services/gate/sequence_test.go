package gate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/platform/storage/storagetest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// sequentialTrips are the trips numbered from, up to (not including) to:
// a free-form driver code "name-N", the trip's number as a digit string in
// its note, a zero-padded vehicle reference (a UUID with uuidVehicles),
// and a stringOdometer sends the reading as a JSON string.
func sequentialTrips(from, to int, uuidVehicles, stringOdometer bool) []string {
	var out []string
	for n := from; n < to; n++ {
		vehicle := fmt.Sprintf("VH-%06d", n%1000)
		if uuidVehicles {
			vehicle = fmt.Sprintf("%08x-0000-4000-8000-%012d", n%7, n%7)
		}
		odometer := fmt.Sprint(n)
		if stringOdometer {
			odometer = fmt.Sprintf("%q", odometer)
		}
		out = append(out, fmt.Sprintf(`{"trip_id":"T-%d","vehicle_ref":%q,"odometer_km":%s,"driver_code":"name-%d","fare":%d.5,"note":"%d"}`,
			n, vehicle, odometer, n, 10+n%50, n))
	}
	return out
}

// sendSequence sends lines as partition part in chunks of ten, sealing
// with the last, and returns the sealed state.
func sendSequence(t *testing.T, e *gateEnv, part string, lines []string) *gatev1.PartitionState {
	t.Helper()
	chunks := chunksOf(lines, 10)
	var last *gatev1.IngestResponse
	for k, c := range chunks {
		last = mustIngest(t, e, tripsIngest(part, fmt.Sprintf("%s-%d", part, k), c, k == len(chunks)-1))
	}
	return last.GetPartition()
}

func registerTripModel(t *testing.T, p *peers) {
	t.Helper()
	m, err := contract.LoadCanonicalModel([]byte(tripModelYAML), "fleet_trip.yaml")
	if err != nil {
		t.Fatalf("load fleet.trip: %v", err)
	}
	if _, err := p.registry.RegisterCanonicalModel(context.Background(), &registryv1.RegisterCanonicalModelRequest{Model: m}); err != nil {
		t.Fatalf("register fleet.trip: %v", err)
	}
}

// Sequential names, ids and digit strings that cross a power of ten
// (name-9999, name-10000; 99999, 100000), sent in chunks, within a
// partition and from one partition to the next, keep their shape: no
// UNANNOUNCED_CHANGE. A zero-padded reference that becomes a UUID still is
// one.
func TestSequentialNamesAcrossPowersOfTenAreNoChange(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, func(t *testing.T, url string) {
		p := newPeers(t)
		useRealPeers(t, p)
		registerTripModel(t, p)
		registerTrips(t, p, tripsV1YAML, false)
		e := startGate(t, p, url, nil)

		days := []struct{ from, to int }{{9960, 10000}, {10000, 10040}, {99980, 100020}, {100020, 100060}, {999990, 1000030}}
		for i, d := range days {
			st := sendSequence(t, e, tripsPart(i+1), sequentialTrips(d.from, d.to, false, false))
			if st.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED || len(st.GetAlerts()) > 0 {
				t.Fatalf("day %d (trips %d to %d): %s with alerts %v, want PASSED without any", i+1, d.from, d.to-1, st.GetVerdict(), kindsAndFields(st.GetAlerts()))
			}
		}
		st := sendSequence(t, e, tripsPart(len(days)+1), sequentialTrips(1000030, 1000070, true, false))
		if got, want := kindsAndFields(st.GetAlerts()), []string{"UNANNOUNCED_CHANGE vehicle_ref " + tripsPart(len(days)+1)}; !slices.Equal(got, want) {
			t.Fatalf("the day vehicles became UUIDs raised %v, want %v", got, want)
		}
		if msg := st.GetAlerts()[0].GetMessage(); !containsAll(msg, "are uuid", "VH-{digits:6}") {
			t.Errorf("vehicle change message = %q, want uuid where VH-{digits:6} was", msg)
		}
	})
}

// A store whose learned and reported shapes were written under the
// version-1 names (schema 8) upgrades through "shapes of one classifier" and keeps them: values
// that did not change raise nothing (name-{digits:4} learned from
// name-9999 covers name-10000, "digit string" covers digits), a change
// reported before is not reported again under its new name, and a new
// change is still one.
func TestUpgradeKeepsShapesLearnedUnderVersion1Names(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := storeAtSchema(t, url, 8)
		for _, l := range [][2]string{{"trip_id", "T-{digits:4}"}, {"vehicle_ref", "VH-{digits:6}"}, {"odometer_km", "number"},
			{"driver_code", "name-{digits:4}"}, {"fare", "number"}, {"note", "digit string"}} {
			if _, err := db.SQL.ExecContext(ctx, `INSERT INTO gate_learned_shapes (subject, field, shape, records, version, first_part, last_part)
VALUES ('fleet.trips', $1, $2, 40, 1, $3, $3)`, l[0], l[1], tripsPart(1)); err != nil {
				t.Fatalf("write a schema-8 learned shape: %v", err)
			}
		}
		// The odometer arriving as strings was reported under version 1.
		if _, err := db.SQL.ExecContext(ctx, `INSERT INTO gate_shapes (subject, field, shape, first_seen, batch_id) VALUES ('fleet.trips', 'odometer_km', 'digit string', 1, 'day1-0')`); err != nil {
			t.Fatalf("write a schema-8 reported shape: %v", err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}

		p := newPeers(t)
		useRealPeers(t, p)
		registerTripModel(t, p)
		registerTrips(t, p, tripsV1YAML, false)
		e := startGate(t, p, url, nil)
		st := sendSequence(t, e, tripsPart(2), sequentialTrips(10000, 10040, false, false))
		if st.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED || len(st.GetAlerts()) > 0 {
			t.Fatalf("the first day after the upgrade: %s with %v, want PASSED without alerts: the shapes learned before still hold", st.GetVerdict(), kindsAndFields(st.GetAlerts()))
		}
		st = sendSequence(t, e, tripsPart(3), sequentialTrips(10040, 10080, false, true))
		if got := alertsOf(st.GetAlerts(), "UNANNOUNCED_CHANGE"); len(got) > 0 {
			t.Fatalf("odometer readings as strings raised %v after the upgrade, want nothing new: the change was reported before", kindsAndFields(got))
		}
		st = sendSequence(t, e, tripsPart(4), sequentialTrips(10080, 10120, true, false))
		if got, want := kindsAndFields(alertsOf(st.GetAlerts(), "UNANNOUNCED_CHANGE")), []string{"UNANNOUNCED_CHANGE vehicle_ref " + tripsPart(4)}; !slices.Equal(got, want) {
			t.Fatalf("the day vehicles became UUIDs raised %v, want %v", got, want)
		}
		if msg := alertsOf(st.GetAlerts(), "UNANNOUNCED_CHANGE")[0].GetMessage(); !containsAll(msg, "are uuid", "VH-{digits:6}") {
			t.Errorf("vehicle change message = %q, want uuid where VH-{digits:6} was", msg)
		}
	})
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
