package gate

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/seamdata/seam/platform/storage/storagetest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// hangingRegistry forwards the calls the gate makes to the real registry,
// except that a call of a hung method waits until its caller gives up, as
// a SIGSTOPped registry would.
type hangingRegistry struct {
	registryv1.UnimplementedRegistryServiceServer
	real    registryv1.RegistryServiceClient
	reads   atomic.Bool // GetContract, ListContracts, GetRerunOrder hang
	publish atomic.Bool // PublishEvent hangs
}

// hangThen calls the real registry or, while on is set, waits until the
// caller gives up.
func hangThen[Req, Resp any](ctx context.Context, on *atomic.Bool, req Req, call func(context.Context, Req, ...grpc.CallOption) (Resp, error)) (Resp, error) {
	if on.Load() {
		<-ctx.Done()
		var none Resp
		return none, ctx.Err()
	}
	return call(ctx, req)
}

func (h *hangingRegistry) GetContract(ctx context.Context, req *registryv1.GetContractRequest) (*registryv1.GetContractResponse, error) {
	return hangThen(ctx, &h.reads, req, h.real.GetContract)
}

func (h *hangingRegistry) ListContracts(ctx context.Context, req *registryv1.ListContractsRequest) (*registryv1.ListContractsResponse, error) {
	return hangThen(ctx, &h.reads, req, h.real.ListContracts)
}

func (h *hangingRegistry) GetRerunOrder(ctx context.Context, req *registryv1.GetRerunOrderRequest) (*registryv1.GetRerunOrderResponse, error) {
	return hangThen(ctx, &h.reads, req, h.real.GetRerunOrder)
}

func (h *hangingRegistry) PublishEvent(ctx context.Context, req *registryv1.PublishEventRequest) (*registryv1.PublishEventResponse, error) {
	return hangThen(ctx, &h.publish, req, h.real.PublishEvent)
}

// startHanging starts a gate whose registry can be made to hang.
func startHanging(t *testing.T) (*gateEnv, *hangingRegistry) {
	t.Helper()
	p := knownPeers(t)
	h := &hangingRegistry{real: p.registry}
	addr := serve(t, nil, func(s *grpc.Server) { registryv1.RegisterRegistryServiceServer(s, h) })
	e := startGate(t, p, storagetest.SQLiteURL(t), func(c *Config) {
		c.Registry = dial(t, addr, "")
		// Long enough for a loaded CI machine to answer the first,
		// healthy calls; the hung calls must end well before the test's
		// 20 s context.
		c.RegistryTimeout = 2 * time.Second
	})
	return e, h
}

// A hung registry (it accepts the call and never answers) is treated like
// an unreachable one: ingest serves the last known contract within the
// registry timeout instead of waiting for as long as the registry hangs.
func TestHungRegistryServesLastKnownContract(t *testing.T) {
	t.Parallel()
	e, h := startHanging(t)
	ctx := context.Background()
	if _, err := e.as("pipeline").Ingest(ctx, ingest("shop.orders", "2025-03-01", "b1", orders{first: 1, n: 10, amount: 85})); err != nil {
		t.Fatalf("Ingest: %v", err)
	}
	h.reads.Store(true)
	e.clock.Add(time.Minute) // the active version is asked again
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	began := time.Now()
	resp, err := e.as("pipeline").Ingest(cctx, ingest("shop.orders", "2025-03-01", "b2", orders{first: 100, n: 10, amount: 85}))
	if err != nil {
		t.Fatalf("Ingest with the registry hung: %v", err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("Ingest with the registry hung took %s, want the registry timeout (2s) and little more, not as long as the registry hangs", took)
	}
	if s := resp.GetSummary(); s.GetAccepted() != 10 || s.GetContractVersion() != 1 {
		t.Fatalf("summary = %v, want 10 accepted under the last known v1", s)
	}
}

// A replay waits for its BACKFILL_COMPLETED event without holding a lock
// across the registry call: with PublishEvent hung, the relay is stuck in
// a call, and the replay still answers (without the event's sequence)
// instead of waiting behind it.
func TestReplayDoesNotWaitBehindAHungPublish(t *testing.T) {
	t.Parallel()
	e, h := startHanging(t)
	ctx := context.Background()
	if _, err := e.as("pipeline").Ingest(ctx, ingest("shop.orders", "2025-03-01", "b1", orders{first: 1, n: 20, amount: 85, uuids: 20})); err != nil {
		t.Fatalf("Ingest: %v", err)
	}
	e.registerV2(t)
	e.loadLookup()
	h.publish.Store(true)
	// An event for the relay to get stuck on.
	if _, err := e.as("operator").Contain(ctx, &gatev1.ContainRequest{Subject: "shop.orders", Reason: "test"}); err != nil {
		t.Fatalf("Contain: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	rctx, cancel := context.WithTimeout(ctx, 9*time.Second)
	defer cancel()
	stream, err := e.as("operator").Replay(rctx, &gatev1.ReplayRequest{Window: &gatev1.ReplayWindow{Subject: "shop.orders", PartitionFrom: "2025-03-01", PartitionTo: "2025-03-01"}, ReplayId: "r", SummaryOnly: true})
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	msg, err := stream.Recv()
	if err != nil {
		t.Fatalf("Replay with PublishEvent hung: %v", err)
	}
	if s := msg.GetSummary(); s.GetReleased() != 20 || s.GetEventSequence() != 0 {
		t.Fatalf("replay summary = %v, want 20 released and no event sequence yet", s)
	}
}
