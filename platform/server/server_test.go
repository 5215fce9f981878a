package server_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/server"
	"github.com/seamdata/seam/platform/server/servertest"
	"github.com/seamdata/seam/platform/telemetry"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeGate answers Ingest with an empty response, counting calls, and
// streams Replay slowly, so a test sees whether an answer outlives the
// read deadline.
type fakeGate struct {
	gatev1.UnimplementedGateServiceServer
	ingests atomic.Int64
}

func (f *fakeGate) Ingest(context.Context, *gatev1.IngestRequest) (*gatev1.IngestResponse, error) {
	f.ingests.Add(1)
	return &gatev1.IngestResponse{}, nil
}

// WatchAlerts sends an empty alert every 50ms until the call ends.
func (f *fakeGate) WatchAlerts(_ *gatev1.WatchAlertsRequest, stream grpc.ServerStreamingServer[gatev1.WatchAlertsResponse]) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stream.Context().Done():
			return stream.Context().Err()
		case <-t.C:
			if err := stream.Send(&gatev1.WatchAlertsResponse{}); err != nil {
				return err
			}
		}
	}
}

func (f *fakeGate) Replay(_ *gatev1.ReplayRequest, stream grpc.ServerStreamingServer[gatev1.ReplayResponse]) error {
	for range 6 {
		time.Sleep(100 * time.Millisecond)
		if err := stream.Send(&gatev1.ReplayResponse{}); err != nil {
			return err
		}
	}
	return nil
}

type node struct {
	http, metrics, grpc string
	token               string
	gate                *fakeGate
	// tokens are the other callers' tokens by name: viewer, and pipeline
	// and operator tokens limited to subjects b.* (b-pipeline, b-operator).
	tokens     map[string]string
	tokensFile string
	entries    []auth.TokenEntry
	// stop ends Serve; served is closed when it returned.
	stop   context.CancelFunc
	served chan struct{}
}

