package servertest_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/seamdata/seam/platform/server/servertest"
)

func TestEndlessStartsWithItsHead(t *testing.T) {
	t.Parallel()
	got, err := io.ReadAll(io.LimitReader(servertest.Endless(`{"records":[`), 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1<<20 || !bytes.HasPrefix(got, []byte(`{"records":[`)) || strings.TrimSpace(string(got[12:])) != "" {
		t.Errorf("Endless gave %d bytes starting %.20q, want 1 MB: the head, then blanks", len(got), got)
	}
}

// A chunked body decodes, by net/http's own reader, to what was framed,
// and ends with the last chunk and the blank line after it.
func TestChunkedDecodes(t *testing.T) {
	t.Parallel()
	for _, size := range []int{0, 1, 256 << 10, 1<<20 + 3} {
		want := bytes.Repeat([]byte("seam"), size/4+1)[:size]
		framed, err := io.ReadAll(servertest.Chunked(bytes.NewReader(want)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(framed, []byte("0\r\n\r\n")) {
			t.Errorf("%d bytes: the framing ends %q, want the last chunk 0\\r\\n\\r\\n", size, framed[max(0, len(framed)-8):])
		}
		got, err := io.ReadAll(httputil.NewChunkedReader(bufio.NewReader(bytes.NewReader(framed))))
		if err != nil {
			t.Fatalf("%d bytes: decoding the framing: %v", size, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%d bytes: decoded %d bytes, not the ones framed", size, len(got))
		}
	}
}

// Send carries the method, the body and the bearer token, and no
// Authorization header without a token.
func TestSend(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		auth, has := r.Header["Authorization"]
		_, _ = w.Write([]byte(r.Method + " " + string(b) + " " + strings.Join(auth, ",") + " " + map[bool]string{true: "with", false: "without"}[has]))
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct{ token, want string }{{"t-1", "PUT {} Bearer t-1 with"}, {"", "PUT {}  without"}} {
		resp := servertest.Send(t, http.MethodPut, srv.URL, tc.token, "{}")
		got, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if string(got) != tc.want {
			t.Errorf("the server saw %q, want %q", got, tc.want)
		}
	}
}

// A gRPC server on the in-memory listener answers a connection to it.
func TestBufconnServesAndDials(t *testing.T) {
	t.Parallel()
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	conn := servertest.DialBufconn(t, servertest.ServeBufconn(t, gs))
	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Check = %v, %v; want SERVING", resp, err)
	}
}
