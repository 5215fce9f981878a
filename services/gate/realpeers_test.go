package gate

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/seamdata/seam/platform/storage/storagetest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
	"github.com/seamdata/seam/services/adapter"
	"github.com/seamdata/seam/services/idmap"
)

// useRealPeers replaces the gatetest stand-ins by the real idmap and
// adapter services, each on its own loopback gRPC server, and creates the
// customer namespace. It returns an idmap client.
func useRealPeers(t testing.TB, p *peers) idmapv1.IdMapServiceClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	im, err := idmap.New(ctx, idmap.Config{StoreURL: storagetest.SQLiteURL(t)})
	if err != nil {
		t.Fatalf("idmap.New: %v", err)
	}
	t.Cleanup(func() { _ = im.Close() })
	p.idmapAdr = serve(t, nil, func(s *grpc.Server) { im.Register(s) })
	idc := idmapv1.NewIdMapServiceClient(dial(t, p.idmapAdr, ""))

	ad, err := adapter.New(ctx, adapter.Config{Registry: dial(t, p.regAddr, p.tokens["seam-services"]), Idmap: dial(t, p.idmapAdr, "")})
	if err != nil {
		t.Fatalf("adapter.New: %v", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = ad.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; _ = ad.Close() })
	p.adptAddr = serve(t, nil, func(s *grpc.Server) { ad.Register(s) })

	if _, err := idc.CreateNamespace(ctx, &idmapv1.CreateNamespaceRequest{Namespace: &idmapv1.Namespace{Name: "customer", Formats: []*idmapv1.Format{
		{Name: "legacy-int", Kind: idmapv1.FormatKind_FORMAT_KIND_INT}, {Name: "uuid", Kind: idmapv1.FormatKind_FORMAT_KIND_UUID}}}}); err != nil {
		t.Fatalf("CreateNamespace: %v", err)
	}
	return idc
}

// importPairs loads the uuid → legacy-int table of customers 1..1000
// except those listed, through idmap's bulk import.
func importPairs(t testing.TB, idc idmapv1.IdMapServiceClient, except ...int) {
	t.Helper()
	skip := map[int]bool{}
	for _, k := range except {
		skip[k] = true
	}
	var pairs []*idmapv1.Pair
	for k := 1; k <= 1000; k++ {
		if !skip[k] {
			pairs = append(pairs, &idmapv1.Pair{From: customerUUID(k), To: fmt.Sprint(k)})
		}
	}
	importTable(t, idc, &idmapv1.ImportHeader{Namespace: "customer", FromFormat: "uuid", ToFormat: "legacy-int"}, pairs)
}

// importTable imports pairs into the table h names, in one chunk, failing
// on a conflict, and expects the import committed.
func importTable(t testing.TB, idc idmapv1.IdMapServiceClient, h *idmapv1.ImportHeader, pairs []*idmapv1.Pair) {
	t.Helper()
	stream, err := idc.ImportPairs(context.Background())
	if err != nil {
		t.Fatalf("ImportPairs: %v", err)
	}
	h.OnConflict = idmapv1.ConflictPolicy_CONFLICT_POLICY_FAIL
	if err := stream.Send(&idmapv1.ImportPairsRequest{Message: &idmapv1.ImportPairsRequest_Header{Header: h}}); err != nil {
		t.Fatalf("send header: %v", err)
	}
	if err := stream.Send(&idmapv1.ImportPairsRequest{Message: &idmapv1.ImportPairsRequest_Chunk{Chunk: &idmapv1.PairChunk{Pairs: pairs}}}); err != nil {
		t.Fatalf("send pairs: %v", err)
	}
	if resp, err := stream.CloseAndRecv(); err != nil || !resp.GetCommitted() {
		t.Fatalf("ImportPairs of %s %s→%s = %v (%v), want committed", h.GetNamespace(), h.GetFromFormat(), h.GetToFormat(), resp, err)
	}
}

