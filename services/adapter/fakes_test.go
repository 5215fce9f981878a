package adapter_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/idpack"
	"github.com/seamdata/seam/platform/server/servertest"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
	"github.com/seamdata/seam/services/adapter"
	"go.opentelemetry.io/otel/metric"
)

const maxMsg = 64 << 20

// serve runs a gRPC server on bufconn and returns a client connection.
func serve(t testing.TB, register func(*grpc.Server)) *grpc.ClientConn {
	t.Helper()
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(maxMsg), grpc.MaxSendMsgSize(maxMsg))
	register(srv)
	lis := servertest.ServeBufconn(t, srv)
	return servertest.DialBufconn(t, lis, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsg), grpc.MaxCallSendMsgSize(maxMsg)))
}

// fakeRegistry is a registry double holding contract versions and one
// canonical model, with an event stream fed by publish.
type fakeRegistry struct {
	registryv1.UnimplementedRegistryServiceServer

	mu        sync.Mutex
	versions  map[string][]*contractv1.Contract // subject → versions from 1
	active    map[string]int32
	canonical *contractv1.CanonicalModel
	down      bool
	// unaryDown fails reads but keeps the event stream up.
	unaryDown bool
	events    []*registryv1.Event
	wake      chan struct{}

	getContract atomic.Int64
	watchers    atomic.Int64
}

func newFakeRegistry(canonical *contractv1.CanonicalModel) *fakeRegistry {
	return &fakeRegistry{versions: map[string][]*contractv1.Contract{}, active: map[string]int32{}, canonical: canonical, wake: make(chan struct{})}
}

func (r *fakeRegistry) add(c *contractv1.Contract, activate bool) int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.versions[c.GetSubject()] = append(r.versions[c.GetSubject()], c)
	v := int32(len(r.versions[c.GetSubject()]))
	if activate {
		r.active[c.GetSubject()] = v
	}
	return v
}

// setDown stops (or restarts) the registry: every call fails and open
// event streams end, as when its process stops.
func (r *fakeRegistry) setDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
	close(r.wake)
	r.wake = make(chan struct{})
}

func (r *fakeRegistry) setUnaryDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unaryDown = down
}

func (r *fakeRegistry) activate(subject string, v int32) {
	r.mu.Lock()
	r.active[subject] = v
	r.events = append(r.events, &registryv1.Event{Sequence: int64(len(r.events) + 1), Type: registryv1.EventType_EVENT_TYPE_VERSION_ACTIVATED, Subject: subject, Version: v})
	close(r.wake)
	r.wake = make(chan struct{})
	r.mu.Unlock()
}

func (r *fakeRegistry) GetContract(_ context.Context, req *registryv1.GetContractRequest) (*registryv1.GetContractResponse, error) {
	r.getContract.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down || r.unaryDown {
		return nil, status.Error(codes.Unavailable, "registry down")
	}
	v := req.GetVersion()
	if v == 0 {
		v = r.active[req.GetSubject()]
	}
	vs := r.versions[req.GetSubject()]
	if v < 1 || int(v) > len(vs) {
		return nil, status.Errorf(codes.NotFound, "no version %d of %s", req.GetVersion(), req.GetSubject())
	}
	return &registryv1.GetContractResponse{Version: &registryv1.ContractVersion{Subject: req.GetSubject(), Version: v, Contract: proto.Clone(vs[v-1]).(*contractv1.Contract)}}, nil
}

func (r *fakeRegistry) GetCanonicalModel(_ context.Context, req *registryv1.GetCanonicalModelRequest) (*registryv1.GetCanonicalModelResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down || r.unaryDown {
		return nil, status.Error(codes.Unavailable, "registry down")
	}
	if req.GetName() != r.canonical.GetName() {
		return nil, status.Errorf(codes.NotFound, "no canonical model %s", req.GetName())
	}
	return &registryv1.GetCanonicalModelResponse{Version: &registryv1.CanonicalModelVersion{Name: r.canonical.GetName(), Version: 1, Model: r.canonical}}, nil
}

func (r *fakeRegistry) WatchEvents(req *registryv1.WatchEventsRequest, stream grpc.ServerStreamingServer[registryv1.WatchEventsResponse]) error {
	r.watchers.Add(1)
	defer r.watchers.Add(-1)
	after := req.GetAfterSequence()
	r.mu.Lock()
	down := r.down
	r.mu.Unlock()
	if down {
		return status.Error(codes.Unavailable, "registry down")
	}
	if err := stream.SendHeader(metadata.Pairs("seam-watch", "subscribed")); err != nil {
		return err
	}
	for {
		r.mu.Lock()
		if r.down {
			r.mu.Unlock()
			return status.Error(codes.Unavailable, "registry down")
		}
		pending := r.events[min(int(after), len(r.events)):]
		wake := r.wake
		r.mu.Unlock()
		for _, ev := range pending {
			if err := stream.Send(&registryv1.WatchEventsResponse{Event: ev}); err != nil {
				return err
			}
			after = ev.GetSequence()
		}
		select {
		case <-stream.Context().Done():
			return nil
		case <-wake:
		}
	}
}

