package server

import (
	"context"
	"net"
	"testing"
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
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, Listeners{GRPC: gl, HTTP: hl}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + hl.Addr().String()
}
