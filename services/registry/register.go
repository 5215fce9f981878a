package registry

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/core/admission"
	"github.com/seamdata/seam/core/classify"
	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/rpcerr"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// defaultCompatibility applies to subjects whose first version leaves the
// mode unspecified; BACKWARD is the schema-registry default.
const defaultCompatibility = contractv1.Compatibility_COMPATIBILITY_BACKWARD

// proposal is a version someone asks to register (or check).
type proposal struct {
	principal *auth.Principal
	now       time.Time
	contract  *contractv1.Contract
	effective *timestamppb.Timestamp
	// effectiveIn, when set, puts the effective time that long after now:
	// the registry's clock, not the caller's, decides what "+14d" means.
	effectiveIn string
	override    *registryv1.NoticeOverride
	// dataEffective and dataReason set the data date from which the
	// version judges partitions (contracts with a partition time).
	dataEffective *timestamppb.Timestamp
	dataReason    string
	// subject and history are the subject's current state (nil and empty
	// for a new subject).
	subject *registryv1.Subject
	history []*registryv1.ContractVersion
	// model returns a registered canonical model version (0: latest), or
	// nil when there is none.
	model func(name string, version int32) *registryv1.CanonicalModelVersion
}

// decision is what the registry's rules make of a proposal.
type decision struct {
	// version is the version that would be stored, status included.
	version   *registryv1.ContractVersion
	latest    *registryv1.ContractVersion
	unchanged bool
	changes   []*registryv1.Change
	breaking  bool
	// noticeOwed and earliest are set for breaking versions.
	noticeOwed time.Duration
	earliest   time.Time
	// problems keep the version from being registered as it stands.
	problems []*registryv1.Problem
	// refusal is the error registering would return: invalid, denied or
	// refused; nil when the version may be registered.
	refusal error
}

