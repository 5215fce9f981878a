// Package admission decides whether a contract document may become a
// version: it is valid, its checks compile as the gate compiles them, and
// its mapping fills the canonical model it names as the adapter runs it.
// The registry admits versions with it and `seam validate` checks a
// contract file with it, so the two refuse the same contracts.
package admission

import (
	"errors"
	"fmt"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/mapping"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// Reasons of the problems this package adds to contract.Validate's.
const (
	ReasonCheckInvalid   = "CHECK_INVALID"
	ReasonMappingInvalid = "MAPPING_INVALID"
	ReasonModelUnknown   = "CANONICAL_MODEL_UNKNOWN"
)

// Models finds a canonical model version by name (version 0: the latest).
// ok is false when there is none.
type Models func(name string, version int32) (model *contractv1.CanonicalModel, resolved int32, ok bool)

// Check returns every problem that keeps c from being registered; none
// means it may be. models resolves the canonical model the mapping names;
// with nil models the mapping is checked only for what needs no model.
func Check(c *contractv1.Contract, models Models) contract.Problems {
	if probs := contract.Validate(c); len(probs) > 0 {
		return probs
	}
	var out contract.Problems
	if _, err := check.Compile(c); err != nil {
		out = append(out, problems(err, "checks", ReasonCheckInvalid)...)
	}
	m := c.GetMapping()
	if m.GetCanonical() == "" {
		if len(m.GetFields()) > 0 {
			out = append(out, contract.Problem{Path: "mapping.canonical", Reason: ReasonMappingInvalid, Message: "empty; name the canonical model the mapping fills"})
		}
		return out
	}
	if models == nil {
		return out
	}
	model, version, ok := models(m.GetCanonical(), m.GetCanonicalVersion())
	if !ok {
		what := fmt.Sprintf("canonical model %q", m.GetCanonical())
		if m.GetCanonicalVersion() != 0 {
			what = fmt.Sprintf("canonical model %q v%d", m.GetCanonical(), m.GetCanonicalVersion())
		}
		return append(out, contract.Problem{Path: "mapping.canonical", Reason: ReasonModelUnknown, Message: what + " is not registered; register it first (seam canonical register)"})
	}
	// The adapter compiles this same mapping to serve the version, so a
	// migration admitted here is one the adapter can run: every required
	// canonical field produced, types agreeing, sources existing.
	if _, err := mapping.CompileVersion(c, model, version, nil); err != nil {
		out = append(out, problems(err, "mapping", ReasonMappingInvalid)...)
	}
	return out
}

// problems turns a compiler's error into problems with their paths.
func problems(err error, fallback, reason string) contract.Problems {
	var probs contract.Problems
	if errors.As(err, &probs) {
		return probs
	}
	var out contract.Problems
	for _, e := range unjoin(err) {
		var ce *check.Error
		if errors.As(e, &ce) {
			out = append(out, contract.Problem{Path: ce.Path, Reason: reason, Message: ce.Msg})
			continue
		}
		out = append(out, contract.Problem{Path: fallback, Reason: reason, Message: e.Error()})
	}
	return out
}

// unjoin lists the errors inside an errors.Join.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
