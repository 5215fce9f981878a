// Package rpcerr is the one place where Seam turns errors into gRPC
// statuses: typed errors with details (field violations, reasons) that
// handlers return, and the server boundary (interceptors and codec) that
// recovers panics, keeps details through re-wrapping, refuses undecodable
// requests as InvalidArgument and masks internal errors behind an error id,
// so no handler leaks internals or crashes the process.
package rpcerr

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
)

// Domain is the ErrorInfo domain of every Seam error.
const Domain = "seam.dev"

// Reasons this package puts in ErrorInfo.
const (
	// ReasonDependencyUnavailable marks an Unavailable error; its metadata
	// names the dependency that could not answer.
	ReasonDependencyUnavailable = "DEPENDENCY_UNAVAILABLE"
	// ReasonInternal marks a masked internal error; its metadata holds the
	// error id the server logged the details under.
	ReasonInternal = "INTERNAL"
)

// Error is a domain error: the status a client sees, and the cause that
// only the server log sees. Handlers return it as is; the boundary turns it
// into the status.
type Error struct {
	code    codes.Code
	msg     string
	details []protoadapt.MessageV1
	cause   error
}

// Error returns the message the client sees.
func (e *Error) Error() string { return e.msg }

// Unwrap returns the cause, which is logged and never sent.
func (e *Error) Unwrap() error { return e.cause }

// GRPCStatus returns the status the client sees, so status.Code and
// status.Convert work on an Error and on anything wrapping one.
func (e *Error) GRPCStatus() *status.Status {
	st := status.New(e.code, e.msg)
	if len(e.details) == 0 {
		return st
	}
	withDetails, err := st.WithDetails(e.details...)
	if err != nil {
		// Details that cannot be marshalled are a programming error; the
		// code and message still reach the caller.
		return st
	}
	return withDetails
}

func newError(code codes.Code, msg string, details ...protoadapt.MessageV1) error {
	return &Error{code: code, msg: msg, details: details}
}

// FieldViolation names a bad request field and what is wrong with it.
type FieldViolation struct {
	Field       string
	Description string
}

// InvalidArgument returns an InvalidArgument error with a BadRequest
// detail listing violations.
func InvalidArgument(msg string, violations ...FieldViolation) error {
	if len(violations) == 0 {
		return newError(codes.InvalidArgument, msg)
	}
	br := &errdetails.BadRequest{}
	for _, v := range violations {
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: v.Field, Description: v.Description})
	}
	return newError(codes.InvalidArgument, msg, br)
}

// NotFound returns a NotFound error with a ResourceInfo detail.
func NotFound(kind, name, hint string) error {
	msg := fmt.Sprintf("%s %q not found", kind, name)
	if hint != "" {
		msg += ": " + hint
	}
	return newError(codes.NotFound, msg, &errdetails.ResourceInfo{ResourceType: kind, ResourceName: name, Description: hint})
}

// AlreadyExists returns an AlreadyExists error with a ResourceInfo detail.
func AlreadyExists(kind, name string) error {
	return newError(codes.AlreadyExists, fmt.Sprintf("%s %q already exists", kind, name),
		&errdetails.ResourceInfo{ResourceType: kind, ResourceName: name})
}

// PreconditionViolation is one unmet precondition.
type PreconditionViolation struct {
	Type        string
	Subject     string
	Description string
}

// FailedPrecondition returns a FailedPrecondition error with an ErrorInfo
// carrying reason and metadata, and a PreconditionFailure listing
// violations.
func FailedPrecondition(reason, msg string, metadata map[string]string, violations ...PreconditionViolation) error {
	info := &errdetails.ErrorInfo{Reason: reason, Domain: Domain, Metadata: metadata}
	if len(violations) == 0 {
		return newError(codes.FailedPrecondition, msg, info)
	}
	pf := &errdetails.PreconditionFailure{}
	for _, v := range violations {
		pf.Violations = append(pf.Violations, &errdetails.PreconditionFailure_Violation{Type: v.Type, Subject: v.Subject, Description: v.Description})
	}
	return newError(codes.FailedPrecondition, msg, info, pf)
}

// PermissionDenied returns a PermissionDenied error with an ErrorInfo
// reason, for a caller acting outside its rights.
func PermissionDenied(reason, msg string) error {
	return WithReason(codes.PermissionDenied, reason, msg, nil)
}

// Unauthenticated returns an Unauthenticated error with an ErrorInfo
// reason, for a call whose credentials are missing, malformed, unknown or
// expired.
func Unauthenticated(reason, msg string) error {
	return WithReason(codes.Unauthenticated, reason, msg, nil)
}

// WithDetails returns an error of code with an ErrorInfo reason and
// metadata, followed by details (a service's own detail messages, such
// as the gate's BlockedDetail).
func WithDetails(code codes.Code, reason, msg string, metadata map[string]string, details ...protoadapt.MessageV1) error {
	all := append([]protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: reason, Domain: Domain, Metadata: metadata}}, details...)
	return newError(code, msg, all...)
}

