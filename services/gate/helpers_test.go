package gate

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/record/recordtest"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/auth/authtest"
	"github.com/seamdata/seam/platform/clocktest"
	seamdial "github.com/seamdata/seam/platform/dial"
	"github.com/seamdata/seam/platform/rpcerr"
	"github.com/seamdata/seam/platform/storage/storagetest"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
	"github.com/seamdata/seam/services/gate/gatetest"
	"github.com/seamdata/seam/services/registry"
)

// start is the fake clock's first instant in every test.
var start = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

// principals are the callers of the tests, by token name.
var principals = []auth.Principal{
	{Name: "admin", Roles: []auth.Role{auth.RoleAdmin}},
	{Name: "checkout", Roles: []auth.Role{auth.RoleOwner}, Subjects: []string{"shop.*", "commerce.*"}},
	{Name: "operator", Roles: []auth.Role{auth.RoleOperator}},
	{Name: "pipeline", Roles: []auth.Role{auth.RolePipeline}},
	{Name: "viewer", Roles: []auth.Role{auth.RoleViewer}},
	{Name: "seam-services", Roles: []auth.Role{auth.RoleService}}, // the services' own identity, for peer connections
}

// peers are the gate's real registry and its in-process idmap and adapter
// stand-ins (see package gatetest), each behind a real gRPC server on
// loopback TCP, so a gate in a child process can reach them too.
type peers struct {
	clock    *clocktest.Clock
	tokens   map[string]string
	tokenSet *auth.Tokens
	authz    func(access auth.Access) *auth.Authorizer
	registry registryv1.RegistryServiceClient // as admin
	owner    registryv1.RegistryServiceClient // as checkout
	regAddr  string
	idmap    *gatetest.Idmap
	idmapAdr string
	adapter  *gatetest.Adapter
	adptAddr string
}

func serve(t testing.TB, opts []grpc.ServerOption, register func(*grpc.Server)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	seamdial.UseBuffers() // as the deployed servers do
	gs := grpc.NewServer(opts...)
	register(gs)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

func dial(t testing.TB, addr, token string) *grpc.ClientConn {
	t.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(auth.TokenCredentials{Token: token}))
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// testLog writes a server's error log to the test's log, so an Internal
// answer in a test comes with its cause.
type testLog struct{ t testing.TB }

func (w testLog) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

func interceptors(a *auth.Authorizer) []grpc.ServerOption {
	return interceptorsLog(a, slog.New(slog.DiscardHandler))
}

func interceptorsLog(a *auth.Authorizer, log *slog.Logger) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(a.UnaryInterceptor(), rpcerr.UnaryInterceptor(log)),
		grpc.ChainStreamInterceptor(a.StreamInterceptor(), rpcerr.StreamInterceptor(log)),
	}
}

