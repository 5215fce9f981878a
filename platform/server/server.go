// Package server runs Seam services: one gRPC server with health,
// reflection, tracing, panic recovery, authentication and limits, and one
// HTTP server with the REST gateway for every RPC, /v1/whoami, the web
// console at /ui/, the OpenAPI document, /healthz, /readyz and /metrics
// (or /metrics on an address of its own).
// Every service binary, and `seam up`, is this package plus the services it
// registers.
package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/test/bufconn"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/console"
	"github.com/seamdata/seam/platform/dial"
	"github.com/seamdata/seam/platform/rpcerr"
	"github.com/seamdata/seam/platform/telemetry"
)

// Service is one gRPC service to serve.
type Service struct {
	// Name is the full gRPC service name, used for health.
	Name string
	// Register registers the implementation on the gRPC server.
	Register func(grpc.ServiceRegistrar)
	// Gateway registers the service's REST routes, forwarding to conn.
	Gateway func(ctx context.Context, mux *runtime.ServeMux, conn *grpc.ClientConn) error
	// Access says which roles may call each method.
	Access auth.Access
	// HTTP, when set, returns handlers the service serves on the HTTP port
	// beside its REST routes, by ServeMux pattern: an API of another shape
	// (the Confluent-compatible schema registry API), which reaches the
	// service over env.Conn under the caller's token.
	HTTP func(env HTTPEnv) (map[string]http.Handler, error)
}

// HTTPEnv is what a service's own HTTP handlers get from the server.
type HTTPEnv struct {
	// Conn reaches this server's gRPC services in-process; calls on it are
	// authorized from the authorization metadata they carry, like any
	// other call.
	Conn *grpc.ClientConn
	// Lookup returns the principal of a token, expired or not (check
	// Principal.Expired).
	Lookup func(token string) (*auth.Principal, bool)
	Logger *slog.Logger
	// MaxBodyBytes is the server's bound on a request body.
	MaxBodyBytes int64
}

// Config configures a Server.
type Config struct {
	// TLS, when set, serves gRPC and HTTP over TLS.
	TLS *tls.Config
	// Tokens authenticates callers.
	Tokens    *auth.Tokens
	Logger    *slog.Logger
	Telemetry *telemetry.Telemetry
	// MaxMessageBytes bounds request and response messages.
	MaxMessageBytes int
	// ShutdownTimeout bounds the graceful stop before calls are cut.
	ShutdownTimeout time.Duration
	// DrainDelay is how long the server reports NOT_SERVING before it stops
	// accepting calls, so load balancers notice first.
	DrainDelay time.Duration
	// Version is Seam's version, shown in the OpenAPI document.
	Version string
	// MaxConnectionAge, when set, makes clients reconnect after that long
	// (calls in flight get as long again to finish). Clients balancing over
	// dns:/// then re-resolve and reach replicas added since they connected.
	MaxConnectionAge time.Duration
	// HTTPReadTimeout bounds how long reading one REST request body may
	// take; 0 means DefaultHTTPReadTimeout. Headers have their own, shorter
	// bound (HTTPHeaderTimeout), and idle keep-alive connections are closed
	// after HTTPIdleTimeout.
	HTTPReadTimeout time.Duration
	// MaxBodyBytesInFlight bounds the bytes (inflated, when gzip) of the
	// REST request bodies that all requests in flight hold together: a
	// request whose body would pass it is answered 429 with Retry-After
	// instead of read further. 0 means DefaultBodyBudgetMessages times
	// MaxMessageBytes; it may not be below MaxMessageBytes, so any one
	// body the size limit allows fits.
	MaxBodyBytesInFlight int64
	// Routes are REST routes that are not one RPC (`seam up`'s incident
	// view, which several services answer together).
	Routes []Route
}