// start serves the fake gate through a real Server on loopback.
func start(t *testing.T, cfg server.Config, separateMetrics bool) *node {
	t.Helper()
	token, entry, err := auth.NewToken("pipeline", []auth.Role{auth.RolePipeline, auth.RoleOperator}, nil)
	if err != nil {
		t.Fatal(err)
	}
	entries := []auth.TokenEntry{entry}
	others := map[string]string{}
	for _, o := range []struct {
		name     string
		role     auth.Role
		subjects []string
	}{{"viewer", auth.RoleViewer, nil}, {"b-pipeline", auth.RolePipeline, []string{"b.*"}}, {"b-operator", auth.RoleOperator, []string{"b.*"}}} {
		tok, e, err := auth.NewToken(o.name, []auth.Role{o.role}, o.subjects)
		if err != nil {
			t.Fatal(err)
		}
		others[o.name] = tok
		entries = append(entries, e)
	}
	tokensFile := filepath.Join(t.TempDir(), auth.TokensFileName)
	if err := auth.WriteTokensFile(tokensFile, auth.TokensFile{Tokens: entries}); err != nil {
		t.Fatal(err)
	}
	tokens, err := auth.LoadTokens(tokensFile)
	if err != nil {
		t.Fatal(err)
	}
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{ServiceName: "test", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tokens, cfg.Logger, cfg.Telemetry = tokens, slog.New(slog.DiscardHandler), tel
	gate := &fakeGate{}
	srv, err := server.New(cfg, server.Service{
		Name:     gatev1.GateService_ServiceDesc.ServiceName,
		Register: func(r grpc.ServiceRegistrar) { gatev1.RegisterGateServiceServer(r, gate) },
		Gateway:  gatev1.RegisterGateServiceHandler,
		Access: auth.Access{
			gatev1.GateService_Ingest_FullMethodName:      {Roles: []auth.Role{auth.RolePipeline}, Subject: "subject"},
			gatev1.GateService_Replay_FullMethodName:      {Roles: []auth.Role{auth.RoleOperator}, Subject: "window.subject"},
			gatev1.GateService_WatchAlerts_FullMethodName: {Roles: auth.AllRoles, Subject: "subject"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	listen := func() net.Listener {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := server.Listeners{GRPC: listen(), HTTP: listen()}
	n := &node{http: l.HTTP.Addr().String(), grpc: l.GRPC.Addr().String(), token: token, gate: gate,
		tokens: others, tokensFile: tokensFile, entries: entries}
	if separateMetrics {
		l.Metrics = listen()
		n.metrics = l.Metrics.Addr().String()
	}
	ctx, cancel := context.WithCancel(context.Background())
	var serveErr error
	n.stop, n.served = cancel, make(chan struct{})
	go func() {
		serveErr = srv.Serve(ctx, l)
		close(n.served)
	}()
	t.Cleanup(func() {
		cancel()
		<-n.served
		if serveErr != nil {
			t.Errorf("Serve: %v", serveErr)
		}
		_ = tel.Shutdown(context.Background())
		http.DefaultClient.CloseIdleConnections()
	})
	return n
}

// rawRequest sends a request head, then body bytes from body until the
// server answers or stops reading, and returns the answer's status code
// and how many body bytes the client managed to write.
func rawRequest(t *testing.T, addr, head string, body io.Reader) (int, int64) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if c, ok := body.(io.Closer); ok {
		defer c.Close()
	}
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	var written atomic.Int64
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := body.Read(buf)
			if n > 0 {
				m, werr := conn.Write(buf[:n])
				written.Add(int64(m))
				if werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode, written.Load()
}

// warmUp sends the node one small refused request, not measured: what a
// node sets up on its first request (about 14 MB, against 0.1 MB for each
// later refusal) is not what a refusal costs, and under CI's load it once
// passed expectRefusedUnread's bound on its own.
func warmUp(t *testing.T, n *node) {
	t.Helper()
	if code, _ := rawRequest(t, n.http, "POST /v1/subjects/shop.orders:ingest HTTP/1.1\r\nHost: seam\r\nContent-Length: 2\r\n\r\n", strings.NewReader("{}")); code != http.StatusUnauthorized {
		t.Fatalf("warm-up request: status %d, want 401", code)
	}
}

// expectRefusedUnread sends head and body and checks that the server
// answers want having read next to none of the body, that the process
// allocated at most maxAlloc bytes meanwhile (logged with -v), and that
// the handler never ran.
func expectRefusedUnread(t *testing.T, n *node, head string, body io.Reader, want int, maxAlloc uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	code, written := rawRequest(t, n.http, head, body)
	runtime.ReadMemStats(&after)
	if code != want {
		t.Errorf("status %d, want %d", code, want)
	}
	if written > 32<<20 {
		t.Errorf("the server took %d bytes of the body before answering, want it to read none", written)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > maxAlloc {
		t.Errorf("the process allocated %d MB while the server refused, want at most %d MB", grew>>20, maxAlloc>>20)
	} else {
		t.Logf("the process allocated %d KB while the server refused", grew>>10)
	}
	if got := n.gate.ingests.Load(); got != 0 {
		t.Errorf("the handler ran %d times for a refused call", got)
	}
}

// endless is a body that never ends: an ingest request's JSON opening,
// then spaces.
func endless() io.Reader {
	return servertest.Endless(`{"subject":"shop.orders","partition":"p","batch_id":"b","batch":{"objects":{"records":[`)
}

// TestRESTAuthenticatesBeforeReadingTheBody: a caller without a valid token
// is answered 401 from its headers, and the server reads (and allocates)
// next to nothing of the 200 MB it offers, declared or chunked.
func TestRESTAuthenticatesBeforeReadingTheBody(t *testing.T) {
	n := start(t, server.Config{}, false)
	const offered = 200 << 20
	cases := []struct {
		name, auth, framing string
	}{
		{"no token, declared length", "", fmt.Sprintf("Content-Length: %d\r\n", offered)},
		{"no token, chunked", "", "Transfer-Encoding: chunked\r\n"},
		{"unknown token, declared length", "Authorization: Bearer seam_not_a_token\r\n", fmt.Sprintf("Content-Length: %d\r\n", offered)},
	}
	warmUp(t, n)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			head := "POST /v1/subjects/shop.orders:ingest HTTP/1.1\r\nHost: seam\r\nContent-Type: application/json\r\n" + tc.auth + tc.framing + "\r\n"
			expectRefusedUnread(t, n, head, io.LimitReader(endless(), offered), http.StatusUnauthorized, 8<<20)
		})
	}
}

// TestRESTBodyLimit: with a valid token, a body over the gRPC message limit
// is 413 (not 429 or 400), declared or discovered while reading, and a body
// under it reaches the handler.
func TestRESTBodyLimit(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	n := start(t, server.Config{MaxMessageBytes: limit}, false)
	small := `{"subject":"shop.orders","partition":"p","batch_id":"b","batch":{"objects":{"records":[{"a":1}]}}}`
	cases := []struct {
		name    string
		framing string
		body    io.Reader
		want    int
	}{
		{"declared over the limit", fmt.Sprintf("Content-Length: %d\r\n", 200<<20), io.LimitReader(endless(), 200<<20), http.StatusRequestEntityTooLarge},
		{"chunked over the limit", "Transfer-Encoding: chunked\r\n", servertest.Chunked(io.LimitReader(endless(), 8<<20)), http.StatusRequestEntityTooLarge},
		{"under the limit", fmt.Sprintf("Content-Length: %d\r\n", len(small)), strings.NewReader(small), http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			head := "POST /v1/subjects/shop.orders:ingest HTTP/1.1\r\nHost: seam\r\nContent-Type: application/json\r\nAuthorization: Bearer " + n.token + "\r\n" + tc.framing + "\r\n"
			code, _ := rawRequest(t, n.http, head, tc.body)
			if code != tc.want {
				t.Errorf("status %d, want %d", code, tc.want)
			}
		})
	}
}

// TestRESTBodyBudget: the bodies of all REST requests in flight share one
// budget. While one request holds most of it, another whose body would
// pass it is answered 429 with Retry-After, naming the setting, and
// nothing reaches the service; once the first call has returned, its
// share is back and the second goes through.
func TestRESTBodyBudget(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	n := start(t, server.Config{MaxMessageBytes: limit, MaxBodyBytesInFlight: limit}, true)
	const held, size = 800 << 10, 900 << 10
	head := func(length int) string {
		return fmt.Sprintf("POST /v1/subjects/shop.orders:ingest HTTP/1.1\r\nHost: seam\r\nContent-Type: application/json\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", n.token, length)
	}
	// The first request sends all but the end of its body: the server
	// reads it, and holds it, until the rest comes.
	first, err := net.Dial("tcp", n.http)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if _, err := io.WriteString(first, head(held+1)+"{"+strings.Repeat(" ", held-1)); err != nil {
		t.Fatal(err)
	}
	second := func() (*http.Response, string) {
		conn, err := net.Dial("tcp", n.http)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(conn, head(size)+"{"+strings.Repeat(" ", size-2)+"}"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	// The gauge says when the server holds the first body.
	for deadline := time.Now().Add(10 * time.Second); inFlight(t, n.metrics) < held; {
		if time.Now().After(deadline) {
			t.Fatalf("seam_http_server_request_body_in_flight = %d 10s after sending %d bytes, want them held", inFlight(t, n.metrics), held)
		}
		time.Sleep(10 * time.Millisecond)
	}
	ingested := n.gate.ingests.Load()
	resp, body := second()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(body, "--max-body-bytes-in-flight") || !strings.Contains(body, "SERVER_BUSY") {
		t.Fatalf("a body past the budget: %d (Retry-After %q) %s; want 429 with Retry-After, SERVER_BUSY and the setting", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if _, err := io.WriteString(first, "}"); err != nil {
		t.Fatal(err)
	}
	_ = first.SetReadDeadline(time.Now().Add(10 * time.Second))
	done, err := http.ReadResponse(bufio.NewReader(first), nil)
	if err != nil || done.StatusCode != http.StatusOK {
		t.Fatalf("the first request, completed: %v, %v; want 200", done, err)
	}
	done.Body.Close()
	if n.gate.ingests.Load() != ingested+1 {
		t.Errorf("%d ingests reached the service, want %d: the refused one must not", n.gate.ingests.Load(), ingested+1)
	}
	for deadline := time.Now().Add(10 * time.Second); inFlight(t, n.metrics) != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("seam_http_server_request_body_in_flight = %d 10s after every call returned, want 0", inFlight(t, n.metrics))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if resp, body := second(); resp.StatusCode != http.StatusOK {
		t.Errorf("the second request after the first returned: %d %s, want 200 (the budget given back)", resp.StatusCode, body)
	}
}

// inFlight reads seam_http_server_request_body_in_flight from the
// metrics endpoint at addr.
func inFlight(t *testing.T, addr string) int64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(text), "\n") {
		if name, value, ok := strings.Cut(line, " "); ok && strings.HasPrefix(name, "seam_http_server_request_body_in_flight") {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			return int64(v)
		}
	}
	t.Fatalf("no seam_http_server_request_body_in_flight in /metrics:\n%s", text)
	return 0
}

// TestRESTReadTimeout: an authenticated client trickling its body does not
// hold the connection past the read timeout, and is told so: 408 naming
// the setting, not the connection's "read tcp host:port->host:port: i/o
// timeout" as a 400.
func TestRESTReadTimeout(t *testing.T) {
	t.Parallel()
	n := start(t, server.Config{HTTPReadTimeout: 300 * time.Millisecond}, false)
	conn, err := net.Dial("tcp", n.http)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := "POST /v1/subjects/shop.orders:ingest HTTP/1.1\r\nHost: seam\r\nContent-Type: application/json\r\nAuthorization: Bearer " + n.token + "\r\nContent-Length: 1000\r\n\r\n{\"subject\":"
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the trickling connection was still open after 10s, want it closed after the 300ms read timeout")
	}
	if err != nil {
		t.Fatalf("no answer before the connection closed: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "--http-read-timeout") || strings.Contains(string(body), "127.0.0.1") {
		t.Errorf("answer %d %s, want 408 naming --http-read-timeout and no address", resp.StatusCode, body)
	}
	if !resp.Close {
		t.Errorf("the answer keeps the connection open, want Connection: close")
	}
}

// TestRESTStreamOutlivesReadTimeout: an answer streamed after the body was
// read (a replay) is not cut when the read timeout passes.
func TestRESTStreamOutlivesReadTimeout(t *testing.T) {
	t.Parallel()
	n := start(t, server.Config{HTTPReadTimeout: 150 * time.Millisecond}, false)
	resp := servertest.Send(t, "POST", "http://"+n.http+"/v1/replay", n.token, `{"window":{"subject":"shop.orders"}}`)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the streamed answer: %v (after %d bytes)", err, len(body))
	}
	if got := bytes.Count(body, []byte(`"result"`)); resp.StatusCode != http.StatusOK || got != 6 {
		t.Errorf("status %d with %d messages, want 200 with all 6 (streamed over 600ms past a 150ms read timeout):\n%s", resp.StatusCode, got, body)
	}
}

// TestMetricsAddr: with a metrics listener, /metrics is served there and
// no longer on the REST address; without one, on the REST address.
func TestMetricsAddr(t *testing.T) {
	t.Parallel()
	get := func(addr string) int {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	separate := start(t, server.Config{}, true)
	if got := get(separate.metrics); got != http.StatusOK {
		t.Errorf("GET /metrics on the metrics address: %d, want 200", got)
	}
	if got := get(separate.http); got != http.StatusNotFound {
		t.Errorf("GET /metrics on the REST address with --metrics-addr set: %d, want 404", got)
	}
	shared := start(t, server.Config{}, false)
	if got := get(shared.http); got != http.StatusOK {
		t.Errorf("GET /metrics on the REST address without --metrics-addr: %d, want 200", got)
	}
}

// TestRESTMetricsNameTheRouteTemplate: REST requests are measured by the
// gateway's route template, not the /v1/ prefix the outer mux matches,
// and a 4xx is a client outcome (its status code), not a server error.
func TestRESTMetricsNameTheRouteTemplate(t *testing.T) {
	n := start(t, server.Config{}, false)
	post := func(path, token string) int {
		resp := servertest.Send(t, http.MethodPost, "http://"+n.http+path, token, `{"partition":"p","batch_id":"b"}`)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post("/v1/subjects/shop.orders:ingest", n.token); got != http.StatusOK {
		t.Fatalf("ingest over REST: %d, want 200", got)
	}
	if got := post("/v1/subjects/bank.payments:ingest", "not-a-token"); got != http.StatusUnauthorized {
		t.Fatalf("ingest over REST with a bad token: %d, want 401", got)
	}
	resp, err := http.Get("http://" + n.http + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "http_server_request_duration_seconds_count{") {
			lines = append(lines, l)
		}
	}
	want := `http_route="/v1/subjects/{subject}:ingest"`
	found := false
	for _, l := range lines {
		if strings.Contains(l, want) && strings.Contains(l, `http_response_status_code="200"`) {
			found = true
		}
		if strings.Contains(l, "bank.payments") || strings.Contains(l, "shop.orders") {
			t.Errorf("a REST metric names the request's path, not its route: %s", l)
		}
		if strings.Contains(l, `http_response_status_code="401"`) && strings.Contains(l, "error_type") {
			t.Errorf("a 401 is counted as a server error: %s", l)
		}
	}
	if !found {
		t.Errorf("no http_server_request_duration_seconds_count with %s and status 200 among:\n%s", want, strings.Join(lines, "\n"))
	}
}

// TestShutdownEndsWatches: an open watch (a console tab on the alerts) does
// not hold the shutdown for its timeout: it ends at once with UNAVAILABLE,
// which tells its client to resume, while a stream that changes state (a
// replay) still runs to its end.
func TestShutdownEndsWatches(t *testing.T) {
	t.Parallel()
	n := start(t, server.Config{ShutdownTimeout: 10 * time.Second}, false)
	open := func(method, path, body string) *http.Response {
		resp := servertest.Send(t, method, "http://"+n.http+path, n.token, body)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	watch := open("GET", "/v1/alerts:watch?subject=shop.orders", "")
	replay := open("POST", "/v1/replay", `{"window":{"subject":"shop.orders"}}`)
	// Both streams are running once their first message arrives.
	watchBody, replayBody := bufio.NewReader(watch.Body), bufio.NewReader(replay.Body)
	for _, r := range []*bufio.Reader{watchBody, replayBody} {
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatalf("first streamed message: %v", err)
		}
	}
	begun := time.Now()
	n.stop()
	watched, err := io.ReadAll(watchBody)
	if err != nil {
		t.Fatalf("reading the watch to its end: %v", err)
	}
	replayed, err := io.ReadAll(replayBody)
	if err != nil {
		t.Fatalf("reading the replay to its end: %v", err)
	}
	<-n.served
	took := time.Since(begun)
	if took > 3*time.Second {
		t.Errorf("shutdown took %s with a watch open, want well under the 10s timeout", took)
	}
	if !bytes.Contains(watched, []byte(`"error"`)) || !bytes.Contains(watched, []byte("shutting down")) {
		t.Errorf("the watch ended with %q, want an error saying the server is shutting down", watched)
	}
	// The replay's first message was read above; the other five follow.
	if got := bytes.Count(replayed, []byte(`"result"`)); got != 5 || bytes.Contains(replayed, []byte(`"error"`)) {
		t.Errorf("the replay sent %d more messages (%q), want the other 5 and no error", got, replayed)
	}
}
