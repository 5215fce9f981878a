// Package dial opens gRPC client connections between Seam services and
// from the CLI: traced with OpenTelemetry, authenticated with a bearer
// token, and balanced round robin across every address given.
package dial

import (
	"crypto/tls"
	"fmt"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/telemetry"
)

// Options configures a connection.
type Options struct {
	// Token is sent as a bearer token on every call.
	Token string
	// TLS, when set, secures the connection.
	TLS *tls.Config
	// Telemetry traces the calls; nil uses the global providers.
	Telemetry *telemetry.Telemetry
	// MaxMessageBytes bounds messages; 0 means 64 MiB.
	MaxMessageBytes int
}

const roundRobin = `{"loadBalancingConfig":[{"round_robin":{}}]}`

// Conn returns a client connection to target: "host:port", a comma
// separated list of them (balanced round robin across all), or any gRPC
// target URI such as "dns:///seam-gate.svc:7070" (also round robin). The
// connection is lazy: errors to reach the peer surface on the first call.
func Conn(target string, o Options) (*grpc.ClientConn, error) {
	target = strings.TrimSpace(target)
	if target == "" {
		return nil, fmt.Errorf("no address to connect to")
	}
	max := o.MaxMessageBytes
	if max == 0 {
		max = 64 << 20
	}
	var statsOpts []otelgrpc.Option
	if o.Telemetry != nil {
		statsOpts = append(statsOpts,
			otelgrpc.WithTracerProvider(o.Telemetry.TracerProvider),
			otelgrpc.WithMeterProvider(o.Telemetry.MeterProvider),
			otelgrpc.WithPropagators(o.Telemetry.Propagator))
	} else {
		statsOpts = append(statsOpts, otelgrpc.WithPropagators(otel.GetTextMapPropagator()))
	}
	opts := []grpc.DialOption{
		grpc.WithStatsHandler(otelgrpc.NewClientHandler(statsOpts...)),
		grpc.WithDefaultServiceConfig(roundRobin),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(max), grpc.MaxCallSendMsgSize(max)),
	}
	if o.TLS != nil {
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(o.TLS)))
	} else {
		opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	if o.Token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(auth.TokenCredentials{Token: o.Token, Secure: o.TLS != nil}))
	}
	if strings.Contains(target, ",") {
		var addrs []resolver.Address
		for _, a := range strings.Split(target, ",") {
			if a = strings.TrimSpace(a); a != "" {
				addrs = append(addrs, resolver.Address{Addr: a})
			}
		}
		r := manual.NewBuilderWithScheme("seam")
		r.InitialState(resolver.State{Addresses: addrs})
		opts = append(opts, grpc.WithResolvers(r))
		target = "seam:///peers"
	} else if !strings.Contains(target, "://") {
		target = "passthrough:///" + target
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", target, err)
	}
	return conn, nil
}