// Route is a REST route built over the in-process connection to this
// server's services. Its caller's bearer token is checked before it runs
// (401 otherwise) and its body is bounded by MaxMessageBytes; the handler
// forwards the token on every call it makes, so each service authorizes
// the caller as it would over REST.
type Route struct {
	// Pattern is the net/http pattern, for example
	// "POST /v1/subjects/{subject}/incident:apply".
	Pattern string
	New     func(conn grpc.ClientConnInterface) http.Handler
}

// Defaults.
const (
	DefaultMaxMessageBytes = 64 << 20
	DefaultShutdownTimeout = 15 * time.Second
	DefaultHTTPReadTimeout = time.Minute
	// DefaultBodyBudgetMessages is how many bodies of the largest size the
	// REST server holds at once by default (MaxBodyBytesInFlight).
	DefaultBodyBudgetMessages = 4
)

// Fixed bounds of the HTTP server: a client gets this long to send its
// request headers, and an idle keep-alive connection is closed after
// HTTPIdleTimeout.
const (
	HTTPHeaderTimeout = 10 * time.Second
	HTTPIdleTimeout   = 2 * time.Minute
)

func (c *Config) validate() error {
	if c.Tokens == nil {
		return errors.New("server: no tokens: every Seam server authenticates its callers")
	}
	if c.Logger == nil {
		return errors.New("server: no logger")
	}
	if c.Telemetry == nil {
		return errors.New("server: no telemetry")
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.MaxMessageBytes < 1<<20 {
		return fmt.Errorf("server: max message size %d is below 1 MiB", c.MaxMessageBytes)
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.MaxConnectionAge < 0 {
		return fmt.Errorf("server: max connection age %s is negative", c.MaxConnectionAge)
	}
	if c.HTTPReadTimeout < 0 {
		return fmt.Errorf("server: HTTP read timeout %s is negative", c.HTTPReadTimeout)
	}
	if c.HTTPReadTimeout == 0 {
		c.HTTPReadTimeout = DefaultHTTPReadTimeout
	}
	if c.MaxBodyBytesInFlight == 0 {
		c.MaxBodyBytesInFlight = DefaultBodyBudgetMessages * int64(c.MaxMessageBytes)
	}
	if c.MaxBodyBytesInFlight < int64(c.MaxMessageBytes) {
		return fmt.Errorf("server: %d bytes of request bodies in flight is below the max message size of %d: one body of that size could never be read",
			c.MaxBodyBytesInFlight, c.MaxMessageBytes)
	}
	return nil
}

// Server serves a set of services over gRPC and HTTP.
type Server struct {
	cfg      Config
	services []Service
	authz    *auth.Authorizer
	grpc     *grpc.Server
	health   *health.Server
	access   auth.Access
	watches  *watches
}

// New builds a server for services.
func New(cfg Config, services ...Service) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var access []auth.Access
	for _, s := range services {
		access = append(access, s.Access)
	}
	merged := auth.Merge(access...)
	authz := auth.NewAuthorizer(cfg.Tokens, merged).WithAudit(cfg.Logger)
	dial.UseBuffers()
	boundary := rpcerr.NewBoundary(cfg.Logger)
	w := newWatches()
	tel := cfg.Telemetry
	opts := []grpc.ServerOption{
		grpc.StatsHandler(otelgrpc.NewServerHandler(
			otelgrpc.WithTracerProvider(tel.TracerProvider),
			otelgrpc.WithMeterProvider(tel.MeterProvider),
			otelgrpc.WithPropagators(tel.Propagator),
			// Health probes every few seconds would bury the traces that matter.
			otelgrpc.WithFilter(filters.Not(filters.HealthCheck())))),
		// Recovery and error mapping run outermost so a panic in auth or a
		// handler still becomes an Internal status; the boundary's codec
		// reports undecodable requests to them as InvalidArgument.
		grpc.ForceServerCodecV2(boundary.Codec()),
		// The tap authorizes each call from its headers before its first
		// message is read; the interceptors then check the subject the
		// request names and keep streams' tokens checked.
		grpc.InTapHandle(authz.TapHandle),
		grpc.ChainUnaryInterceptor(boundary.UnaryInterceptor(), authz.UnaryInterceptor()),
		grpc.ChainStreamInterceptor(boundary.StreamInterceptor(), authz.StreamInterceptor(), w.interceptor),
		grpc.MaxRecvMsgSize(cfg.MaxMessageBytes),
		grpc.MaxSendMsgSize(cfg.MaxMessageBytes),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			Time: 30 * time.Second, Timeout: 10 * time.Second, MaxConnectionIdle: 15 * time.Minute,
			MaxConnectionAge: cfg.MaxConnectionAge, MaxConnectionAgeGrace: cfg.MaxConnectionAge,
		}),
		// Clients ping every 10 s (platform/dial); half that is allowed so
		// a ping a little early is never taken for abuse.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
	}
	if cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg.TLS)))
	}
	g := grpc.NewServer(opts...)
	h := health.NewServer()
	healthpb.RegisterHealthServer(g, h)
	reflection.Register(g)
	for _, s := range services {
		s.Register(g)
		h.SetServingStatus(s.Name, healthpb.HealthCheckResponse_SERVING)
	}
	return &Server{cfg: cfg, services: services, authz: authz, grpc: g, health: h, access: merged, watches: w}, nil
}

