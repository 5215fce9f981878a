// Package ccompat serves the Confluent Schema Registry REST API (v7) at
// /apis/ccompat/v7, so Kafka producers and consumers whose serializers
// point schema.registry.url at Seam register and read schemas without a
// change. Every call becomes a call to the registry's gRPC API under the
// caller's own token, so Seam's rules stay Seam's: roles, subject scopes,
// ownership, change classification, notice and migration for breaking
// versions. docs/kafka.md says what differs from Confluent's registry.
package ccompat

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/auth"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Prefix is where the API is served on Seam's HTTP port.
const Prefix = "/apis/ccompat/v7"

// ContentType is the media type Confluent's registry answers with.
const ContentType = "application/vnd.schemaregistry.v1+json"

// DefaultMaxBodyBytes bounds a request body (a schema and its envelope).
const DefaultMaxBodyBytes = 8 << 20

// Config configures the API.
type Config struct {
	// Conn reaches the registry's gRPC service.
	Conn grpc.ClientConnInterface
	// Authenticate returns the principal of a token, expired or not (the
	// handler says when it expired).
	Authenticate func(token string) (*auth.Principal, bool)
	Logger       *slog.Logger
	// MaxBodyBytes bounds a request body (0: DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// CallTimeout bounds each call to the registry (0: 30s).
	CallTimeout time.Duration
}

// Handler serves the API under Prefix.
type Handler struct {
	cfg Config
	reg registryv1.RegistryServiceClient
	mux *http.ServeMux
}

// New returns the API's handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Conn == nil {
		return nil, errors.New("ccompat: no connection to the registry")
	}
	if cfg.Authenticate == nil {
		return nil, errors.New("ccompat: no authenticator: every Seam API authenticates its callers")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	h := &Handler{cfg: cfg, reg: registryv1.NewRegistryServiceClient(cfg.Conn), mux: http.NewServeMux()}
	routes := map[string]func(*call) (any, error){
		"GET /{$}":                                                  func(*call) (any, error) { return struct{}{}, nil },
		"GET /schemas/types":                                        func(*call) (any, error) { return []string{"JSON", "AVRO"}, nil },
		"GET /schemas/ids/{id}":                                     answer(h.schema, schemaAnswer),
		"GET /schemas/ids/{id}/schema":                              answer(h.schema, rawSchema),
		"GET /schemas/ids/{id}/subjects":                            answer(h.schemaVersions, subjectsOf),
		"GET /schemas/ids/{id}/versions":                            answer(h.schemaVersions, subjectVersionsOf),
		"GET /subjects":                                             h.listSubjects,
		"GET /subjects/{subject}/versions":                          h.listVersions,
		"POST /subjects/{subject}/versions":                         h.register,
		"GET /subjects/{subject}/versions/{version}":                answer(h.pick, answerOf),
		"GET /subjects/{subject}/versions/{version}/schema":         answer(h.pick, rawSchema),
		"GET /subjects/{subject}/versions/{version}/referencedby":   answer(h.pick, referencedBy),
		"POST /subjects/{subject}":                                  h.lookup,
		"DELETE /subjects/{subject}":                                h.deleteSubject,
		"DELETE /subjects/{subject}/versions/{version}":             h.deleteVersion,
		"POST /compatibility/subjects/{subject}/versions/{version}": h.compatibility,
		"POST /compatibility/subjects/{subject}/versions":           h.compatibility,
		"GET /config":                                               answer(h.globalLevel, levelAnswer),
		"PUT /config":                                               setConfig(h.globalLevel, globalLevelFixed),
		"GET /config/{subject}":                                     answer(h.level, levelAnswer),
		"PUT /config/{subject}":                                     setConfig(h.level, subjectLevelFixed),
		"DELETE /config/{subject}":                                  h.refuseConfigDelete,
		"GET /mode":                                                 func(*call) (any, error) { return map[string]string{"mode": "READWRITE"}, nil },
		"GET /mode/{subject}":                                       func(*call) (any, error) { return map[string]string{"mode": "READWRITE"}, nil },
		"PUT /mode":                                                 h.refuseMode,
		"PUT /mode/{subject}":                                       h.refuseMode,
	}
	for pattern, fn := range routes {
		method, path, _ := strings.Cut(pattern, " ")
		h.mux.HandleFunc(method+" "+Prefix+path, h.serve(fn))
	}
	h.mux.HandleFunc(Prefix+"/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: http.StatusNotFound, code: 404, msg: fmt.Sprintf("%s %s is not part of the Confluent Schema Registry API Seam serves (docs/kafka.md lists it)", r.Method, r.URL.Path)})
	})
	return h, nil
}

