package auth

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/seamdata/seam/platform/rpcerr"
)

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
	reauth time.Duration
}

// NewAuthorizer returns an Authorizer over tokens and access.
func NewAuthorizer(tokens *Tokens, access Access) *Authorizer {
	return &Authorizer{tokens: tokens, access: access, audit: slog.New(slog.DiscardHandler), reauth: ReauthInterval}
}

// Access returns the access table the authorizer enforces.
func (a *Authorizer) Access() Access { return a.access }

// WithReauthInterval returns a copy that checks open streams' tokens every
// d instead of ReauthInterval (tests).
func (a *Authorizer) WithReauthInterval(d time.Duration) *Authorizer {
	out := *a
	out.reauth = d
	return &out
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
// missing, unknown or expired token, or PermissionDenied for a role the
// method does not allow. It reads the headers only.
func (a *Authorizer) Authorize(ctx context.Context, method string) (context.Context, error) {
	if public(method) {
		return ctx, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	p, err := a.authorizeHeader(ctx, method, first(md.Get("authorization")))
	if err != nil {
		return nil, err
	}
	return WithPrincipal(ctx, p), nil
}

func public(method string) bool {
	for _, p := range publicServices {
		if strings.HasPrefix(method, p) {
			return true
		}
	}
	return false
}

func first(vals []string) string {
	if len(vals) > 0 {
		return vals[0]
	}
	return ""
}

// AuthorizeHeader returns the principal of an authorization header value
// when its roles may call method: Unauthenticated for a missing, unknown
// or expired token, PermissionDenied for a role the method does not allow.
// REST calls it from the headers alone, before a byte of the body is read.
func (a *Authorizer) AuthorizeHeader(ctx context.Context, method, header string) (*Principal, error) {
	return a.authorizeHeader(ctx, method, header)
}

func (a *Authorizer) authorizeHeader(ctx context.Context, method, header string) (*Principal, error) {
	p, err := a.authenticate(header)
	if err != nil {
		a.audit.WarnContext(ctx, "token refused", "event", "token_refused", "method", method, "peer", peerAddr(ctx), "reason", status.Convert(err).Message())
		return nil, err
	}
	if !a.access.Allowed(p, method) {
		roles := a.access.Roles(method)
		a.audit.WarnContext(ctx, "role denied", "event", "role_denied", "principal", p.Name, "roles", p.Roles, "method", method,
			"peer", peerAddr(ctx), "needs", rolesOrAdmin(roles))
		return nil, rpcerr.PermissionDenied(ReasonRoleDenied, fmt.Sprintf("%s (roles %v) may not call %s; it needs one of %v", p.Name, p.Roles, method, rolesOrAdmin(roles)))
	}
	a.audit.DebugContext(ctx, "token used", "event", "token_used", "principal", p.Name, "roles", p.Roles, "method", method)
	return p, nil
}

// CheckSubject returns PermissionDenied when the subject a path names
// (REST's {subject}) is outside p's scope on a method that acts on a
// subject.
func (a *Authorizer) CheckSubject(ctx context.Context, p *Principal, method, subject string) error {
	if r := a.access[method]; r.Subject == "" || r.Subject == SubjectInHandler || p.InScope(subject) {
		return nil
	}
	a.audit.WarnContext(ctx, "subject denied", "event", "subject_denied", "principal", p.Name, "method", method, "subject", subject)
	return outOfScope(p, subject, "subject")
}

// checkSubjects is Access.CheckSubjects with the audit line.
func (a *Authorizer) checkSubjects(ctx context.Context, p *Principal, method string, req any) error {
	if err := a.access.CheckSubjects(p, method, req); err != nil {
		a.audit.WarnContext(ctx, "subject denied", "event", "subject_denied", "principal", p.Name, "method", method, "reason", status.Convert(err).Message())
		return err
	}
	return nil
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
		return "", rpcerr.Unauthenticated(ReasonNoToken, "missing bearer token: send 'authorization: Bearer <token>'")
	}
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") || strings.TrimSpace(tok) == "" {
		return "", rpcerr.Unauthenticated(ReasonMalformedToken, "malformed authorization header: want 'Bearer <token>'")
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
	p, ok := a.tokens.Lookup(token)
	if !ok {
		return nil, rpcerr.Unauthenticated(ReasonUnknownToken, "the bearer token is not known to this server")
	}
	if p.Expired(time.Now()) {
		return nil, rpcerr.Unauthenticated(ReasonExpiredToken, fmt.Sprintf("the bearer token %s expired at %s; create a new one with 'seam token create'",
			p.Name, p.Expires.UTC().Format(time.RFC3339)))
	}
	return p, nil
}

// TapHandle authenticates each gRPC call and checks its role from the
// headers, when the stream opens and before a byte of its first message is
// read; the principal rides in the stream's context to the interceptors.
func (a *Authorizer) TapHandle(ctx context.Context, info *tap.Info) (context.Context, error) {
	if public(info.FullMethodName) {
		return ctx, nil
	}
	p, err := a.authorizeHeader(ctx, info.FullMethodName, first(info.Header.Get("authorization")))
	if err != nil {
		return nil, err
	}
	return context.WithValue(ctx, tappedKey{}, p), nil
}

type tappedKey struct{}

// principal returns the principal TapHandle found, or authorizes now (a
// server without the tap handle, as some tests build).
func (a *Authorizer) principal(ctx context.Context, method string) (*Principal, error) {
	if p, ok := ctx.Value(tappedKey{}).(*Principal); ok && p != nil {
		return p, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	return a.authorizeHeader(ctx, method, first(md.Get("authorization")))
}

// ReauthInterval is how often an open stream's token is checked again: a
// revoked or expired token's stream ends Unauthenticated within about this
// long (plus the token file's ReloadInterval).
const ReauthInterval = 2 * time.Second

// UnaryInterceptor authorizes unary calls: the token and role (checked by
// TapHandle before the request was read, or here), then the subject the
// request names against the token's subject list.
func (a *Authorizer) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if public(info.FullMethod) {
			return handler(ctx, req)
		}
		p, err := a.principal(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		if err := a.checkSubjects(ctx, p, info.FullMethod, req); err != nil {
			return nil, err
		}
		return handler(WithPrincipal(ctx, p), req)
	}
}

// StreamInterceptor authorizes streaming calls as UnaryInterceptor does
// unary ones, checks the subject of every message the client sends, and
// checks the token again every ReauthInterval while the stream is open:
// a revoked or expired token's stream ends Unauthenticated.
func (a *Authorizer) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if public(info.FullMethod) {
			return handler(srv, ss)
		}
		p, err := a.principal(ss.Context(), info.FullMethod)
		if err != nil {
			return err
		}
		md, _ := metadata.FromIncomingContext(ss.Context())
		ctx, cancel := context.WithCancel(WithPrincipal(ss.Context(), p))
		defer cancel()
		w := &principalStream{ServerStream: ss, ctx: ctx, a: a, p: p, method: info.FullMethod}
		var (
			mu      sync.Mutex
			revoked error
			done    = make(chan struct{})
			wg      sync.WaitGroup
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(a.reauth)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-ctx.Done():
					return
				case <-t.C:
					if _, err := a.authenticate(first(md.Get("authorization"))); err != nil {
						a.audit.WarnContext(ctx, "stream token refused", "event", "token_refused", "principal", p.Name, "method", info.FullMethod,
							"reason", status.Convert(err).Message())
						mu.Lock()
						revoked = rpcerr.Relay(codes.Unauthenticated, "the stream is closed: "+status.Convert(err).Message(), err)
						mu.Unlock()
						cancel()
						return
					}
				}
			}
		}()
		err = handler(srv, w)
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		if revoked != nil {
			return revoked
		}
		return err
	}
}

type principalStream struct {
	grpc.ServerStream
	ctx    context.Context
	a      *Authorizer
	p      *Principal
	method string
	recvd  bool
}

func (s *principalStream) Context() context.Context { return s.ctx }

// RecvMsg checks the subject of each message the client sends.
func (s *principalStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	first := !s.recvd
	s.recvd = true
	if err := s.a.access.checkStreamMessage(s.p, s.method, m, first); err != nil {
		s.a.audit.WarnContext(s.ctx, "subject denied", "event", "subject_denied", "principal", s.p.Name, "method", s.method,
			"reason", status.Convert(err).Message())
		return err
	}
	return nil
}

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
