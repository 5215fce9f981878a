package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	memdb "github.com/hashicorp/go-memdb"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/rpcerr"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Server is the registry service: the gRPC handlers over a durable Store
// and the go-memdb read model that follows it.
type Server struct {
	registryv1.UnimplementedRegistryServiceServer

	cfg   Config
	store Store
	model *readModel
	clock func() time.Time
	log   *slog.Logger
	// idmap answers whether namespaces exist and migrations can run; nil
	// when the registry runs without idmap (see Config.Idmap).
	idmap *idmapPeer

	registrations metric.Int64Counter
	activations   metric.Int64Counter
}

// New opens the store named by cfg, applies its migrations and builds the
// read model from it. Call Run to activate scheduled versions and follow
// writes of other replicas, and Close when done.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	store, err := OpenStore(ctx, cfg.StoreURL)
	if err != nil {
		return nil, err
	}
	s, err := newServer(ctx, cfg, store)
	if err != nil {
		return nil, errors.Join(err, store.Close())
	}
	return s, nil
}

func newServer(ctx context.Context, cfg Config, store Store) (*Server, error) {
	model, err := newReadModel(store, cfg.EventWindow)
	if err != nil {
		return nil, err
	}
	if err := model.rebuild(ctx); err != nil {
		return nil, fmt.Errorf("build registry read model: %w", err)
	}
	s := &Server{cfg: cfg, store: store, model: model, clock: cfg.Clock, log: cfg.Logger}
	if cfg.Idmap != nil {
		s.idmap = &idmapPeer{client: idmapv1.NewIdMapServiceClient(cfg.Idmap), timeout: cfg.IdmapTimeout}
	} else {
		s.log.Warn("registry: no idmap peer; identifier namespaces and migrations are not checked against idmap")
	}
	if s.registrations, err = cfg.Meter.Int64Counter("seam.registry.registrations",
		metric.WithDescription("Contract versions registered, by resulting status.")); err != nil {
		return nil, fmt.Errorf("create registrations counter: %w", err)
	}
	if s.activations, err = cfg.Meter.Int64Counter("seam.registry.activations",
		metric.WithDescription("Scheduled contract versions this replica activated.")); err != nil {
		return nil, fmt.Errorf("create activations counter: %w", err)
	}
	return s, nil
}

// Register adds the registry service to a gRPC server.
func (s *Server) Register(r grpc.ServiceRegistrar) {
	registryv1.RegisterRegistryServiceServer(r, s)
}

// Run activates scheduled versions when their time comes and keeps the read
// model current with writes from any replica, until ctx ends. Store errors
// are logged and retried on the next tick rather than ending the loop: a
// registry that stops following would serve stale contracts.
func (s *Server) Run(ctx context.Context) error {
	wake, err := s.store.Wake(ctx)
	if err != nil {
		return err
	}
	ticker := time.NewTicker(s.cfg.SchedulerInterval)
	defer ticker.Stop()
	for {
		if err := s.model.catchUp(ctx); err != nil && ctx.Err() == nil {
			s.log.ErrorContext(ctx, "registry: follow the store's change log", "error", err)
		}
		if _, err := s.activateDue(ctx); err != nil && ctx.Err() == nil {
			s.log.ErrorContext(ctx, "registry: activate scheduled versions", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-wake:
			if !ok {
				return nil
			}
		case <-ticker.C:
		}
	}
}

// Close releases the store. Call it after Run has returned.
func (s *Server) Close() error {
	return s.store.Close()
}

// sync brings the read model up to the store after a write this replica
// committed, so the caller's next read sees it. The write is durable either
// way; a failure here only delays visibility until Run's next step.
func (s *Server) sync(ctx context.Context) {
	if err := s.model.catchUp(ctx); err != nil {
		s.log.WarnContext(ctx, "registry: read model lags after a write", "error", err)
	}
}

// asCaller runs do for the caller the runtime's interceptor authenticated.
func asCaller[Req, Resp any](ctx context.Context, req Req, do func(context.Context, *auth.Principal, Req) (Resp, error)) (Resp, error) {
	p, err := principalOf(ctx)
	if err != nil {
		var none Resp
		return none, err
	}
	return do(ctx, p, req)
}

// principalOf returns the caller the runtime's interceptor authenticated.
func principalOf(ctx context.Context) (*auth.Principal, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return nil, rpcerr.Unauthenticated(auth.ReasonNoToken, "no authenticated caller; send a bearer token")
	}
	return p, nil
}

func required(field, example string) error {
	return invalid("a required field is missing", rpcerr.FieldViolation{Field: field, Description: "required, for example " + example})
}

// CheckContract classifies a proposed version without registering it.
func (s *Server) CheckContract(ctx context.Context, req *registryv1.CheckContractRequest) (*registryv1.CheckContractResponse, error) {
	return asCaller(ctx, req, s.checkContract)
}

