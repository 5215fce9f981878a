package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/auth"
)

// restGuard bounds what a REST caller can make the server spend before
// the gateway turns a request into a gRPC call: the bearer token is checked
// from the headers alone, so a caller without a valid token never has a
// byte of its body read (401); a body over the limit is refused with 413,
// up front when its length is declared and as soon as it passes the limit
// when it is not; and reading a body may take at most readTimeout, so a
// trickling client cannot hold a connection open.
//
// Roles are still checked by the gRPC interceptor, which knows the method.
type restGuard struct {
	authz       *auth.Authorizer
	gateway     *runtime.ServeMux
	maxBody     int64
	readTimeout time.Duration
}

func (g *restGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The gateway's route template (routeMiddleware) becomes the request's
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
	if r.ContentLength > g.maxBody {
		g.refuse(w, r, tooLarge(g.maxBody, fmt.Sprintf("of %d bytes", r.ContentLength)))
		return
	}
	if r.ContentLength == 0 && len(r.TransferEncoding) == 0 {
		// No body: nothing to bound, and a streaming answer (a watch) must
		// not be cut by a read deadline.
		g.gateway.ServeHTTP(w, r)
		return
	}
	rc := http.NewResponseController(w)
	if g.readTimeout > 0 {
		// Best effort: a writer without deadlines (a test recorder) only
		// loses this bound.
		_ = rc.SetReadDeadline(time.Now().Add(g.readTimeout))
	}
	body := &guardedBody{ReadCloser: http.MaxBytesReader(w, r.Body, g.maxBody), rc: rc}
	r.Body = body
	g.gateway.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), guardedBodyKey{}, body)))
}

// restRoute carries the gateway's route template of a request out to the
// guard.
type restRoute struct{ pattern string }

type restRouteKey struct{}

// routeMiddleware records the route template the gateway matched.
func routeMiddleware(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		if route, ok := r.Context().Value(restRouteKey{}).(*restRoute); ok {
			if p, ok := runtime.HTTPPattern(r.Context()); ok {
				// The gateway writes a one-segment variable {subject=*};
				// routes name it {subject}, as the API configuration does.
				route.pattern = strings.ReplaceAll(p.String(), "=*}", "}")
			}
		}
		next(w, r, params)
	}
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
	if b, ok := r.Context().Value(guardedBodyKey{}).(*guardedBody); ok {
		switch {
		case b.exceeded.Load():
			closeAfter(w, r)
			err = tooLarge(g.maxBody, "")
		case b.timedOut.Load():
			// The decoder's error is the connection's ("read tcp
			// host:port->host:port: i/o timeout"): say what happened
			// instead, without addresses.
			closeAfter(w, r)
			err = &runtime.HTTPStatusError{HTTPStatus: http.StatusRequestTimeout, Err: status.Errorf(codes.DeadlineExceeded,
				"the request body was not read within the read timeout of %s (--http-read-timeout); send it at once, or split the batch", g.readTimeout)}
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
		msg = fmt.Sprintf("the request body is over the limit of %d bytes (--max-message-bytes); split the batch, or send large loads over gRPC IngestStream", limit)
	}
	return &runtime.HTTPStatusError{HTTPStatus: http.StatusRequestEntityTooLarge, Err: status.Error(codes.ResourceExhausted, msg)}
}

type guardedBodyKey struct{}

// guardedBody notes when the size limit or the read deadline cut the
// body, and lifts the read deadline once the body is read to its end, so
// an answer streamed after it (a replay) is not cut when the deadline
// passes.
type guardedBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	exceeded atomic.Bool
	timedOut atomic.Bool
}

func (b *guardedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		b.exceeded.Store(true)
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.timedOut.Store(true)
	case errors.Is(err, io.EOF):
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
