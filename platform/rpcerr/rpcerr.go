// Package rpcerr is the one place where Seam turns errors into gRPC
// statuses: constructors for statuses with details (field violations,
// reasons) and server interceptors that recover panics and mask internal
// errors, so no handler leaks internals or crashes the process.
package rpcerr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
)

// Domain is the ErrorInfo domain of every Seam error.
const Domain = "seam.dev"

// FieldViolation names a bad request field and what is wrong with it.
type FieldViolation struct {
	Field       string
	Description string
}

// InvalidArgument returns an InvalidArgument status with a BadRequest
// detail listing violations.
func InvalidArgument(msg string, violations ...FieldViolation) error {
	br := &errdetails.BadRequest{}
	for _, v := range violations {
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: v.Field, Description: v.Description})
	}
	if len(violations) == 0 {
		return status.Error(codes.InvalidArgument, msg)
	}
	return withDetails(codes.InvalidArgument, msg, br)
}

// NotFound returns a NotFound status with a ResourceInfo detail.
func NotFound(kind, name, hint string) error {
	msg := fmt.Sprintf("%s %q not found", kind, name)
	if hint != "" {
		msg += ": " + hint
	}
	return withDetails(codes.NotFound, msg, &errdetails.ResourceInfo{ResourceType: kind, ResourceName: name, Description: hint})
}

// AlreadyExists returns an AlreadyExists status with a ResourceInfo detail.
func AlreadyExists(kind, name string) error {
	return withDetails(codes.AlreadyExists, fmt.Sprintf("%s %q already exists", kind, name),
		&errdetails.ResourceInfo{ResourceType: kind, ResourceName: name})
}

// PreconditionViolation is one unmet precondition.
type PreconditionViolation struct {
	Type        string
	Subject     string
	Description string
}

// FailedPrecondition returns a FailedPrecondition status with an ErrorInfo
// carrying reason and metadata, and a PreconditionFailure listing
// violations.
func FailedPrecondition(reason, msg string, metadata map[string]string, violations ...PreconditionViolation) error {
	pf := &errdetails.PreconditionFailure{}
	for _, v := range violations {
		pf.Violations = append(pf.Violations, &errdetails.PreconditionFailure_Violation{Type: v.Type, Subject: v.Subject, Description: v.Description})
	}
	info := &errdetails.ErrorInfo{Reason: reason, Domain: Domain, Metadata: metadata}
	if len(violations) == 0 {
		return withDetails(codes.FailedPrecondition, msg, info)
	}
	return withDetails(codes.FailedPrecondition, msg, info, pf)
}

// WithReason returns a status of code with an ErrorInfo reason.
func WithReason(code codes.Code, reason, msg string, metadata map[string]string) error {
	return withDetails(code, msg, &errdetails.ErrorInfo{Reason: reason, Domain: Domain, Metadata: metadata})
}

// Unavailable returns a retryable Unavailable status naming the dependency.
func Unavailable(dependency string, err error) error {
	return withDetails(codes.Unavailable, fmt.Sprintf("%s is unavailable, retry later: %v", dependency, status.Convert(err).Message()),
		&errdetails.ErrorInfo{Reason: "DEPENDENCY_UNAVAILABLE", Domain: Domain, Metadata: map[string]string{"dependency": dependency}})
}

func withDetails(code codes.Code, msg string, details ...protoadapt.MessageV1) error {
	st, err := status.New(code, msg).WithDetails(details...)
	if err != nil {
		// Details that cannot be marshalled are a programming error; the
		// code and message still reach the caller.
		return status.Error(code, msg)
	}
	return st.Err()
}

// Reason returns the ErrorInfo reason of err, if any.
func Reason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.Reason
		}
	}
	return ""
}

// toStatus maps an error a handler returned to what the client sees.
// Statuses pass through; context errors keep their meaning; anything else
// is an internal error whose text stays in the log.
func toStatus(ctx context.Context, log *slog.Logger, method string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "the call was canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "the call's deadline passed before it completed")
	}
	log.ErrorContext(ctx, "internal error", "method", method, "error", err)
	return status.Error(codes.Internal, "internal error; the server log has the details")
}

// UnaryInterceptor recovers panics and maps errors of unary handlers.
func UnaryInterceptor(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				log.ErrorContext(ctx, "panic in handler", "method", info.FullMethod, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				resp, err = nil, status.Error(codes.Internal, "internal error; the server log has the details")
			}
		}()
		resp, err = handler(ctx, req)
		return resp, toStatus(ctx, log, info.FullMethod, err)
	}
}

// StreamInterceptor recovers panics and maps errors of streaming handlers.
func StreamInterceptor(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		ctx := ss.Context()
		defer func() {
			if r := recover(); r != nil {
				log.ErrorContext(ctx, "panic in handler", "method", info.FullMethod, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				err = status.Error(codes.Internal, "internal error; the server log has the details")
			}
		}()
		return toStatus(ctx, log, info.FullMethod, handler(srv, ss))
	}
}
