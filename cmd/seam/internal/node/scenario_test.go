package node_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
	"github.com/seamdata/seam/core/examples"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Scenario 4 through the real services: a fix for the last 40 of 400
// daily partitions replays only those 40, and a second replay releases
// nothing.
func TestScenarioScopedBackfillRealServices(t *testing.T) {
	t.Parallel()
	n := seamtest.StartOrders(t)
	ctx := context.Background()
	conn := n.Conn(t, n.Admin)
	gate := gatev1.NewGateServiceClient(conn)

	const days = 400
	part := func(d int) string { return fmt.Sprintf("p%03d", d) }
	for d := 1; d <= days; d++ {
		// One good order and one whose email the v1 pattern refuses.
		good := strings.Replace(seamtest.OrderLines(1)[0], "ORD-0000000000", fmt.Sprintf("ORD-%010d", 2*d), 1)
		bad := strings.Replace(strings.Replace(seamtest.OrderLines(1)[0], "ORD-0000000000", fmt.Sprintf("ORD-%010d", 2*d+1), 1),
			`"email":"customer100000@example.com"`, `"email":"not an email"`, 1)
		resp, err := gate.Ingest(ctx, &gatev1.IngestRequest{
			Subject: "shop.orders", Partition: part(d), Identity: &gatev1.IngestRequest_BatchId{BatchId: part(d)}, SummaryOnly: true,
			Batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: []byte(good + "\n" + bad + "\n")}}},
		})
		if err != nil || resp.GetSummary().GetAccepted() != 1 || resp.GetSummary().GetQuarantined() != 1 {
			t.Fatalf("ingest %s = %v, %v; want 1 accepted and 1 quarantined", part(d), resp.GetSummary(), err)
		}
	}

	// The fix: v2 drops the email pattern (additive: active at once).
	v2 := examples.ShopOrdersV1()
	for _, f := range v2.GetFields() {
		if f.GetName() == "email" {
			f.Pattern = ""
		}
	}
	reg, err := registryv1.NewRegistryServiceClient(conn).RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: v2})
	if err != nil || reg.GetVersion().GetBreaking() {
		t.Fatalf("register the relaxed v2: %v (breaking %v)", err, reg.GetVersion().GetBreaking())
	}
	window := &gatev1.ReplayWindow{Subject: "shop.orders", PartitionFrom: part(361), PartitionTo: part(400), ContractVersion: reg.GetVersion().GetVersion()}
	plan, err := gate.PlanReplay(ctx, &gatev1.PlanReplayRequest{Window: window})
	if err != nil || plan.GetHeld() != 40 || plan.GetWouldRelease() != 40 || len(plan.GetPartitions()) != 40 {
		t.Fatalf("plan of the last 40 partitions = %v (%v), want 40 held in 40 partitions, all passing", plan, err)
	}
	replay := func(id string) (released int, sum *gatev1.ReplaySummary) {
		stream, err := gate.Replay(ctx, &gatev1.ReplayRequest{Window: window, ReplayId: id})
		if err != nil {
			t.Fatal(err)
		}
		for {
			msg, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return released, sum
			}
			if err != nil {
				t.Fatalf("replay %s: %v", id, err)
			}
			if r := msg.GetRecord(); r != nil {
				if p := r.GetProvenance().GetPartition(); p < part(361) {
					t.Fatalf("replay released a record of %s, outside the window", p)
				}
				released++
			}
			if s := msg.GetSummary(); s != nil {
				sum = s
			}
		}
	}
	if got, sum := replay("fix-1"); got != 40 || sum.GetPartitions() != 40 || sum.GetReleased() != 40 {
		t.Fatalf("replay released %d records, summary %v; want 40 from 40 partitions", got, sum)
	}
	if got, sum := replay("fix-2"); got != 0 || sum.GetReleased() != 0 {
		t.Fatalf("a second replay released %d (summary %v), want nothing", got, sum)
	}
	stats, err := gate.GetQuarantineStats(ctx, &gatev1.GetQuarantineStatsRequest{Filter: &gatev1.QuarantineFilter{Subject: "shop.orders"}})
	if err != nil || stats.GetTotal() != days-40 {
		t.Fatalf("still held = %d (%v), want the %d records outside the window", stats.GetTotal(), err, days-40)
	}
	mon, err := gate.GetMonitor(ctx, &gatev1.GetMonitorRequest{Subject: "shop.orders", PartitionFrom: part(1), PartitionTo: part(days)})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mon.GetPartitions() {
		want := int64(0)
		if m.GetPartition() >= part(361) {
			want = 1
		}
		if m.GetReleased() != want {
			t.Errorf("partition %s released %d, want %d", m.GetPartition(), m.GetReleased(), want)
		}
	}
}
