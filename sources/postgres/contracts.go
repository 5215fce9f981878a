package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/seamdata/seam/core/classify"
	"github.com/seamdata/seam/core/mapping"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// registerTable makes sure a table's subject has an active contract that
// carries the table's shape: the contract derived from the catalog is
// registered (the registry answers "unchanged" on a restart), unless the
// subject's active version already accepts the shape, in which case that
// version is used as it is. It returns the version and its canonical model.
func (s *Source) registerTable(ctx context.Context, subject string, t TableName, shape Shape) (int32, *contractv1.CanonicalModel, error) {
	derived := deriveContract(subject, s.cfg.Owner, t, shape)
	active, err := s.cfg.Registry.GetContract(ctx, &registryv1.GetContractRequest{Subject: subject})
	switch {
	case err == nil:
		if ok, _ := accepts(active.GetVersion().GetContract(), shape); ok {
			model, err := s.canonicalOf(ctx, active.GetVersion().GetContract())
			return active.GetVersion().GetVersion(), model, err
		}
	case status.Code(err) != codes.NotFound:
		return 0, nil, fmt.Errorf("read the contract of %s: %w", subject, err)
	}
	if _, err := s.cfg.Registry.GetCanonicalModel(ctx, &registryv1.GetCanonicalModelRequest{Name: subject}); status.Code(err) == codes.NotFound {
		if _, err := s.cfg.Registry.RegisterCanonicalModel(ctx, &registryv1.RegisterCanonicalModelRequest{Model: deriveCanonical(derived)}); err != nil {
			return 0, nil, fmt.Errorf("register canonical model %s: %w", subject, err)
		}
	} else if err != nil {
		return 0, nil, fmt.Errorf("read canonical model %s: %w", subject, err)
	}
	reg, err := s.cfg.Registry.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: derived})
	if err != nil {
		return 0, nil, fmt.Errorf("register the contract of table %s as %s: %w (if the subject holds an older contract of the table, register a version that matches the table, or choose another --subject-prefix)", t, subject, err)
	}
	if st := reg.GetVersion().GetStatus(); st != registryv1.VersionStatus_VERSION_STATUS_ACTIVE {
		return 0, nil, fmt.Errorf("the contract of table %s registered as %s version %d is %s, not active; a first start needs an active version", t, subject, reg.GetVersion().GetVersion(), st)
	}
	model, err := s.canonicalOf(ctx, reg.GetVersion().GetContract())
	return reg.GetVersion().GetVersion(), model, err
}

// canonicalOf reads the canonical model a contract maps into.
func (s *Source) canonicalOf(ctx context.Context, c *contractv1.Contract) (*contractv1.CanonicalModel, error) {
	m := c.GetMapping()
	if m == nil {
		return nil, fmt.Errorf("contract %s has no mapping to a canonical model; the replica is built from one", c.GetSubject())
	}
	resp, err := s.cfg.Registry.GetCanonicalModel(ctx, &registryv1.GetCanonicalModelRequest{Name: m.GetCanonical(), Version: m.GetCanonicalVersion()})
	if err != nil {
		return nil, fmt.Errorf("read canonical model %s of %s: %w", m.GetCanonical(), c.GetSubject(), err)
	}
	return resp.GetVersion().GetModel(), nil
}

// contractVersion reads one registered version.
func (s *Source) contractVersion(ctx context.Context, subject string, version int32) (*registryv1.ContractVersion, error) {
	resp, err := s.cfg.Registry.GetContract(ctx, &registryv1.GetContractRequest{Subject: subject, Version: version})
	if err != nil {
		return nil, fmt.Errorf("read %s version %d: %w", subject, version, err)
	}
	return resp.GetVersion(), nil
}

// evolution is what a new shape of a table means for its contract.
type evolution struct {
	// proposed is the active contract with the new shape applied.
	proposed *contractv1.Contract
	changes  []*registryv1.Change
	breaking bool
}

// classifyShape compares a new shape with the active contract through the
// registry's classifier, under the contract's compatibility mode (FULL for
// the contracts this source derives).
func classifyShape(active *contractv1.Contract, shape Shape) evolution {
	proposed := applyShape(active, shape)
	res := classify.Classify([]*contractv1.Contract{active}, proposed, active.GetCompatibility())
	return evolution{proposed: proposed, changes: res.Changes, breaking: res.Breaking}
}

