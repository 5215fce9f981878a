package registry

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/auth/authtest"
	"github.com/seamdata/seam/platform/clocktest"
	"github.com/seamdata/seam/platform/rpcerr"
	"github.com/seamdata/seam/platform/server/servertest"
	"github.com/seamdata/seam/platform/storage/storagetest"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// start is the fake clock's initial time in every test.
var start = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

// notice is the notice period of the shop.orders test contracts (14d).
const notice = 14 * 24 * time.Hour

// newFakeClock returns a clock tests move by hand, standing at start.
func newFakeClock() *clocktest.Clock { return clocktest.New(start) }

// testPrincipals are the callers of every test, by token name.
var testPrincipals = []auth.Principal{
	{Name: "admin", Roles: []auth.Role{auth.RoleAdmin}},
	{Name: "checkout", Roles: []auth.Role{auth.RoleOwner}, Subjects: []string{"shop.*", "commerce.*"}},
	{Name: "billing", Roles: []auth.Role{auth.RoleOwner}, Subjects: []string{"billing.*"}},
	{Name: "operator", Roles: []auth.Role{auth.RoleOperator}},
	{Name: "gate", Roles: []auth.Role{auth.RoleService}}, // the gate service's own identity
	{Name: "pipeline", Roles: []auth.Role{auth.RolePipeline}},
	{Name: "viewer", Roles: []auth.Role{auth.RoleViewer}},
	{Name: "team-ml", Roles: []auth.Role{auth.RoleOwner}, Subjects: []string{"features.*"}},
	{Name: "team-bi", Roles: []auth.Role{auth.RoleOwner}, Subjects: []string{"reports.*"}},
}

// env is a registry Server behind a real gRPC server on bufconn, with the
// runtime's authorizer and error interceptors, and one client per principal.
type env struct {
	srv     *Server
	clock   *clocktest.Clock
	url     string
	clients map[string]registryv1.RegistryServiceClient
}

// newEnv starts a registry on the store at url.
func newEnv(t testing.TB, url string, clock *clocktest.Clock, options ...func(*Config)) *env {
	t.Helper()
	cfg := Config{StoreURL: url}
	for _, o := range options {
		o(&cfg)
	}
	return newEnvConfig(t, cfg, clock)
}

// openStore opens the store at url.
func openStore(t testing.TB, url string) Store {
	t.Helper()
	store, err := OpenStore(context.Background(), url)
	if err != nil {
		t.Fatalf("OpenStore: %v", err)
	}
	return store
}

// newSeededEnv is a registry on a fresh SQLite store, on a fake clock,
// seeded (see seed).
func newSeededEnv(t testing.TB) *env {
	t.Helper()
	e := newEnv(t, storagetest.SQLiteURL(t), newFakeClock())
	e.seed(t)
	return e
}

// newEnvConfig starts a registry with cfg, on the fake clock.
func newEnvConfig(t testing.TB, cfg Config, clock *clocktest.Clock) *env {
	t.Helper()
	url := cfg.StoreURL
	cfg.Clock, cfg.SchedulerInterval = clock.Now, 20*time.Millisecond
	srv, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New(%s): %v", url, err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	e := &env{srv: srv, clock: clock, url: url, clients: map[string]registryv1.RegistryServiceClient{}}

	set, tokens := authtest.Tokens(t, testPrincipals...)
	authz := auth.NewAuthorizer(set, Access)
	log := slog.New(slog.DiscardHandler)
	gs := grpc.NewServer(
		grpc.ChainUnaryInterceptor(authz.UnaryInterceptor(), rpcerr.UnaryInterceptor(log)),
		grpc.ChainStreamInterceptor(authz.StreamInterceptor(), rpcerr.StreamInterceptor(log)),
	)
	srv.Register(gs)
	lis := servertest.ServeBufconn(t, gs)
	for name, tok := range tokens {
		conn := servertest.DialBufconn(t, lis, grpc.WithPerRPCCredentials(auth.TokenCredentials{Token: tok}))
		e.clients[name] = registryv1.NewRegistryServiceClient(conn)
	}
	return e
}

func (e *env) as(name string) registryv1.RegistryServiceClient { return e.clients[name] }

// run runs the server's scheduler and follower until the test ends.
func (e *env) run(t testing.TB) {
	servertest.RunUntilCleanup(t, "Run", e.srv.Run)
}

