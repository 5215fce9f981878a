package node_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/node"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/platform/auth"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

var seamServices = []string{
	"seam.adapter.v1.AdapterService",
	"seam.gate.v1.GateService",
	"seam.idmap.v1.IdMapService",
	"seam.registry.v1.RegistryService",
}

func TestUpServesEveryServiceOverGRPCAndREST(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	ctx := context.Background()
	conn := n.Conn(t, n.Admin)

	t.Run("health", func(t *testing.T) {
		hc := healthpb.NewHealthClient(n.Conn(t, ""))
		for _, s := range append([]string{""}, seamServices...) {
			resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: s})
			if err != nil {
				t.Fatalf("health of %q: %v", s, err)
			}
			if got := resp.GetStatus(); got != healthpb.HealthCheckResponse_SERVING {
				t.Errorf("health of %q = %v, want SERVING", s, got)
			}
		}
		for _, path := range []string{"/healthz", "/readyz"} {
			if code, body := n.REST(t, "GET", path, "", ""); code != http.StatusOK {
				t.Errorf("GET %s = %d %v, want 200", path, code, body)
			}
		}
	})

	t.Run("reflection", func(t *testing.T) {
		stream, err := reflectionpb.NewServerReflectionClient(n.Conn(t, "")).ServerReflectionInfo(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{ListServices: ""}}); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range resp.GetListServicesResponse().GetService() {
			got = append(got, s.GetName())
		}
		stream.CloseSend()
		for _, want := range append(slices.Clone(seamServices), "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection") {
			if !slices.Contains(got, want) {
				t.Errorf("reflection lists %v, missing %s", got, want)
			}
		}
	})

	t.Run("registry", func(t *testing.T) {
		if _, err := registryv1.NewRegistryServiceClient(conn).ListSubjects(ctx, &registryv1.ListSubjectsRequest{}); err != nil {
			t.Fatalf("gRPC ListSubjects: %v", err)
		}
		if code, body := n.REST(t, "GET", "/v1/subjects", n.Admin, ""); code != http.StatusOK {
			t.Fatalf("GET /v1/subjects = %d %v, want 200", code, body)
		}
	})

	t.Run("idmap", func(t *testing.T) {
		_, err := idmapv1.NewIdMapServiceClient(conn).CreateNamespace(ctx, &idmapv1.CreateNamespaceRequest{Namespace: &idmapv1.Namespace{
			Name: "customer",
			Formats: []*idmapv1.Format{
				{Name: "legacy-int", Kind: idmapv1.FormatKind_FORMAT_KIND_INT},
				{Name: "uuid", Kind: idmapv1.FormatKind_FORMAT_KIND_UUID},
			},
		}})
		if err != nil {
			t.Fatalf("gRPC CreateNamespace: %v", err)
		}
		code, body := n.REST(t, "GET", "/v1/namespaces/customer", n.Admin, "")
		if code != http.StatusOK {
			t.Fatalf("GET /v1/namespaces/customer = %d %v, want 200", code, body)
		}
		if name := body["namespace"].(map[string]any)["name"]; name != "customer" {
			t.Errorf("REST namespace name = %v, want customer", name)
		}
	})

	t.Run("adapter", func(t *testing.T) {
		rc := registryv1.NewRegistryServiceClient(conn)
		model, err := contract.LoadCanonicalModelFile(seamtest.ExampleFile(t, "commerce_order.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rc.RegisterCanonicalModel(ctx, &registryv1.RegisterCanonicalModelRequest{Model: model}); err != nil {
			t.Fatalf("register canonical model: %v", err)
		}
		v1, err := contract.LoadFile(seamtest.ExampleFile(t, "shop_orders_v1.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rc.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: v1}); err != nil {
			t.Fatalf("register v1: %v", err)
		}
		order := `{"order_id":"ORD-0000000042","customer_id":1042,"amount":85.5,"currency":"EUR","status":"paid","created_at":"2026-11-29T10:00:00Z","country":"DE","items":2}`
		resp, err := adapterv1.NewAdapterServiceClient(conn).Adapt(ctx, &adapterv1.AdaptRequest{
			Subject: "shop.orders",
			Batch:   &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: []byte(order + "\n")}}},
		})
		if err != nil {
			t.Fatalf("gRPC Adapt: %v", err)
		}
		if resp.GetAdapted() != 1 || !strings.Contains(string(resp.GetResults()[0].GetRecord().GetJson()), `"item_count":2`) {
			t.Fatalf("gRPC Adapt = %v, want one canonical record with item_count 2", resp)
		}
		code, body := n.REST(t, "POST", "/v1/subjects/shop.orders:adapt", n.Admin, `{"batch":{"objects":{"records":[`+order+`]}}}`)
		if code != http.StatusOK {
			t.Fatalf("REST adapt = %d %v, want 200", code, body)
		}
		rec := body["results"].([]any)[0].(map[string]any)["record"].(map[string]any)
		if obj := rec["object"].(map[string]any); obj["item_count"] != float64(2) || obj["channel"] != "web" {
			t.Errorf("REST adapt canonical object = %v, want item_count 2 and the default channel web", obj)
		}
	})

	t.Run("gate", func(t *testing.T) {
		_, err := gatev1.NewGateServiceClient(conn).Contain(ctx, &gatev1.ContainRequest{Subject: "no.such.subject", Reason: "test"})
		if got := status.Code(err); got != codes.NotFound {
			t.Fatalf("gRPC Contain of an unknown subject: code %v (%v), want NotFound", got, err)
		}
		code, body := n.REST(t, "POST", "/v1/subjects/no.such.subject:contain", n.Admin, `{"reason":"test"}`)
		if code != http.StatusNotFound {
			t.Fatalf("REST contain of an unknown subject = %d %v, want 404", code, body)
		}
		if code, body := n.REST(t, "GET", "/v1/containments", n.Admin, ""); code != http.StatusOK {
			t.Fatalf("GET /v1/containments = %d %v, want 200", code, body)
		}
	})

	t.Run("openapi describes every RPC", func(t *testing.T) {
		code, doc := n.REST(t, "GET", "/openapi.json", "", "")
		if code != http.StatusOK {
			t.Fatalf("GET /openapi.json = %d", code)
		}
		ops := map[string]bool{}
		for _, methods := range doc["paths"].(map[string]any) {
			for _, op := range methods.(map[string]any) {
				ops[op.(map[string]any)["operationId"].(string)] = true
			}
		}
		for _, sd := range []grpc.ServiceDesc{registryv1.RegistryService_ServiceDesc, idmapv1.IdMapService_ServiceDesc, gatev1.GateService_ServiceDesc, adapterv1.AdapterService_ServiceDesc} {
			short := sd.ServiceName[strings.LastIndex(sd.ServiceName, ".")+1:]
			var names []string
			for _, m := range sd.Methods {
				names = append(names, m.MethodName)
			}
			for _, s := range sd.Streams {
				names = append(names, s.StreamName)
			}
			for _, m := range names {
				if !ops[short+"_"+m] {
					t.Errorf("OpenAPI has no operation %s_%s", short, m)
				}
			}
		}
	})

	t.Run("metrics", func(t *testing.T) {
		code, body := n.REST(t, "GET", "/metrics", "", "")
		if code != http.StatusOK || !strings.Contains(body["text"].(string), "rpc_server") {
			t.Errorf("GET /metrics = %d, want 200 with rpc_server metrics; body starts %.200q", code, body["text"])
		}
	})
}

