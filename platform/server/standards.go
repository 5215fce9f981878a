package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/seamdata/seam/platform/rpcerr"
	"github.com/seamdata/seam/proto/openapi"
)

// OpenAPI paths: the OpenAPI 3 document (what clients and generators want)
// and the Swagger 2.0 document grpc-gateway generates, at its own path.
const (
	OpenAPIPath   = "/openapi.json"
	OpenAPIV2Path = "/openapi.v2.json"
	// LineagePath is where OpenLineage emitters post run events, the route
	// Marquez serves.
	LineagePath = "/api/v1/lineage"
)

// gatewayOptions are the REST gateway's options: proto field names, short
// enum names accepted in bodies and query parameters, 405 (with Allow) for
// a known path called with another method, and a Bearer challenge on 401.
// setQueryParser sets the gateway's process-wide query parameter parser.
var setQueryParser sync.Once

func (s *Server) gatewayOptions(errors runtime.ErrorHandlerFunc, middleware runtime.Middleware) []runtime.ServeMuxOption {
	// grpc-gateway keeps the query parameter parser in a package variable,
	// whatever mux the option is given to: set it once per process, so two
	// servers in one process (tests, tools) do not race on it.
	setQueryParser.Do(func() { runtime.SetQueryParameterParser(shortEnumQuery{})(nil) })
	return []runtime.ServeMuxOption{
		runtime.WithMarshalerOption(runtime.MIMEWildcard, &shortEnumMarshaler{recordsMarshaler: gatewayMarshaler}),
		runtime.WithRoutingErrorHandler(routingError),
		runtime.WithErrorHandler(errors),
		runtime.WithMiddlewares(middleware),
		// Match on the escaped path, so an escaped "/" stays inside one
		// path parameter (the middleware unescapes it).
		runtime.WithUnescapingMode(runtime.UnescapingModeAllExceptReserved),
	}
}

// MaxLineageBytes bounds an OpenLineage request body once decompressed,
// so a small gzip body cannot make the server inflate gigabytes.
const MaxLineageBytes = 32 << 20

// routeStandards adds the OpenLineage route (through rest, the guarded
// gateway) and the OpenAPI documents.
func (s *Server) routeStandards(mux *http.ServeMux, rest http.Handler) error {
	v3, err := OpenAPI3(s.cfg.Version)
	if err != nil {
		return err
	}
	// The guard authorizes the route, then reads the body (plain or gzip)
	// through its bounded reader, as for every route.
	mux.Handle(LineagePath, rest)
	serve := func(doc []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(doc)
		}
	}
	mux.HandleFunc("GET "+OpenAPIPath, serve(v3))
	mux.HandleFunc("GET "+OpenAPIV2Path, serve(openapi.Document))
	return nil
}

// challenge is the gateway's error handler with the RFC 6750 challenge a
// client needs to know it must send a bearer token.
func challenge(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	if status.Code(err) == codes.Unauthenticated {
		c := `Bearer realm="seam"`
		if r.Header.Get("Authorization") != "" {
			c += `, error="invalid_token"`
		}
		// grpc-gateway puts the status message there; the challenge must win.
		w = &challengeWriter{ResponseWriter: w, challenge: c}
	}
	runtime.DefaultHTTPErrorHandler(ctx, mux, m, w, r, err)
}

// challengeWriter sets WWW-Authenticate just before the status is written.
type challengeWriter struct {
	http.ResponseWriter
	challenge string
}

func (c *challengeWriter) WriteHeader(code int) {
	c.Header().Set("WWW-Authenticate", c.challenge)
	c.ResponseWriter.WriteHeader(code)
}

func (c *challengeWriter) Write(b []byte) (int, error) {
	if c.Header().Get("WWW-Authenticate") != c.challenge {
		c.Header().Set("WWW-Authenticate", c.challenge)
	}
	return c.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (c *challengeWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// routingError answers 405 Method Not Allowed, with the Allow header, where
// grpc-gateway would answer 501.
func routingError(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, code int) {
	if code != http.StatusMethodNotAllowed {
		runtime.DefaultRoutingErrorHandler(ctx, mux, m, w, r, code)
		return
	}
	if allow := allowedMethods(r.URL.Path); len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
	}
	runtime.DefaultHTTPErrorHandler(ctx, mux, m, w, r, &runtime.HTTPStatusError{
		HTTPStatus: http.StatusMethodNotAllowed,
		Err:        rpcerr.WithReason(codes.Unimplemented, "METHOD_NOT_ALLOWED", fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path), nil),
	})
}

// route is one REST path template and its methods, from the generated
// OpenAPI document.
type route struct {
	re      *regexp.Regexp
	methods []string
}

var (
	routesOnce sync.Once
	routes     []route
	paramRE    = regexp.MustCompile(`\{[^}]+\}`)
)

