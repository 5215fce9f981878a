package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"

	"github.com/seamdata/seam/core/openlineage"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/lineage"
	"github.com/seamdata/seam/platform/server"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
	"github.com/seamdata/seam/services/adapter"
	"github.com/seamdata/seam/services/gate"
	"github.com/seamdata/seam/services/idmap"
	"github.com/seamdata/seam/services/registry"
	"github.com/seamdata/seam/services/registry/ccompat"
)

// buildService constructs one service with its store and peers.
func buildService(ctx context.Context, name string, env serviceEnv) (built, error) {
	log := env.log.With("service", name)
	meter := env.tel.Meter("github.com/seamdata/seam/services/" + name)
	// The connections to its Peers; they are lazy, so a service may start
	// before its peers (the registry asks idmap whether a migration can
	// run).
	peer := map[string]*grpc.ClientConn{}
	for _, p := range Peers(name) {
		c, err := env.peer(p)
		if err != nil {
			return built{}, err
		}
		peer[p] = c
	}
	switch name {
	case "registry":
		s, err := registry.New(ctx, registry.Config{StoreURL: env.cfg.StoreURL(name), Logger: log, Meter: meter, Idmap: peer["idmap"]})
		if err != nil {
			return built{}, err
		}
		b := serve(s, registryv1.RegistryService_ServiceDesc.ServiceName, registryv1.RegisterRegistryServiceHandler, registry.Access)
		b.svc.HTTP = confluentAPI
		return b, nil
	case "idmap":
		s, err := idmap.New(ctx, idmap.Config{StoreURL: env.cfg.StoreURL(name), Logger: log, Meter: meter, Principal: auth.NameFromContext})
		if err != nil {
			return built{}, err
		}
		return serve(s, idmapv1.IdMapService_ServiceDesc.ServiceName, idmapv1.RegisterIdMapServiceHandler, idmap.Access), nil
	case "adapter":
		s, err := adapter.New(ctx, adapter.Config{Registry: peer["registry"], Idmap: peer["idmap"], Logger: log, Meter: meter})
		if err != nil {
			return built{}, err
		}
		return serve(s, adapterv1.AdapterService_ServiceDesc.ServiceName, adapterv1.RegisterAdapterServiceHandler, adapter.Access), nil
	case "gate":
		em, closeLineage, err := lineageEmitter(env.cfg, log, meter)
		if err != nil {
			return built{}, err
		}
		s, err := gate.New(ctx, gate.Config{StoreURL: env.cfg.StoreURL(name), Registry: peer["registry"], Adapter: peer["adapter"], Idmap: peer["idmap"], Logger: log, Meter: meter, Lineage: em, TracerProvider: env.tel.TracerProvider,
			AnswerTTL: env.cfg.Gate.AnswerTTL, BatchRetention: env.cfg.Gate.BatchRetention,
			QuarantineRetention: env.cfg.Gate.QuarantineRetention, RetentionInterval: env.cfg.Gate.RetentionInterval,
			KeyCacheKeys: env.cfg.Gate.KeyCacheKeys})
		if err != nil {
			_ = closeLineage()
			return built{}, err
		}
		b := serve(s, gatev1.GateService_ServiceDesc.ServiceName, gatev1.RegisterGateServiceHandler, gate.Access)
		b.close = func() error {
			// The gate first, so its last seals are queued, then the
			// transport flushes them within the shutdown timeout.
			err := s.Close()
			return errors.Join(err, closeLineage())
		}
		return b, nil
	}
	return built{}, fmt.Errorf("unknown service %q", name)
}

// instance is what each service's New returns: a gRPC implementation to
// register and close; one that also has work of its own beside serving
// (watches, the gate's relay) has a Run method as well.
type instance interface {
	Register(grpc.ServiceRegistrar)
	Close() error
}

// serve describes a built service to the server: name is its full gRPC
// service name, gateway registers its REST routes, access says which
// roles may call what.
func serve(s instance, name string, gateway func(context.Context, *runtime.ServeMux, *grpc.ClientConn) error, access auth.Access) built {
	b := built{
		svc:   server.Service{Name: name, Register: s.Register, Gateway: gateway, Access: access},
		close: s.Close,
	}
	if r, ok := s.(interface{ Run(context.Context) error }); ok {
		b.run = r.Run
	}
	return b
}

// confluentAPI serves the Confluent Schema Registry API (ccompat) beside
// the registry's REST routes.
func confluentAPI(env server.HTTPEnv) (map[string]http.Handler, error) {
	h, err := ccompat.New(ccompat.Config{Conn: env.Conn, Authenticate: env.Lookup, Logger: env.Logger.With("api", "ccompat"), MaxBodyBytes: env.MaxBodyBytes})
	if err != nil {
		return nil, err
	}
	return map[string]http.Handler{ccompat.Prefix + "/": h}, nil
}

// HealthName returns the gRPC health service name a service reports, from
// its generated descriptor; "" for an unknown service.
func HealthName(service string) string {
	switch service {
	case "registry":
		return registryv1.RegistryService_ServiceDesc.ServiceName
	case "idmap":
		return idmapv1.IdMapService_ServiceDesc.ServiceName
	case "adapter":
		return adapterv1.AdapterService_ServiceDesc.ServiceName
	case "gate":
		return gatev1.GateService_ServiceDesc.ServiceName
	}
	return ""
}

// lineageEmitter builds the gate's OpenLineage emitter and its HTTP
// transport from --openlineage-url; without it, a nil emitter (emits
// nothing) and a close that does nothing.
func lineageEmitter(cfg *Config, log *slog.Logger, meter metric.Meter) (*openlineage.Emitter, func() error, error) {
	if cfg.OpenLineageURL == "" {
		return nil, func() error { return nil }, nil
	}
	tr, err := lineage.New(lineage.Config{URL: cfg.OpenLineageURL, APIKey: cfg.OpenLineageAPIKey, Logger: log, Meter: meter, Gzip: true})
	if err != nil {
		return nil, nil, fmt.Errorf("--openlineage-url: %w", err)
	}
	em := openlineage.NewEmitter(openlineage.EmitterConfig{Namespace: cfg.OpenLineageNamespace, Version: cfg.Version}, tr)
	closeFn := func() error {
		timeout := cfg.ShutdownTimeout
		if timeout <= 0 {
			timeout = 5 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return tr.Close(ctx)
	}
	return em, closeFn, nil
}