// SetServing reports service (a full name, or "" for the whole server) as
// serving or not on the health service and /readyz.
func (s *Server) SetServing(service string, serving bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if serving {
		st = healthpb.HealthCheckResponse_SERVING
	}
	s.health.SetServingStatus(service, st)
}

// Listeners are where a Server serves.
type Listeners struct {
	// GRPC serves every service.
	GRPC net.Listener
	// HTTP serves REST, the OpenAPI document, /healthz and /readyz, and
	// /metrics unless Metrics is set; nil for no HTTP.
	HTTP net.Listener
	// Metrics, when set, serves /metrics alone, so an operator can keep it
	// off the address callers reach.
	Metrics net.Listener
}

// Serve serves on l until ctx ends, then shuts down in a fixed order:
// health NOT_SERVING, drain delay, graceful gRPC stop bounded by the
// shutdown timeout, HTTP shutdown, and a wait for every goroutine it
// started.
func (s *Server) Serve(ctx context.Context, l Listeners) error {
	log := s.cfg.Logger
	grpcLis, httpLis := l.GRPC, l.HTTP
	var wg sync.WaitGroup
	errc := make(chan error, 4)

	// The gateway reaches the gRPC server through an in-memory listener:
	// no second TLS handshake, no port, and streaming RPCs work.
	inproc := bufconn.Listen(1 << 20)
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := s.grpc.Serve(grpcLis); err != nil {
			errc <- fmt.Errorf("grpc serve: %w", err)
		}
	}()
	go func() {
		defer wg.Done()
		// Serve returns once the server stops; its error then is expected.
		_ = s.grpc.Serve(inproc)
	}()
	log.Info("grpc listening", "addr", grpcLis.Addr().String(), "tls", s.cfg.TLS != nil)

	var httpSrv *http.Server
	var gwConn *grpc.ClientConn
	if httpLis != nil {
		var err error
		gwConn, err = grpc.NewClient("passthrough:///seam-inproc",
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return inproc.DialContext(ctx) }),
			grpc.WithTransportCredentials(s.inprocCredentials()),
			grpc.WithStatsHandler(otelgrpc.NewClientHandler(
				otelgrpc.WithTracerProvider(s.cfg.Telemetry.TracerProvider),
				otelgrpc.WithMeterProvider(s.cfg.Telemetry.MeterProvider),
				otelgrpc.WithPropagators(s.cfg.Telemetry.Propagator))),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(s.cfg.MaxMessageBytes), grpc.MaxCallSendMsgSize(s.cfg.MaxMessageBytes)),
		)
		if err != nil {
			s.grpc.Stop()
			wg.Wait()
			return fmt.Errorf("gateway connection: %w", err)
		}
		handler, err := s.httpHandler(ctx, gwConn, l.Metrics == nil)
		if err != nil {
			gwConn.Close()
			s.grpc.Stop()
			wg.Wait()
			return err
		}
		httpSrv = s.httpServer(handler)
		s.serveHTTP(&wg, errc, httpSrv, httpLis, "http")
	}
	var metricsSrv *http.Server
	if l.Metrics != nil {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", s.cfg.Telemetry.Metrics)
		metricsSrv = s.httpServer(mux)
		s.serveHTTP(&wg, errc, metricsSrv, l.Metrics, "metrics")
	}

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
		log.Error("server failed; shutting down", "error", serveErr)
	}

	// 1. Tell probes and balancers first.
	s.health.Shutdown()
	if s.cfg.DrainDelay > 0 {
		time.Sleep(s.cfg.DrainDelay)
	}
	// 2. End the watches (they would never end on their own; their
	// clients resume elsewhere) and stop HTTP intake so no new gateway
	// calls start.
	s.watches.stop()
	shutCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	for _, hs := range []*http.Server{httpSrv, metricsSrv} {
		if hs == nil {
			continue
		}
		if err := hs.Shutdown(shutCtx); err != nil {
			log.Warn("http shutdown cut short", "error", err)
			hs.Close()
		}
	}
	// 3. Let running calls finish, within the deadline.
	stopped := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-shutCtx.Done():
		log.Warn("graceful stop timed out; cutting remaining calls", "timeout", s.cfg.ShutdownTimeout)
		s.grpc.Stop()
		<-stopped
	}
	if gwConn != nil {
		gwConn.Close()
	}
	inproc.Close()
	wg.Wait()
	log.Info("server stopped")
	return serveErr
}