// RegisterContract registers a new version of a subject's contract.
func (s *Server) RegisterContract(ctx context.Context, req *registryv1.RegisterContractRequest) (*registryv1.RegisterContractResponse, error) {
	return asCaller(ctx, req, s.registerContract)
}

// GetContract returns one version: by number, active at a time, or active now.
func (s *Server) GetContract(ctx context.Context, req *registryv1.GetContractRequest) (*registryv1.GetContractResponse, error) {
	v, err := s.getContract(req)
	if err != nil {
		return nil, err
	}
	return &registryv1.GetContractResponse{Version: v}, nil
}

// ListContracts lists the versions of a subject.
func (s *Server) ListContracts(ctx context.Context, req *registryv1.ListContractsRequest) (*registryv1.ListContractsResponse, error) {
	txn := s.model.snapshot()
	if _, err := s.knownSubject(txn, req.GetSubject()); err != nil {
		return nil, err
	}
	vs, err := versionsOf(txn, nil, req.GetSubject())
	if err != nil {
		return nil, err
	}
	return &registryv1.ListContractsResponse{Versions: vs}, nil
}

// ListSubjects lists the subjects, optionally by name prefix.
func (s *Server) ListSubjects(ctx context.Context, req *registryv1.ListSubjectsRequest) (*registryv1.ListSubjectsResponse, error) {
	subjects, err := subjectsWithPrefix(s.model.snapshot(), nil, req.GetPrefix())
	if err != nil {
		return nil, err
	}
	return &registryv1.ListSubjectsResponse{Subjects: subjects}, nil
}

// DiffContracts classifies the changes between two registered versions.
func (s *Server) DiffContracts(_ context.Context, req *registryv1.DiffContractsRequest) (*registryv1.DiffContractsResponse, error) {
	return s.diffContracts(req)
}

// SetVersionStatus deprecates or retires a version.
func (s *Server) SetVersionStatus(ctx context.Context, req *registryv1.SetVersionStatusRequest) (*registryv1.SetVersionStatusResponse, error) {
	return asCaller(ctx, req, s.setVersionStatus)
}

// GetHistory returns the audit history of a subject.
func (s *Server) GetHistory(ctx context.Context, req *registryv1.GetHistoryRequest) (*registryv1.GetHistoryResponse, error) {
	if _, err := s.knownSubject(s.model.snapshot(), req.GetSubject()); err != nil {
		return nil, err
	}
	entries, err := s.store.History(ctx, req.GetSubject())
	if err != nil {
		return nil, err
	}
	return &registryv1.GetHistoryResponse{Entries: entries}, nil
}

// RegisterCanonicalModel registers a new version of a canonical model.
func (s *Server) RegisterCanonicalModel(ctx context.Context, req *registryv1.RegisterCanonicalModelRequest) (*registryv1.RegisterCanonicalModelResponse, error) {
	return asCaller(ctx, req, s.registerCanonicalModel)
}

// GetCanonicalModel returns a canonical model version (0: the latest).
func (s *Server) GetCanonicalModel(ctx context.Context, req *registryv1.GetCanonicalModelRequest) (*registryv1.GetCanonicalModelResponse, error) {
	if req.GetName() == "" {
		return nil, required("name", `"commerce.order"`)
	}
	m := s.modelVersion(s.model.snapshot(), req.GetName(), req.GetVersion())
	if m == nil {
		name := req.GetName()
		if req.GetVersion() != 0 {
			name = fmt.Sprintf("%s v%d", name, req.GetVersion())
		}
		return nil, notFound("canonical model", name, "list the registered models with ListCanonicalModels")
	}
	return &registryv1.GetCanonicalModelResponse{Version: m}, nil
}

// ListCanonicalModels lists canonical models with their latest version.
func (s *Server) ListCanonicalModels(ctx context.Context, _ *registryv1.ListCanonicalModelsRequest) (*registryv1.ListCanonicalModelsResponse, error) {
	ms, err := latestModels(s.model.snapshot(), nil)
	if err != nil {
		return nil, err
	}
	return &registryv1.ListCanonicalModelsResponse{Models: ms}, nil
}

