package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/rpcerr"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Reasons the registry puts in ErrorInfo and Problem.Reason. They are
// stable: clients and CI scripts branch on them.
const (
	ReasonInvalidContract       = "INVALID_CONTRACT"
	ReasonNeedsNotice           = "BREAKING_CHANGE_NEEDS_NOTICE"
	ReasonNeedsMigration        = "BREAKING_CHANGE_NEEDS_MIGRATION"
	ReasonEffectiveBeforePrev   = "EFFECTIVE_TIME_BEFORE_PREVIOUS_VERSION"
	ReasonNotOwner              = "NOT_SUBJECT_OWNER"
	ReasonOverrideNeedsAdmin    = "OVERRIDE_REQUIRES_ADMIN"
	ReasonBackdateNeedsAdmin    = "BACKDATE_REQUIRES_ADMIN"
	ReasonLineageCycle          = "LINEAGE_CYCLE"
	ReasonVersionScheduled      = "VERSION_SCHEDULED"
	ReasonVersionActive         = "VERSION_IS_ACTIVE"
	ReasonStatusTransition      = "STATUS_TRANSITION_NOT_ALLOWED"
	ReasonUnknownCanonicalModel = "CANONICAL_MODEL_NOT_FOUND"
)

// invalidError is a request that can never succeed as sent; it becomes
// InvalidArgument with one field violation per problem.
type invalidError struct {
	msg        string
	violations []rpcerr.FieldViolation
}

func (e *invalidError) Error() string {
	parts := make([]string, 0, len(e.violations))
	for _, v := range e.violations {
		parts = append(parts, v.Field+": "+v.Description)
	}
	return e.msg + ": " + strings.Join(parts, "; ")
}

func invalid(msg string, violations ...rpcerr.FieldViolation) error {
	return &invalidError{msg: msg, violations: violations}
}

// refusedError is a request the registry's rules refuse in the current
// state; it becomes FailedPrecondition listing each problem and, for
// breaking versions, each breaking change.
type refusedError struct {
	reason   string
	msg      string
	metadata map[string]string
	problems []*registryv1.Problem
	changes  []*registryv1.Change
}

func (e *refusedError) Error() string { return e.msg }

// deniedError is a caller acting outside its rights: PermissionDenied.
type deniedError struct {
	reason string
	msg    string
}

func (e *deniedError) Error() string { return e.msg }

// notFoundError names what is missing: NotFound.
type notFoundError struct {
	kind, name, hint string
}

func (e *notFoundError) Error() string {
	return fmt.Sprintf("%s %q not found: %s", e.kind, e.name, e.hint)
}

// statusOf turns a domain error into the status the client sees. Errors it
// does not know are internal: logged in full, masked for the client.
func statusOf(ctx context.Context, log *slog.Logger, err error) error {
	if err == nil {
		return nil
	}
	var (
		inv *invalidError
		ref *refusedError
		den *deniedError
		nf  *notFoundError
	)
	switch {
	case errors.As(err, &inv):
		return rpcerr.InvalidArgument(inv.Error(), inv.violations...)
	case errors.As(err, &ref):
		var vs []rpcerr.PreconditionViolation
		for _, c := range ref.changes {
			if c.GetLevel() == registryv1.ChangeLevel_CHANGE_LEVEL_BREAKING {
				vs = append(vs, rpcerr.PreconditionViolation{Type: c.GetRule(), Subject: c.GetPath(), Description: c.GetMessage()})
			}
		}
		for _, p := range ref.problems {
			vs = append(vs, rpcerr.PreconditionViolation{Type: p.GetReason(), Subject: p.GetPath(), Description: p.GetMessage()})
		}
		return rpcerr.FailedPrecondition(ref.reason, ref.msg, ref.metadata, vs...)
	case errors.As(err, &den):
		return rpcerr.WithReason(codes.PermissionDenied, den.reason, den.msg, nil)
	case errors.As(err, &nf):
		return rpcerr.NotFound(nf.kind, nf.name, nf.hint)
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "the call was canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "the call's deadline passed before it completed")
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	log.ErrorContext(ctx, "registry internal error", "error", err)
	return status.Error(codes.Internal, "internal error; the server log has the details")
}
