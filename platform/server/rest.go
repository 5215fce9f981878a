package server

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc/codes"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/rpcerr"
	"github.com/seamdata/seam/proto/openapi"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// restGuard bounds what a REST caller can make the server spend before
// the gateway turns a request into a gRPC call. Everything it decides
// comes from the headers, before a byte of the body is read: the bearer
// token (401), then, once the gateway has matched the route, the roles
// and the subject scope the route's gRPC method allows (403), the body's
// declared size (413) and its encoding (415). Only then is the body read,
// through one bounded reader every route shares (bodyReader): gzip is
// inflated on the fly, the size limit counts the inflated bytes, and
// reading may take at most readTimeout, so a trickling client cannot hold
// a connection open. What all bodies in flight hold together is bounded
// too (budget), so many allowed bodies at once cannot exhaust memory.
type restGuard struct {
	authz       *auth.Authorizer
	gateway     *runtime.ServeMux
	maxBody     int64
	readTimeout time.Duration
	budget      *bodyBudget
	// methods maps "POST /v1/subjects/{subject}:ingest" to the full gRPC
	// method the route calls.
	methods map[string]string
}

func (g *restGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The gateway's route template (middleware) becomes the request's
	// pattern, so REST metrics and spans name /v1/subjects/{subject}, not
	// the /v1/ the outer mux matched. r is the request the telemetry
	// handler reads after this returns.
	outer, route := r, &restRoute{}
	defer func() {
		if route.pattern != "" {
			outer.Pattern = outer.Method + " " + route.pattern
		}
	}()
	r = r.WithContext(context.WithValue(r.Context(), restRouteKey{}, route))
	if _, err := g.authz.Authenticate(r.Header.Get("Authorization"), r.Method+" "+r.URL.Path, r.RemoteAddr); err != nil {
		g.refuse(w, r, err)
		return
	}
	g.gateway.ServeHTTP(w, r)
}

// restRoute carries the gateway's route template of a request out to the
// guard.
type restRoute struct{ pattern string }

type restRouteKey struct{}

// middleware runs once the gateway has matched a route and before its
// handler reads the body: it records the route template, authorizes the
// route's gRPC method (roles, and the {subject} of the path against the
// token's subject list) from the headers, and puts the bounded reader in
// front of the body.
func (g *restGuard) middleware(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		tmpl := ""
		if p, ok := runtime.HTTPPattern(r.Context()); ok {
			// The gateway writes a one-segment variable {subject=*};
			// routes name it {subject}, as the API configuration does.
			tmpl = strings.ReplaceAll(p.String(), "=*}", "}")
		}
		if route, ok := r.Context().Value(restRouteKey{}).(*restRoute); ok {
			route.pattern = tmpl
		}
		for k, v := range params {
			// The gateway leaves reserved characters escaped in a path
			// parameter; "/" is the one a name may hold (a learned consumer
			// is namespace/job, reached as /v1/consumers/namespace%2Fjob).
			if strings.Contains(v, "%2") {
				params[k] = strings.NewReplacer("%2F", "/", "%2f", "/").Replace(v)
			}
		}
		method, ok := g.methods[r.Method+" "+tmpl]
		if !ok {
			// Every route the gateway serves is in the table (a test says
			// so); one that is not is refused rather than read unchecked.
			g.refuse(w, r, rpcerr.PermissionDenied("NO_ACCESS_RULE", fmt.Sprintf("%s %s has no access rule; no one may call it", r.Method, tmpl)))
			return
		}
		p, err := g.authz.AuthorizeHeader(r.Context(), method, r.Header.Get("Authorization"))
		if err != nil {
			g.refuse(w, r, err)
			return
		}
		if sub, ok := params["subject"]; ok {
			if err := g.authz.CheckSubject(r.Context(), p, method, sub); err != nil {
				g.refuse(w, r, err)
				return
			}
		}
		r, err = g.bound(w, r, method)
		if err != nil {
			g.refuse(w, r, err)
			return
		}
		if b, ok := r.Context().Value(bodyReaderKey{}).(*bodyReader); ok {
			// The decoded request lives until the call returns: so does
			// its share of the budget.
			defer b.release()
		}
		next(w, r, params)
	}
}