func allowedMethods(path string) []string {
	routesOnce.Do(func() {
		var doc struct {
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		if json.Unmarshal(openapi.Document, &doc) != nil {
			return
		}
		for p, ops := range doc.Paths {
			quoted := strings.NewReplacer(`\{`, "{", `\}`, "}").Replace(regexp.QuoteMeta(p))
			re, err := regexp.Compile("^" + paramRE.ReplaceAllString(quoted, `[^/]+`) + "$")
			if err != nil {
				continue
			}
			var ms []string
			for m := range ops {
				ms = append(ms, strings.ToUpper(m))
			}
			slices.Sort(ms)
			routes = append(routes, route{re: re, methods: ms})
		}
	})
	var out []string
	for _, rt := range routes {
		if rt.re.MatchString(path) {
			for _, m := range rt.methods {
				if !slices.Contains(out, m) {
					out = append(out, m)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// OpenAPI3 converts the generated Swagger 2.0 document to OpenAPI 3.0 and
// gives it what the generator cannot: a title, Seam's version, the bearer
// token scheme every call needs, and record shapes as open JSON objects.
func OpenAPI3(version string) ([]byte, error) {
	var v2 openapi2.T
	if err := json.Unmarshal(openapi.Document, &v2); err != nil {
		return nil, fmt.Errorf("read the OpenAPI 2 document: %w", err)
	}
	doc, err := openapi2conv.ToV3(&v2)
	if err != nil {
		return nil, fmt.Errorf("convert the OpenAPI document to version 3: %w", err)
	}
	if version == "" {
		version = "dev"
	}
	doc.Info.Title = "Seam API"
	doc.Info.Version = version
	doc.Info.Description = "REST API of Seam, the contract boundary between external data sources and internal pipelines: " +
		"registry (contracts, consumers, lineage, events), adapter, idmap and gate. Every call needs a bearer token. " +
		"Enum values may be written in full (FIELD_TYPE_INT64) or short (INT64), in bodies and query parameters. " +
		"A client-streaming route takes its messages one JSON object after another in one body. " +
		"POST /api/v1/lineage takes OpenLineage run events, as Marquez does, plain or gzip-compressed."
	if doc.Components == nil {
		doc.Components = &openapi3.Components{}
	}
	doc.Components.SecuritySchemes = openapi3.SecuritySchemes{
		"bearerAuth": &openapi3.SecuritySchemeRef{Value: openapi3.NewSecurityScheme().WithType("http").WithScheme("bearer").
			WithDescription("A Seam token: seam-data/admin.token for seam up, or one from tokens.json.")},
	}
	doc.Security = openapi3.SecurityRequirements{{"bearerAuth": []string{}}}
	record := func(desc string) *openapi3.SchemaRef {
		s := openapi3.NewObjectSchema().WithAnyAdditionalProperties()
		s.Description = desc
		return &openapi3.SchemaRef{Value: s}
	}
	if s := doc.Components.Schemas["v1ObjectRecords"]; s != nil && s.Value != nil {
		if p := s.Value.Properties["records"]; p != nil && p.Value != nil {
			p.Value.Items = record("One record as a natural JSON object, keyed by the contract's field names.")
		}
	}
	if s := doc.Components.Schemas["v1CanonicalRecord"]; s != nil && s.Value != nil {
		s.Value.Properties["object"] = record("The canonical record as a JSON object, keyed by the canonical model's field names.")
	}
	if op := doc.Paths.Find(LineagePath); op != nil && op.Post != nil && op.Post.RequestBody != nil && op.Post.RequestBody.Value != nil {
		op.Post.RequestBody.Value.Description = "One OpenLineage RunEvent or a list of them."
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the OpenAPI 3 document is invalid: %w", err)
	}
	return json.MarshalIndent(doc, "", "  ")
}

// shortEnumMarshaler is the gateway's JSON marshaler, but a request body
// may name enum values without their prefix ("INT64" for
// "FIELD_TYPE_INT64"), as YAML contracts do. A body that decodes as is
// takes the fast path; only a body protojson refuses is rewritten and
// decoded again.
type shortEnumMarshaler struct {
	*recordsMarshaler
}

// NewDecoder implements runtime.Marshaler. It reads one JSON value per
// Decode and io.EOF at the end of the body, as the stock decoder does, so
// a client-streaming route (POST /v1/namespaces:import) takes its
// messages one after another in one body.
func (m *shortEnumMarshaler) NewDecoder(r io.Reader) runtime.Decoder {
	return jsonDecoder(r, m.Unmarshal)
}

// Unmarshal implements runtime.Marshaler.
func (m *shortEnumMarshaler) Unmarshal(data []byte, v any) error {
	err := m.recordsMarshaler.Unmarshal(data, v)
	if err == nil || !strings.Contains(err.Error(), "enum") {
		return err
	}
	msg, ok := v.(proto.Message)
	if !ok {
		// A body bound to one field arrives as a pointer to the field's
		// message pointer.
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Pointer {
			return err
		}
		if rv.Elem().IsNil() {
			rv.Elem().Set(reflect.New(rv.Elem().Type().Elem()))
		}
		if msg, ok = rv.Elem().Interface().(proto.Message); !ok {
			return err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // keep every digit of large integers
	var tree any
	if dec.Decode(&tree) != nil {
		return err
	}
	if !expandEnums(tree, msg.ProtoReflect().Descriptor(), 0) {
		return err
	}
	fixed, merr := json.Marshal(tree)
	if merr != nil {
		return err
	}
	proto.Reset(msg)
	return m.recordsMarshaler.Unmarshal(fixed, v)
}

// expandEnums rewrites short enum names in a decoded JSON body to their
// full names, walking the message's descriptor; it reports whether it
// changed anything.
func expandEnums(v any, md protoreflect.MessageDescriptor, depth int) bool {
	obj, ok := v.(map[string]any)
	if !ok || depth > 64 || md.ParentFile().Package() == "google.protobuf" {
		return false
	}
	changed := false
	fds := md.Fields()
	for key, val := range obj {
		fd := fds.ByName(protoreflect.Name(key))
		if fd == nil {
			fd = fds.ByJSONName(key)
		}
		if fd == nil {
			continue
		}
		one := func(x any) (any, bool) {
			switch fd.Kind() {
			case protoreflect.EnumKind:
				if s, ok := x.(string); ok {
					if full, ok := fullEnumName(fd.Enum(), s); ok {
						return full, true
					}
				}
			case protoreflect.MessageKind:
				if fd.IsMap() {
					if m, ok := x.(map[string]any); ok && fd.MapValue().Kind() == protoreflect.MessageKind {
						c := false
						for _, mv := range m {
							c = expandEnums(mv, fd.MapValue().Message(), depth+1) || c
						}
						return x, c
					}
					return x, false
				}
				return x, expandEnums(x, fd.Message(), depth+1)
			}
			return x, false
		}
		if list, ok := val.([]any); ok && fd.IsList() {
			for i, x := range list {
				if nv, c := one(x); c {
					list[i], changed = nv, true
				}
			}
			continue
		}
		if nv, c := one(val); c {
			obj[key], changed = nv, true
		}
	}
	return changed
}

// shortEnumQuery is the gateway's query parameter parser, but enum
// parameters may be written short too (?types=CHANGE_ANNOUNCED for
// EVENT_TYPE_CHANGE_ANNOUNCED), as in bodies. Short names are expanded
// before the default parser reads the values.
type shortEnumQuery struct {
	runtime.DefaultQueryParser
}

// Parse implements runtime.QueryParameterParser.
func (q shortEnumQuery) Parse(msg proto.Message, values url.Values, filter *utilities.DoubleArray) error {
	md := msg.ProtoReflect().Descriptor()
	var fixed url.Values
	for key, vals := range values {
		fd := fieldAt(md, key)
		if fd == nil || fd.Kind() != protoreflect.EnumKind {
			continue
		}
		for i, v := range vals {
			full, ok := fullEnumName(fd.Enum(), v)
			if !ok {
				continue
			}
			if fixed == nil {
				fixed = make(url.Values, len(values))
				for k, vs := range values {
					fixed[k] = slices.Clone(vs)
				}
			}
			fixed[key][i] = full
		}
	}
	if fixed != nil {
		values = fixed
	}
	return q.DefaultQueryParser.Parse(msg, values, filter)
}

// fieldAt finds the field a query parameter names: a dotted path of proto
// or JSON field names ("window.partition_from").
func fieldAt(md protoreflect.MessageDescriptor, path string) protoreflect.FieldDescriptor {
	var fd protoreflect.FieldDescriptor
	for i, part := range strings.Split(path, ".") {
		if i > 0 {
			if fd.Kind() != protoreflect.MessageKind || fd.IsMap() {
				return nil
			}
			md = fd.Message()
		}
		if fd = md.Fields().ByName(protoreflect.Name(part)); fd == nil {
			if fd = md.Fields().ByJSONName(part); fd == nil {
				return nil
			}
		}
	}
	return fd
}

// fullEnumName turns "INT64" into "FIELD_TYPE_INT64" for FieldType; ok is
// false when the name is already full or unknown.
func fullEnumName(ed protoreflect.EnumDescriptor, s string) (string, bool) {
	if ed.Values().ByName(protoreflect.Name(s)) != nil || ed.Values().Len() == 0 {
		return "", false
	}
	prefix, ok := strings.CutSuffix(string(ed.Values().Get(0).Name()), "UNSPECIFIED")
	if !ok {
		return "", false
	}
	full := prefix + strings.ToUpper(strings.TrimSpace(s))
	if ed.Values().ByName(protoreflect.Name(full)) == nil {
		return "", false
	}
	return full, true
}