// newPeers starts the registry (with shop.orders v1 and commerce.order
// registered), idmap and adapter.
func newPeers(t testing.TB) *peers {
	t.Helper()
	p := &peers{clock: clocktest.New(start)}
	set, tokens := authtest.Tokens(t, principals...)
	p.tokenSet, p.tokens = set, tokens
	p.authz = func(access auth.Access) *auth.Authorizer { return auth.NewAuthorizer(set, access) }

	reg, err := registry.New(context.Background(), registry.Config{StoreURL: storagetest.SQLiteURL(t), Clock: p.clock.Now, SchedulerInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatalf("registry.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = reg.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; _ = reg.Close() })
	p.regAddr = serve(t, interceptors(p.authz(registry.Access)), func(s *grpc.Server) { reg.Register(s) })
	p.registry = registryv1.NewRegistryServiceClient(dial(t, p.regAddr, p.tokens["admin"]))
	p.owner = registryv1.NewRegistryServiceClient(dial(t, p.regAddr, p.tokens["checkout"]))

	p.idmap = gatetest.NewIdmap()
	p.idmapAdr = serve(t, nil, func(s *grpc.Server) { idmapv1.RegisterIdMapServiceServer(s, p.idmap) })
	p.adapter = gatetest.NewAdapter(registryv1.NewRegistryServiceClient(dial(t, p.regAddr, p.tokens["seam-services"])),
		idmapv1.NewIdMapServiceClient(dial(t, p.idmapAdr, "")))
	p.adptAddr = serve(t, nil, func(s *grpc.Server) { adapterv1.RegisterAdapterServiceServer(s, p.adapter) })

	if _, err := p.registry.RegisterCanonicalModel(context.Background(), &registryv1.RegisterCanonicalModelRequest{Model: examples.CommerceOrder()}); err != nil {
		t.Fatalf("RegisterCanonicalModel: %v", err)
	}
	if _, err := p.owner.RegisterContract(context.Background(), &registryv1.RegisterContractRequest{Contract: examples.ShopOrdersV1()}); err != nil {
		t.Fatalf("register shop.orders v1: %v", err)
	}
	return p
}

// registerV2 registers shop.orders v2 (customer_id as UUID, translated to
// the legacy integer) with an admin override of the notice period, as an
// operator does in an incident.
func (p *peers) registerV2(t testing.TB) {
	t.Helper()
	if _, err := p.registry.RegisterContract(context.Background(), &registryv1.RegisterContractRequest{Contract: examples.ShopOrdersV2(),
		Override: &registryv1.NoticeOverride{Reason: "INC-1: the source already sends UUIDs"}}); err != nil {
		t.Fatalf("register shop.orders v2: %v", err)
	}
}

// gateEnv is a gate on a store, serving on loopback with the runtime's
// authorizer, with a client per principal.
type gateEnv struct {
	*peers
	srv     *Server
	url     string
	addr    string
	clients map[string]gatev1.GateServiceClient
	stop    func()
}

func (e *gateEnv) as(name string) gatev1.GateServiceClient { return e.clients[name] }

// startGate starts a gate on the store at url.
func startGate(t testing.TB, p *peers, url string, mod func(*Config)) *gateEnv {
	t.Helper()
	cfg := Config{StoreURL: url, Clock: p.clock.Now, RelayInterval: 20 * time.Millisecond, ContractRefresh: time.Nanosecond,
		Registry: dial(t, p.regAddr, p.tokens["seam-services"]), Adapter: dial(t, p.adptAddr, ""), Idmap: dial(t, p.idmapAdr, "")}
	cfg.Logger = slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelError}))
	if mod != nil {
		mod(&cfg)
	}
	srv, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("gate.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(ctx) }()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	gs := grpc.NewServer(interceptorsLog(p.authz(Access), cfg.Logger)...)
	srv.Register(gs)
	go func() { _ = gs.Serve(lis) }()
	e := &gateEnv{peers: p, srv: srv, url: url, addr: lis.Addr().String(), clients: map[string]gatev1.GateServiceClient{}}
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			gs.Stop()
			cancel()
			<-done
			if err := srv.Close(); err != nil {
				t.Errorf("gate Close: %v", err)
			}
		})
	}
	t.Cleanup(e.stop)
	for name, tok := range p.tokens {
		e.clients[name] = gatev1.NewGateServiceClient(dial(t, e.addr, tok))
	}
	return e
}

// newEnv is a gate on a fresh SQLite store with fresh peers.
func newEnv(t testing.TB) *gateEnv {
	t.Helper()
	return startGate(t, newPeers(t), storagetest.SQLiteURL(t), nil)
}

// newKnownEnv is a gate on a fresh SQLite store with fresh peers whose
// idmap knows customers 1 to 1000.
func newKnownEnv(t testing.TB) *gateEnv {
	t.Helper()
	return startGate(t, knownPeers(t), storagetest.SQLiteURL(t), nil)
}

// knownPeers is fresh peers whose idmap knows customers 1 to 1000 (see
// knowCustomers).
func knownPeers(t testing.TB) *peers {
	t.Helper()
	p := newPeers(t)
	p.knowCustomers()
	return p
}