// seed registers the canonical model and shop.orders v1 at the start time.
func (e *env) seed(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	if _, err := e.as("admin").RegisterCanonicalModel(ctx, &registryv1.RegisterCanonicalModelRequest{Model: examples.CommerceOrder()}); err != nil {
		t.Fatalf("RegisterCanonicalModel: %v", err)
	}
	resp, err := e.as("checkout").RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: examples.ShopOrdersV1()})
	if err != nil {
		t.Fatalf("register shop.orders v1: %v", err)
	}
	if got := resp.GetVersion().GetStatus(); got != registryv1.VersionStatus_VERSION_STATUS_ACTIVE {
		t.Fatalf("shop.orders v1 status = %s, want ACTIVE", got)
	}
}

// lineage declares a three-level lineage below shop.orders.customer_id and
// one consumer that does not read it.
func (e *env) lineage(t testing.TB) {
	t.Helper()
	consumers := []*registryv1.Consumer{
		{Name: "features.customer_ltv", Owner: "team-ml", Produces: []string{"ltv_daily"}, Inputs: []*registryv1.Input{
			{Source: &registryv1.Input_Subject{Subject: "shop.orders"}, Fields: []string{"customer_id", "amount"}, Usage: registryv1.UsageKind_USAGE_KIND_JOIN_KEY},
		}},
		{Name: "reports.weekly", Owner: "team-bi", Produces: []string{"weekly_report"}, Inputs: []*registryv1.Input{
			{Source: &registryv1.Input_Dataset{Dataset: "ltv_daily"}, Usage: registryv1.UsageKind_USAGE_KIND_FEATURE},
		}},
		{Name: "marketing.segments", Owner: "team-growth", Inputs: []*registryv1.Input{
			{Source: &registryv1.Input_Dataset{Dataset: "weekly_report"}, Usage: registryv1.UsageKind_USAGE_KIND_FILTER},
		}},
		{Name: "finance.revenue", Owner: "team-finance", Inputs: []*registryv1.Input{
			{Source: &registryv1.Input_Subject{Subject: "shop.orders"}, Fields: []string{"amount", "currency"}, Usage: registryv1.UsageKind_USAGE_KIND_FEATURE},
		}},
	}
	for _, c := range consumers {
		if _, err := e.as("admin").RegisterConsumer(context.Background(), &registryv1.RegisterConsumerRequest{Consumer: c}); err != nil {
			t.Fatalf("RegisterConsumer(%s): %v", c.GetName(), err)
		}
	}
}

func ts(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }

// errorReason returns the ErrorInfo reason of a status error.
func errorReason(err error) string { return rpcerr.Reason(err) }

// preconditionTypes returns the types of a status error's precondition
// violations.
func preconditionTypes(err error) []string {
	return detailStrings(err, (*errdetails.PreconditionFailure).GetViolations, (*errdetails.PreconditionFailure_Violation).GetType)
}

// fieldViolations returns the fields of a status error's BadRequest.
func fieldViolations(err error) []string {
	return detailStrings(err, (*errdetails.BadRequest).GetFieldViolations, (*errdetails.BadRequest_FieldViolation).GetField)
}

// detailStrings returns, for each item that list gives of a status
// error's details of type D, what field says of it.
func detailStrings[D, V any](err error, list func(D) []V, field func(V) string) []string {
	var out []string
	for _, d := range status.Convert(err).Details() {
		if x, ok := d.(D); ok {
			for _, v := range list(x) {
				out = append(out, field(v))
			}
		}
	}
	return out
}

func wantCode(t testing.TB, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("code = %s (%v), want %s", got, err, want)
	}
}

// eventsOf lists every event of the given types.
func eventsOf(t testing.TB, c registryv1.RegistryServiceClient, types ...registryv1.EventType) []*registryv1.Event {
	t.Helper()
	resp, err := c.ListEvents(context.Background(), &registryv1.ListEventsRequest{Types: types})
	if err != nil {
		t.Fatalf("ListEvents: %v", err)
	}
	return resp.GetEvents()
}

func consumerNames(as []*registryv1.AffectedConsumer) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.GetConsumer()
	}
	return out
}

func sameStrings(a, b []string) bool { return slices.Equal(a, b) }

func protoEqualList[M proto.Message](a, b []M) bool {
	return slices.EqualFunc(a, b, func(x, y M) bool { return proto.Equal(x, y) })
}

var errTimeout = errors.New("condition not met before the deadline")

// eventually polls cond until it holds or 10 s pass; it waits for other
// goroutines (a replica's follower), not for time to elapse.
func eventually(cond func() bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return errTimeout
}