// ServeHTTP serves the API.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// call is one request being served: the caller, its token for the
// registry, and the request.
type call struct {
	ctx       context.Context
	r         *http.Request
	principal *auth.Principal
	body      []byte
}

// apiError is an answer in Confluent's error shape.
type apiError struct {
	status int
	code   int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

// Confluent's error codes.
const (
	codeUnauthorized       = 40101
	codeForbidden          = 40301
	codeSubjectNotFound    = 40401
	codeVersionNotFound    = 40402
	codeSchemaNotFound     = 40403
	codeSubjectNotDeleted  = 40405
	codeVersionSoftDeleted = 40406
	codeVersionNotDeleted  = 40407
	codeIncompatible       = 409
	codeInvalidSchema      = 42201
	codeInvalidVersion     = 42202
	codeInvalidCompat      = 42203
	codeOperationForbidden = 42205
	codeUnprocessable      = 422
	codeStoreError         = 50001
	codeTimeout            = 50002
)

func (h *Handler) serve(fn func(*call) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, token, err := h.authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Basic realm="seam", Bearer realm="seam"`)
			writeError(w, err)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), h.cfg.CallTimeout)
		defer cancel()
		c := &call{ctx: metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token), r: r, principal: p}
		if r.Method == http.MethodPost || r.Method == http.MethodPut {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
			if err != nil {
				var tooBig *http.MaxBytesError
				if errors.As(err, &tooBig) {
					writeError(w, &apiError{status: http.StatusRequestEntityTooLarge, code: 413, msg: fmt.Sprintf("the request body is over the limit of %d bytes", h.cfg.MaxBodyBytes)})
					return
				}
				writeError(w, &apiError{status: http.StatusBadRequest, code: 400, msg: "the request body could not be read: " + err.Error()})
				return
			}
			c.body = body
		}
		out, err := fn(c)
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("Content-Type", ContentType)
		if s, ok := out.(rawText); ok {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, string(s))
			return
		}
		_ = json.NewEncoder(w).Encode(out)
	}
}

// rawText is an answer that is a schema's own text.
type rawText string

// authenticate reads the caller's token: "Authorization: Bearer <token>",
// or HTTP basic auth with the token as the password (the user name is not
// read), for clients that only do basic auth.
func (h *Handler) authenticate(r *http.Request) (*auth.Principal, string, error) {
	header := r.Header.Get("Authorization")
	unauthorized := func(msg string) error {
		return &apiError{status: http.StatusUnauthorized, code: codeUnauthorized, msg: msg}
	}
	if header == "" {
		return nil, "", unauthorized("missing credentials: send 'Authorization: Bearer <token>', or basic auth with a Seam token as the password (basic.auth.user.info=any:<token>)")
	}
	scheme, rest, _ := strings.Cut(header, " ")
	rest = strings.TrimSpace(rest)
	var token string
	switch strings.ToLower(scheme) {
	case "bearer":
		token = rest
	case "basic":
		raw, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return nil, "", unauthorized("malformed basic credentials: want base64 of user:token")
		}
		_, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return nil, "", unauthorized("malformed basic credentials: want user:token")
		}
		token = pass
	default:
		return nil, "", unauthorized(fmt.Sprintf("authorization scheme %q is not accepted; use Bearer or Basic", scheme))
	}
	if token == "" {
		return nil, "", unauthorized("empty token: send a Seam token as the bearer token or the basic auth password")
	}
	p, ok := h.cfg.Authenticate(token)
	if !ok {
		return nil, "", unauthorized("the token is not known to this server")
	}
	if p.Expired(time.Now()) {
		return nil, "", unauthorized(fmt.Sprintf("the token %s expired at %s; create a new one with 'seam token create'", p.Name, p.Expires.UTC().Format(time.RFC3339)))
	}
	return p, token, nil
}

func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{status: http.StatusInternalServerError, code: codeStoreError, msg: err.Error()}
	}
	w.Header().Set("Content-Type", ContentType)
	w.WriteHeader(ae.status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error_code": ae.code, "message": ae.msg})
}

// fromRPC turns a registry error into Confluent's shape; notFound is the
// code a NotFound answer has where the caller is.
func fromRPC(err error, notFound int) error {
	st := status.Convert(err)
	out := &apiError{status: http.StatusInternalServerError, code: codeStoreError, msg: statusText(st)}
	switch st.Code() {
	case codes.Unauthenticated:
		out.status, out.code = http.StatusUnauthorized, codeUnauthorized
	case codes.PermissionDenied:
		out.status, out.code = http.StatusForbidden, codeForbidden
	case codes.NotFound:
		out.status, out.code = http.StatusNotFound, notFound
	case codes.InvalidArgument:
		out.status, out.code = http.StatusUnprocessableEntity, codeInvalidSchema
	case codes.FailedPrecondition:
		out.status, out.code = http.StatusConflict, codeIncompatible
	case codes.DeadlineExceeded:
		out.code = codeTimeout
	}
	return out
}

// statusText is a status's message with the details that say what and
// where: field violations and precondition violations.
func statusText(st *status.Status) string {
	parts := []string{st.Message()}
	for _, d := range st.Details() {
		switch x := d.(type) {
		case *errdetails.ErrorInfo:
			if x.GetReason() != "" {
				parts[0] = fmt.Sprintf("%s (Seam reason %s)", parts[0], x.GetReason())
			}
		case *errdetails.BadRequest:
			for _, v := range x.GetFieldViolations() {
				parts = append(parts, v.GetField()+": "+v.GetDescription())
			}
		}
	}
	return strings.Join(parts, "; ")
}

// schemaTypes maps Confluent's schemaType to Seam's document formats.
func formatOf(schemaType string) (registryv1.ContractFormat, error) {
	switch strings.ToUpper(strings.TrimSpace(schemaType)) {
	case "", "AVRO":
		return registryv1.ContractFormat_CONTRACT_FORMAT_AVRO, nil
	case "JSON":
		return registryv1.ContractFormat_CONTRACT_FORMAT_JSON_SCHEMA, nil
	case "PROTOBUF":
		return 0, &apiError{status: http.StatusUnprocessableEntity, code: codeInvalidSchema,
			msg: "PROTOBUF schemas are not supported by Seam's registry: register the record as AVRO or JSON (JSON Schema); docs/kafka.md says why"}
	}
	return 0, &apiError{status: http.StatusUnprocessableEntity, code: codeInvalidSchema, msg: fmt.Sprintf("schemaType %q is unknown; want AVRO or JSON", schemaType)}
}

// schemaType is Confluent's name of a format; AVRO is left out, as
// Confluent's registry leaves it out.
func schemaType(f registryv1.ContractFormat) string {
	if f == registryv1.ContractFormat_CONTRACT_FORMAT_JSON_SCHEMA {
		return "JSON"
	}
	return ""
}

// schemaRequest is the body of register, lookup and compatibility calls.
type schemaRequest struct {
	Schema     string            `json:"schema"`
	SchemaType string            `json:"schemaType"`
	References []json.RawMessage `json:"references"`
}

func (c *call) schemaRequest() (*schemaRequest, registryv1.ContractFormat, error) {
	var req schemaRequest
	if err := json.Unmarshal(c.body, &req); err != nil {
		return nil, 0, &apiError{status: http.StatusUnprocessableEntity, code: codeUnprocessable, msg: "the body is not a JSON object {\"schema\": ..., \"schemaType\": ...}: " + err.Error()}
	}
	if strings.TrimSpace(req.Schema) == "" {
		return nil, 0, &apiError{status: http.StatusUnprocessableEntity, code: codeInvalidSchema, msg: "schema is empty: send the schema's text in \"schema\""}
	}
	if len(req.References) > 0 {
		return nil, 0, &apiError{status: http.StatusUnprocessableEntity, code: codeInvalidSchema,
			msg: "schema references are not supported: send the schema with its referenced types inlined"}
	}
	f, err := formatOf(req.SchemaType)
	if err != nil {
		return nil, 0, err
	}
	return &req, f, nil
}

// document reads {subject} and the registry document of the schema the
// body sends for it: the caller's team owns a new subject; an existing one
// keeps its owner and rules.
func (c *call) document() (confluent, seam string, doc *registryv1.ContractDocument, err error) {
	confluent, seam, err = c.subject()
	if err != nil {
		return "", "", nil, err
	}
	req, f, err := c.schemaRequest()
	if err != nil {
		return "", "", nil, err
	}
	owner := c.principal.Team
	if owner == "" {
		owner = c.principal.Name
	}
	return confluent, seam, &registryv1.ContractDocument{Format: f, Content: req.Schema, Subject: seam, Owner: owner, Inherit: true}, nil
}

func (c *call) subject() (confluent, seam string, err error) {
	confluent = c.r.PathValue("subject")
	seam, err = ToSeam(confluent)
	return confluent, seam, err
}

// version reads {version}: a number, "latest" or -1.
func (c *call) version() (int32, error) {
	v := c.r.PathValue("version")
	if v == "" || v == "latest" || v == "-1" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 1 {
		return 0, &apiError{status: http.StatusUnprocessableEntity, code: codeInvalidVersion,
			msg: fmt.Sprintf("version %q is not valid: give a positive number, latest or -1", v)}
	}
	return int32(n), nil
}

func (c *call) id() (int32, error) {
	n, err := strconv.ParseInt(c.r.PathValue("id"), 10, 32)
	if err != nil || n < 1 {
		return 0, &apiError{status: http.StatusNotFound, code: codeSchemaNotFound, msg: fmt.Sprintf("schema id %q is not a positive number", c.r.PathValue("id"))}
	}
	return int32(n), nil
}

// versionAnswer is one subject version as Confluent answers it.
type versionAnswer struct {
	Subject    string `json:"subject"`
	ID         int32  `json:"id"`
	Version    int32  `json:"version"`
	SchemaType string `json:"schemaType,omitempty"`
	Schema     string `json:"schema"`
}

func answerOf(v *registryv1.ContractVersion) any {
	s := v.GetSchema()
	return versionAnswer{Subject: ToConfluent(v.GetSubject()), ID: s.GetId(), Version: v.GetVersion(), SchemaType: schemaType(s.GetFormat()), Schema: s.GetText()}
}

func (h *Handler) schema(c *call) (*registryv1.GetSchemaResponse, error) {
	id, err := c.id()
	if err != nil {
		return nil, err
	}
	resp, err := h.reg.GetSchema(c.ctx, &registryv1.GetSchemaRequest{Id: id})
	if err != nil {
		return nil, fromRPC(err, codeSchemaNotFound)
	}
	return resp, nil
}

// answer makes a route of what finds the thing a request names and of the
// view of it that Confluent answers.
func answer[T any](find func(*call) (T, error), view func(T) any) func(*call) (any, error) {
	return func(c *call) (any, error) {
		found, err := find(c)
		if err != nil {
			return nil, err
		}
		return view(found), nil
	}
}

func schemaAnswer(resp *registryv1.GetSchemaResponse) any {
	s := resp.GetSchema()
	return map[string]any{"schema": s.GetText(), "schemaType": schemaTypeOrAvro(s.GetFormat())}
}

func schemaTypeOrAvro(f registryv1.ContractFormat) string {
	if t := schemaType(f); t != "" {
		return t
	}
	return "AVRO"
}

// rawSchema answers the schema's own text, of a schema id or of a version.
func rawSchema[T interface{ GetSchema() *registryv1.Schema }](x T) any {
	return rawText(x.GetSchema().GetText())
}

func subjectsOf(versions []*registryv1.SubjectVersion) any {
	out := []string{}
	for _, v := range versions {
		if s := ToConfluent(v.GetSubject()); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func subjectVersionsOf(versions []*registryv1.SubjectVersion) any {
	type sv struct {
		Subject string `json:"subject"`
		Version int32  `json:"version"`
	}
	out := []sv{}
	for _, v := range versions {
		out = append(out, sv{Subject: ToConfluent(v.GetSubject()), Version: v.GetVersion()})
	}
	return out
}

// schemaVersions returns the subject versions registered from a schema
// id: a deleted one (retired in Seam) only with ?deleted=true, as
// Confluent's registry answers, though the schema itself is still read by
// its id.
func (h *Handler) schemaVersions(c *call) ([]*registryv1.SubjectVersion, error) {
	resp, err := h.schema(c)
	if err != nil || c.r.URL.Query().Get("deleted") == "true" {
		return resp.GetVersions(), err
	}
	var out []*registryv1.SubjectVersion
	for _, v := range resp.GetVersions() {
		got, err := h.reg.GetContract(c.ctx, &registryv1.GetContractRequest{Subject: v.GetSubject(), Version: v.GetVersion()})
		if err != nil {
			return nil, fromRPC(err, codeSchemaNotFound)
		}
		if !deleted(got.GetVersion()) {
			out = append(out, v)
		}
	}
	return out, nil
}

func (h *Handler) listSubjects(c *call) (any, error) {
	resp, err := h.reg.ListSubjects(c.ctx, &registryv1.ListSubjectsRequest{Prefix: ""})
	if err != nil {
		return nil, fromRPC(err, codeSubjectNotFound)
	}
	prefix := c.r.URL.Query().Get("subjectPrefix")
	out := []string{}
	for _, s := range resp.GetSubjects() {
		if !c.principal.InScope(s.GetName()) {
			continue
		}
		if name := ToConfluent(s.GetName()); strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	return out, nil
}

// versions lists a subject's versions, or answers 40401.
func (h *Handler) versions(c *call) (string, []*registryv1.ContractVersion, error) {
	confluent, seam, err := c.subject()
	if err != nil {
		return "", nil, err
	}
	resp, err := h.reg.ListContracts(c.ctx, &registryv1.ListContractsRequest{Subject: seam})
	if err != nil {
		if status.Code(err) == codes.NotFound {
			return "", nil, &apiError{status: http.StatusNotFound, code: codeSubjectNotFound, msg: fmt.Sprintf("subject %q not found (Seam subject %s)", confluent, seam)}
		}
		return "", nil, fromRPC(err, codeSubjectNotFound)
	}
	return confluent, resp.GetVersions(), nil
}

func (h *Handler) listVersions(c *call) (any, error) {
	_, vs, err := h.versions(c)
	if err != nil {
		return nil, err
	}
	out := make([]int32, 0, len(vs))
	for _, v := range vs {
		if c.visible(v) {
			out = append(out, v.GetVersion())
		}
	}
	return out, nil
}

// deleted reports whether a version was deleted through this API: Seam
// retired it (docs/kafka.md).
func deleted(v *registryv1.ContractVersion) bool {
	return v.GetStatus() == registryv1.VersionStatus_VERSION_STATUS_RETIRED
}

// visible reports whether the call sees v: a deleted version only with
// ?deleted=true, as Confluent's registry answers.
func (c *call) visible(v *registryv1.ContractVersion) bool {
	return !deleted(v) || c.r.URL.Query().Get("deleted") == "true"
}

// versionNamed returns the subject's Confluent name and the last of its
// versions that match accepts for the number {version} names (0: latest).
func (h *Handler) versionNamed(c *call, match func(n int32, v *registryv1.ContractVersion) bool) (string, *registryv1.ContractVersion, error) {
	confluent, vs, err := h.versions(c)
	if err != nil {
		return "", nil, err
	}
	n, err := c.version()
	if err != nil {
		return "", nil, err
	}
	var v *registryv1.ContractVersion
	for _, x := range vs {
		if match(n, x) {
			v = x
		}
	}
	if v == nil {
		return "", nil, &apiError{status: http.StatusNotFound, code: codeVersionNotFound, msg: fmt.Sprintf("version %s of subject %q not found", c.r.PathValue("version"), confluent)}
	}
	return confluent, v, nil
}

// pick returns the version {version} names, with its schema document.
func (h *Handler) pick(c *call) (*registryv1.ContractVersion, error) {
	confluent, v, err := h.versionNamed(c, func(n int32, x *registryv1.ContractVersion) bool {
		return (n == 0 || x.GetVersion() == n) && c.visible(x)
	})
	if err != nil {
		return nil, err
	}
	if v.GetSchema() == nil {
		return nil, &apiError{status: http.StatusNotFound, code: codeSchemaNotFound, msg: fmt.Sprintf(
			"version %d of subject %q was registered as a Seam contract, not from a schema document, so it has no schema id; read it with 'seam contract get %s --version %d'",
			v.GetVersion(), confluent, v.GetSubject(), v.GetVersion())}
	}
	return v, nil
}

// referencedBy answers that nothing refers to a version: Seam takes no
// schema references.
func referencedBy(*registryv1.ContractVersion) any {
	return []int32{}
}

// registered returns the version of subject already registered from the
// schema document, among the versions vs of the subject the call sees, or
// nil.
func (h *Handler) registered(c *call, seam string, doc *registryv1.ContractDocument, vs []*registryv1.ContractVersion) (*registryv1.SubjectVersion, *registryv1.Schema, error) {
	resp, err := h.reg.GetSchema(c.ctx, &registryv1.GetSchemaRequest{Document: doc})
	if status.Code(err) == codes.NotFound {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fromRPC(err, codeSchemaNotFound)
	}
	var found *registryv1.SubjectVersion
	for _, v := range resp.GetVersions() {
		// The newest version registered from the schema, as Confluent's
		// registry answers for a schema registered again.
		seen := slices.ContainsFunc(vs, func(x *registryv1.ContractVersion) bool { return x.GetVersion() == v.GetVersion() && c.visible(x) })
		if v.GetSubject() == seam && seen && (found == nil || v.GetVersion() > found.GetVersion()) {
			found = v
		}
	}
	return found, resp.GetSchema(), nil
}

// register is POST /subjects/{subject}/versions: a schema already
// registered under the subject answers its id; a new one is registered
// as the next version by Seam's rules, or refused 409 with Seam's reason
// and the consumers the change would break.
func (h *Handler) register(c *call) (any, error) {
	confluent, seam, doc, err := c.document()
	if err != nil {
		return nil, err
	}
	list, err := h.reg.ListContracts(c.ctx, &registryv1.ListContractsRequest{Subject: seam})
	if err != nil && status.Code(err) != codes.NotFound {
		return nil, fromRPC(err, codeSubjectNotFound)
	}
	vs := list.GetVersions()
	v, s, err := h.registered(c, seam, doc, vs)
	if err != nil {
		return nil, err
	}
	// Only who may register versions of the subject gets the fast answer;
	// anyone else hears the registry's refusal. Registered as the latest
	// version: its id, nothing written. A schema of an older version goes
	// through Seam's rules again (compared with the latest version, whose
	// Seam-only settings it inherits): unchanged, it names the latest
	// version too.
	if v != nil && c.principal.Owns(seam) && len(vs) > 0 && vs[len(vs)-1].GetVersion() == v.GetVersion() {
		return map[string]int32{"id": s.GetId()}, nil
	}
	var resp *registryv1.RegisterContractResponse
	for attempt := 0; ; attempt++ {
		resp, err = h.reg.RegisterContract(c.ctx, &registryv1.RegisterContractRequest{Document: doc})
		// Aborted: the subject changed while the registration was
		// checked; the registry asks for the same call again.
		if status.Code(err) != codes.Aborted || attempt == 2 {
			break
		}
	}
	if err != nil {
		if status.Code(err) == codes.FailedPrecondition {
			return nil, h.incompatible(c, confluent, doc, err)
		}
		return nil, fromRPC(err, codeSubjectNotFound)
	}
	id := resp.GetVersion().GetSchema().GetId()
	if id == 0 {
		return nil, &apiError{status: http.StatusInternalServerError, code: codeStoreError, msg: fmt.Sprintf("the registry answered %s v%d without a schema id", seam, resp.GetVersion().GetVersion())}
	}
	h.cfg.Logger.InfoContext(c.ctx, "schema registered through the Confluent-compatible API", "subject", seam, "confluent_subject", confluent,
		"version", resp.GetVersion().GetVersion(), "id", id, "unchanged", resp.GetUnchanged(), "principal", c.principal.Name)
	return map[string]int32{"id": id}, nil
}

// incompatible is the 409 of a refused version: Seam's reason, the
// breaking changes and the consumers they would break, from a dry run.
func (h *Handler) incompatible(c *call, confluent string, doc *registryv1.ContractDocument, refusal error) error {
	msg := fmt.Sprintf("Schema being registered is incompatible with an earlier schema for subject %q: %s", confluent, statusText(status.Convert(refusal)))
	check, err := h.reg.CheckContract(c.ctx, &registryv1.CheckContractRequest{Document: doc})
	if err == nil {
		if names := consumerNames(check.GetAffectedConsumers()); len(names) > 0 {
			msg += "; affected consumers: " + strings.Join(names, ", ")
		} else {
			msg += "; affected consumers: none declared"
		}
	}
	msg += ". Seam registers a breaking version only with notice and a migration: register it with 'seam contract register' giving an effective time and a mapping, or make the change additive"
	return &apiError{status: http.StatusConflict, code: codeIncompatible, msg: msg}
}

func consumerNames(as []*registryv1.AffectedConsumer) []string {
	out := make([]string, 0, len(as))
	for _, a := range as {
		out = append(out, a.GetConsumer())
	}
	return out
}

// lookup is POST /subjects/{subject}: the version of the subject
// registered from the schema.
func (h *Handler) lookup(c *call) (any, error) {
	confluent, seam, doc, err := c.document()
	if err != nil {
		return nil, err
	}
	_, vs, err := h.versions(c)
	if err != nil {
		return nil, err
	}
	v, s, err := h.registered(c, seam, doc, vs)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, &apiError{status: http.StatusNotFound, code: codeSchemaNotFound, msg: fmt.Sprintf("schema not found under subject %q", confluent)}
	}
	return versionAnswer{Subject: confluent, ID: s.GetId(), Version: v.GetVersion(), SchemaType: schemaType(s.GetFormat()), Schema: s.GetText()}, nil
}

// deleteVersion is DELETE /subjects/{subject}/versions/{version}. A soft
// delete retires the version in Seam, by Seam's rules: only the subject's
// owners, operators or an admin, and never the active or a scheduled
// version (the gate judges records by them). A retired version leaves the
// API's answers unless ?deleted=true, and the gate refuses records
// written with it. Seam keeps every version, so ?permanent=true, once the
// version is soft-deleted, is refused with the reason.
func (h *Handler) deleteVersion(c *call) (any, error) {
	confluent, v, err := h.versionNamed(c, func(n int32, x *registryv1.ContractVersion) bool {
		return (n == 0 && !deleted(x)) || x.GetVersion() == n
	})
	if err != nil {
		return nil, err
	}
	if c.r.URL.Query().Get("permanent") == "true" {
		if !deleted(v) {
			return nil, &apiError{status: http.StatusNotFound, code: codeVersionNotDeleted, msg: fmt.Sprintf(
				"version %d of subject %q was not deleted first before being permanently deleted", v.GetVersion(), confluent)}
		}
		return nil, &apiError{status: http.StatusUnprocessableEntity, code: codeOperationForbidden, msg: fmt.Sprintf(
			"version %d of subject %q is deleted (retired in Seam) and stays so: Seam never erases a version, because the gate's quarantine, replays and the subject's history refer to it (docs/kafka.md)", v.GetVersion(), confluent)}
	}
	if deleted(v) {
		return nil, &apiError{status: http.StatusNotFound, code: codeVersionSoftDeleted, msg: fmt.Sprintf(
			"version %d of subject %q was soft deleted; set permanent=true to delete permanently", v.GetVersion(), confluent)}
	}
	_, err = h.reg.SetVersionStatus(c.ctx, &registryv1.SetVersionStatusRequest{Subject: v.GetSubject(), Version: v.GetVersion(),
		Status: registryv1.VersionStatus_VERSION_STATUS_RETIRED, Reason: "deleted through the Confluent-compatible API"})
	if status.Code(err) == codes.FailedPrecondition {
		return nil, &apiError{status: http.StatusUnprocessableEntity, code: codeOperationForbidden, msg: fmt.Sprintf(
			"version %d of subject %q cannot be deleted: %s", v.GetVersion(), confluent, statusText(status.Convert(err)))}
	}
	if err != nil {
		return nil, fromRPC(err, codeVersionNotFound)
	}
	h.cfg.Logger.InfoContext(c.ctx, "version retired through the Confluent-compatible API", "subject", v.GetSubject(), "version", v.GetVersion(), "principal", c.principal.Name)
	return v.GetVersion(), nil
}

// deleteSubject is DELETE /subjects/{subject}. Deleting a subject would
// retire its active version, which Seam never does while the gate judges
// records by it: the answer says so and how to retire older versions
// one by one. ?permanent=true answers as Confluent's registry does for a
// subject that was not soft-deleted first.
func (h *Handler) deleteSubject(c *call) (any, error) {
	confluent, vs, err := h.versions(c)
	if err != nil {
		return nil, err
	}
	var live []string
	for _, v := range vs {
		if !deleted(v) {
			live = append(live, fmt.Sprintf("%d (%s)", v.GetVersion(), strings.ToLower(strings.TrimPrefix(v.GetStatus().String(), "VERSION_STATUS_"))))
		}
	}
	if c.r.URL.Query().Get("permanent") == "true" {
		return nil, &apiError{status: http.StatusNotFound, code: codeSubjectNotDeleted, msg: fmt.Sprintf(
			"subject %q was not deleted first before being permanently deleted: its versions %s are not deleted", confluent, strings.Join(live, ", "))}
	}
	return nil, &apiError{status: http.StatusUnprocessableEntity, code: codeOperationForbidden, msg: fmt.Sprintf(
		"subject %q cannot be deleted: Seam never retires a subject's active or scheduled version while the gate judges records by it (versions %s); "+
			"delete older versions one by one with DELETE /subjects/%s/versions/{version}, which retires them (docs/kafka.md)", confluent, strings.Join(live, ", "), confluent)}
}

// compatibility is POST /compatibility/subjects/{subject}/versions[/{v}]:
// a dry run of the registration. Seam classifies a change against the
// subject's history by its compatibility mode, whatever version is named;
// compatible means it would be registered as it stands (unchanged or
// additive).
func (h *Handler) compatibility(c *call) (any, error) {
	// pick and versions answer a {subject} that is no Seam subject name.
	if c.r.PathValue("version") != "" {
		if _, err := h.pick(c); err != nil {
			return nil, err
		}
	} else if _, _, err := h.versions(c); err != nil {
		return nil, err
	}
	_, _, doc, err := c.document()
	if err != nil {
		return nil, err
	}
	resp, err := h.reg.CheckContract(c.ctx, &registryv1.CheckContractRequest{Document: doc})
	if err != nil {
		return nil, fromRPC(err, codeSubjectNotFound)
	}
	ok := resp.GetVerdict() == registryv1.Verdict_VERDICT_UNCHANGED || resp.GetVerdict() == registryv1.Verdict_VERDICT_ADDITIVE
	out := map[string]any{"is_compatible": ok}
	if c.r.URL.Query().Get("verbose") == "true" || !ok {
		msgs := []string{}
		for _, ch := range resp.GetChanges() {
			if ch.GetLevel() == registryv1.ChangeLevel_CHANGE_LEVEL_BREAKING {
				msgs = append(msgs, fmt.Sprintf("%s at %s: %s", ch.GetRule(), ch.GetPath(), ch.GetMessage()))
			}
		}
		for _, p := range resp.GetProblems() {
			msgs = append(msgs, p.GetReason()+": "+p.GetMessage())
		}
		if names := consumerNames(resp.GetAffectedConsumers()); len(names) > 0 {
			msgs = append(msgs, "affected consumers: "+strings.Join(names, ", "))
		}
		out["messages"] = msgs
	}
	return out, nil
}

// Compatibility levels, Confluent's names for Seam's modes.
var levels = map[contractv1.Compatibility]string{
	contractv1.Compatibility_COMPATIBILITY_NONE:                "NONE",
	contractv1.Compatibility_COMPATIBILITY_BACKWARD:            "BACKWARD",
	contractv1.Compatibility_COMPATIBILITY_BACKWARD_TRANSITIVE: "BACKWARD_TRANSITIVE",
	contractv1.Compatibility_COMPATIBILITY_FORWARD:             "FORWARD",
	contractv1.Compatibility_COMPATIBILITY_FORWARD_TRANSITIVE:  "FORWARD_TRANSITIVE",
	contractv1.Compatibility_COMPATIBILITY_FULL:                "FULL",
	contractv1.Compatibility_COMPATIBILITY_FULL_TRANSITIVE:     "FULL_TRANSITIVE",
}

// defaultLevel is Seam's mode for a subject whose contract names none.
const defaultLevel = "BACKWARD"

type configRequest struct {
	Compatibility string `json:"compatibility"`
}

func (c *call) configRequest() (string, error) {
	var req configRequest
	if err := json.Unmarshal(c.body, &req); err != nil {
		return "", &apiError{status: http.StatusUnprocessableEntity, code: codeInvalidCompat, msg: "the body is not {\"compatibility\": LEVEL}: " + err.Error()}
	}
	level := strings.ToUpper(strings.TrimSpace(req.Compatibility))
	for _, l := range levels {
		if l == level {
			return level, nil
		}
	}
	return "", &apiError{status: http.StatusUnprocessableEntity, code: codeInvalidCompat, msg: fmt.Sprintf("compatibility %q is not a level; want NONE, BACKWARD, FORWARD, FULL or one of them with _TRANSITIVE", req.Compatibility)}
}

// setConfig is a PUT of a compatibility level. The level in force, which
// current reads, is part of Seam's versioned contracts, so the PUT may
// only restate it; any other level is refused with refusal (a format of
// the level in force).
func setConfig(current func(*call) (string, error), refusal string) func(*call) (any, error) {
	return func(c *call) (any, error) {
		want, err := c.configRequest()
		if err != nil {
			return nil, err
		}
		have, err := current(c)
		if err != nil {
			return nil, err
		}
		if want != have {
			return nil, &apiError{status: http.StatusUnprocessableEntity, code: codeOperationForbidden, msg: fmt.Sprintf(refusal, have)}
		}
		return map[string]string{"compatibility": have}, nil
	}
}

// Refusals of a PUT that would change a compatibility level.
const (
	globalLevelFixed  = "Seam's default compatibility is %s and is not configurable; a subject's mode is part of its versioned contract (compatibility:), set with 'seam contract register'"
	subjectLevelFixed = "the subject's compatibility is %s; in Seam it is part of the versioned contract (compatibility:), so change it by registering a version with 'seam contract register', which keeps the change in the subject's history"
)

func (h *Handler) globalLevel(*call) (string, error) { return defaultLevel, nil }

func (h *Handler) level(c *call) (string, error) {
	confluent, seam, err := c.subject()
	if err != nil {
		return "", err
	}
	resp, err := h.reg.ListSubjects(c.ctx, &registryv1.ListSubjectsRequest{Prefix: seam})
	if err != nil {
		return "", fromRPC(err, codeSubjectNotFound)
	}
	for _, s := range resp.GetSubjects() {
		if s.GetName() == seam && c.principal.InScope(seam) {
			if l, ok := levels[s.GetCompatibility()]; ok {
				return l, nil
			}
			return defaultLevel, nil
		}
	}
	return "", &apiError{status: http.StatusNotFound, code: codeSubjectNotFound, msg: fmt.Sprintf("subject %q not found (Seam subject %s)", confluent, seam)}
}

func levelAnswer(level string) any {
	return map[string]string{"compatibilityLevel": level}
}

func (h *Handler) refuseConfigDelete(*call) (any, error) {
	return nil, &apiError{status: http.StatusUnprocessableEntity, code: codeOperationForbidden, msg: "a subject's compatibility is part of its versioned contract in Seam and cannot be deleted"}
}

func (h *Handler) refuseMode(*call) (any, error) {
	return nil, &apiError{status: http.StatusUnprocessableEntity, code: 42204, msg: "Seam's registry is always READWRITE; IMPORT and READONLY modes are not supported"}
}
