package auth

import (
	"context"
	"log/slog"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Access maps full method names ("/pkg.Service/Method") to the roles that
// may call them. A method missing from the table is refused to everyone but
// admins, so a new RPC is closed until someone decides who may call it.
type Access map[string][]Role

// Merge returns the union of tables.
func Merge(tables ...Access) Access {
	out := Access{}
	for _, t := range tables {
		for m, r := range t {
			out[m] = r
		}
	}
	return out
}

// publicServices need no token: probes and tooling discovery.
var publicServices = []string{
	"/grpc.health.v1.Health/",
	"/grpc.reflection.v1.ServerReflection/",
	"/grpc.reflection.v1alpha.ServerReflection/",
}

// Authorizer checks the bearer token and the access table of each call.
type Authorizer struct {
	tokens *Tokens
	access Access
	audit  *slog.Logger
}

// NewAuthorizer returns an Authorizer over tokens and access.
func NewAuthorizer(tokens *Tokens, access Access) *Authorizer {
	return &Authorizer{tokens: tokens, access: access, audit: slog.New(slog.DiscardHandler)}
}

// WithAudit makes the authorizer write the audit log to log: a warning
// for each refused token and each role denial, and at debug level each
// call a token was used for, by principal and role. Each line has
// audit=true and an event name (token_refused, role_denied, token_used);
// a tokens file's reloads add token_created and token_revoked lines.
func (a *Authorizer) WithAudit(log *slog.Logger) *Authorizer {
	out := *a
	out.audit = log.With("audit", true)
	out.tokens.AuditTo(out.audit)
	return &out
}

// peerAddr is the caller's network address, when known.
func peerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}

// Authorize returns ctx with the caller's principal, Unauthenticated for a
// missing or unknown token, or PermissionDenied for a role the method does
// not allow.
func (a *Authorizer) Authorize(ctx context.Context, method string) (context.Context, error) {
	for _, p := range publicServices {
		if strings.HasPrefix(method, p) {
			return ctx, nil
		}
	}
	md, _ := metadata.FromIncomingContext(ctx)
	header := ""
	if vals := md.Get("authorization"); len(vals) > 0 {
		header = vals[0]
	}
	p, err := a.authenticate(header)
	if err != nil {
		a.audit.WarnContext(ctx, "token refused", "event", "token_refused", "method", method, "peer", peerAddr(ctx), "reason", status.Convert(err).Message())
		return nil, err
	}
	if !p.Has(RoleAdmin) {
		roles, ok := a.access[method]
		if !ok || !p.HasAny(roles) {
			a.audit.WarnContext(ctx, "role denied", "event", "role_denied", "principal", p.Name, "roles", p.Roles, "method", method,
				"peer", peerAddr(ctx), "needs", rolesOrAdmin(roles))
			return nil, status.Errorf(codes.PermissionDenied, "%s (roles %v) may not call %s; it needs one of %v", p.Name, p.Roles, method, rolesOrAdmin(roles))
		}
	}
	a.audit.DebugContext(ctx, "token used", "event", "token_used", "principal", p.Name, "roles", p.Roles, "method", method)
	return WithPrincipal(ctx, p), nil
}

func rolesOrAdmin(roles []Role) []Role {
	if len(roles) == 0 {
		return []Role{RoleAdmin}
	}
	return roles
}

// ParseBearer returns the token of an authorization header value
// "Bearer <token>", or an Unauthenticated status saying what is wrong.
func ParseBearer(header string) (string, error) {
	if header == "" {
		return "", status.Error(codes.Unauthenticated, "missing bearer token: send 'authorization: Bearer <token>'")
	}
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") || strings.TrimSpace(tok) == "" {
		return "", status.Error(codes.Unauthenticated, "malformed authorization header: want 'Bearer <token>'")
	}
	return strings.TrimSpace(tok), nil
}

// Authenticate returns the principal of an authorization header value, or
// an Unauthenticated status. REST checks it from the headers alone, before
// a byte of the request body is read; method ("GET /v1/…") and peer (the
// caller's address) name the refused call in the audit log.
func (a *Authorizer) Authenticate(header, method, peer string) (*Principal, error) {
	p, err := a.authenticate(header)
	if err != nil {
		a.audit.Warn("token refused", "event", "token_refused", "method", method, "peer", peer, "reason", status.Convert(err).Message())
	}
	return p, err
}

func (a *Authorizer) authenticate(header string) (*Principal, error) {
	token, err := ParseBearer(header)
	if err != nil {
		return nil, err
	}
	p, ok := a.tokens.Authenticate(token)
	if !ok {
		return nil, status.Error(codes.Unauthenticated, "the bearer token is not known to this server")
	}
	return p, nil
}

// UnaryInterceptor authorizes unary calls.
func (a *Authorizer) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, err := a.Authorize(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// StreamInterceptor authorizes streaming calls.
func (a *Authorizer) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, err := a.Authorize(ss.Context(), info.FullMethod)
		if err != nil {
			return err
		}
		return handler(srv, &principalStream{ServerStream: ss, ctx: ctx})
	}
}

type principalStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *principalStream) Context() context.Context { return s.ctx }

// TokenCredentials sends a bearer token on every call of a client
// connection; RequireTLS is false so the loopback default works.
type TokenCredentials struct {
	Token  string
	Secure bool
}

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (c TokenCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	if c.Token == "" {
		return nil, nil
	}
	return map[string]string{"authorization": "Bearer " + c.Token}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials.
func (c TokenCredentials) RequireTransportSecurity() bool { return c.Secure }