func TestUpAuthentication(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	ctx := context.Background()

	_, err := registryv1.NewRegistryServiceClient(n.Conn(t, "")).ListSubjects(ctx, &registryv1.ListSubjectsRequest{})
	if got := status.Code(err); got != codes.Unauthenticated {
		t.Errorf("gRPC without a token: code %v, want Unauthenticated", got)
	}
	_, err = registryv1.NewRegistryServiceClient(n.Conn(t, "seam_not_a_real_token")).ListSubjects(ctx, &registryv1.ListSubjectsRequest{})
	if got := status.Code(err); got != codes.Unauthenticated {
		t.Errorf("gRPC with an unknown token: code %v, want Unauthenticated", got)
	}
	if code, _ := n.REST(t, "GET", "/v1/subjects", "", ""); code != http.StatusUnauthorized {
		t.Errorf("REST without a token = %d, want 401", code)
	}

	viewer := n.Conn(t, n.Viewer)
	if _, err := registryv1.NewRegistryServiceClient(viewer).ListSubjects(ctx, &registryv1.ListSubjectsRequest{}); err != nil {
		t.Errorf("viewer reading subjects: %v, want success", err)
	}
	_, err = gatev1.NewGateServiceClient(viewer).Contain(ctx, &gatev1.ContainRequest{Subject: "shop.orders", Reason: "x"})
	if got := status.Code(err); got != codes.PermissionDenied {
		t.Errorf("viewer containing a source: code %v, want PermissionDenied", got)
	}
	if code, _ := n.REST(t, "POST", "/v1/subjects/shop.orders:contain", n.Viewer, `{"reason":"x"}`); code != http.StatusForbidden {
		t.Errorf("REST write by a viewer = %d, want 403", code)
	}
}

