// Package dial opens gRPC client connections between Seam services and
// from the CLI, with one policy for every call to a peer: traced with
// OpenTelemetry, authenticated with a bearer token, balanced round robin
// across every address given, a default deadline on every unary call,
// retries with backoff for calls that change nothing, keepalive that finds
// a dead or hung peer, and a reconnect backoff capped so a caller is back
// within a few seconds of its peer.
package dial

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/telemetry"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// The peer-call policy.
const (
	// DefaultCallTimeout bounds every unary call whose caller set no
	// sooner deadline: a hung peer costs a caller this long at most, and
	// the caller answers Unavailable.
	DefaultCallTimeout = 30 * time.Second
	// NoCallTimeout, as Options.CallTimeout, adds no deadline: for clients
	// such as the CLI that bound each call themselves.
	NoCallTimeout time.Duration = -1

	// KeepaliveTime is how long a connection may be silent before the
	// client pings; a peer that does not answer the ping within
	// KeepaliveTimeout is taken for dead, and the calls and streams on
	// the connection fail. That is what ends a watch stream on a hung
	// peer, since streams have no deadline. The server permits a ping
	// every 5 s (platform/server).
	KeepaliveTime    = 10 * time.Second
	KeepaliveTimeout = 5 * time.Second

	// ReconnectBackoffMax caps the wait between attempts to reconnect to
	// a peer that went away, so a caller is back within about this long
	// (plus jitter) of the peer's return.
	ReconnectBackoffMax = time.Second
	// ConnectTimeout bounds one attempt to connect, so an attempt stuck
	// on a hung peer is given up and retried.
	ConnectTimeout = 5 * time.Second

	// DeadlineReserve is the most a call to a peer leaves of its caller's
	// deadline, for the answer to travel back (see deadline).
	DeadlineReserve = time.Second

	// RetryAttempts is how many times in all a call that changes nothing
	// is tried while its peer answers Unavailable, with backoff between
	// attempts, within the call's deadline.
	RetryAttempts = 3
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
	// CallTimeout is the deadline of each unary call, unless the caller's
	// context ends sooner: 0 means DefaultCallTimeout, NoCallTimeout none.
	// Streams (watches, replays, imports) get no deadline: they may last
	// as long as their caller wants, and keepalive ends them when the
	// peer dies or hangs.
	CallTimeout time.Duration
}

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
	timeout := o.CallTimeout
	if timeout == 0 {
		timeout = DefaultCallTimeout
	}
	svcConfig, err := serviceConfig()
	if err != nil {
		return nil, err
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
	UseBuffers()
	opts := []grpc.DialOption{
		grpc.WithStatsHandler(otelgrpc.NewClientHandler(statsOpts...)),
		grpc.WithDefaultServiceConfig(svcConfig),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(max), grpc.MaxCallSendMsgSize(max)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: KeepaliveTime, Timeout: KeepaliveTimeout, PermitWithoutStream: true}),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: ReconnectBackoffMax},
			MinConnectTimeout: ConnectTimeout,
		}),
	}
	if timeout > 0 {
		opts = append(opts, grpc.WithChainUnaryInterceptor(deadline(timeout)))
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

// deadline gives each unary call the sooner of d from now and its caller's
// deadline less a reserve (a tenth of the time left, at most
// DeadlineReserve). A service calling a peer on behalf of its own caller
// so keeps time to answer: when a peer further down hangs, the service
// next to it reports which peer it is, before the callers above give up
// on their own clocks and can only blame the service they called.
func deadline(d time.Duration) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		until := time.Now().Add(d)
		if caller, ok := ctx.Deadline(); ok {
			reserve := min(time.Until(caller)/10, DeadlineReserve)
			if sooner := caller.Add(-max(reserve, 0)); sooner.Before(until) {
				until = sooner
			}
		}
		ctx, cancel := context.WithDeadline(ctx, until)
		defer cancel()
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

// serviceConfig is the gRPC service config of every connection: round
// robin over the peer's addresses, and retries on Unavailable for every
// method the protos mark as changing nothing (idempotency_level
// NO_SIDE_EFFECTS or IDEMPOTENT) that is not client streaming. It is
// derived from the descriptors, so a new read RPC is retried without
// anyone keeping a list.
func serviceConfig() (string, error) {
	type name struct {
		Service string `json:"service"`
		Method  string `json:"method"`
	}
	var names []name
	for _, fd := range []protoreflect.FileDescriptor{
		registryv1.File_seam_registry_v1_registry_proto,
		idmapv1.File_seam_idmap_v1_idmap_proto,
		adapterv1.File_seam_adapter_v1_adapter_proto,
		gatev1.File_seam_gate_v1_gate_proto,
	} {
		for i := range fd.Services().Len() {
			sd := fd.Services().Get(i)
			for j := range sd.Methods().Len() {
				md := sd.Methods().Get(j)
				opts, _ := md.Options().(*descriptorpb.MethodOptions)
				switch opts.GetIdempotencyLevel() {
				case descriptorpb.MethodOptions_NO_SIDE_EFFECTS, descriptorpb.MethodOptions_IDEMPOTENT:
					if !md.IsStreamingClient() {
						names = append(names, name{Service: string(sd.FullName()), Method: string(md.Name())})
					}
				}
			}
		}
	}
	cfg := map[string]any{
		"loadBalancingConfig": []any{map[string]any{"round_robin": map[string]any{}}},
		"methodConfig": []any{map[string]any{
			"name": names,
			"retryPolicy": map[string]any{
				"maxAttempts":          RetryAttempts,
				"initialBackoff":       "0.1s",
				"maxBackoff":           "1s",
				"backoffMultiplier":    2,
				"retryableStatusCodes": []string{"UNAVAILABLE"},
			},
		}},
	}
	out, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("encode the service config: %w", err)
	}
	return string(out), nil
}
