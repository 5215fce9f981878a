// Package node runs Seam's services in one process: `seam up` runs all
// four, `seam <service> serve` one, and `seam demo` and `seam bench` a
// temporary one. Services inside one process still call each other over
// gRPC, so one process behaves like separate ones.
package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	incidentrest "github.com/seamdata/seam/cmd/seam/internal/incident/rest"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/dial"
	"github.com/seamdata/seam/platform/server"
	"github.com/seamdata/seam/platform/storage"
	"github.com/seamdata/seam/platform/telemetry"
)

// The services a node can run, in the order they start: each after the
// peers it calls.
var ServiceNames = []string{"idmap", "registry", "adapter", "gate"}

// Peers lists the services service calls.
func Peers(service string) []string {
	switch service {
	case "registry":
		return []string{"idmap"}
	case "adapter":
		return []string{"registry", "idmap"}
	case "gate":
		return []string{"registry", "idmap", "adapter"}
	}
	return nil
}

// Config is everything a Seam process needs, from flags and SEAM_*
// variables.
type Config struct {
	Services []string
	DataDir  string
	GRPCAddr string
	HTTPAddr string
	// MetricsAddr, when set, serves /metrics there instead of on HTTPAddr.
	MetricsAddr string
	// Store is the store URL; empty means an SQLite file per service in
	// DataDir.
	Store string
	// StorePool bounds each PostgreSQL connection pool; zero fields keep
	// the URL's pool_* parameters or the defaults.
	StorePool storage.Pool
	TLSCert   string
	TLSKey    string
	// TLSCA verifies peers (and is what clients trust); empty trusts the
	// system roots, or the server's own certificate inside `seam up`.
	TLSCA string
	// TokensFile authenticates callers; empty means DataDir/tokens.json.
	TokensFile string
	// ServiceToken is the token services use to call each other; empty
	// means DataDir/service.token.
	ServiceToken string
	RegistryAddr string
	AdapterAddr  string
	IdmapAddr    string
	LogFormat    string
	LogLevel     string
	// Bootstrap creates the tokens file with an admin token on first start.
	Bootstrap        bool
	ShutdownTimeout  time.Duration
	DrainDelay       time.Duration
	MaxConnectionAge time.Duration
	MaxMessageBytes  int
	HTTPReadTimeout  time.Duration
	// MaxBodyBytesInFlight bounds the REST bodies all requests in flight
	// hold together (0: server.DefaultBodyBudgetMessages × MaxMessageBytes).
	MaxBodyBytesInFlight int64
	// PeerTimeout is the deadline of each call to a peer service.
	PeerTimeout time.Duration
	// Version is the seam build's version, reported in telemetry.
	Version string
	// OpenLineageURL, when set, is the collector the gate sends an
	// OpenLineage run to for every sealing of a partition; the API key
	// is sent as a bearer token, the namespace names the jobs.
	OpenLineageURL       string
	OpenLineageAPIKey    string
	OpenLineageNamespace string
	// Gate holds the gate's partition settings (0 takes the gate's
	// default): how long answers, idempotency rows and settled
	// quarantine are kept, and how often the retention job runs.
	Gate GateSettings
}

// GateSettings are the gate's partition and retention settings.
type GateSettings struct {
	AnswerTTL, BatchRetention, QuarantineRetention, RetentionInterval time.Duration
	// KeyCacheKeys bounds the partition keys the gate holds in memory.
	KeyCacheKeys int
}