// orders describes a generated batch of shop.orders records.
type orders struct {
	first   int // order number of the first record
	n       int
	amount  float64 // mean amount; records alternate ±5 around it
	uuids   int     // the last uuids records send a UUID customer id
	missing int     // the first `missing` records lack customer_id
	unknown int     // every unknown-th record has a customer id idmap does not know (0: none)
}

// customerUUID is the UUID the new customer service gives customer k.
func customerUUID(k int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", k) }

func customer(i int) int { return 1 + i%1000 }

// ndjson renders the batch as NDJSON.
func (o orders) ndjson() []byte {
	var b []byte
	for i := range o.n {
		num := o.first + i
		rec := recordtest.Order{Number: num, Amount: o.amount + 5, CreatedAt: "2025-03-01T10:00:00Z", Items: 2, Email: "a@example.com", Coupon: "X1"}
		switch {
		case i < o.missing:
		case i >= o.n-o.uuids:
			rec.Customer = customerUUID(customer(num))
		case o.unknown > 0 && num%o.unknown == 0:
			rec.Customer = 900000 + num
		default:
			rec.Customer = customer(num)
		}
		if i%2 == 1 {
			rec.Amount = o.amount - 5
		}
		b = append(rec.AppendJSON(b), '\n')
	}
	return b
}

func (o orders) batch() *recordv1.RecordBatch {
	return &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: o.ndjson()}}}
}

// knowCustomers makes customers 1..1000 known to idmap as legacy ints.
func (p *peers) knowCustomers() {
	ids := make([]string, 0, 1000)
	for k := 1; k <= 1000; k++ {
		ids = append(ids, fmt.Sprint(k))
	}
	p.idmap.AddIDs("customer", "legacy-int", ids...)
}

// loadLookup loads the uuid → legacy-int table for every customer except
// those listed.
func (p *peers) loadLookup(except ...int) {
	skip := map[int]bool{}
	for _, k := range except {
		skip[k] = true
	}
	pairs := map[string]string{}
	for k := 1; k <= 1000; k++ {
		if !skip[k] {
			pairs[customerUUID(k)] = fmt.Sprint(k)
		}
	}
	p.idmap.AddPairs("customer", "uuid", "legacy-int", pairs)
}

func ingest(subject, partition, batchID string, o orders) *gatev1.IngestRequest {
	return &gatev1.IngestRequest{Subject: subject, Partition: partition, Identity: &gatev1.IngestRequest_BatchId{BatchId: batchID}, Batch: o.batch()}
}

// quarantineStats reads, as the viewer, the stats of the quarantined
// records f selects.
func quarantineStats(t testing.TB, e *gateEnv, f *gatev1.QuarantineFilter) *gatev1.GetQuarantineStatsResponse {
	t.Helper()
	stats, err := e.as("viewer").GetQuarantineStats(context.Background(), &gatev1.GetQuarantineStatsRequest{Filter: f})
	if err != nil {
		t.Fatalf("GetQuarantineStats(%v): %v", f, err)
	}
	return stats
}

// quarantineList lists, as the viewer, the first page of the quarantined
// records f selects.
func quarantineList(t testing.TB, e *gateEnv, f *gatev1.QuarantineFilter) []*gatev1.QuarantinedRecord {
	t.Helper()
	list, err := e.as("viewer").ListQuarantine(context.Background(), &gatev1.ListQuarantineRequest{Filter: f})
	if err != nil {
		t.Fatalf("ListQuarantine(%v): %v", f, err)
	}
	return list.GetRecords()
}

// sealOf seals a partition as the pipeline would and returns its state.
func sealOf(t testing.TB, e *gateEnv, subject, partition string) *gatev1.PartitionState {
	t.Helper()
	resp, err := e.as("pipeline").SealPartition(context.Background(), &gatev1.SealPartitionRequest{Subject: subject, Partition: partition})
	if err != nil {
		t.Fatalf("SealPartition %s/%s: %v", subject, partition, err)
	}
	return resp.GetPartition()
}