// bound checks the body's declared size and encoding and returns r with
// its body behind the shared bounded reader.
func (g *restGuard) bound(w http.ResponseWriter, r *http.Request, method string) (*http.Request, error) {
	limit := g.maxBody
	if method == registryv1.RegistryService_RecordLineage_FullMethodName {
		limit = min(limit, MaxLineageBytes)
	}
	if r.ContentLength > limit {
		return r, tooLarge(limit, fmt.Sprintf("of %d bytes", r.ContentLength))
	}
	gz := false
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		gz = true
	default:
		return r, &runtime.HTTPStatusError{HTTPStatus: http.StatusUnsupportedMediaType, Err: rpcerr.InvalidArgument(fmt.Sprintf(
			"Content-Encoding %q is not supported; send the body uncompressed or with gzip", enc),
			rpcerr.FieldViolation{Field: "Content-Encoding", Description: "gzip, identity or none"})}
	}
	if r.ContentLength == 0 && len(r.TransferEncoding) == 0 {
		// No body: nothing to bound, and a streaming answer (a watch) must
		// not be cut by a read deadline.
		return r, nil
	}
	rc := http.NewResponseController(w)
	if g.readTimeout > 0 {
		// Best effort: a writer without deadlines (a test recorder) only
		// loses this bound.
		_ = rc.SetReadDeadline(time.Now().Add(g.readTimeout))
	}
	body := &bodyReader{raw: http.MaxBytesReader(w, r.Body, limit), gzip: gz, limit: limit, rc: rc, budget: g.budget}
	r.Body = body
	r.Header.Del("Content-Encoding")
	return r.WithContext(context.WithValue(r.Context(), bodyReaderKey{}, body)), nil
}

// refuse answers err in the gateway's JSON error shape without reading
// the body, and closes the connection rather than drain what the client
// may still be sending.
func (g *restGuard) refuse(w http.ResponseWriter, r *http.Request, err error) {
	closeAfter(w, r)
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	_, marshaler := runtime.MarshalerForRequest(g.gateway, r)
	g.errorHandler(r.Context(), g.gateway, marshaler, w, r, err)
}

// errorHandler is the gateway's error handler: a body cut at the size limit
// is answered 413 and one cut by the read timeout 408, whatever error
// decoding it then produced, and a 401 carries the Bearer challenge.
func (g *restGuard) errorHandler(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	if b, ok := r.Context().Value(bodyReaderKey{}).(*bodyReader); ok {
		switch {
		case b.exceeded.Load():
			closeAfter(w, r)
			err = tooLarge(b.limit, "")
		case b.badGzip.Load() != nil:
			closeAfter(w, r)
			cause := *b.badGzip.Load()
			msg := "the body is not gzip data although Content-Encoding says gzip: " + cause.Error()
			if b.zr != nil {
				msg = "the gzip body cannot be read: " + cause.Error() + "; send it whole"
			}
			err = rpcerr.InvalidArgument(msg)
		case b.overBudget.Load():
			closeAfter(w, r)
			w.Header().Set("Retry-After", "1")
			err = rpcerr.WithReason(codes.ResourceExhausted, "SERVER_BUSY", fmt.Sprintf(
				"the request bodies the server is reading have reached its limit of %d bytes together (--max-body-bytes-in-flight), so this one was not read; retry in a moment, or send fewer requests at once",
				b.budget.limit), map[string]string{"limit_bytes": fmt.Sprint(b.budget.limit)})
		case b.timedOut.Load():
			// The decoder's error is the connection's ("read tcp
			// host:port->host:port: i/o timeout"): say what happened
			// instead, without addresses.
			closeAfter(w, r)
			err = &runtime.HTTPStatusError{HTTPStatus: http.StatusRequestTimeout, Err: rpcerr.WithReason(codes.DeadlineExceeded, "BODY_READ_TIMEOUT", fmt.Sprintf(
				"the request body was not read within the read timeout of %s (--http-read-timeout); send it at once, or split the batch", g.readTimeout), nil)}
		}
	}
	challenge(ctx, mux, m, w, r, err)
}

// closeAfter makes an HTTP/1 connection close after the answer, so the
// server does not read (to drain) what the client still sends. HTTP/2
// resets the one stream instead and keeps the connection for the others.
func closeAfter(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}
}

func tooLarge(limit int64, size string) error {
	msg := fmt.Sprintf("the request body %s is over the limit of %d bytes (--max-message-bytes); split the batch, or send large loads over gRPC IngestStream",
		size, limit)
	if size == "" {
		msg = fmt.Sprintf("the request body (inflated, when gzip) is over the limit of %d bytes (--max-message-bytes); split the batch, or send large loads over gRPC IngestStream", limit)
	}
	return &runtime.HTTPStatusError{HTTPStatus: http.StatusRequestEntityTooLarge, Err: rpcerr.WithReason(codes.ResourceExhausted, "BODY_TOO_LARGE", msg, map[string]string{"limit_bytes": fmt.Sprint(limit)})}
}

