package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// WhoAmI answers GET /v1/whoami: who the bearer token is, its roles, the
// services this process serves and the methods the caller may call on
// them. The console shows the role after sign-in and offers a button only
// when the caller may call its method; any REST client may ask too.
type WhoAmI struct {
	Name     string   `json:"name"`
	Roles    []string `json:"roles"`
	Subjects []string `json:"subjects,omitempty"`
	// Expires is when the token stops being accepted (RFC 3339), if ever.
	Expires string `json:"expires,omitempty"`
	// Services are the full names of the gRPC services this process serves.
	Services []string `json:"services"`
	// Methods are the full method names ("seam.gate.v1.GateService/Replay")
	// the caller may call here, sorted.
	Methods []string `json:"methods"`
}

// whoami answers with the caller's WhoAmI, or with the REST error body of
// an Unauthenticated status (HTTP 401) when the token is missing or
// unknown, the same answer any other route gives.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "bearer") || token == "" {
		// The same challenge the gateway's routes send (RFC 6750).
		w.Header().Set("WWW-Authenticate", `Bearer realm="seam"`)
		writeStatus(w, http.StatusUnauthorized, codes.Unauthenticated, "missing bearer token: send 'Authorization: Bearer <token>'")
		return
	}
	p, ok := s.cfg.Tokens.Authenticate(token)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="seam", error="invalid_token"`)
		writeStatus(w, http.StatusUnauthorized, codes.Unauthenticated, "the bearer token is not known to this server")
		return
	}
	out := WhoAmI{Name: p.Name, Subjects: p.Subjects, Services: []string{}, Methods: []string{}}
	for _, r := range p.Roles {
		out.Roles = append(out.Roles, string(r))
	}
	for _, svc := range s.services {
		out.Services = append(out.Services, svc.Name)
	}
	if !p.Expires.IsZero() {
		out.Expires = p.Expires.UTC().Format(time.RFC3339)
	}
	for method := range s.access {
		// The interceptor lets admins call everything it serves.
		if s.access.Allowed(p, method) {
			out.Methods = append(out.Methods, strings.TrimPrefix(method, "/"))
		}
	}
	slices.Sort(out.Methods)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(out)
}

// authenticated runs h for a caller whose bearer token this server knows,
// with the request body bounded by MaxMessageBytes; others get the 401
// every REST route gives.
func (s *Server) authenticated(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := s.authz.Authenticate(r.Header.Get("Authorization"), r.Method+" "+r.URL.Path, r.RemoteAddr); err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="seam"`)
			writeStatus(w, http.StatusUnauthorized, codes.Unauthenticated, status.Convert(err).Message())
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, int64(s.cfg.MaxMessageBytes))
		h.ServeHTTP(w, r)
	})
}

// writeStatus writes an error in the gateway's JSON shape.
func writeStatus(w http.ResponseWriter, httpStatus int, code codes.Code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(httpStatus)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": int(code), "message": msg, "details": []any{}})
}
