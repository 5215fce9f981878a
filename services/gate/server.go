package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/rpcerr"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Server implements gatev1.GateServiceServer.
type Server struct {
	gatev1.UnimplementedGateServiceServer

	cfg       Config
	store     gateStore
	registry  registryv1.RegistryServiceClient
	adapter   adapterv1.AdapterServiceClient
	idmap     idmapv1.IdMapServiceClient
	contracts *contracts
	metrics   *metrics
	tracer    trace.Tracer
	// delivered is signalled after each round of the outbox relay, so a
	// replay waiting for its event's registry sequence wakes without
	// delivering itself.
	delivered signal
}

// signal wakes every goroutine waiting on it when fired. Its lock guards
// only the channel swap, never a call.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait returns a channel closed at the next fire.
func (s *signal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

func (s *signal) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// New opens the gate's store and returns a server.
func New(ctx context.Context, cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	st, err := openStore(ctx, cfg.StoreURL, cfg.KeyCacheKeys)
	if err != nil {
		return nil, err
	}
	if err := st.FoldLegacyFields(ctx); err != nil {
		return nil, errors.Join(err, st.Close())
	}
	var store gateStore = st
	if cfg.wrapStore != nil {
		store = cfg.wrapStore(st)
	}
	s := &Server{cfg: cfg, store: store, registry: registryv1.NewRegistryServiceClient(cfg.Registry),
		adapter: adapterv1.NewAdapterServiceClient(cfg.Adapter), idmap: idmapv1.NewIdMapServiceClient(cfg.Idmap),
		tracer: cfg.TracerProvider.Tracer("github.com/seamdata/seam/services/gate")}
	if s.contracts, err = newContracts(ctx, cfg, s.registry, store); err != nil {
		return nil, errors.Join(err, st.Close())
	}
	if s.metrics, err = newMetrics(cfg.Meter, store, s.contracts.subjects, func() int64 { return cfg.Clock().UnixNano() }); err != nil {
		return nil, errors.Join(err, st.Close())
	}
	return s, nil
}

// Register registers the gate on a gRPC server.
func (s *Server) Register(r grpc.ServiceRegistrar) { gatev1.RegisterGateServiceServer(r, s) }

// Run delivers queued registry events and enforces retention until ctx
// ends.
func (s *Server) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { s.retain(ctx) })
	wg.Go(func() { s.confirmContracts(ctx) })
	err := s.relay(ctx)
	wg.Wait()
	return err
}

// confirmContracts confirms the subjects' active contracts with the
// registry every Config.ContractCheck, logging when the registry stops
// and starts answering rather than at every round.
func (s *Server) confirmContracts(ctx context.Context) {
	tick := time.NewTicker(s.cfg.ContractCheck)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n, err := s.contracts.confirm(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case n > 0 && !failing:
			s.cfg.Logger.WarnContext(ctx, "cannot confirm the active contracts with the registry; serving the last known ones (seam_gate_contract_age_seconds grows)",
				"subjects", n, "error", err)
		case n == 0 && failing:
			s.cfg.Logger.InfoContext(ctx, "the registry confirms the active contracts again")
		}
		failing = n > 0
	}
}

