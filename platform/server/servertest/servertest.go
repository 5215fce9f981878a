// Package servertest helps tests and the chaos suite run servers and talk
// to them: a serve loop kept going until the test ends, a gRPC server on
// an in-memory listener and connections to it, a request to the HTTP
// gateway with a bearer token, and the hostile bodies (without end,
// chunked) of raw HTTP/1.1 requests that net/http's client would not send.
package servertest

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
)

// RunUntilCleanup runs run (a server's Serve or Run loop) in a goroutine
// until the test ends; then it cancels run's context, waits for it to
// return and fails the test if it returned an error, named by what.
func RunUntilCleanup(t testing.TB, what string, run func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: %v", what, err)
		}
	})
}

// ServeBufconn serves gs on an in-memory listener until the test ends,
// then stops it; DialBufconn connects to the listener it returns.
func ServeBufconn(t testing.TB, gs *grpc.Server) *bufconn.Listener {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return lis
}

// DialBufconn returns a client connection to lis, without transport
// security and with opts, closed when the test ends.
func DialBufconn(t testing.TB, lis *bufconn.Listener, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	opts = append([]grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	}, opts...)
	conn, err := grpc.NewClient("passthrough:///bufconn", opts...)
	if err != nil {
		t.Fatalf("dial the in-memory listener: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// Send makes a request to url, with token as its bearer token unless it
// is empty, and returns the response; the caller closes its body.
func Send(t testing.TB, method, url, token, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp
}

// Endless returns a body that starts with head and then sends blanks
// forever: the start of a JSON request that never ends. Bound it with
// io.LimitReader.
func Endless(head string) io.Reader { return &endless{head: head} }

type endless struct {
	head    string
	started bool
}

func (e *endless) Read(p []byte) (int, error) {
	if !e.started {
		e.started = true
		return copy(p, e.head), nil
	}
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// Chunked frames r as an HTTP/1.1 chunked body (Transfer-Encoding:
// chunked), in chunks of up to 256 KB, ended by the last, empty chunk.
// A failure to read r ends the body with that error instead.
func Chunked(r io.Reader) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		cw := httputil.NewChunkedWriter(pw)
		_, err := io.CopyBuffer(cw, r, make([]byte, 256<<10))
		if err == nil {
			err = cw.Close() // the last chunk
		}
		if err == nil {
			_, err = io.WriteString(pw, "\r\n") // and no trailers
		}
		pw.CloseWithError(err)
	}()
	return pr
}