// httpServer returns an HTTP server for handler with the bounds every Seam
// HTTP listener has.
func (s *Server) httpServer(handler http.Handler) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: HTTPHeaderTimeout,
		IdleTimeout:       HTTPIdleTimeout,
		TLSConfig:         s.cfg.TLS,
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelWarn),
	}
}

// serveHTTP serves hs on lis in a goroutine wg tracks.
func (s *Server) serveHTTP(wg *sync.WaitGroup, errc chan<- error, hs *http.Server, lis net.Listener, what string) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		var err error
		if s.cfg.TLS != nil {
			err = hs.ServeTLS(lis, "", "")
		} else {
			err = hs.Serve(lis)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("%s serve: %w", what, err)
		}
	}()
	s.cfg.Logger.Info(what+" listening", "addr", lis.Addr().String(), "tls", s.cfg.TLS != nil)
}

// inprocCredentials secures the gateway's in-memory connection. The
// server's TLS credentials apply to every listener, so with TLS on the
// gateway must speak TLS too; it pins the server's own certificate, which
// is exact and needs no host name, since the peer is this process.
func (s *Server) inprocCredentials() credentials.TransportCredentials {
	if s.cfg.TLS == nil || len(s.cfg.TLS.Certificates) == 0 {
		return insecure.NewCredentials()
	}
	own := s.cfg.TLS.Certificates[0].Certificate[0]
	return credentials.NewTLS(&tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verification is replaced, not skipped: VerifyPeerCertificate
		// accepts only the server's own certificate.
		InsecureSkipVerify: true, //nolint:gosec // pinned below
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || !bytes.Equal(raw[0], own) {
				return errors.New("in-process gateway: peer is not this server")
			}
			return nil
		},
	})
}

// gatewayMarshaler renders REST JSON with proto field names, matching the
// YAML people author and the CLI's -o json, and keeps record numbers exact
// (records.go).
var gatewayMarshaler = newRecordsMarshaler()