// retain deletes, every Config.RetentionInterval, what the retention
// settings no longer keep: canonical answers past Config.AnswerTTL,
// idempotency rows past Config.BatchRetention, and settled quarantine
// past Config.QuarantineRetention.
func (s *Server) retain(ctx context.Context) {
	tick := time.NewTicker(s.cfg.RetentionInterval)
	defer tick.Stop()
	for {
		now := s.cfg.Clock()
		n, err := s.store.Expire(ctx, now, now.Add(-s.cfg.BatchRetention), now.Add(-s.cfg.QuarantineRetention))
		switch {
		case err != nil && ctx.Err() == nil:
			s.cfg.Logger.WarnContext(ctx, "retention failed; it runs again at the next interval", "error", err)
		case n > 0:
			s.cfg.Logger.InfoContext(ctx, "retention deleted expired rows", "rows", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Close closes the store.
func (s *Server) Close() error { return s.store.Close() }

// Contain sends everything the subject sends to quarantine until released.
func (s *Server) Contain(ctx context.Context, req *gatev1.ContainRequest) (*gatev1.ContainResponse, error) {
	c, err := s.setContainment(ctx, req.GetSubject(), req.GetReason(), true)
	if err != nil {
		return nil, err
	}
	return &gatev1.ContainResponse{Containment: c}, nil
}

// Release ends a containment.
func (s *Server) Release(ctx context.Context, req *gatev1.ReleaseRequest) (*gatev1.ReleaseResponse, error) {
	c, err := s.setContainment(ctx, req.GetSubject(), req.GetReason(), false)
	if err != nil {
		return nil, err
	}
	return &gatev1.ReleaseResponse{Containment: c}, nil
}

// ListContainments lists every source that was ever contained, with its
// current state.
func (s *Server) ListContainments(ctx context.Context, _ *gatev1.ListContainmentsRequest) (*gatev1.ListContainmentsResponse, error) {
	rows, err := s.store.Containments(ctx)
	if err != nil {
		return nil, err
	}
	resp := &gatev1.ListContainmentsResponse{}
	for _, c := range rows {
		resp.Containments = append(resp.Containments, containmentProto(c))
	}
	return resp, nil
}

func (s *Server) setContainment(ctx context.Context, subject, reason string, contain bool) (*gatev1.Containment, error) {
	subject = strings.TrimSpace(subject)
	reason = strings.TrimSpace(reason)
	var bad []rpcerr.FieldViolation
	if subject == "" {
		bad = append(bad, rpcerr.FieldViolation{Field: "subject", Description: "name the source subject, for example shop.orders"})
	}
	if reason == "" {
		bad = append(bad, rpcerr.FieldViolation{Field: "reason", Description: "say why: it is kept in the audit trail and sent to the registry's event stream"})
	}
	bad = badNames(bad, "subject", subject)
	if len(bad) > 0 {
		return nil, rpcerr.InvalidArgument("containment needs a subject and a reason", bad...)
	}
	if err := s.checkSubject(ctx, subject); err != nil {
		return nil, err
	}
	action, typ := "RELEASE", registryv1.EventType_EVENT_TYPE_SOURCE_RELEASED
	if contain {
		action, typ = "CONTAIN", registryv1.EventType_EVENT_TYPE_SOURCE_CONTAINED
	}
	if !contain {
		cur, ok, err := s.store.Containment(ctx, subject)
		if err != nil {
			return nil, err
		}
		if !ok || !cur.Contained {
			return nil, rpcerr.FailedPrecondition("SOURCE_NOT_CONTAINED", fmt.Sprintf("%s is not contained; nothing to release", subject), map[string]string{"subject": subject})
		}
	}
	principal := auth.NameFromContext(ctx)
	now := s.cfg.Clock()
	c := containment{Subject: subject, Contained: contain, Reason: reason, Principal: principal, Changed: now}
	ev, err := newEvent(ctx, &registryv1.Event{
		Type:      typ,
		Time:      timestamppb.New(now),
		Subject:   subject,
		Principal: principal,
		Message:   fmt.Sprintf("%s %s: %s", strings.ToLower(action), subject, reason),
	})
	if err != nil {
		return nil, err
	}
	if err := s.store.SetContainment(ctx, c, action, ev); err != nil {
		return nil, err
	}
	s.cfg.Logger.InfoContext(ctx, "containment changed", "audit", true, "event", "containment", "subject", subject, "contained", contain, "by", principal, "reason", reason)
	return containmentProto(c), nil
}

// checkSubject refuses subjects the registry does not know. When the
// registry cannot be reached the containment still goes ahead: containing
// a source is the safe action in an incident, and the event is delivered
// once the registry is back.
func (s *Server) checkSubject(ctx context.Context, subject string) error {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RegistryTimeout)
	defer cancel()
	_, err := s.registry.ListContracts(rctx, &registryv1.ListContractsRequest{Subject: subject})
	switch status.Code(err) {
	case codes.OK:
		return nil
	case codes.NotFound:
		return rpcerr.NotFound("subject", subject, "register its contract first (seam contract register)")
	default:
		s.cfg.Logger.WarnContext(ctx, "registry unreachable; containing without checking the subject", "subject", subject, "error", err)
		return nil
	}
}

func containmentProto(c containment) *gatev1.Containment {
	return &gatev1.Containment{
		Subject: c.Subject, Contained: c.Contained, Reason: c.Reason, Principal: c.Principal,
		Time: timestamppb.New(c.Changed), Automatic: c.Automatic,
	}
}

// eventIDAttribute carries the gate's id of an event, so a registry
// consumer can tell a redelivered event from a new one.
const eventIDAttribute = "gate_event_id"

func newEvent(ctx context.Context, e *registryv1.Event) (outboxEvent, error) {
	id := "gate-" + uuid.NewString()
	if e.Attributes == nil {
		e.Attributes = map[string]string{}
	}
	e.Attributes[eventIDAttribute] = id
	stampTrace(ctx, e)
	payload, err := proto.Marshal(e)
	if err != nil {
		return outboxEvent{}, fmt.Errorf("encode registry event: %w", err)
	}
	return outboxEvent{EventID: id, Payload: payload}, nil
}

// relay delivers outbox events to the registry in order, waking on each
// commit that queues one and retrying on a timer while the registry is
// unreachable. It is the only sender of this process: a replay that wants
// its event delivered wakes it and waits (no lock is held across the
// registry call). Delivery is at least once; the event id attribute lets
// readers drop a repeat.
func (s *Server) relay(ctx context.Context) error {
	wake, err := s.store.Listen(ctx, outboxChannel)
	if err != nil {
		if ctx.Err() != nil {
			// Shut down while it was connecting (on PostgreSQL, LISTEN has
			// a connection of its own): a stop like the one in the loop.
			return nil
		}
		return fmt.Errorf("gate outbox relay: %w", err)
	}
	tick := time.NewTicker(s.cfg.RelayInterval)
	defer tick.Stop()
	for {
		err := s.deliverPending(ctx)
		s.delivered.fire()
		if err != nil && ctx.Err() == nil {
			s.cfg.Logger.WarnContext(ctx, "registry event delivery failed; will retry", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-tick.C:
		}
	}
}

// publishTimeout bounds one registry PublishEvent call of the relay, so
// a hung registry delays delivery instead of stopping it.
const publishTimeout = 10 * time.Second

func (s *Server) deliverPending(ctx context.Context) error {
	for {
		events, err := s.store.PendingEvents(ctx, 100)
		if err != nil || len(events) == 0 {
			return err
		}
		for _, e := range events {
			ev := &registryv1.Event{}
			if err := proto.Unmarshal(e.Payload, ev); err != nil {
				return fmt.Errorf("decode outbox event %s: %w", e.EventID, err)
			}
			sctx, span := s.startPublish(ctx, e.EventID, ev)
			pctx, cancel := context.WithTimeout(sctx, publishTimeout)
			resp, err := s.registry.PublishEvent(pctx, &registryv1.PublishEventRequest{Event: ev})
			cancel()
			if err != nil {
				span.RecordError(err)
				span.SetStatus(otelcodes.Error, "registry unreachable; the event stays queued")
				span.End()
				return fmt.Errorf("publish %s: %w", e.EventID, err)
			}
			span.End()
			if err := s.store.MarkDelivered(ctx, e.Seq, resp.GetEvent().GetSequence(), s.cfg.Clock()); err != nil {
				return err
			}
		}
	}
}