// RegisterConsumer creates or replaces a downstream consumer's lineage.
func (s *Server) RegisterConsumer(ctx context.Context, req *registryv1.RegisterConsumerRequest) (*registryv1.RegisterConsumerResponse, error) {
	p, err := principalOf(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.registerConsumer(ctx, p, req.GetConsumer())
	if err != nil {
		return nil, err
	}
	return &registryv1.RegisterConsumerResponse{Consumer: c}, nil
}

// GetConsumer returns one consumer.
func (s *Server) GetConsumer(ctx context.Context, req *registryv1.GetConsumerRequest) (*registryv1.GetConsumerResponse, error) {
	c, err := consumerOf(s.model.snapshot(), nil, req.GetName())
	if err == nil && c == nil {
		err = notFound("consumer", req.GetName(), "list the registered consumers with ListConsumers")
	}
	if err != nil {
		return nil, err
	}
	return &registryv1.GetConsumerResponse{Consumer: c}, nil
}

// ListConsumers lists consumers, optionally those reading one subject.
func (s *Server) ListConsumers(ctx context.Context, req *registryv1.ListConsumersRequest) (*registryv1.ListConsumersResponse, error) {
	cs, err := consumersOf(s.model.snapshot(), nil, req.GetSubject())
	if err != nil {
		return nil, err
	}
	return &registryv1.ListConsumersResponse{Consumers: cs}, nil
}

// DeleteConsumer removes a consumer.
func (s *Server) DeleteConsumer(ctx context.Context, req *registryv1.DeleteConsumerRequest) (*registryv1.DeleteConsumerResponse, error) {
	return asCaller(ctx, req, s.deleteConsumer)
}

// GetBlastRadius lists every consumer affected by a change to a subject.
func (s *Server) GetBlastRadius(ctx context.Context, req *registryv1.GetBlastRadiusRequest) (*registryv1.GetBlastRadiusResponse, error) {
	return asCaller(ctx, req, s.blastRadius)
}

// GetRerunOrder lists the downstream consumers of a subject or dataset in
// dependency order.
func (s *Server) GetRerunOrder(ctx context.Context, req *registryv1.GetRerunOrderRequest) (*registryv1.GetRerunOrderResponse, error) {
	if req.GetSubject() == "" && req.GetDataset() == "" && req.GetCanonical() == "" {
		return nil, invalid("a root is missing", rpcerr.FieldViolation{Field: "root", Description: "set subject, canonical or dataset"})
	}
	txn := s.model.snapshot()
	cs, err := consumersOf(txn, nil, "")
	if err != nil {
		return nil, err
	}
	root := rerunRoot{subject: req.GetSubject(), dataset: req.GetDataset()}
	if c := req.GetCanonical(); c != "" {
		root.canonical = []string{c}
	}
	if root.subject != "" {
		subj, history, err := subjectWithHistory(txn, root.subject)
		if err != nil {
			return nil, err
		}
		root.canonical = canonicalModelsOf(history, 0, subj.GetActiveVersion())
	}
	order, err := rerunOrder(cs, root)
	if err != nil {
		return nil, cycleRefusal(err)
	}
	return &registryv1.GetRerunOrderResponse{Consumers: order}, nil
}

// PublishEvent appends an event reported by another service.
func (s *Server) PublishEvent(ctx context.Context, req *registryv1.PublishEventRequest) (*registryv1.PublishEventResponse, error) {
	return asCaller(ctx, req, s.publishEvent)
}

// maxEventPage bounds one ListEvents page.
const maxEventPage = 1000

// ListEvents pages through the event log from a sequence number.
func (s *Server) ListEvents(ctx context.Context, req *registryv1.ListEventsRequest) (*registryv1.ListEventsResponse, error) {
	limit := int(req.GetLimit())
	if limit <= 0 || limit > maxEventPage {
		limit = maxEventPage
	}
	evs, last, err := s.model.events(ctx, s.model.snapshot(), nil, req.GetAfterSequence(), limit, newEventFilter(req.GetSubjects(), req.GetTypes()))
	if err != nil {
		return nil, err
	}
	return &registryv1.ListEventsResponse{Events: evs, LastSequence: last}, nil
}

// watchHeader is the header WatchEvents sends once it has taken a
// subscription (the adapter waits for it).
const watchHeader = "seam-watch"

// watchPage bounds how many events one WatchEvents step sends before
// looking again.
const watchPage = 256

// WatchEvents streams the events after a sequence number, then new ones as
// the read model applies them. A client that reconnects with the last
// sequence it received misses nothing and sees nothing twice.
//
// The header goes out first, before any event: a watcher learns it is
// subscribed even when nothing has happened yet, and tells a refused
// attempt (which ends without it) from a stream that was up and broke.
func (s *Server) WatchEvents(req *registryv1.WatchEventsRequest, stream grpc.ServerStreamingServer[registryv1.WatchEventsResponse]) error {
	ctx := stream.Context()
	if err := stream.SendHeader(metadata.Pairs(watchHeader, "subscribed")); err != nil {
		return err
	}
	filter := newEventFilter(req.GetSubjects(), req.GetTypes())
	after := req.GetAfterSequence()
	for {
		ws := memdb.NewWatchSet()
		evs, last, err := s.model.events(ctx, s.model.snapshot(), ws, after, watchPage, filter)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if err := stream.Send(&registryv1.WatchEventsResponse{Event: e}); err != nil {
				return err
			}
		}
		after = last
		if len(evs) == watchPage {
			continue
		}
		if err := ws.WatchCtx(ctx); err != nil {
			// The client went away or the server is stopping.
			return nil
		}
	}
}
