package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/server"
	"github.com/seamdata/seam/platform/telemetry"
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
		Access: auth.Access{registryv1.RegistryService_CheckContract_FullMethodName: auth.AllRoles},
	})
	if err != nil {
		t.Fatal(err)
	}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, gl, hl) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + hl.Addr().String(), tok
}

func call(t *testing.T, method, url, token, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
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
