package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/lineage"
	"github.com/seamdata/seam/platform/server"
	"github.com/seamdata/seam/platform/server/servertest"
	"github.com/seamdata/seam/platform/telemetry"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// echoRegistry answers CheckContract with the contract it received, so the
// test sees how the gateway decoded the body.
type echoRegistry struct {
	registryv1.UnimplementedRegistryServiceServer
}

func (echoRegistry) CheckContract(_ context.Context, req *registryv1.CheckContractRequest) (*registryv1.CheckContractResponse, error) {
	return &registryv1.CheckContractResponse{Contract: req.GetContract()}, nil
}

// GetConsumer answers a consumer of the name asked for.
func (echoRegistry) GetConsumer(_ context.Context, req *registryv1.GetConsumerRequest) (*registryv1.GetConsumerResponse, error) {
	return &registryv1.GetConsumerResponse{Consumer: &registryv1.Consumer{Name: req.GetName()}}, nil
}

// DeleteConsumer refuses every name but team-a/nightly.
func (echoRegistry) DeleteConsumer(_ context.Context, req *registryv1.DeleteConsumerRequest) (*registryv1.DeleteConsumerResponse, error) {
	if req.GetName() != "team-a/nightly" {
		return nil, status.Errorf(codes.NotFound, "consumer %q not found", req.GetName())
	}
	return &registryv1.DeleteConsumerResponse{}, nil
}

// ListEvents answers one event per type asked for, so the test sees how
// the gateway read the query.
func (echoRegistry) ListEvents(_ context.Context, req *registryv1.ListEventsRequest) (*registryv1.ListEventsResponse, error) {
	resp := &registryv1.ListEventsResponse{}
	for _, typ := range req.GetTypes() {
		resp.Events = append(resp.Events, &registryv1.Event{Type: typ})
	}
	return resp, nil
}

// RecordLineage answers one outcome per event, naming its job.
func (echoRegistry) RecordLineage(_ context.Context, req *registryv1.RecordLineageRequest) (*registryv1.RecordLineageResponse, error) {
	evs := []*structpb.Value{req.GetEvents()}
	if l := req.GetEvents().GetListValue(); l != nil {
		evs = l.GetValues()
	}
	resp := &registryv1.RecordLineageResponse{}
	for i, e := range evs {
		job := e.GetStructValue().GetFields()["job"].GetStructValue().GetFields()["name"].GetStringValue()
		resp.Outcomes = append(resp.Outcomes, &registryv1.LineageOutcome{Index: int32(i), Consumer: job})
	}
	return resp, nil
}

// countingIdMap answers ImportPairs with what the stream carried: the
// header's namespace as a conflict message, and the pairs counted.
type countingIdMap struct {
	idmapv1.UnimplementedIdMapServiceServer
}

func (countingIdMap) ImportPairs(stream idmapv1.IdMapService_ImportPairsServer) error {
	resp := &idmapv1.ImportPairsResponse{}
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return stream.SendAndClose(resp)
		}
		if err != nil {
			return err
		}
		if h := req.GetHeader(); h != nil {
			resp.Conflicts = append(resp.Conflicts, &idmapv1.Conflict{Message: h.GetNamespace() + ":" + h.GetFromFormat() + "->" + h.GetToFormat() + ":" + h.GetOnConflict().String()})
		}
		resp.Received += int64(len(req.GetChunk().GetPairs()))
	}
}