// completeProposal makes a breaking proposal register as printed where it
// can: a retyped column that maps by name into a canonical field of
// another type gets the cast to that type, when the mapping compiler takes
// it. It returns, for what still keeps the proposal from compiling
// against the canonical model, one note each saying why and what to write.
func completeProposal(proposed *contractv1.Contract, model *contractv1.CanonicalModel) []string {
	canon := map[string]*contractv1.Field{}
	for _, f := range model.GetFields() {
		canon[f.GetName()] = f
	}
	byName := map[string]*contractv1.Field{}
	for _, f := range proposed.GetFields() {
		byName[f.GetName()] = f
	}
	cast := map[string]bool{}
	for name, m := range proposed.GetMapping().GetFields() {
		src, cf := byName[m.GetFrom()], canon[name]
		if src == nil || cf == nil || m.GetCast() != nil || m.GetExpr() != "" || m.GetTranslate() != nil || src.GetType() == cf.GetType() {
			continue
		}
		m.Cast = &contractv1.Cast{To: cf.GetType()}
		cast[name] = true
	}
	_, problems, err := mapping.Draft(proposed, model, proposed.GetMapping().GetCanonicalVersion(), nil)
	if err != nil {
		return []string{fmt.Sprintf("the proposal does not compile against canonical model %s: %v", model.GetName(), err)}
	}
	var notes []string
	for _, p := range problems {
		name := strings.TrimPrefix(p.Path, "mapping.fields.")
		name, _, _ = strings.Cut(name, ".")
		if cast[name] {
			// The cast the compiler refuses comes out again: the note says
			// why, and the operator chooses another way.
			proposed.GetMapping().GetFields()[name].Cast = nil
			notes = append(notes, fmt.Sprintf("%s: no cast takes the new column to canonical field %s (%s): map it with expr or a default, or register a canonical model version with the new type", name, name, p.Message))
			continue
		}
		notes = append(notes, fmt.Sprintf("%s: %s", p.Path, p.Message))
	}
	return notes
}

// registerAdditive registers the additive version a new shape implies:
// first the canonical model with the new optional fields, so the mapping
// compiles, then the contract. It returns the new version and model.
func (s *Source) registerAdditive(ctx context.Context, t *table, ev evolution) (int32, *contractv1.CanonicalModel, error) {
	model, err := s.canonicalOf(ctx, t.contract)
	if err != nil {
		return 0, nil, err
	}
	next := extendCanonical(model, ev.proposed)
	if next != nil {
		if t.contract.GetMapping().GetCanonicalVersion() != 0 {
			return 0, nil, fmt.Errorf("contract %s pins canonical model %s version %d; a new column cannot be added to a pinned model automatically: register a version with the column mapped", t.subject, model.GetName(), t.contract.GetMapping().GetCanonicalVersion())
		}
		if _, err := s.cfg.Registry.RegisterCanonicalModel(ctx, &registryv1.RegisterCanonicalModelRequest{Model: next}); err != nil {
			return 0, nil, fmt.Errorf("register canonical model %s with the new columns of %s: %w", model.GetName(), t.name, err)
		}
		model = next
	}
	reg, err := s.cfg.Registry.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: ev.proposed})
	if err != nil {
		return 0, nil, fmt.Errorf("register the additive version of %s: %w", t.subject, err)
	}
	if st := reg.GetVersion().GetStatus(); st != registryv1.VersionStatus_VERSION_STATUS_ACTIVE {
		return 0, nil, fmt.Errorf("the additive version %d of %s is %s, not active", reg.GetVersion().GetVersion(), t.subject, st)
	}
	return reg.GetVersion().GetVersion(), model, nil
}