// decide applies the registration rules to p: validation, classification
// against the history, notice and migration for breaking versions, and the
// admin-only notice override. It reads no store and changes nothing, so a
// dry run and a registration decide alike.
func decide(p proposal) (*decision, error) {
	d := &decision{}
	if problems := validateProposal(p); len(problems) > 0 {
		d.refusal = invalid("the contract is invalid; fix each field below and submit it again", problems...)
		for _, v := range problems {
			d.problems = append(d.problems, &registryv1.Problem{Reason: ReasonInvalidContract, Path: v.Field, Message: v.Description})
		}
		return d, nil
	}
	if o := p.override; o != nil {
		if !p.principal.Has(auth.RoleAdmin) {
			d.refusal = rpcerr.PermissionDenied(ReasonOverrideNeedsAdmin, fmt.Sprintf(
				"only an admin may override the notice period of %q; register with enough notice or ask an admin", p.contract.GetSubject()))
			d.problems = append(d.problems, &registryv1.Problem{Reason: ReasonOverrideNeedsAdmin, Path: "override", Message: d.refusal.Error()})
			return d, nil
		}
		if strings.TrimSpace(o.GetReason()) == "" {
			d.refusal = invalid("a notice override needs a reason",
				rpcerr.FieldViolation{Field: "override.reason", Description: "empty; say why the notice period is waived (it is kept in the audit history)"})
			return d, nil
		}
	}
	if problem, refusal := decideDataDate(p); refusal != nil {
		d.refusal = refusal
		d.problems = append(d.problems, problem)
		return d, nil
	}
	fingerprint, err := contract.Fingerprint(p.contract)
	if err != nil {
		return nil, fmt.Errorf("fingerprint %s: %w", p.contract.GetSubject(), err)
	}
	if n := len(p.history); n > 0 {
		d.latest = p.history[n-1]
		if d.latest.GetFingerprint() == fingerprint {
			d.unchanged = true
			return d, nil
		}
	}

	mode := defaultCompatibility
	notice := ""
	if p.subject != nil {
		mode, notice = p.subject.GetCompatibility(), p.subject.GetNoticePeriod()
	}
	if len(p.history) > 0 {
		older := make([]*contractv1.Contract, len(p.history))
		for i, v := range p.history {
			older[i] = v.GetContract()
		}
		res := classify.Classify(older, p.contract, mode)
		d.changes, d.breaking = res.Changes, res.Breaking
		for _, c := range d.changes {
			if c.GetComparedVersion() == 0 {
				c.ComparedVersion = d.latest.GetVersion()
			}
		}
	}

	now := p.now.UTC()
	effective := now
	if p.effectiveIn != "" {
		if p.effective != nil {
			d.refusal = invalid("give effective_time or effective_in, not both",
				rpcerr.FieldViolation{Field: "effective_in", Description: "set together with effective_time; keep one"})
			return d, nil
		}
		in, err := contract.ParseNoticePeriod(p.effectiveIn)
		if err != nil || in < 0 {
			d.refusal = invalid("effective_in is not a duration",
				rpcerr.FieldViolation{Field: "effective_in", Description: fmt.Sprintf("%q: give a duration such as 14d or 336h", p.effectiveIn)})
			return d, nil
		}
		p.effective = timestamppb.New(now.Add(in))
	}
	if p.effective != nil {
		effective = p.effective.AsTime()
	}
	// Effective times never decrease with the version number, so "the
	// version active at T" has one answer.
	if d.latest != nil {
		prev := d.latest.GetEffectiveTime().AsTime()
		switch {
		case p.effective == nil && prev.After(effective):
			effective = prev
		case prev.After(effective):
			d.problems = append(d.problems, &registryv1.Problem{
				Reason: ReasonEffectiveBeforePrev, Path: "effective_time",
				Message: fmt.Sprintf("effective time %s is before v%d's %s; choose %s or later",
					effective.Format(time.RFC3339), d.latest.GetVersion(), prev.Format(time.RFC3339), prev.Format(time.RFC3339)),
			})
		}
	}
	if !d.breaking && effective.Before(now) {
		// An additive version cannot take effect in the past.
		effective = now
	}

	if d.breaking {
		owed, err := contract.ParseNoticePeriod(notice)
		if err != nil {
			return nil, fmt.Errorf("notice period of subject %s: %w", p.contract.GetSubject(), err)
		}
		d.noticeOwed, d.earliest = owed, now.Add(owed)
		if p.override == nil && effective.Before(d.earliest) {
			d.problems = append(d.problems, &registryv1.Problem{
				Reason: ReasonNeedsNotice, Path: "effective_time",
				Message: fmt.Sprintf("a breaking version of %s owes %s notice: set the effective time to %s or later (requested %s)",
					p.contract.GetSubject(), notice, d.earliest.Format(time.RFC3339), effective.Format(time.RFC3339)),
			})
		}
		if m := p.contract.GetMapping(); m.GetCanonical() == "" || len(m.GetFields()) == 0 {
			d.problems = append(d.problems, &registryv1.Problem{
				Reason: ReasonNeedsMigration, Path: "mapping",
				Message: fmt.Sprintf("a breaking version of %s needs a migration: add a mapping that names the canonical model and maps its fields", p.contract.GetSubject()),
			})
		}
	}
	if len(d.problems) > 0 {
		d.refusal = refusal(p.contract.GetSubject(), d)
		return d, nil
	}

	status := registryv1.VersionStatus_VERSION_STATUS_ACTIVE
	if effective.After(now) {
		status = registryv1.VersionStatus_VERSION_STATUS_SCHEDULED
	}
	d.version = &registryv1.ContractVersion{
		Subject:       p.contract.GetSubject(),
		Version:       d.latest.GetVersion() + 1,
		Contract:      p.contract,
		Status:        status,
		CreateTime:    timestamppb.New(now),
		EffectiveTime: timestamppb.New(effective),
		Author:        p.principal.Name,
		Changes:       d.changes,
		Breaking:      d.breaking,
		Fingerprint:   fingerprint,
	}
	if p.override != nil && d.breaking {
		d.version.Override, d.version.OverrideBy = p.override, p.principal.Name
	}
	if p.contract.GetPartitionTime() != nil {
		switch {
		case p.dataEffective != nil:
			d.version.DataEffectiveTime = p.dataEffective
			if p.dataEffective.AsTime().Before(now) {
				d.version.DataEffectiveReason, d.version.DataEffectiveBy = strings.TrimSpace(p.dataReason), p.principal.Name
			}
		case d.latest != nil:
			// A subject's first version applies to all earlier data; a
			// later one from the data date of its effective time.
			d.version.DataEffectiveTime = timestamppb.New(effective)
		}
	}
	return d, nil
}