// Scenario 1 through the real registry, idmap and adapter services. With
// the real idmap an identifier "resolves" when it appears in a table of
// its namespace, so the customer sync table (uuid ↔ legacy-int, ten
// customers not yet synced) is loaded first; the legacy ids resolve
// through its legacy-int side, and v2's UUIDs translate through it.
func TestScenarioIdentifierChangeRealPeers(t *testing.T) {
	t.Parallel()
	p := newPeers(t)
	idc := useRealPeers(t, p)
	importPairs(t, idc, 301, 302, 303, 304, 305, 306, 307, 308, 309, 310)
	e := startGate(t, p, storagetest.SQLiteURL(t), nil)
	ctx := context.Background()
	if _, err := e.registry.RegisterConsumer(ctx, &registryv1.RegisterConsumerRequest{Consumer: &registryv1.Consumer{Name: "features.customer_ltv", Owner: "team-ml",
		Inputs: []*registryv1.Input{{Source: &registryv1.Input_Subject{Subject: "shop.orders"}, Fields: []string{"customer_id"}, Usage: registryv1.UsageKind_USAGE_KIND_JOIN_KEY}}}}); err != nil {
		t.Fatalf("RegisterConsumer: %v", err)
	}
	for i := range 7 {
		req := ingest("shop.orders", day(i), "b", orders{first: i * 1000, n: 200, amount: 85, unknown: 50})
		req.Seal = true
		if _, err := e.as("pipeline").Ingest(ctx, req); err != nil {
			t.Fatalf("baseline day %d: %v", i, err)
		}
	}
	if m := monitorOf(t, e, "shop.orders", day(0)); m.GetMatchRate() < 0.97 || m.GetMatchRate() > 0.99 {
		t.Fatalf("baseline match rate = %v, want about 0.98", m.GetMatchRate())
	}
	the := day(7)
	b1, err := e.as("pipeline").Ingest(ctx, ingest("shop.orders", the, "b1", orders{first: 1, n: 500, amount: 85, uuids: 490}))
	if err != nil {
		t.Fatalf("Ingest: %v", err)
	}
	if s := b1.GetSummary(); s.GetAccepted() != 10 || s.GetQuarantined() != 490 {
		t.Fatalf("summary = %v, want 10 accepted and 490 quarantined", s)
	}
	if _, err := e.as("operator").Contain(ctx, &gatev1.ContainRequest{Subject: "shop.orders", Reason: "INC-1"}); err != nil {
		t.Fatalf("Contain: %v", err)
	}
	if _, err := e.as("pipeline").Ingest(ctx, ingest("shop.orders", the, "b2", orders{first: 501, n: 100, amount: 85, uuids: 100})); err != nil {
		t.Fatalf("Ingest while contained: %v", err)
	}
	if sealed := sealOf(t, e, "shop.orders", the); len(alertsOf(sealed.GetAlerts(), "UNANNOUNCED_CHANGE")) != 1 || len(alertsOf(sealed.GetAlerts(), "MATCH_RATE")) != 1 {
		t.Fatalf("alerts at the seal = %v, want an unannounced change and a match-rate alert", sealed.GetAlerts())
	}
	e.registerV2(t)
	window := &gatev1.ReplayWindow{Subject: "shop.orders", PartitionFrom: the, PartitionTo: the}
	r := replay(t, e, window, "real-1")
	// 490 + 100 held; customers 301..310 (orders 300..309) are not synced.
	if r.summary.GetReleased() != 580 || r.summary.GetRemaining() != 10 || len(r.records) != 580 {
		t.Fatalf("replay = %d records, summary %v; want 580 released and 10 remaining", len(r.records), r.summary)
	}
	seen := map[string]bool{}
	for _, rec := range r.records {
		if seen[rec.GetRecordId()] {
			t.Fatalf("record %s released twice", rec.GetRecordId())
		}
		seen[rec.GetRecordId()] = true
		if !strings.Contains(string(rec.GetJson()), `"customer_id":`) {
			t.Fatalf("released record without customer_id: %s", rec.GetJson())
		}
	}
	if again := replay(t, e, window, "real-2"); again.summary.GetReleased() != 0 {
		t.Fatalf("second replay released %d, want 0", again.summary.GetReleased())
	}
	if m := monitorOf(t, e, "shop.orders", the); m.GetMatchRate() < 0.97 || m.GetMatchRate() > 0.995 || m.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED {
		t.Fatalf("match rate after the replay = %v (monitor %v), want back near 0.98 and the day re-sealed PASSED", m.GetMatchRate(), m)
	}
}