// Validate checks cfg and names the flag to fix.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Services) == 0 {
		errs = append(errs, errors.New("no service to run"))
	}
	for _, s := range c.Services {
		if !slices.Contains(ServiceNames, s) {
			errs = append(errs, fmt.Errorf("unknown service %q; services are %s", s, strings.Join(ServiceNames, ", ")))
		}
	}
	if c.GRPCAddr == "" {
		errs = append(errs, errors.New("--grpc-addr is empty; give host:port (port 0 picks a free one)"))
	}
	if c.DataDir == "" && (c.Store == "" || c.TokensFile == "") {
		errs = append(errs, errors.New("--data-dir is empty; it holds the embedded store and the tokens unless --store and --tokens-file are given"))
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("--tls-cert and --tls-key go together; give both or neither"))
	}
	for _, s := range c.Services {
		for _, peer := range Peers(s) {
			if !slices.Contains(c.Services, peer) && c.peerAddr(peer) == "" {
				errs = append(errs, fmt.Errorf("%s calls %s: give --%s-addr (host:port, or several separated by commas)", s, peer, peer))
			}
		}
	}
	if g := c.Gate; g.AnswerTTL < 0 || g.BatchRetention < 0 || g.QuarantineRetention < 0 || g.RetentionInterval < 0 {
		errs = append(errs, errors.New("--answer-ttl, --batch-retention, --quarantine-retention and --retention-interval must not be negative"))
	} else if g.AnswerTTL > 0 && g.BatchRetention > 0 && g.AnswerTTL > g.BatchRetention {
		errs = append(errs, fmt.Errorf("--answer-ttl %s exceeds --batch-retention %s: an answer is kept only with its batch", g.AnswerTTL, g.BatchRetention))
	}
	if c.Gate.KeyCacheKeys < 0 {
		errs = append(errs, errors.New("--key-cache-keys must not be negative"))
	}
	if c.ShutdownTimeout < 0 || c.DrainDelay < 0 {
		errs = append(errs, errors.New("--shutdown-timeout and --drain-delay must not be negative"))
	}
	if len(errs) == 0 {
		return nil
	}
	// One line, as every seam error: "a; b; c".
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}

func (c *Config) peerAddr(name string) string {
	switch name {
	case "registry":
		return c.RegistryAddr
	case "adapter":
		return c.AdapterAddr
	case "idmap":
		return c.IdmapAddr
	}
	return ""
}

// StoreURL is the store of one service.
func (c *Config) StoreURL(service string) string {
	if c.Store != "" {
		return withPool(c.Store, c.StorePool)
	}
	return "sqlite:" + filepath.Join(c.DataDir, service+".db")
}

// withPool adds the --store-* pool limits that are set to a PostgreSQL
// URL, as the pool_* parameters platform/storage reads.
func withPool(store string, p storage.Pool) string {
	if !strings.HasPrefix(store, "postgres://") && !strings.HasPrefix(store, "postgresql://") {
		return store
	}
	q := url.Values{}
	if p.MaxConns > 0 {
		q.Set("pool_max_conns", strconv.Itoa(p.MaxConns))
	}
	if p.MaxIdleConns > 0 {
		q.Set("pool_max_idle_conns", strconv.Itoa(p.MaxIdleConns))
	}
	if p.MaxConnLifetime > 0 {
		q.Set("pool_max_conn_lifetime", p.MaxConnLifetime.String())
	}
	if p.MaxConnIdleTime > 0 {
		q.Set("pool_max_conn_idle_time", p.MaxConnIdleTime.String())
	}
	if len(q) == 0 {
		return store
	}
	sep := "?"
	if strings.Contains(store, "?") {
		sep = "&"
	}
	return store + sep + q.Encode()
}

// Hooks let tests and `seam demo` watch a node.
type Hooks struct {
	// SpanProcessors receive every span.
	SpanProcessors []sdktrace.SpanProcessor
	// Ready is called with the bound addresses once the node serves.
	Ready func(grpcAddr, httpAddr string)
	// Notes receives what a person starting the node should read.
	Notes io.Writer
	// Log receives the logs; nil means stderr.
	Log io.Writer
}

// built is one service ready to serve.
type built struct {
	svc   server.Service
	run   func(ctx context.Context) error
	close func() error
}

