package adapter

import (
	"context"

	"google.golang.org/grpc"

	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
)

// Server implements adapterv1.AdapterServiceServer. Methods not defined
// here answer Unimplemented.
type Server struct {
	adapterv1.UnimplementedAdapterServiceServer

	cfg Config
}

// New returns an adapter server.
func New(_ context.Context, cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Server{cfg: cfg}, nil
}

// Register registers the adapter on a gRPC server.
func (s *Server) Register(r grpc.ServiceRegistrar) { adapterv1.RegisterAdapterServiceServer(r, s) }

// Close releases nothing yet; it keeps the service lifecycle uniform.
func (s *Server) Close() error { return nil }