type bodyReaderKey struct{}

// bodyReader is the one reader every REST body is read through. It
// inflates a gzip body on the fly (the gzip header is read on the first
// Read, after the call is authorized), refuses a body whose bytes, inflated,
// pass limit, notes when the size limit or the read deadline cut the
// body, and lifts the read deadline once the body is read to its end, so
// an answer streamed after it (a replay) is not cut when the deadline
// passes.
type bodyReader struct {
	raw   io.ReadCloser
	gzip  bool
	zr    *gzip.Reader
	limit int64
	read  int64
	rc    *http.ResponseController
	// budget is shared by every body in flight; held is this body's
	// share of it, given back by release.
	budget *bodyBudget
	held   int64

	exceeded   atomic.Bool
	overBudget atomic.Bool
	timedOut   atomic.Bool
	badGzip    atomic.Pointer[error]
}

func (b *bodyReader) Read(p []byte) (int, error) {
	var src io.Reader = b.raw
	if b.gzip {
		if b.zr == nil {
			zr, err := gzip.NewReader(b.raw)
			if err != nil {
				if !b.note(err) {
					b.badGzip.Store(&err)
				}
				return 0, err
			}
			b.zr = zr
		}
		src = b.zr
	}
	if room := b.limit + 1 - b.read; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := src.Read(p)
	b.read += int64(n)
	if b.read > b.limit {
		b.exceeded.Store(true)
		return n, &http.MaxBytesError{Limit: b.limit}
	}
	if b.budget != nil && n > 0 {
		if !b.budget.take(int64(n)) {
			b.overBudget.Store(true)
			return n, errServerBusy
		}
		b.held += int64(n)
	}
	if err != nil && !b.note(err) && b.gzip && !errors.Is(err, io.EOF) {
		b.badGzip.Store(&err)
	}
	return n, err
}

// note records why err ended the body; it reports whether err was the
// size limit or the read deadline.
func (b *bodyReader) note(err error) bool {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		b.exceeded.Store(true)
		return true
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.timedOut.Store(true)
		return true
	case errors.Is(err, io.EOF):
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return false
}

func (b *bodyReader) Close() error { return b.raw.Close() }

// release gives this body's share of the budget back, once its call has
// returned.
func (b *bodyReader) release() {
	if b.budget != nil {
		b.budget.give(b.held)
		b.held = 0
	}
}

// errServerBusy ends a body the budget has no room for.
var errServerBusy = errors.New("server: request bodies in flight are at their limit")

// bodyBudget is the bytes that REST bodies in flight may hold together.
type bodyBudget struct {
	limit int64
	held  atomic.Int64
}

// take reserves n bytes, or reports that they would pass the limit (and
// reserves nothing).
func (b *bodyBudget) take(n int64) bool {
	if b.held.Add(n) > b.limit {
		b.held.Add(-n)
		return false
	}
	return true
}

func (b *bodyBudget) give(n int64) { b.held.Add(-n) }

// observe reports what the budget holds as
// seam.http.server.request.body.in_flight, so an operator sees how close
// the REST server runs to its limit.
func (b *bodyBudget) observe(m metric.Meter) error {
	_, err := m.Int64ObservableUpDownCounter("seam.http.server.request.body.in_flight", metric.WithUnit("By"),
		metric.WithDescription("Bytes of REST request bodies (inflated) that the requests in flight hold; refused with 429 past --max-body-bytes-in-flight"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(b.held.Load())
			return nil
		}))
	return err
}

// restMethods maps each REST route of services ("POST
// /v1/subjects/{subject}:ingest") to the full gRPC method it calls, from
// the generated OpenAPI document, whose operation ids are
// "<Service>_<Method>".
func restMethods(services []Service) (map[string]string, error) {
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		return nil, fmt.Errorf("read the OpenAPI document: %w", err)
	}
	out := map[string]string{}
	for path, ops := range doc.Paths {
		for verb, op := range ops {
			svc, rpc, ok := strings.Cut(op.OperationID, "_")
			if !ok {
				return nil, fmt.Errorf("OpenAPI %s %s: operation id %q is not <Service>_<Method>", verb, path, op.OperationID)
			}
			for _, s := range services {
				if s.Name == svc || strings.HasSuffix(s.Name, "."+svc) {
					out[strings.ToUpper(verb)+" "+path] = "/" + s.Name + "/" + rpc
				}
			}
		}
	}
	return out, nil
}
