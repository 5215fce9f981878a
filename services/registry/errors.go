package registry

import (
	"strings"

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
	ReasonNotConsumerOwner      = "NOT_CONSUMER_OWNER"
)

// The registry's domain errors are rpcerr errors, built here so each kind
// keeps one shape; platform/rpcerr turns them into statuses at the
// boundary.

// invalid is a request that can never succeed as sent: InvalidArgument
// with one field violation per problem.
func invalid(msg string, violations ...rpcerr.FieldViolation) error {
	parts := make([]string, 0, len(violations))
	for _, v := range violations {
		parts = append(parts, v.Field+": "+v.Description)
	}
	return rpcerr.InvalidArgument(msg+": "+strings.Join(parts, "; "), violations...)
}

// refused is a request the registry's rules refuse in the current state:
// FailedPrecondition listing each problem and, for breaking versions, each
// breaking change.
func refused(reason, msg string, metadata map[string]string, problems []*registryv1.Problem, changes []*registryv1.Change) error {
	var vs []rpcerr.PreconditionViolation
	for _, c := range changes {
		if c.GetLevel() == registryv1.ChangeLevel_CHANGE_LEVEL_BREAKING {
			vs = append(vs, rpcerr.PreconditionViolation{Type: c.GetRule(), Subject: c.GetPath(), Description: c.GetMessage()})
		}
	}
	for _, p := range problems {
		vs = append(vs, rpcerr.PreconditionViolation{Type: p.GetReason(), Subject: p.GetPath(), Description: p.GetMessage()})
	}
	return rpcerr.FailedPrecondition(reason, msg, metadata, vs...)
}

// notFound names what is missing.
func notFound(kind, name, hint string) error {
	return rpcerr.NotFound(kind, name, hint)
}