// Run serves cfg.Services until ctx ends.
func Run(ctx context.Context, cfg Config, hooks Hooks) (err error) {
	if err := cfg.Validate(); err != nil {
		return exit.Usagef("%w", err)
	}
	logOut := hooks.Log
	if logOut == nil {
		logOut = os.Stderr
	}
	notes := hooks.Notes
	if notes == nil {
		notes = io.Discard
	}
	log, err := telemetry.NewLogger(logOut, cfg.LogFormat, cfg.LogLevel)
	if err != nil {
		return exit.Usagef("%w", err)
	}
	name := "seam"
	if len(cfg.Services) == 1 {
		name = "seam-" + cfg.Services[0]
	}
	tel, err := telemetry.Setup(ctx, telemetry.Config{ServiceName: name, Version: cfg.Version, SpanProcessors: hooks.SpanProcessors})
	if err != nil {
		return exit.Usagef("%w", err)
	}
	// The stores measure their transactions on the process's meter
	// provider (platform/storage): set it before any store opens, or
	// seam_store_* never reaches /metrics.
	tel.SetGlobalMeter()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if serr := tel.Shutdown(sctx); serr != nil {
			log.Warn("telemetry flush failed", "error", serr)
		}
	}()

	// The ports are bound before anything is written (the lock, the
	// tokens, the first-start notes): a second seam up on the same ports
	// fails here and leaves the data directory as it was.
	// An empty --http-addr or --metrics-addr binds nothing (Validate
	// requires --grpc-addr).
	const anotherSeam = "is another seam already running? stop it, or "
	var lis server.Listeners
	for _, l := range []struct {
		bound      *net.Listener
		flag, addr string
		busy       string // what may already hold the port
	}{
		{&lis.GRPC, "--grpc-addr", cfg.GRPCAddr, anotherSeam},
		{&lis.HTTP, "--http-addr", cfg.HTTPAddr, anotherSeam},
		{&lis.Metrics, "--metrics-addr", cfg.MetricsAddr, ""},
	} {
		if l.addr == "" {
			continue
		}
		bound, err := net.Listen("tcp", l.addr)
		if err != nil {
			return exit.Usagef("listen on %s %s: %w (%spick another address with %s)", l.flag, l.addr, err, l.busy, l.flag)
		}
		defer bound.Close()
		*l.bound = bound
	}

	if cfg.Store == "" {
		// The embedded stores are files of one process at a time.
		unlock, err := LockDataDir(cfg.DataDir)
		if err != nil {
			return exit.Usagef("%w", err)
		}
		defer unlock()
	}

	bound := [2]string{lis.GRPC.Addr().String(), cfg.HTTPAddr}
	if lis.HTTP != nil {
		bound[1] = lis.HTTP.Addr().String()
	}
	tokens, serviceToken, err := loadTokens(&cfg, notes, bound)
	if err != nil {
		return err
	}
	serverTLS, clientTLS, err := loadTLS(&cfg)
	if err != nil {
		return exit.Usagef("%w", err)
	}

	// Services inside one process still call each other over gRPC, on this
	// node's own listener, so `seam up` behaves like separate services.
	self := lis.GRPC.Addr().String()
	conns := map[string]*grpc.ClientConn{}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	peer := func(service string) (*grpc.ClientConn, error) {
		if c, ok := conns[service]; ok {
			return c, nil
		}
		addr := cfg.peerAddr(service)
		if addr == "" && slices.Contains(cfg.Services, service) {
			addr = self
		}
		c, err := dial.Conn(addr, dial.Options{Token: serviceToken, TLS: clientTLS, Telemetry: tel,
			MaxMessageBytes: cfg.MaxMessageBytes, CallTimeout: cfg.PeerTimeout})
		if err != nil {
			return nil, fmt.Errorf("connect to %s at %s: %w", service, addr, err)
		}
		conns[service] = c
		return c, nil
	}

	env := serviceEnv{cfg: &cfg, log: log, tel: tel, peer: peer}
	var services []built
	defer func() {
		for i := len(services) - 1; i >= 0; i-- {
			if services[i].close != nil {
				if cerr := services[i].close(); cerr != nil {
					log.Warn("close service", "error", cerr)
				}
			}
		}
	}()
	for _, s := range ServiceNames {
		if !slices.Contains(cfg.Services, s) {
			continue
		}
		b, err := buildService(ctx, s, env)
		if err != nil {
			return fmt.Errorf("start %s: %w", s, err)
		}
		services = append(services, b)
	}

	var svcs []server.Service
	for _, b := range services {
		svcs = append(svcs, b.svc)
	}
	var routes []server.Route
	if slices.Contains(cfg.Services, "gate") && slices.Contains(cfg.Services, "registry") && slices.Contains(cfg.Services, "idmap") {
		// The incident view needs the three in this process (seam up).
		routes = incidentrest.Routes()
	}
	srv, err := server.New(server.Config{
		TLS: serverTLS, Tokens: tokens, Logger: log, Telemetry: tel,
		MaxMessageBytes: cfg.MaxMessageBytes, ShutdownTimeout: cfg.ShutdownTimeout, DrainDelay: cfg.DrainDelay,
		MaxConnectionAge: cfg.MaxConnectionAge, HTTPReadTimeout: cfg.HTTPReadTimeout, MaxBodyBytesInFlight: cfg.MaxBodyBytesInFlight, Version: cfg.Version,
		Routes: routes,
	}, svcs...)
	if err != nil {
		return err
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return srv.Serve(gctx, lis)
	})
	for _, b := range services {
		if b.run != nil {
			g.Go(func() error { return b.run(gctx) })
		}
	}
	httpAddr := ""
	if lis.HTTP != nil {
		httpAddr = lis.HTTP.Addr().String()
	}
	if cfg.Bootstrap {
		// seam up tells its clients where it listens, as it tells them
		// its admin token: a client given the same --data-dir needs no
		// --addr, whatever ports this one took.
		remove, err := client.WriteAddresses(cfg.DataDir, client.Addresses{GRPC: self, HTTP: httpAddr})
		if err != nil {
			return err
		}
		defer remove()
	}
	log.Info("seam serving", "services", strings.Join(cfg.Services, ","), "grpc", self, "http", httpAddr, "traces", tel.Exporting)
	if hooks.Ready != nil {
		hooks.Ready(self, httpAddr)
	}
	return g.Wait()
}

