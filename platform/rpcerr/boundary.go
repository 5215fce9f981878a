package rpcerr

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Boundary is where a server's errors become what its clients see. Its
// interceptors recover panics and map every error a unary or stream
// handler returns: statuses and Errors keep their code and details (also
// when wrapped with fmt.Errorf and %w), context errors keep their meaning,
// and anything else is logged with an error id and the trace id and
// answered as Internal with that id alone. Its codec turns a request that
// cannot be decoded (invalid UTF-8 in a string field, broken wire format)
// into InvalidArgument naming the field, where gRPC alone answers Internal.
type Boundary struct {
	log *slog.Logger
	// undecodable holds, per request message the codec could not decode,
	// why; the interceptors refuse the request before any handler sees it.
	undecodable sync.Map
}

// NewBoundary returns the boundary of one server, logging to log.
func NewBoundary(log *slog.Logger) *Boundary {
	return &Boundary{log: log}
}

// UnaryInterceptor returns the interceptor of a boundary without its codec,
// for servers and tests that only need the error mapping.
func UnaryInterceptor(log *slog.Logger) grpc.UnaryServerInterceptor {
	return NewBoundary(log).UnaryInterceptor()
}

// StreamInterceptor is UnaryInterceptor for streaming handlers.
func StreamInterceptor(log *slog.Logger) grpc.StreamServerInterceptor {
	return NewBoundary(log).StreamInterceptor()
}

// UnaryInterceptor recovers panics and maps errors of unary handlers.
func (b *Boundary) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		if bad := b.takeUndecodable(req); bad != nil {
			return nil, bad
		}
		defer func() {
			if r := recover(); r != nil {
				resp, err = nil, b.internal(ctx, info.FullMethod, fmt.Errorf("panic: %v\n%s", r, debug.Stack()))
			}
		}()
		resp, err = handler(ctx, req)
		err = b.toStatus(ctx, info.FullMethod, err)
		if noRetry(err) {
			_ = grpc.SetTrailer(ctx, pushbackNever)
		}
		return resp, err
	}
}

// StreamInterceptor recovers panics and maps errors of streaming handlers.
func (b *Boundary) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		ctx := ss.Context()
		defer func() {
			if r := recover(); r != nil {
				err = b.internal(ctx, info.FullMethod, fmt.Errorf("panic: %v\n%s", r, debug.Stack()))
			}
		}()
		err = b.toStatus(ctx, info.FullMethod, handler(srv, &checkedStream{ServerStream: ss, b: b}))
		if noRetry(err) {
			ss.SetTrailer(pushbackNever)
		}
		return err
	}
}

// pushbackNever tells a gRPC client not to retry the call on its own
// (gRFC A6 server pushback).
var pushbackNever = metadata.Pairs("grpc-retry-pushback-ms", "-1")

// noRetry reports whether err is this server's answer that a dependency
// could not answer. Its callers' automatic retries would spend their own
// deadline asking again and lose this answer for DeadlineExceeded (and
// retries at every hop multiply); a pipeline retrying later still may.
func noRetry(err error) bool {
	return status.Code(err) == codes.Unavailable && Reason(err) == ReasonDependencyUnavailable
}

// checkedStream refuses stream messages the codec could not decode.
type checkedStream struct {
	grpc.ServerStream
	b *Boundary
}

func (s *checkedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if bad := s.b.takeUndecodable(m); bad != nil {
		return bad
	}
	return nil
}

// toStatus maps an error a handler returned to what the client sees.
func (b *Boundary) toStatus(ctx context.Context, method string, err error) error {
	if err == nil {
		return nil
	}
	// A status (or Error), also wrapped: its code and details, with the
	// message of the whole chain. Unknown is what a status made from a
	// plain error becomes, so it is masked like one.
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
		var e *Error
		if errors.As(err, &e) && e.cause != nil && st.Code() == codes.Unavailable {
			b.log.WarnContext(ctx, "a dependency could not answer", "method", method, "answer", st.Message(), "cause", e.cause)
		}
		return st.Err()
	}
	switch Code(err) {
	case codes.Canceled:
		return status.Error(codes.Canceled, "the call was canceled")
	case codes.DeadlineExceeded:
		return status.Error(codes.DeadlineExceeded, "the call's deadline passed before it completed")
	}
	return b.internal(ctx, method, err)
}