// fakeIdmap is an idmap double: the customer namespace with a uuid →
// legacy-int lookup table, counting Translate calls.
type fakeIdmap struct {
	idmapv1.UnimplementedIdMapServiceServer

	mu        sync.Mutex
	table     map[string]string
	down      bool
	translate atomic.Int64
	ids       atomic.Int64
	packed    atomic.Int64 // calls answered from packed ids
}

func (m *fakeIdmap) setDown(down bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down = down
}

func (m *fakeIdmap) GetNamespace(_ context.Context, req *idmapv1.GetNamespaceRequest) (*idmapv1.GetNamespaceResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, status.Error(codes.Unavailable, "idmap down")
	}
	if req.GetName() != "customer" {
		return nil, status.Errorf(codes.NotFound, "no namespace %s", req.GetName())
	}
	return &idmapv1.GetNamespaceResponse{Namespace: &idmapv1.Namespace{Name: "customer", Formats: []*idmapv1.Format{
		{Name: "legacy-int", Kind: idmapv1.FormatKind_FORMAT_KIND_INT},
		{Name: "uuid", Kind: idmapv1.FormatKind_FORMAT_KIND_UUID},
	}}}, nil
}

func (m *fakeIdmap) Translate(_ context.Context, req *idmapv1.TranslateRequest) (*idmapv1.TranslateResponse, error) {
	m.translate.Add(1)
	ids := req.GetIds()
	p := req.GetPacked()
	if p != nil {
		m.packed.Add(1)
		var err error
		if ids, err = idpack.Strings(p); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
	}
	m.ids.Add(int64(len(ids)))
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, status.Error(codes.Unavailable, "idmap down")
	}
	resp := &idmapv1.TranslateResponse{Values: make([]string, len(ids)), Statuses: make([]idmapv1.TranslateStatus, len(ids))}
	defer func() {
		if p != nil {
			resp.PackedValues, resp.Values = idpack.Pack(resp.Values), nil
		}
	}()
	for i, id := range ids {
		switch v, ok := m.table[id]; {
		case ok:
			resp.Values[i], resp.Statuses[i] = v, idmapv1.TranslateStatus_TRANSLATE_STATUS_HIT
		case len(id) != 36:
			resp.Statuses[i] = idmapv1.TranslateStatus_TRANSLATE_STATUS_INVALID
		default:
			resp.Statuses[i] = idmapv1.TranslateStatus_TRANSLATE_STATUS_MISS
		}
	}
	return resp, nil
}

// env is an adapter on bufconn with its registry and idmap doubles.
type env struct {
	reg    *fakeRegistry
	idm    *fakeIdmap
	srv    *adapter.Server
	client adapterv1.AdapterServiceClient
	v1, v2 int32
}

// newEnv starts the doubles with shop.orders v1 (active) and v2, and an
// adapter configured by cfg (connections filled in).
func newEnv(t testing.TB, cfg adapter.Config, meter metric.Meter) *env {
	t.Helper()
	e := &env{reg: newFakeRegistry(examples.CommerceOrder()), idm: &fakeIdmap{table: map[string]string{}}}
	for i := range 50000 {
		e.idm.table[customerUUID(100000+i)] = itoa(100000 + i)
	}
	for i, c := range []*contractv1.Contract{examples.ShopOrdersV1(), examples.ShopOrdersV2()} {
		v := e.reg.add(c, i == 0)
		if e.v1 == 0 {
			e.v1 = v
		} else {
			e.v2 = v
		}
	}
	cfg.Registry = serve(t, func(s *grpc.Server) { registryv1.RegisterRegistryServiceServer(s, e.reg) })
	cfg.Idmap = serve(t, func(s *grpc.Server) { idmapv1.RegisterIdMapServiceServer(s, e.idm) })
	cfg.Meter = meter
	var err error
	e.srv, err = adapter.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.srv.Close(); err != nil {
			t.Error(err)
		}
	})
	e.client = adapterv1.NewAdapterServiceClient(serve(t, func(s *grpc.Server) { e.srv.Register(s) }))
	return e
}
