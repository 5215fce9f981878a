package registry

import (
	"context"
	"fmt"
	"strings"
	"time"

	memdb "github.com/hashicorp/go-memdb"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/core/classify"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/rpcerr"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Audit actions recorded in a subject's history.
const (
	auditRegister  = "REGISTER"
	auditOverride  = "NOTICE_OVERRIDE"
	auditBackdate  = "DATA_DATE_BACKDATED"
	auditActivate  = "ACTIVATE"
	auditSupersede = "SUPERSEDE"
	auditDeprecate = "DEPRECATE"
	auditRetire    = "RETIRE"
)

// schedulerPrincipal is the author of what the registry does on its own.
const schedulerPrincipal = "registry-scheduler"

// knownSubject returns a subject from the read model or NotFound.
func (s *Server) knownSubject(txn *memdb.Txn, name string) (*registryv1.Subject, error) {
	if name == "" {
		return nil, required("subject", `"shop.orders"`)
	}
	subj, err := subjectOf(txn, nil, name)
	if err != nil {
		return nil, err
	}
	if subj == nil {
		return nil, notFound("subject", name, "register a first version with RegisterContract, or list subjects with ListSubjects")
	}
	return subj, nil
}

// modelVersion returns a canonical model version from the read model (0:
// the latest), or nil.
func (s *Server) modelVersion(txn *memdb.Txn, name string, version int32) *registryv1.CanonicalModelVersion {
	ms, err := modelVersions(txn, nil, name)
	if err != nil || len(ms) == 0 {
		return nil
	}
	return pickModel(ms, version)
}

func pickModel(ms []*registryv1.CanonicalModelVersion, version int32) *registryv1.CanonicalModelVersion {
	if len(ms) == 0 {
		return nil
	}
	if version == 0 {
		return ms[len(ms)-1]
	}
	for _, m := range ms {
		if m.GetVersion() == version {
			return m
		}
	}
	return nil
}

func (s *Server) checkContract(ctx context.Context, p *auth.Principal, req *registryv1.CheckContractRequest) (*registryv1.CheckContractResponse, error) {
	c, notes, err := contractOf(req.GetContract(), req.GetDocument())
	if err != nil {
		return nil, err
	}
	// The subject is known once the document is read: a token limited to
	// subjects checks only those.
	if err := auth.RequireSubject(ctx, c.GetSubject()); err != nil {
		return nil, err
	}
	txn := s.model.snapshot()
	subj, history, err := subjectWithHistory(txn, c.GetSubject())
	if err != nil {
		return nil, err
	}
	if req.GetDocument().GetInherit() {
		inherit(c, latestContract(history))
	}
	model := func(name string, version int32) *registryv1.CanonicalModelVersion {
		return s.modelVersion(txn, name, version)
	}
	d, err := decide(proposal{
		principal: p, now: s.clock(), contract: c, effective: req.GetEffectiveTime(), effectiveIn: req.GetEffectiveIn(), override: req.GetOverride(),
		dataEffective: req.GetDataEffectiveTime(), dataReason: req.GetDataEffectiveReason(),
		subject: subj, history: history, model: model,
	})
	if err != nil {
		return nil, err
	}
	report, err := s.migrationCheck(ctx, d, c, model)
	if err != nil {
		return nil, err
	}
	d.requireMigration(c.GetSubject(), report)
	resp := &registryv1.CheckContractResponse{
		Migration:     report.GetTranslations(),
		Changes:       d.changes,
		Problems:      d.problems,
		Version:       d.latest.GetVersion() + 1,
		LatestVersion: d.latest.GetVersion(),
		ImportNotes:   notes,
		Contract:      c,
	}
	switch {
	case len(d.problems) > 0 && d.problems[0].GetReason() == ReasonInvalidContract:
		resp.Verdict = registryv1.Verdict_VERDICT_INVALID
	case d.refusal != nil:
		resp.Verdict = registryv1.Verdict_VERDICT_REFUSED
	case d.unchanged:
		resp.Verdict, resp.Version = registryv1.Verdict_VERDICT_UNCHANGED, d.latest.GetVersion()
	case d.breaking:
		resp.Verdict = registryv1.Verdict_VERDICT_BREAKING_SCHEDULABLE
	default:
		resp.Verdict = registryv1.Verdict_VERDICT_ADDITIVE
	}
	if d.breaking {
		resp.NoticeOwed = subj.GetNoticePeriod()
		resp.EarliestEffectiveTime = timestamppb.New(d.earliest)
		consumers, err := consumersOf(txn, nil, "")
		if err != nil {
			return nil, err
		}
		resp.AffectedConsumers = affectedBy(consumers, c.GetSubject(), d.changes, lineageMappings(history, subj.GetActiveVersion(), c))
	}
	return resp, nil
}

// latestContract returns the contract of the newest of history, or nil.
func latestContract(history []*registryv1.ContractVersion) *contractv1.Contract {
	if len(history) == 0 {
		return nil
	}
	return history[len(history)-1].GetContract()
}

// affectedBy returns the blast radius of the breaking changes among
// changes: readers of the changed subject fields, and readers of the
// canonical fields those feed through mappings.
func affectedBy(consumers []*registryv1.Consumer, subject string, changes []*registryv1.Change, mappings []*contractv1.Mapping) []*registryv1.AffectedConsumer {
	fields, whole := breakingFields(changes)
	if whole {
		fields = nil
	} else if len(fields) == 0 {
		return nil
	}
	return blastRadius(consumers, subject, fields, feeds(mappings, fields, whole))
}

func (s *Server) registerContract(ctx context.Context, p *auth.Principal, req *registryv1.RegisterContractRequest) (*registryv1.RegisterContractResponse, error) {
	c, notes, err := contractOf(req.GetContract(), req.GetDocument())
	if err != nil {
		return nil, err
	}
	if c.GetSubject() == "" {
		return nil, required("contract.subject", `"shop.orders"`)
	}
	if !p.Owns(c.GetSubject()) {
		return nil, rpcerr.PermissionDenied(ReasonNotOwner, fmt.Sprintf(
			"%s does not own subject %q; only its owners or an admin may register versions of it", p.Name, c.GetSubject()))
	}
	var schema *registryv1.Schema
	if doc := req.GetDocument(); doc != nil {
		if schema, err = schemaOf(doc); err != nil {
			return nil, err
		}
	}
	// What a document inherits is read from the read model; the write
	// transaction makes sure the latest version is still that one.
	inheritedFrom := int32(-1)
	if req.GetDocument().GetInherit() {
		history, err := versionsOf(s.model.snapshot(), nil, c.GetSubject())
		if err != nil {
			return nil, err
		}
		inherit(c, latestContract(history))
		inheritedFrom = int32(len(history))
	}
	// idmap is asked before the write transaction, which must not wait on
	// another service; what it says depends on the contract alone.
	report, err := s.registrationMigration(ctx, p, c, req)
	if err != nil {
		return nil, err
	}
	var resp *registryv1.RegisterContractResponse
	err = s.store.Write(ctx, func(tx StoreTx) error {
		resp = nil
		subj, history, err := tx.Subject(c.GetSubject())
		if err != nil {
			return err
		}
		if inheritedFrom >= 0 && len(history) > 0 && history[len(history)-1].GetVersion() != inheritedFrom {
			return errRetryRegistration
		}
		var modelErr error
		d, err := decide(proposal{
			principal: p, now: s.clock(), contract: c, effective: req.GetEffectiveTime(), effectiveIn: req.GetEffectiveIn(), override: req.GetOverride(),
			dataEffective: req.GetDataEffectiveTime(), dataReason: req.GetDataEffectiveReason(),
			subject: subj, history: history,
			model: func(name string, version int32) *registryv1.CanonicalModelVersion {
				ms, err := tx.Model(name)
				if err != nil {
					modelErr = err
					return nil
				}
				return pickModel(ms, version)
			},
		})
		if err != nil {
			return err
		}
		if modelErr != nil {
			return modelErr
		}
		if report == nil && !d.unchanged && d.refusal == nil && s.idmap != nil && needsIdmap(c) {
			return errRetryRegistration
		}
		d.requireMigration(c.GetSubject(), report)
		if d.refusal != nil {
			return d.refusal
		}
		if d.unchanged {
			resp = &registryv1.RegisterContractResponse{Version: d.latest, Unchanged: true}
			if schema == nil || d.latest.GetSchema() != nil {
				return nil
			}
			// A schema document equal to a version registered in Seam's own
			// form names that version from now on: the version gets the
			// schema's id, its contract is untouched.
			id, err := tx.SchemaID(schema.GetFormat(), schema.GetText())
			if err != nil {
				return err
			}
			named := &registryv1.Schema{Id: id, Format: schema.GetFormat(), Text: schema.GetText()}
			if _, err := tx.UpdateVersion(d.latest.GetSubject(), d.latest.GetVersion(), func(v *registryv1.ContractVersion) bool {
				v.Schema = named
				return true
			}); err != nil {
				return err
			}
			latest := proto.CloneOf(d.latest)
			latest.Schema = named
			resp.Version = latest
			return nil
		}
		v := d.version
		if schema != nil {
			id, err := tx.SchemaID(schema.GetFormat(), schema.GetText())
			if err != nil {
				return err
			}
			v.Schema = &registryv1.Schema{Id: id, Format: schema.GetFormat(), Text: schema.GetText()}
		}
		consumers, err := tx.Consumers()
		if err != nil {
			return err
		}
		consumers, err = linkLearned(tx, consumers, claim{subject: c.GetSubject(),
			namespace: c.GetLabels()[LabelOpenLineageNamespace], name: c.GetLabels()[LabelOpenLineageName]}, p.Name, v.GetCreateTime())
		if err != nil {
			return err
		}
		var affected []*registryv1.AffectedConsumer
		if v.GetBreaking() {
			affected = affectedBy(consumers, v.GetSubject(), v.GetChanges(), lineageMappings(history, subj.GetActiveVersion(), c))
		}
		if err := tx.InsertVersion(v); err != nil {
			return err
		}
		if err := s.recordRegistration(tx, p, subj, history, v, affected); err != nil {
			return err
		}
		resp = &registryv1.RegisterContractResponse{Version: v, AffectedConsumers: affected, Migration: report.GetTranslations()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if resp.GetUnchanged() && resp.GetVersion().GetSchema() != nil {
		s.sync(ctx)
	}
	if !resp.GetUnchanged() {
		s.registrations.Add(ctx, 1, metric.WithAttributes(attribute.String("status", resp.GetVersion().GetStatus().String())))
		s.logGovernance(ctx, p.Name, resp.GetVersion())
		s.sync(ctx)
	}
	resp.ImportNotes = notes
	return resp, nil
}

// recordRegistration writes, in the registration's transaction, the
// subject summary, the events (registered; announced to the affected
// consumers when breaking; activated when it takes effect at once) and the
// audit entries.
func (s *Server) recordRegistration(tx StoreTx, p *auth.Principal, subj *registryv1.Subject, history []*registryv1.ContractVersion,
	v *registryv1.ContractVersion, affected []*registryv1.AffectedConsumer) error {
	now := v.GetCreateTime()
	active := v.GetStatus() == registryv1.VersionStatus_VERSION_STATUS_ACTIVE
	if active {
		if err := supersede(tx, history, v.GetVersion(), p.Name, now); err != nil {
			return err
		}
	}
	if err := tx.PutSubject(nextSubject(subj, v)); err != nil {
		return err
	}
	level := "additive"
	if v.GetBreaking() {
		level = "breaking"
	}
	msg := fmt.Sprintf("%s v%d registered (%s, %s), effective %s", v.GetSubject(), v.GetVersion(), level, strings.TrimPrefix(v.GetStatus().String(), "VERSION_STATUS_"), v.GetEffectiveTime().AsTime().Format(time.RFC3339))
	events := []*registryv1.Event{{
		Type: registryv1.EventType_EVENT_TYPE_VERSION_REGISTERED, Time: now, Subject: v.GetSubject(), Version: v.GetVersion(),
		Principal: p.Name, Message: msg, Changes: v.GetChanges(), EffectiveTime: v.GetEffectiveTime(),
	}}
	if v.GetBreaking() {
		names := make([]string, len(affected))
		for i, a := range affected {
			names[i] = a.GetConsumer()
		}
		events = append(events, &registryv1.Event{
			Type: registryv1.EventType_EVENT_TYPE_CHANGE_ANNOUNCED, Time: now, Subject: v.GetSubject(), Version: v.GetVersion(),
			Principal: p.Name, Consumers: names, Changes: breakingOnly(v.GetChanges()), EffectiveTime: v.GetEffectiveTime(),
			Message: fmt.Sprintf("breaking change to %s takes effect at %s (v%d); %d consumer(s) affected",
				v.GetSubject(), v.GetEffectiveTime().AsTime().Format(time.RFC3339), v.GetVersion(), len(names)),
		})
	}
	if active {
		events = append(events, activatedEvent(v, p.Name, now))
	}
	for _, e := range events {
		if err := tx.AppendEvent(e); err != nil {
			return err
		}
	}
	audits := []*registryv1.AuditEntry{{Time: now, Principal: p.Name, Action: auditRegister, Version: v.GetVersion(), Detail: msg}}
	if v.GetOverride() != nil {
		audits = append(audits, &registryv1.AuditEntry{Time: now, Principal: p.Name, Action: auditOverride, Version: v.GetVersion(),
			Detail: "notice period waived: " + v.GetOverride().GetReason()})
	}
	if v.GetDataEffectiveReason() != "" {
		audits = append(audits, &registryv1.AuditEntry{Time: now, Principal: p.Name, Action: auditBackdate, Version: v.GetVersion(),
			Detail: fmt.Sprintf("v%d judges partitions from data date %s: %s", v.GetVersion(), v.GetDataEffectiveTime().AsTime().Format(time.RFC3339), v.GetDataEffectiveReason())})
	}
	if active {
		audits = append(audits, &registryv1.AuditEntry{Time: now, Principal: p.Name, Action: auditActivate, Version: v.GetVersion(),
			Detail: fmt.Sprintf("v%d active", v.GetVersion())})
	}
	for _, a := range audits {
		if err := tx.Audit(v.GetSubject(), a); err != nil {
			return err
		}
	}
	return nil
}

// logGovernance writes the audit log's lines of a registered version
// that set a rule aside: a waived notice period and a backdated data
// date, with who did it and why (the registry's audit history keeps them
// too; the log is where an operator's tools look).
func (s *Server) logGovernance(ctx context.Context, principal string, v *registryv1.ContractVersion) {
	if o := v.GetOverride(); o != nil {
		s.log.WarnContext(ctx, "notice period waived", "audit", true, "event", "notice_waived", "principal", principal,
			"subject", v.GetSubject(), "version", v.GetVersion(), "breaking", v.GetBreaking(), "reason", o.GetReason())
	}
	if r := v.GetDataEffectiveReason(); r != "" {
		s.log.WarnContext(ctx, "data date backdated", "audit", true, "event", "data_date_backdated", "principal", principal,
			"subject", v.GetSubject(), "version", v.GetVersion(), "data_effective_time", v.GetDataEffectiveTime().AsTime().Format(time.RFC3339), "reason", r)
	}
}

func breakingOnly(changes []*registryv1.Change) []*registryv1.Change {
	var out []*registryv1.Change
	for _, c := range changes {
		if c.GetLevel() == registryv1.ChangeLevel_CHANGE_LEVEL_BREAKING {
			out = append(out, c)
		}
	}
	return out
}

func activatedEvent(v *registryv1.ContractVersion, principal string, now *timestamppb.Timestamp) *registryv1.Event {
	e := &registryv1.Event{
		Type: registryv1.EventType_EVENT_TYPE_VERSION_ACTIVATED, Time: now, Subject: v.GetSubject(), Version: v.GetVersion(),
		Principal: principal, EffectiveTime: v.GetEffectiveTime(),
		Message: fmt.Sprintf("%s v%d is now active", v.GetSubject(), v.GetVersion()),
	}
	if v.GetActivationHold() != "" {
		// It waited past its effective time: it takes effect now.
		e.EffectiveTime = now
		e.Message += fmt.Sprintf(", its migration ready (scheduled for %s, held since)", v.GetEffectiveTime().AsTime().Format(time.RFC3339))
	}
	return e
}

// supersede marks every earlier ACTIVE (or still SCHEDULED) version of a
// subject SUPERSEDED when version takes over.
func supersede(tx StoreTx, history []*registryv1.ContractVersion, version int32, principal string, now *timestamppb.Timestamp) error {
	for _, h := range history {
		if h.GetVersion() >= version {
			continue
		}
		changed, err := tx.SetVersionStatus(h.GetSubject(), h.GetVersion(),
			[]registryv1.VersionStatus{registryv1.VersionStatus_VERSION_STATUS_ACTIVE, registryv1.VersionStatus_VERSION_STATUS_SCHEDULED},
			registryv1.VersionStatus_VERSION_STATUS_SUPERSEDED)
		if err != nil {
			return err
		}
		if changed {
			if err := tx.Audit(h.GetSubject(), &registryv1.AuditEntry{Time: now, Principal: principal, Action: auditSupersede,
				Version: h.GetVersion(), Detail: fmt.Sprintf("v%d superseded by v%d", h.GetVersion(), version)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// activateDue activates every SCHEDULED version whose effective time has
// come and reports how many this replica activated. Each activation is a
// conditional UPDATE from SCHEDULED, so when replicas race exactly one wins,
// and only the winner writes the event.
func (s *Server) activateDue(ctx context.Context) (int, error) {
	now := s.clock().UTC()
	due, err := dueVersions(s.model.snapshot(), now)
	if err != nil {
		return 0, err
	}
	activated := 0
	for _, v := range due {
		if held, err := s.holdIfNotReady(ctx, v); held || err != nil {
			if err != nil {
				s.log.ErrorContext(ctx, "registry: check a due version's migration", "subject", v.GetSubject(), "version", v.GetVersion(), "error", err)
			}
			continue
		}
		won := false
		err := s.store.Write(ctx, func(tx StoreTx) error {
			won = false
			ok, err := tx.SetVersionStatus(v.GetSubject(), v.GetVersion(),
				[]registryv1.VersionStatus{registryv1.VersionStatus_VERSION_STATUS_SCHEDULED}, registryv1.VersionStatus_VERSION_STATUS_ACTIVE)
			if err != nil || !ok {
				return err
			}
			ts := timestamppb.New(now)
			if err := releaseHold(tx, v, ts); err != nil {
				return err
			}
			subj, history, err := tx.Subject(v.GetSubject())
			if err != nil {
				return err
			}
			if subj == nil {
				return fmt.Errorf("activate %s v%d: the subject row is missing", v.GetSubject(), v.GetVersion())
			}
			if err := supersede(tx, history, v.GetVersion(), schedulerPrincipal, ts); err != nil {
				return err
			}
			next := &registryv1.Subject{
				Name: subj.GetName(), Owner: subj.GetOwner(), Compatibility: subj.GetCompatibility(), NoticePeriod: subj.GetNoticePeriod(),
				LatestVersion: subj.GetLatestVersion(), ActiveVersion: max(subj.GetActiveVersion(), v.GetVersion()), CreateTime: subj.GetCreateTime(),
			}
			if err := tx.PutSubject(next); err != nil {
				return err
			}
			if err := tx.AppendEvent(activatedEvent(v, schedulerPrincipal, ts)); err != nil {
				return err
			}
			if err := tx.Audit(v.GetSubject(), &registryv1.AuditEntry{Time: ts, Principal: schedulerPrincipal, Action: auditActivate,
				Version: v.GetVersion(), Detail: fmt.Sprintf("v%d active at its effective time %s", v.GetVersion(),
					v.GetEffectiveTime().AsTime().Format(time.RFC3339))}); err != nil {
				return err
			}
			won = true
			return nil
		})
		if err != nil {
			return activated, fmt.Errorf("activate %s v%d: %w", v.GetSubject(), v.GetVersion(), err)
		}
		if won {
			activated++
			s.activations.Add(ctx, 1)
			s.log.InfoContext(ctx, "registry: activated scheduled version", "subject", v.GetSubject(), "version", v.GetVersion())
		}
	}
	if len(due) > 0 {
		s.sync(ctx)
	}
	return activated, nil
}

func (s *Server) getContract(req *registryv1.GetContractRequest) (*registryv1.ContractVersion, error) {
	txn := s.model.snapshot()
	subj, err := s.knownSubject(txn, req.GetSubject())
	if err != nil {
		return nil, err
	}
	switch {
	case req.GetVersion() != 0:
		v, err := versionOf(txn, nil, subj.GetName(), req.GetVersion())
		if err == nil && v == nil {
			err = notFound("contract version", fmt.Sprintf("%s v%d", subj.GetName(), req.GetVersion()),
				fmt.Sprintf("the latest version is v%d", subj.GetLatestVersion()))
		}
		return v, err
	case req.GetAtTime() != nil:
		vs, err := versionsOf(txn, nil, subj.GetName())
		if err != nil {
			return nil, err
		}
		at := req.GetAtTime().AsTime()
		if v := versionActiveAt(vs, at); v != nil {
			return v, nil
		}
		return nil, notFound("contract version", fmt.Sprintf("%s at %s", subj.GetName(), at.Format(time.RFC3339)),
			"no version of the subject was in effect then")
	default:
		v, err := activeVersionOf(txn, nil, subj.GetName())
		if err == nil && v == nil {
			err = notFound("active contract version", subj.GetName(),
				fmt.Sprintf("no version is active yet; v%d is scheduled", subj.GetLatestVersion()))
		}
		return v, err
	}
}

func (s *Server) diffContracts(req *registryv1.DiffContractsRequest) (*registryv1.DiffContractsResponse, error) {
	txn := s.model.snapshot()
	subj, err := s.knownSubject(txn, req.GetSubject())
	if err != nil {
		return nil, err
	}
	to := req.GetToVersion()
	if to == 0 {
		to = subj.GetLatestVersion()
	}
	from := req.GetFromVersion()
	if from == 0 {
		from = to - 1
	}
	var pair [2]*registryv1.ContractVersion
	for i, n := range []int32{from, to} {
		v, err := versionOf(txn, nil, subj.GetName(), n)
		if err != nil {
			return nil, err
		}
		if v == nil {
			return nil, notFound("contract version", fmt.Sprintf("%s v%d", subj.GetName(), n),
				fmt.Sprintf("versions run from v1 to v%d", subj.GetLatestVersion()))
		}
		pair[i] = v
	}
	res := classify.Classify([]*contractv1.Contract{pair[0].GetContract()}, pair[1].GetContract(), subj.GetCompatibility())
	for _, c := range res.Changes {
		if c.GetComparedVersion() == 0 {
			c.ComparedVersion = from
		}
	}
	return &registryv1.DiffContractsResponse{Changes: res.Changes, Breaking: res.Breaking}, nil
}

func (s *Server) setVersionStatus(ctx context.Context, p *auth.Principal, req *registryv1.SetVersionStatusRequest) (*registryv1.SetVersionStatusResponse, error) {
	to := req.GetStatus()
	var action string
	var eventType registryv1.EventType
	switch to {
	case registryv1.VersionStatus_VERSION_STATUS_DEPRECATED:
		action, eventType = auditDeprecate, registryv1.EventType_EVENT_TYPE_VERSION_DEPRECATED
	case registryv1.VersionStatus_VERSION_STATUS_RETIRED:
		action, eventType = auditRetire, registryv1.EventType_EVENT_TYPE_VERSION_RETIRED
	default:
		return nil, invalid("unsupported status", rpcerr.FieldViolation{Field: "status",
			Description: fmt.Sprintf("%s cannot be set by hand; use VERSION_STATUS_DEPRECATED or VERSION_STATUS_RETIRED", to)})
	}
	if req.GetSubject() == "" {
		return nil, required("subject", `"shop.orders"`)
	}
	if !p.Owns(req.GetSubject()) && !p.Has(auth.RoleOperator) {
		return nil, rpcerr.PermissionDenied(ReasonNotOwner, fmt.Sprintf(
			"%s does not own subject %q; only its owners, operators or an admin may change its versions' status", p.Name, req.GetSubject()))
	}
	var out *registryv1.ContractVersion
	err := s.store.Write(ctx, func(tx StoreTx) error {
		subj, history, err := tx.Subject(req.GetSubject())
		if err != nil {
			return err
		}
		if subj == nil {
			return notFound("subject", req.GetSubject(), "list subjects with ListSubjects")
		}
		var v *registryv1.ContractVersion
		for _, h := range history {
			if h.GetVersion() == req.GetVersion() {
				v = h
			}
		}
		if v == nil {
			return notFound("contract version", fmt.Sprintf("%s v%d", subj.GetName(), req.GetVersion()),
				fmt.Sprintf("versions run from v1 to v%d", subj.GetLatestVersion()))
		}
		out = v
		if v.GetStatus() == to {
			return nil
		}
		var from []registryv1.VersionStatus
		switch {
		case v.GetStatus() == registryv1.VersionStatus_VERSION_STATUS_SCHEDULED:
			return refused(ReasonVersionScheduled, fmt.Sprintf(
				"%s v%d is scheduled for %s; it can be deprecated or retired once it has taken effect", subj.GetName(), v.GetVersion(),
				v.GetEffectiveTime().AsTime().Format(time.RFC3339)), nil, nil, nil)
		case to == registryv1.VersionStatus_VERSION_STATUS_RETIRED && v.GetVersion() == subj.GetActiveVersion():
			return refused(ReasonVersionActive, fmt.Sprintf(
				"%s v%d is the active version; register and activate a newer version before retiring it", subj.GetName(), v.GetVersion()), nil, nil, nil)
		case v.GetStatus() == registryv1.VersionStatus_VERSION_STATUS_RETIRED:
			return refused(ReasonStatusTransition, fmt.Sprintf(
				"%s v%d is retired; a retired version stays retired", subj.GetName(), v.GetVersion()), nil, nil, nil)
		}
		from = []registryv1.VersionStatus{v.GetStatus()}
		ok, err := tx.SetVersionStatus(subj.GetName(), v.GetVersion(), from, to)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s v%d changed status while being set to %s", subj.GetName(), v.GetVersion(), to)
		}
		now := timestamppb.New(s.clock())
		detail := fmt.Sprintf("v%d %s", v.GetVersion(), to)
		if r := req.GetReason(); r != "" {
			detail += ": " + r
		}
		if err := tx.AppendEvent(&registryv1.Event{Type: eventType, Time: now, Subject: subj.GetName(), Version: v.GetVersion(),
			Principal: p.Name, Message: detail}); err != nil {
			return err
		}
		if err := tx.Audit(subj.GetName(), &registryv1.AuditEntry{Time: now, Principal: p.Name, Action: action, Version: v.GetVersion(), Detail: detail}); err != nil {
			return err
		}
		updated := cloneVersion(v)
		updated.Status = to
		out = updated
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.sync(ctx)
	return &registryv1.SetVersionStatusResponse{Version: out}, nil
}