// extendCanonical returns the canonical model with an optional field for
// every field of c that the mapping sends to a canonical field the model
// lacks, or nil when nothing is missing.
func extendCanonical(model *contractv1.CanonicalModel, c *contractv1.Contract) *contractv1.CanonicalModel {
	have := map[string]bool{}
	for _, f := range model.GetFields() {
		have[f.GetName()] = true
	}
	var next *contractv1.CanonicalModel
	for _, f := range c.GetFields() {
		m := c.GetMapping().GetFields()[f.GetName()]
		if have[f.GetName()] || m == nil || m.GetFrom() != f.GetName() {
			continue
		}
		if next == nil {
			next = cloneModel(model)
		}
		next.Fields = append(next.Fields, &contractv1.Field{Name: f.GetName(), Type: f.GetType(), Description: f.GetDescription()})
	}
	return next
}

func cloneModel(m *contractv1.CanonicalModel) *contractv1.CanonicalModel {
	out := &contractv1.CanonicalModel{Name: m.GetName(), Owner: m.GetOwner(), Description: m.GetDescription()}
	out.Fields = append(out.Fields, m.GetFields()...)
	return out
}

// changeLines renders classified changes for messages and the halt record.
func changeLines(changes []*registryv1.Change) []string {
	var out []string
	for _, ch := range changes {
		out = append(out, fmt.Sprintf("%s %s %s: %s", strings.TrimPrefix(ch.GetLevel().String(), "CHANGE_LEVEL_"), ch.GetRule(), ch.GetPath(), ch.GetMessage()))
	}
	return out
}

// breakingLines are the breaking changes only.
func breakingLines(changes []*registryv1.Change) []string {
	var b []*registryv1.Change
	for _, ch := range changes {
		if ch.GetLevel() == registryv1.ChangeLevel_CHANGE_LEVEL_BREAKING {
			b = append(b, ch)
		}
	}
	return changeLines(b)
}

// haltKey identifies a halt in the registry's event stream, so a restart
// never announces the same halt twice.
func (s *Source) haltKey(t *table, h *Halt) string {
	return fmt.Sprintf("%s/%s/%s/%d/%d", s.cfg.Name, t.key, h.Reason, h.ShapeID, h.AtLSN)
}

// announceHalt raises the UNANNOUNCED_CHANGE alert of a halted table on
// the registry's event stream, once: a restart first looks for the event.
func (s *Source) announceHalt(ctx context.Context, t *table, h *Halt) (int64, error) {
	key := s.haltKey(t, h)
	after := int64(0)
	for {
		resp, err := s.cfg.Registry.ListEvents(ctx, &registryv1.ListEventsRequest{AfterSequence: after, Subjects: []string{t.subject},
			Types: []registryv1.EventType{registryv1.EventType_EVENT_TYPE_UNANNOUNCED_CHANGE}})
		if err != nil {
			return 0, fmt.Errorf("look for the halt event of %s: %w", t.subject, err)
		}
		for _, e := range resp.GetEvents() {
			if e.GetAttributes()["halt"] == key {
				return e.GetSequence(), nil
			}
		}
		if len(resp.GetEvents()) == 0 || resp.GetLastSequence() <= after {
			break
		}
		after = resp.GetLastSequence()
	}
	ev := &registryv1.Event{
		Type:    registryv1.EventType_EVENT_TYPE_UNANNOUNCED_CHANGE,
		Subject: t.subject,
		Version: h.FromVersion,
		Message: h.Message,
		Attributes: map[string]string{
			"halt": key, "source": s.cfg.Name, "table": t.key, "reason": h.Reason,
			"held_from_lsn": lsnText(h.AtLSN), "kind": "UNANNOUNCED_CHANGE", "severity": "CRITICAL",
		},
	}
	for i, line := range h.Changes {
		ev.Attributes["change_"+strconv.Itoa(i+1)] = line
	}
	resp, err := s.cfg.Registry.PublishEvent(ctx, &registryv1.PublishEventRequest{Event: ev})
	if err != nil {
		return 0, fmt.Errorf("publish the halt of %s: %w", t.subject, err)
	}
	return resp.GetEvent().GetSequence(), nil
}

// proposedJSON renders a proposed contract for the halt record.
func proposedJSON(c *contractv1.Contract) json.RawMessage {
	b, err := protojson.Marshal(c)
	if err != nil {
		return nil
	}
	return b
}