// httpHandler serves REST (behind the guard that bounds it), the OpenAPI
// documents, the console, the probes and, with withMetrics, /metrics.
func (s *Server) httpHandler(ctx context.Context, conn *grpc.ClientConn, withMetrics bool) (http.Handler, error) {
	methods, err := restMethods(s.services)
	if err != nil {
		return nil, err
	}
	guard := &restGuard{authz: s.authz, maxBody: int64(s.cfg.MaxMessageBytes), readTimeout: s.cfg.HTTPReadTimeout, methods: methods,
		budget: &bodyBudget{limit: s.cfg.MaxBodyBytesInFlight}}
	if err := guard.budget.observe(s.cfg.Telemetry.MeterProvider.Meter("github.com/seamdata/seam/platform/server")); err != nil {
		return nil, fmt.Errorf("REST body budget metric: %w", err)
	}
	gw := runtime.NewServeMux(s.gatewayOptions(guard.errorHandler, guard.middleware)...)
	guard.gateway = gw
	for _, svc := range s.services {
		if svc.Gateway == nil {
			continue
		}
		if err := svc.Gateway(ctx, gw, conn); err != nil {
			return nil, fmt.Errorf("register REST routes of %s: %w", svc.Name, err)
		}
	}
	mux := http.NewServeMux()
	for _, svc := range s.services {
		if svc.HTTP == nil {
			continue
		}
		handlers, err := svc.HTTP(HTTPEnv{Conn: conn, Lookup: s.cfg.Tokens.Lookup, Logger: s.cfg.Logger, MaxBodyBytes: int64(s.cfg.MaxMessageBytes)})
		if err != nil {
			return nil, fmt.Errorf("HTTP handlers of %s: %w", svc.Name, err)
		}
		for pattern, h := range handlers {
			mux.Handle(pattern, h)
		}
	}
	mux.Handle("/v1/", guard)
	mux.HandleFunc("GET /v1/whoami", s.whoami)
	for _, rt := range s.cfg.Routes {
		mux.Handle(rt.Pattern, s.authenticated(rt.New(conn)))
	}
	mux.Handle(console.Prefix, console.Handler())
	mux.Handle("GET /{$}", http.RedirectHandler(console.Prefix, http.StatusFound))
	if err := s.routeStandards(mux, guard); err != nil {
		return nil, err
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", s.ready)
	if withMetrics {
		mux.Handle("GET /metrics", s.cfg.Telemetry.Metrics)
	}
	tel := s.cfg.Telemetry
	return otelhttp.NewHandler(mux, "http",
		otelhttp.WithTracerProvider(tel.TracerProvider),
		otelhttp.WithMeterProvider(tel.MeterProvider),
		otelhttp.WithPropagators(tel.Propagator),
		otelhttp.WithSpanNameFormatter(spanName),
		otelhttp.WithFilter(traced),
	), nil
}

// spanName names a REST span by its route template once the gateway has
// matched one ("POST /v1/ingest", "GET /v1/subjects/{subject}"), by its
// path before that and for the other handlers.
func spanName(_ string, r *http.Request) string {
	if p := r.Pattern; strings.HasPrefix(p, r.Method+" /v1/") && p != r.Method+" /v1/" {
		return p
	}
	return r.Method + " " + r.URL.Path
}

// traced reports whether an HTTP request is worth a trace: scrapes and
// liveness and readiness probes are not (they come every few seconds and
// carry no story).
func traced(r *http.Request) bool {
	switch r.URL.Path {
	case "/metrics", "/healthz", "/readyz":
		return false
	}
	return true
}

// ready answers 200 when every service reports SERVING, 503 otherwise.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	var notReady []string
	for _, svc := range s.services {
		resp, err := s.health.Check(r.Context(), &healthpb.HealthCheckRequest{Service: svc.Name})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			notReady = append(notReady, svc.Name)
		}
	}
	if len(notReady) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "not ready: %v\n", notReady)
		return
	}
	fmt.Fprintln(w, "ready")
}