func startServer(t *testing.T) (base, token string) {
	t.Helper()
	tok, entry, err := auth.NewToken("admin", []auth.Role{auth.RoleAdmin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := auth.NewTokens([]auth.TokenEntry{entry})
	if err != nil {
		t.Fatal(err)
	}
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{ServiceName: "test", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Tokens: tokens, Logger: slog.New(slog.DiscardHandler), Telemetry: tel, Version: "1.2.3"}, server.Service{
		Name:     registryv1.RegistryService_ServiceDesc.ServiceName,
		Register: func(r grpc.ServiceRegistrar) { registryv1.RegisterRegistryServiceServer(r, echoRegistry{}) },
		Gateway: func(ctx context.Context, mux *runtime.ServeMux, conn *grpc.ClientConn) error {
			return registryv1.RegisterRegistryServiceHandler(ctx, mux, conn)
		},
		Access: auth.Access{registryv1.RegistryService_CheckContract_FullMethodName: {Roles: auth.AllRoles},
			registryv1.RegistryService_ListEvents_FullMethodName:     {Roles: auth.AllRoles},
			registryv1.RegistryService_GetConsumer_FullMethodName:    {Roles: auth.AllRoles},
			registryv1.RegistryService_DeleteConsumer_FullMethodName: {Roles: auth.AllRoles},
			registryv1.RegistryService_RecordLineage_FullMethodName:  {Roles: auth.AllRoles}},
	}, server.Service{
		Name:     idmapv1.IdMapService_ServiceDesc.ServiceName,
		Register: func(r grpc.ServiceRegistrar) { idmapv1.RegisterIdMapServiceServer(r, countingIdMap{}) },
		Gateway: func(ctx context.Context, mux *runtime.ServeMux, conn *grpc.ClientConn) error {
			return idmapv1.RegisterIdMapServiceHandler(ctx, mux, conn)
		},
		Access: auth.Access{idmapv1.IdMapService_ImportPairs_FullMethodName: {Roles: auth.AllRoles}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return server.ServeLoopback(t, srv), tok
}

func call(t *testing.T, method, url, token, body string) (*http.Response, string) {
	t.Helper()
	resp := servertest.Send(t, method, url, token, body)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestOpenAPI3Document(t *testing.T) {
	base, _ := startServer(t)
	resp, body := call(t, "GET", base+server.OpenAPIPath, "", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", server.OpenAPIPath, resp.StatusCode, body)
	}
	doc, err := openapi3.NewLoader().LoadFromData([]byte(body))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the served OpenAPI 3 document is invalid: %v", err)
	}
	if doc.Info.Title != "Seam API" || doc.Info.Version != "1.2.3" || !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi %s, title %q, version %q; want 3.x, Seam API, 1.2.3", doc.OpenAPI, doc.Info.Title, doc.Info.Version)
	}
	bearer := doc.Components.SecuritySchemes["bearerAuth"]
	if bearer == nil || bearer.Value.Type != "http" || bearer.Value.Scheme != "bearer" || len(doc.Security) == 0 {
		t.Errorf("no bearer security scheme required globally: %+v %v", bearer, doc.Security)
	}
	for _, p := range []string{"/v1/subjects/{subject}:ingest", "/v1/contracts", server.LineagePath} {
		if doc.Paths.Find(p) == nil {
			t.Errorf("path %s missing", p)
		}
	}
	records := doc.Components.Schemas["v1ObjectRecords"].Value.Properties["records"].Value.Items.Value
	if records.AdditionalProperties.Has == nil || !*records.AdditionalProperties.Has {
		t.Errorf("records are not open JSON objects: %+v", records)
	}
	if resp, body := call(t, "GET", base+server.OpenAPIV2Path, "", ""); resp.StatusCode != 200 || !strings.Contains(body, `"swagger": "2.0"`) {
		t.Errorf("GET %s: %d, want the Swagger 2.0 document", server.OpenAPIV2Path, resp.StatusCode)
	}
}

func TestRESTConventions(t *testing.T) {
	base, token := startServer(t)
	resp, body := call(t, "DELETE", base+"/v1/contracts", token, "")
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("DELETE /v1/contracts: %d Allow=%q %s; want 405 with Allow: POST", resp.StatusCode, resp.Header.Get("Allow"), body)
	}
	resp, _ = call(t, "POST", base+"/v1/contracts:check", "", `{}`)
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("no token: %d WWW-Authenticate=%q; want 401 with a Bearer challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	resp, _ = call(t, "POST", base+"/v1/contracts:check", "wrong", `{}`)
	if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || !strings.Contains(got, "invalid_token") {
		t.Errorf("bad token: %d WWW-Authenticate=%q; want invalid_token", resp.StatusCode, got)
	}
	for _, typ := range []string{"INT64", "FIELD_TYPE_INT64", "int64"} {
		resp, body = call(t, "POST", base+"/v1/contracts:check", token,
			`{"contract": {"subject": "a.b", "compatibility": "BACKWARD", "fields": [{"name": "id", "type": "`+typ+`", "min": 12345678901234567}]}}`)
		if resp.StatusCode != 200 || !strings.Contains(body, `"FIELD_TYPE_INT64"`) || !strings.Contains(body, `"COMPATIBILITY_BACKWARD"`) {
			t.Errorf("type %s: %d %s; want it read as FIELD_TYPE_INT64", typ, resp.StatusCode, body)
		}
	}
	resp, body = call(t, "POST", base+"/v1/contracts:check", token, `{"contract": {"fields": [{"name": "id", "type": "MONEY"}]}}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "MONEY") {
		t.Errorf("unknown enum: %d %s; want 400 naming it", resp.StatusCode, body)
	}
}

// TestShortEnumsInQueries: enum query parameters take the short names
// bodies take, in any case, beside the full ones; an unknown name is a 400
// that names it.
func TestShortEnumsInQueries(t *testing.T) {
	base, token := startServer(t)
	resp, body := call(t, "GET", base+"/v1/events?types=CHANGE_ANNOUNCED&types=EVENT_TYPE_SOURCE_CONTAINED&types=version_activated&limit=5", token, "")
	for _, want := range []string{"EVENT_TYPE_CHANGE_ANNOUNCED", "EVENT_TYPE_SOURCE_CONTAINED", "EVENT_TYPE_VERSION_ACTIVATED"} {
		if resp.StatusCode != 200 || !strings.Contains(body, want) {
			t.Errorf("GET /v1/events?types=…: %d %s; want %s", resp.StatusCode, body, want)
		}
	}
	resp, body = call(t, "GET", base+"/v1/events?types=NO_SUCH_EVENT", token, "")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "NO_SUCH_EVENT") {
		t.Errorf("unknown enum in a query: %d %s; want 400 naming it", resp.StatusCode, body)
	}
}

// TestClientStreamOverREST: a client-streaming RPC takes its messages one
// after another in one REST body, with short enum names.
func TestClientStreamOverREST(t *testing.T) {
	base, token := startServer(t)
	body := `{"header": {"namespace": "customer", "from_format": "uuid", "to_format": "legacy-int", "on_conflict": "SKIP"}}
{"chunk": {"pairs": [{"from": "7c9e6679-7425-40de-944b-e07fc1f90ae7", "to": "1001"}, {"from": "0b9e5c8e-3f0d-4a4e-9d43-1f3c2a6f6b01", "to": "1002"}]}}
{"chunk": {"pairs": [{"from": "5b2c7d2e-1f0a-4c3b-8d4e-6f7a8b9c0d1e", "to": "1003"}]}}`
	resp, out := call(t, "POST", base+"/v1/namespaces:import", token, body)
	if resp.StatusCode != 200 || !strings.Contains(out, `"received":"3"`) || !strings.Contains(out, "customer:uuid->legacy-int:CONFLICT_POLICY_SKIP") {
		t.Fatalf("POST /v1/namespaces:import: %d %s; want 3 pairs received under the header", resp.StatusCode, out)
	}
	resp, out = call(t, "POST", base+"/v1/namespaces:import", token, `{"header": {"namespace": "customer"}} {"chunk": `)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a truncated stream: %d %s; want 400", resp.StatusCode, out)
	}
}

func gzipped(t *testing.T, data []byte) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestCompressedLineage: OpenLineage events may come gzip-compressed; a
// body that inflates past the bound, is not gzip, or uses another
// encoding is refused with a clear status. Seam's own transport, with
// compression on, is accepted.
func TestCompressedLineage(t *testing.T) {
	base, token := startServer(t)
	events := `[{"eventType":"COMPLETE","eventTime":"2026-03-01T10:00:00Z","run":{"runId":"r"},"job":{"namespace":"airflow","name":"daily_freight"}},
	{"eventType":"COMPLETE","eventTime":"2026-03-01T10:00:00Z","run":{"runId":"s"},"job":{"namespace":"dbt","name":"orders_model"}}]`
	post := func(encoding, body string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest("POST", base+server.LineagePath, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		if encoding != "" {
			req.Header.Set("Content-Encoding", encoding)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	bomb := gzipped(t, bytes.Repeat([]byte(" "), server.MaxLineageBytes+1))
	tests := []struct {
		name, encoding, body string
		status               int
		want                 string
	}{
		{"plain", "", events, 200, "orders_model"},
		{"gzip", "gzip", gzipped(t, []byte(events)), 200, "orders_model"},
		{"x-gzip", "x-gzip", gzipped(t, []byte(events)), 200, "daily_freight"},
		{"not gzip", "gzip", events, http.StatusBadRequest, "not gzip data"},
		{"truncated gzip", "gzip", gzipped(t, []byte(events))[:40], http.StatusBadRequest, "cannot be read"},
		{"inflates past the bound", "gzip", bomb, http.StatusRequestEntityTooLarge, "over the limit of 33554432 bytes"},
		{"brotli", "br", events, http.StatusUnsupportedMediaType, `is not supported; send the body uncompressed or with gzip`},
	}
	for _, tt := range tests {
		resp, out := post(tt.encoding, tt.body)
		if resp.StatusCode != tt.status || !strings.Contains(out, tt.want) {
			t.Errorf("%s: %d %s; want %d saying %q", tt.name, resp.StatusCode, out, tt.status, tt.want)
		}
	}
	if len(bomb) > 64<<10 {
		t.Fatalf("the gzip bomb is %d bytes; the test means a small body that inflates past the bound", len(bomb))
	}

	tr, err := lineage.New(lineage.Config{URL: base, APIKey: token, Gzip: true})
	if err != nil {
		t.Fatal(err)
	}
	tr.Enqueue([]byte(`{"eventType":"START","eventTime":"2026-03-01T10:00:00Z","run":{"runId":"t"},"job":{"namespace":"seam","name":"shop.orders.ingest"}}`))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tr.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if s := tr.Stats(); s.Sent != 1 {
		t.Fatalf("Seam's transport posting gzip to Seam: %+v, want 1 sent", s)
	}
}

// TestLearnedConsumerNamesOverREST: a consumer learned from OpenLineage is
// named namespace/job; REST reaches it with the slash escaped, for GET and
// DELETE.
func TestLearnedConsumerNamesOverREST(t *testing.T) {
	base, token := startServer(t)
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		resp := servertest.Send(t, method, base+"/v1/consumers/"+url.PathEscape("team-a/nightly"), token, "")
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || (method == http.MethodGet && !strings.Contains(string(body), `"team-a/nightly"`)) {
			t.Errorf("%s /v1/consumers/team-a%%2Fnightly: %d %s, want 200 for team-a/nightly", method, resp.StatusCode, body)
		}
	}
}