// Relay returns a peer's failed call, err, as this server's answer: code
// with msg (which says what the peer said, in this server's words), the
// peer's details kept as they came (its field violations, its reason and
// metadata), and err as the logged cause. It wraps a peer's error once, so
// a caller reads the same details whichever service first refused.
func Relay(code codes.Code, msg string, err error) error {
	var details []protoadapt.MessageV1
	if st, ok := status.FromError(err); ok {
		for _, d := range st.Details() {
			if m, ok := d.(protoadapt.MessageV1); ok {
				details = append(details, m)
			}
		}
	}
	return &Error{code: code, msg: msg, details: details, cause: err}
}

// WithReason returns an error of code with an ErrorInfo reason.
func WithReason(code codes.Code, reason, msg string, metadata map[string]string) error {
	return newError(code, msg, &errdetails.ErrorInfo{Reason: reason, Domain: Domain, Metadata: metadata})
}

// Unavailable returns a retryable Unavailable error naming the dependency
// that could not answer, with err, the failed call's error, as its logged
// cause. The message never carries what the transport said (host names,
// ports, dial errors): only what a caller can act on. When err is itself a
// peer's Unavailable about its own dependency (the adapter saying idmap is
// down), that dependency is the one named, with dependency as the peer
// that reported it, so the message points at the service that is down.
func Unavailable(dependency string, err error) error {
	if inner := seamStatus(err); inner != nil && inner.Code() == codes.Unavailable {
		if info := errorInfo(inner); info != nil && info.GetReason() == ReasonDependencyUnavailable {
			down := info.GetMetadata()["dependency"]
			if down != "" && down != dependency {
				md := map[string]string{"dependency": down, "reported_by": dependency}
				return &Error{code: codes.Unavailable, cause: err,
					msg:     fmt.Sprintf("%s (reported by %s)", inner.Message(), dependency),
					details: []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: ReasonDependencyUnavailable, Domain: Domain, Metadata: md}}}
			}
		}
	}
	msg := dependency + " is unavailable, retry later"
	if why := describe(err); why != "" {
		msg += ": " + why
	}
	return &Error{code: codes.Unavailable, msg: msg, cause: err,
		details: []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: ReasonDependencyUnavailable, Domain: Domain,
			Metadata: map[string]string{"dependency": dependency}}}}
}

// describe says why a call failed in words safe to send: the text of a
// status a Seam server produced (it is written for clients), a summary by
// code of one the transport produced (which names addresses), and the text
// around it of errors that wrap a status.
func describe(err error) string {
	if err == nil {
		return ""
	}
	var gs interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &gs) {
		return err.Error()
	}
	inner := gs.GRPCStatus()
	safe := summary(inner)
	if seamStatus(err) != nil {
		safe = inner.Message()
	}
	// Keep what the layers around the status said, replacing the status's
	// own text.
	full, own := err.Error(), ""
	if e, ok := gs.(error); ok {
		own = e.Error()
	}
	if own != "" && own != full && strings.Contains(full, own) {
		return strings.Replace(full, own, safe, 1)
	}
	return safe
}

// summary describes a transport status by its code.
func summary(st *status.Status) string {
	switch st.Code() {
	case codes.DeadlineExceeded:
		return "it did not answer within the call's deadline"
	case codes.Unavailable:
		return "it could not be reached"
	case codes.Canceled:
		return "the call was canceled"
	case codes.ResourceExhausted:
		return "its answer exceeded a size limit"
	default:
		return "it answered " + st.Code().String()
	}
}

// Code is the code a call failing with err ends with: a status's own
// (also wrapped), Canceled or DeadlineExceeded for an error of a context
// that ended, Unknown for any other error, OK for nil: what the boundary
// answers, but for masking Unknown as Internal.
func Code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
		return st.Code()
	}
	switch {
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	return codes.Unknown
}

// seamStatus returns the status err carries when a Seam server produced it
// (it has a detail of Seam's domain), or nil.
func seamStatus(err error) *status.Status {
	var gs interface{ GRPCStatus() *status.Status }
	if err == nil || !errors.As(err, &gs) {
		return nil
	}
	st := gs.GRPCStatus()
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			if d.GetDomain() == Domain {
				return st
			}
		case *errdetails.BadRequest, *errdetails.ResourceInfo, *errdetails.PreconditionFailure:
			return st
		}
	}
	return nil
}

func errorInfo(st *status.Status) *errdetails.ErrorInfo {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	return nil
}

// Reason returns the ErrorInfo reason of err, if any.
func Reason(err error) string {
	if info := errorInfo(status.Convert(err)); info != nil {
		return info.GetReason()
	}
	return ""
}