// A REST call into the gate, which asks the registry, is one trace whose
// spans come from both services.
func TestUpOneTraceAcrossServices(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	if code, body := n.REST(t, "POST", "/v1/subjects/no.such.subject:contain", n.Admin, `{"reason":"trace test"}`); code != http.StatusNotFound {
		t.Fatalf("contain = %d %v, want 404", code, body)
	}
	n.Stop() // flushes every span

	byTrace := map[string]map[string]bool{}
	for _, s := range n.Spans.Ended() {
		if s.SpanKind().String() != "server" {
			continue
		}
		for _, kv := range s.Attributes() {
			// rpc.method is "package.Service/Method" in the semantic
			// conventions otelgrpc follows.
			if kv.Key == attribute.Key("rpc.method") {
				service, _, _ := strings.Cut(kv.Value.AsString(), "/")
				tid := s.SpanContext().TraceID().String()
				if byTrace[tid] == nil {
					byTrace[tid] = map[string]bool{}
				}
				byTrace[tid][service] = true
			}
		}
	}
	for _, services := range byTrace {
		if services["seam.gate.v1.GateService"] && services["seam.registry.v1.RegistryService"] {
			return
		}
	}
	t.Errorf("no trace holds server spans of both the gate and the registry; services per trace: %v", byTrace)
}

func TestUpFirstStartCreatesAdminToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	notes := &bytes.Buffer{}
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- node.Run(ctx, node.Config{Services: node.ServiceNames, Bootstrap: true, DataDir: dir, GRPCAddr: "127.0.0.1:0", HTTPAddr: "0.0.0.0:0", LogFormat: "text", LogLevel: "error"},
			node.Hooks{Notes: notes, Log: io.Discard, Ready: func(g, h string) { ready <- [2]string{g, h} }})
	}()
	var bound [2]string
	select {
	case bound = <-ready:
	case err := <-done:
		t.Fatalf("seam up stopped: %v", err)
	}
	// seam up tells clients of its data directory where it listens; an
	// address on every interface is written as the loopback one.
	addrs, err := client.ReadAddresses(dir)
	if err != nil {
		t.Fatalf("addresses of seam up in its data directory: %v", err)
	}
	_, httpPort, _ := net.SplitHostPort(bound[1])
	if want := (client.Addresses{GRPC: bound[0], HTTP: net.JoinHostPort("127.0.0.1", httpPort)}); addrs != want {
		t.Errorf("addresses written = %+v, want %+v", addrs, want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, client.AddressesFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after a clean shutdown the addresses file is still there (%v); want it removed", err)
	}
	// The notes name the data directory given, not "this directory".
	if !strings.Contains(notes.String(), "--data-dir "+dir) || strings.Contains(notes.String(), "this directory") {
		t.Errorf("first-start notes do not say how to reach %s:\n%s", dir, notes)
	}
	tok, err := os.ReadFile(filepath.Join(dir, auth.AdminTokenFileName))
	if err != nil {
		t.Fatalf("admin token file: %v", err)
	}
	// The notes say where the token is, never the token: they end up in
	// terminals and CI logs.
	if strings.Contains(notes.String(), strings.TrimSpace(string(tok))) || !strings.Contains(notes.String(), filepath.Join(dir, auth.AdminTokenFileName)) {
		t.Errorf("first-start notes show the admin token or not its file:\n%s", notes)
	}
	if info, err := os.Stat(filepath.Join(dir, auth.AdminTokenFileName)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("admin token file mode = %v (%v), want 0600", info.Mode().Perm(), err)
	}
}

// TestUpBindsBeforeWriting: a seam up whose port is taken fails before it
// writes anything: no tokens, no lock, no notes.
func TestUpBindsBeforeWriting(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := filepath.Join(t.TempDir(), "seam-data")
	notes := &bytes.Buffer{}
	err = node.Run(context.Background(), node.Config{Services: node.ServiceNames, Bootstrap: true, DataDir: dir, GRPCAddr: taken.Addr().String(), LogFormat: "text", LogLevel: "error"},
		node.Hooks{Notes: notes, Log: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "--grpc-addr") {
		t.Fatalf("seam up on a taken port: %v, want an error naming --grpc-addr", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 || notes.Len() > 0 {
		t.Errorf("seam up wrote %d files in %s and %d bytes of notes before failing to bind; want nothing", len(entries), dir, notes.Len())
	}
}

func TestUpShutdownLeaksNoGoroutines(t *testing.T) {
	// Registered first, so it runs after every other cleanup of the test.
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		http.DefaultClient.CloseIdleConnections()
		goleak.VerifyNone(t, ignore)
	})
	n := seamtest.StartNode(t)
	if _, err := registryv1.NewRegistryServiceClient(n.Conn(t, n.Admin)).ListSubjects(context.Background(), &registryv1.ListSubjectsRequest{}); err != nil {
		t.Fatal(err)
	}
	n.REST(t, "GET", "/v1/subjects", n.Admin, "")
	n.Stop()
}