// decideDataDate checks a requested data effective time: only for a
// contract that declares a partition time, and in the past (the incident
// fix: "v2 applies from the data date the source changed") only for an
// admin giving a reason, kept in the audit history.
func decideDataDate(p proposal) (*registryv1.Problem, error) {
	if p.dataEffective == nil {
		return nil, nil
	}
	if p.contract.GetPartitionTime() == nil {
		v := rpcerr.FieldViolation{Field: "data_effective_time", Description: "applies to contracts that declare partition_time; without one, versions take effect by wall clock"}
		return &registryv1.Problem{Reason: ReasonInvalidContract, Path: v.Field, Message: v.Description}, invalid("a data effective time needs a partition time", v)
	}
	if !p.dataEffective.AsTime().Before(p.now) {
		return nil, nil
	}
	if !p.principal.Has(auth.RoleAdmin) {
		err := rpcerr.PermissionDenied(ReasonBackdateNeedsAdmin, fmt.Sprintf(
			"only an admin may make a version of %q judge partitions from a past data date (%s); ask an admin, giving the reason",
			p.contract.GetSubject(), p.dataEffective.AsTime().Format(time.RFC3339)))
		return &registryv1.Problem{Reason: ReasonBackdateNeedsAdmin, Path: "data_effective_time", Message: err.Error()}, err
	}
	if strings.TrimSpace(p.dataReason) == "" {
		v := rpcerr.FieldViolation{Field: "data_effective_reason", Description: "empty; say why the version applies from a past data date (it is kept in the audit history)"}
		return &registryv1.Problem{Reason: ReasonInvalidContract, Path: v.Field, Message: v.Description}, invalid("a past data effective time needs a reason", v)
	}
	return nil, nil
}

// refusal builds the FailedPrecondition of a refused breaking version; its
// reason is the first missing piece, notice before migration.
func refusal(subject string, d *decision) error {
	reasons := make([]string, 0, len(d.problems))
	for _, p := range d.problems {
		reasons = append(reasons, p.GetReason())
	}
	reason := reasons[0]
	for _, r := range []string{ReasonNeedsNotice, ReasonNeedsMigration} {
		if slices.Contains(reasons, r) {
			reason = r
			break
		}
	}
	var rules []string
	for _, c := range d.changes {
		if c.GetLevel() == registryv1.ChangeLevel_CHANGE_LEVEL_BREAKING {
			rules = append(rules, c.GetRule()+" at "+c.GetPath())
		}
	}
	msg := fmt.Sprintf("%s cannot be registered as it stands: %s", subject, problemText(d.problems))
	if len(rules) > 0 {
		msg += "; breaking changes: " + strings.Join(rules, ", ")
	}
	meta := map[string]string{"subject": subject, "problems": strings.Join(reasons, ",")}
	if d.breaking {
		meta["notice_owed"] = d.noticeOwed.String()
		meta["earliest_effective_time"] = d.earliest.Format(time.RFC3339)
	}
	return refused(reason, msg, meta, d.problems, d.changes)
}

func problemText(ps []*registryv1.Problem) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.GetMessage()
	}
	return strings.Join(parts, "; ")
}

// validateProposal applies core/admission, the rules `seam validate` also
// applies to a contract file, with the registry's canonical models.
func validateProposal(p proposal) []rpcerr.FieldViolation {
	models := func(name string, version int32) (*contractv1.CanonicalModel, int32, bool) {
		m := p.model(name, version)
		return m.GetModel(), m.GetVersion(), m != nil
	}
	var out []rpcerr.FieldViolation
	for _, pr := range admission.Check(p.contract, models) {
		out = append(out, rpcerr.FieldViolation{Field: "contract." + pr.Path, Description: pr.Message})
	}
	return out
}

// nextSubject returns the subject summary after registering v. The
// version's compatibility and notice govern the versions after it.
func nextSubject(prev *registryv1.Subject, v *registryv1.ContractVersion) *registryv1.Subject {
	s := &registryv1.Subject{Name: v.GetSubject(), CreateTime: v.GetCreateTime()}
	if prev != nil {
		s.CreateTime, s.ActiveVersion = prev.GetCreateTime(), prev.GetActiveVersion()
	}
	c := v.GetContract()
	s.Owner, s.NoticePeriod, s.Compatibility = c.GetOwner(), c.GetNoticePeriod(), c.GetCompatibility()
	if s.Compatibility == contractv1.Compatibility_COMPATIBILITY_UNSPECIFIED {
		s.Compatibility = defaultCompatibility
	}
	s.LatestVersion = v.GetVersion()
	if v.GetStatus() == registryv1.VersionStatus_VERSION_STATUS_ACTIVE {
		s.ActiveVersion = v.GetVersion()
	}
	return s
}