// loadTokens returns the caller tokens and the services' own token,
// creating both on the first start of `seam up`.
// bound holds the gRPC and HTTP addresses the node listens on, for the
// first-start notes.
func loadTokens(cfg *Config, notes io.Writer, bound [2]string) (*auth.Tokens, string, error) {
	if cfg.Bootstrap && cfg.TokensFile == "" {
		boot, err := auth.EnsureLocalTokens(cfg.DataDir)
		if err != nil {
			return nil, "", err
		}
		if boot.Created {
			// The token itself stays in its owner-only file: notes end up
			// in terminals, CI logs and log collectors.
			tokenFile := filepath.Join(cfg.DataDir, auth.AdminTokenFileName)
			fmt.Fprintf(notes, `First start: created an admin token in %s (readable by you only).
%s; other clients send it:
  grpcurl -H "authorization: Bearer $(cat %s)" -plaintext %s list
  curl -H "Authorization: Bearer $(cat %s)" http://%s/v1/subjects
`, tokenFile, whoFinds(cfg.DataDir), tokenFile, bound[0], tokenFile, bound[1])
		}
		if cfg.ServiceToken == "" {
			cfg.ServiceToken = boot.ServiceToken
		}
	}
	path := cfg.TokensFile
	if path == "" {
		path = filepath.Join(cfg.DataDir, auth.TokensFileName)
	}
	tokens, err := auth.LoadTokens(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, "", exit.Usagef("no tokens file at %s: run `seam up` once to create one, or give --tokens-file", path)
		}
		return nil, "", exit.Usagef("%w", err)
	}
	svcToken := cfg.ServiceToken
	if svcToken == "" {
		data, err := os.ReadFile(filepath.Join(cfg.DataDir, auth.ServiceTokenFileName))
		if err != nil {
			return nil, "", exit.Usagef("no service token: give --service-token (the token these services use to call each other): %w", err)
		}
		svcToken = strings.TrimSpace(string(data))
	}
	return tokens, svcToken, nil
}

// whoFinds says which seam commands find the admin token and the
// addresses of a seam up on dataDir by themselves: those run from the
// directory that holds it as ./seam-data, or given its path.
func whoFinds(dataDir string) string {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		abs = dataDir
	}
	if filepath.Clean(dataDir) == filepath.Clean(client.DefaultDataDir) {
		return fmt.Sprintf("The seam command run in %s finds it, and this Seam's address, by itself", filepath.Dir(abs))
	}
	return fmt.Sprintf("The seam command finds it, and this Seam's address, given --data-dir %s (or SEAM_DATA_DIR)", abs)
}

// loadTLS returns the server's TLS config and the one its clients use.
func loadTLS(cfg *Config) (*tls.Config, *tls.Config, error) {
	if cfg.TLSCert == "" {
		return nil, nil, nil
	}
	cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
	if err != nil {
		return nil, nil, fmt.Errorf("load --tls-cert/--tls-key: %w", err)
	}
	srv := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	caFile := cfg.TLSCA
	if caFile == "" {
		caFile = cfg.TLSCert
	}
	pool, err := client.ReadCA(caFile)
	if err != nil {
		return nil, nil, err
	}
	return srv, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// serviceEnv is what building a service may use.
type serviceEnv struct {
	cfg  *Config
	log  *slog.Logger
	tel  *telemetry.Telemetry
	peer func(service string) (*grpc.ClientConn, error)
}
