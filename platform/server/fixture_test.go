package server

import (
	"context"
	"net"
	"testing"

	"github.com/seamdata/seam/platform/server/servertest"
)

// serveLoopback serves srv on two loopback listeners until the test ends,
// failing the test if Serve does, and returns the REST base URL.
func serveLoopback(t *testing.T, srv *Server) string {
	t.Helper()
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	servertest.RunUntilCleanup(t, "Serve", func(ctx context.Context) error { return srv.Serve(ctx, Listeners{GRPC: gl, HTTP: hl}) })
	return "http://" + hl.Addr().String()
}