// internal logs err under a fresh error id (the log handler adds the trace
// id) and returns an Internal status carrying only that id.
func (b *Boundary) internal(ctx context.Context, method string, err error) error {
	id := errorID()
	b.log.ErrorContext(ctx, "internal error", "error_id", id, "method", method, "error", err)
	st, derr := status.New(codes.Internal, fmt.Sprintf("internal error %s; the server log has the details under error_id=%s", id, id)).
		WithDetails(&errdetails.ErrorInfo{Reason: ReasonInternal, Domain: Domain, Metadata: map[string]string{"error_id": id}})
	if derr != nil {
		return status.Errorf(codes.Internal, "internal error %s; the server log has the details under error_id=%s", id, id)
	}
	return st.Err()
}

func errorID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// Codec returns the server codec of the boundary: protobuf, with requests
// that do not decode reported to the interceptors instead of to gRPC,
// which would answer Internal. Install it with grpc.ForceServerCodecV2 and
// the boundary's interceptors on the same server.
func (b *Boundary) Codec() encoding.CodecV2 {
	return &codec{b: b, proto: encoding.GetCodecV2(protoenc.Name)}
}

type codec struct {
	b     *Boundary
	proto encoding.CodecV2
}

func (c *codec) Name() string { return protoenc.Name }

func (c *codec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

func (c *codec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.proto.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	m, ok := v.(proto.Message)
	if !ok {
		return err
	}
	c.b.undecodable.Store(v, undecodable(m.ProtoReflect().Descriptor(), data.Materialize(), err))
	return nil
}

func (b *Boundary) takeUndecodable(m any) error {
	if m == nil {
		return nil
	}
	if bad, ok := b.undecodable.LoadAndDelete(m); ok {
		return bad.(error)
	}
	return nil
}

// undecodable builds the InvalidArgument of a request that did not decode,
// naming the first string field with invalid UTF-8 when that is the cause.
func undecodable(md protoreflect.MessageDescriptor, data []byte, err error) error {
	if field := invalidUTF8(md, data, ""); field != "" {
		return InvalidArgument(fmt.Sprintf("the request is not a valid %s: %s holds invalid UTF-8", md.Name(), field),
			FieldViolation{Field: field, Description: "not valid UTF-8; send text as UTF-8, or binary data in a bytes field"})
	}
	return InvalidArgument(fmt.Sprintf("the request is not a valid %s: %v", md.Name(), err),
		FieldViolation{Field: "", Description: err.Error()})
}

// invalidUTF8 returns the path of the first string field in the encoded
// message data that is not valid UTF-8, or "".
func invalidUTF8(md protoreflect.MessageDescriptor, data []byte, prefix string) string {
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return ""
		}
		data = data[n:]
		n = protowire.ConsumeFieldValue(num, typ, data)
		if n < 0 {
			return ""
		}
		value := data[:n]
		data = data[n:]
		fd := md.Fields().ByNumber(num)
		if fd == nil || typ != protowire.BytesType {
			continue
		}
		body, _ := protowire.ConsumeBytes(value)
		path := string(fd.Name())
		if prefix != "" {
			path = prefix + "." + path
		}
		switch fd.Kind() {
		case protoreflect.StringKind:
			if !utf8.Valid(body) {
				return path
			}
		case protoreflect.MessageKind, protoreflect.GroupKind:
			if p := invalidUTF8(fd.Message(), body, path); p != "" {
				return p
			}
		}
	}
	return ""
}
