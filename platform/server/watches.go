package server

import (
	"context"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/seamdata/seam/platform/rpcerr"
)

// watches ends the read-only server streams (the watches: alerts, events)
// when shutdown begins. A watch never ends on its own, so without this one
// open console tab or `seam events watch` holds the graceful stop for its
// whole timeout. Cutting a read loses nothing: its client resumes after the
// last sequence it received, on this server once it is back or on another
// replica. Streams that change state (a replay, an ingest) are left to
// finish within the timeout.
type watches struct {
	ctx  context.Context
	stop context.CancelFunc
	mu   sync.Mutex
	read map[string]bool
}

func newWatches() *watches {
	ctx, stop := context.WithCancel(context.Background())
	return &watches{ctx: ctx, stop: stop, read: map[string]bool{}}
}

// interceptor gives each read-only server stream a context that also ends
// at shutdown, and answers a stream it ended so with UNAVAILABLE, which
// clients retry.
func (w *watches) interceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if info.IsClientStream || !info.IsServerStream || !w.readOnly(info.FullMethod) {
		return handler(srv, ss)
	}
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	unhook := context.AfterFunc(w.ctx, cancel)
	defer unhook()
	err := handler(srv, &ctxStream{ServerStream: ss, ctx: ctx})
	if w.ctx.Err() != nil && ss.Context().Err() == nil {
		return rpcerr.WithReason(codes.Unavailable, "SERVER_SHUTTING_DOWN", "the server is shutting down: watch again to resume after the last sequence received", nil)
	}
	return err
}

// readOnly says whether a method is marked NO_SIDE_EFFECTS in its proto.
func (w *watches) readOnly(fullMethod string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r, ok := w.read[fullMethod]; ok {
		return r
	}
	name := strings.ReplaceAll(strings.TrimPrefix(fullMethod, "/"), "/", ".")
	r := false
	if d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name)); err == nil {
		if md, ok := d.(protoreflect.MethodDescriptor); ok {
			if opts, ok := md.Options().(*descriptorpb.MethodOptions); ok {
				r = opts.GetIdempotencyLevel() == descriptorpb.MethodOptions_NO_SIDE_EFFECTS
			}
		}
	}
	w.read[fullMethod] = r
	return r
}

// ctxStream is a server stream with another context.
type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *ctxStream) Context() context.Context { return s.ctx }
