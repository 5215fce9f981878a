package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/core/classify"
	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/naming"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/rpcerr"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

func cloneVersion(v *registryv1.ContractVersion) *registryv1.ContractVersion {
	return proto.Clone(v).(*registryv1.ContractVersion)
}

// validateConsumer reports every problem of a consumer declaration with its
// field path.
func validateConsumer(c *registryv1.Consumer) []rpcerr.FieldViolation {
	if c == nil {
		return []rpcerr.FieldViolation{{Field: "consumer", Description: "required"}}
	}
	var out []rpcerr.FieldViolation
	if strings.TrimSpace(c.GetName()) == "" {
		out = append(out, rpcerr.FieldViolation{Field: "consumer.name", Description: `empty; name the consumer, for example "features.customer_ltv"`})
	} else if err := naming.CheckConsumer("consumer.name", c.GetName()); err != nil {
		out = append(out, rpcerr.FieldViolation{Field: "consumer.name", Description: naming.Describe(err)})
	}
	if len(c.GetInputs()) == 0 {
		out = append(out, rpcerr.FieldViolation{Field: "consumer.inputs", Description: "empty; list the subjects or datasets the consumer reads"})
	}
	for i, in := range c.GetInputs() {
		path := fmt.Sprintf("consumer.inputs[%d]", i)
		if in.GetSubject() == "" && in.GetDataset() == "" && in.GetCanonical() == "" {
			out = append(out, rpcerr.FieldViolation{Field: path, Description: "set subject, canonical or dataset"})
		}
		// A dataset input may list fields: the fields a learned job reads
		// of a dataset no contract claims yet, so that it reads just those
		// of the subject once one does.
		if _, ok := registryv1.UsageKind_name[int32(in.GetUsage())]; !ok {
			out = append(out, rpcerr.FieldViolation{Field: path + ".usage", Description: fmt.Sprintf("unknown usage %d", in.GetUsage())})
		}
		for j, f := range in.GetFields() {
			if strings.TrimSpace(f) == "" {
				out = append(out, rpcerr.FieldViolation{Field: fmt.Sprintf("%s.fields[%d]", path, j), Description: "empty field name"})
			}
		}
		if d := in.GetDataset(); d != "" && slices.Contains(c.GetProduces(), d) {
			out = append(out, rpcerr.FieldViolation{Field: path + ".dataset", Description: fmt.Sprintf("the consumer reads %q, which it produces itself", d)})
		}
	}
	for i, d := range c.GetProduces() {
		if strings.TrimSpace(d) == "" {
			out = append(out, rpcerr.FieldViolation{Field: fmt.Sprintf("consumer.produces[%d]", i), Description: "empty dataset name"})
		}
	}
	return out
}

// canonicalInputs checks the consumer's canonical inputs against the
// registered models: a consumer naming a model or field that does not
// exist would never be told of a change, so it is refused.
func canonicalInputs(tx StoreTx, c *registryv1.Consumer) error {
	var vs []rpcerr.FieldViolation
	for i, in := range c.GetInputs() {
		name := in.GetCanonical()
		if name == "" {
			continue
		}
		path := fmt.Sprintf("consumer.inputs[%d]", i)
		ms, err := tx.Model(name)
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			vs = append(vs, rpcerr.FieldViolation{Field: path + ".canonical", Description: fmt.Sprintf("canonical model %q is not registered; register it first (seam canonical register) or fix the name", name)})
			continue
		}
		model := ms[len(ms)-1].GetModel()
		for j, f := range in.GetFields() {
			if contract.Lookup(model.GetFields(), f) == nil {
				var known []string
				for ref := range contract.Fields(model.GetFields()) {
					known = append(known, ref.Name)
				}
				vs = append(vs, rpcerr.FieldViolation{Field: fmt.Sprintf("%s.fields[%d]", path, j),
					Description: fmt.Sprintf("canonical model %s v%d has no field %q (fields: %s)", name, ms[len(ms)-1].GetVersion(), f, strings.Join(known, ", "))})
			}
		}
	}
	if len(vs) > 0 {
		return invalid("the consumer reads canonical fields that do not exist", vs...)
	}
	return nil
}

func cycleRefusal(err error) error {
	if errors.Is(err, errLineageCycle) {
		return refused(ReasonLineageCycle, err.Error(), nil, nil, nil)
	}
	return err
}

func (s *Server) registerConsumer(ctx context.Context, p *auth.Principal, c *registryv1.Consumer) (*registryv1.Consumer, error) {
	if c.GetOrigin() == registryv1.ConsumerOrigin_CONSUMER_ORIGIN_OPENLINEAGE {
		return s.transferConsumer(ctx, p, c)
	}
	if vs := validateConsumer(c); len(vs) > 0 {
		return nil, invalid("the consumer is invalid", vs...)
	}
	stored := proto.Clone(c).(*registryv1.Consumer)
	stored.UpdateTime = timestamppb.New(s.clock())
	// Registered by hand: declared, whatever the request says.
	stored.Origin, stored.Learned = registryv1.ConsumerOrigin_CONSUMER_ORIGIN_DECLARED, nil
	err := s.store.Write(ctx, func(tx StoreTx) error {
		if err := canonicalInputs(tx, stored); err != nil {
			return err
		}
		all, err := tx.Consumers()
		if err != nil {
			return err
		}
		var existing *registryv1.Consumer
		if i := slices.IndexFunc(all, func(o *registryv1.Consumer) bool { return o.GetName() == stored.GetName() }); i >= 0 {
			existing = all[i]
		}
		if err := claimConsumer(p, stored, existing); err != nil {
			return err
		}
		next := slices.DeleteFunc(all, func(o *registryv1.Consumer) bool { return o.GetName() == stored.GetName() })
		next = append(next, stored)
		if err := lineageCycle(next); err != nil {
			return cycleRefusal(err)
		}
		if err := tx.PutConsumer(stored); err != nil {
			return err
		}
		var subjects []string
		for _, in := range stored.GetInputs() {
			if s := in.GetSubject() + in.GetCanonical(); s != "" && !slices.Contains(subjects, s) {
				subjects = append(subjects, s)
			}
		}
		return tx.AppendEvent(&registryv1.Event{
			Type: registryv1.EventType_EVENT_TYPE_CONSUMER_REGISTERED, Time: stored.GetUpdateTime(), Principal: p.Name,
			Consumers: []string{stored.GetName()},
			Message:   fmt.Sprintf("consumer %s registered, reading %s", stored.GetName(), strings.Join(subjects, ", ")),
		})
	})
	if err != nil {
		return nil, err
	}
	s.sync(ctx)
	return stored, nil
}

// transferConsumer gives a consumer learned from OpenLineage to another
// team: an admin registers it with origin OPENLINEAGE, its name and the
// new owner. It stays learned, with its inputs and lineage; from then on
// only the new team (or an admin) may report runs that change it.
func (s *Server) transferConsumer(ctx context.Context, p *auth.Principal, c *registryv1.Consumer) (*registryv1.Consumer, error) {
	if !p.Has(auth.RoleAdmin) {
		return nil, rpcerr.PermissionDenied(ReasonNotConsumerOwner, fmt.Sprintf(
			"%s may not transfer consumer %q: only an admin gives a learned consumer to another team; declare consumers without origin OPENLINEAGE",
			p.Name, c.GetName()))
	}
	var bad []rpcerr.FieldViolation
	if err := naming.CheckConsumer("consumer.name", c.GetName()); err != nil {
		bad = append(bad, rpcerr.FieldViolation{Field: "consumer.name", Description: naming.Describe(err)})
	}
	if err := naming.Check("consumer.owner", c.GetOwner()); err != nil {
		bad = append(bad, rpcerr.FieldViolation{Field: "consumer.owner", Description: "name the team the consumer goes to: " + naming.Describe(err)})
	}
	if len(bad) > 0 {
		return nil, invalid("bad consumer transfer", bad...)
	}
	var stored *registryv1.Consumer
	err := s.store.Write(ctx, func(tx StoreTx) error {
		all, err := tx.Consumers()
		if err != nil {
			return err
		}
		i := slices.IndexFunc(all, func(o *registryv1.Consumer) bool { return o.GetName() == c.GetName() })
		if i < 0 {
			return notFound("consumer", c.GetName(), "list the learned consumers with ListConsumers")
		}
		have := all[i]
		if have.GetOrigin() != registryv1.ConsumerOrigin_CONSUMER_ORIGIN_OPENLINEAGE {
			return rpcerr.FailedPrecondition("CONSUMER_DECLARED", fmt.Sprintf(
				"consumer %q was declared by hand, not learned; declare it again with the new owner", c.GetName()), nil)
		}
		stored = proto.Clone(have).(*registryv1.Consumer)
		from := stored.GetOwner()
		stored.Owner = c.GetOwner()
		stored.UpdateTime = timestamppb.New(s.clock())
		if err := tx.PutConsumer(stored); err != nil {
			return err
		}
		return tx.AppendEvent(&registryv1.Event{
			Type: registryv1.EventType_EVENT_TYPE_CONSUMER_REGISTERED, Time: stored.GetUpdateTime(), Principal: p.Name,
			Consumers:  []string{stored.GetName()},
			Message:    fmt.Sprintf("learned consumer %s transferred from team %q to team %q", stored.GetName(), from, stored.GetOwner()),
			Attributes: map[string]string{"origin": "openlineage", "transfer_from": from, "transfer_to": stored.GetOwner()},
		})
	})
	if err != nil {
		return nil, err
	}
	s.sync(ctx)
	return stored, nil
}

func (s *Server) deleteConsumer(ctx context.Context, p *auth.Principal, req *registryv1.DeleteConsumerRequest) (*registryv1.DeleteConsumerResponse, error) {
	name := req.GetName()
	if name == "" {
		return nil, required("name", `"features.customer_ltv"`)
	}
	if err := naming.CheckConsumer("name", name); err != nil {
		return nil, invalid("bad consumer name", rpcerr.FieldViolation{Field: "name", Description: naming.Describe(err)})
	}
	err := s.store.Write(ctx, func(tx StoreTx) error {
		all, err := tx.Consumers()
		if err != nil {
			return err
		}
		if i := slices.IndexFunc(all, func(o *registryv1.Consumer) bool { return o.GetName() == name }); i >= 0 {
			if err := mayChangeConsumer(p, all[i], "delete"); err != nil {
				return err
			}
		}
		ok, err := tx.DeleteConsumer(name)
		if err == nil && !ok {
			err = notFound("consumer", name, "list the registered consumers with ListConsumers")
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	s.sync(ctx)
	return &registryv1.DeleteConsumerResponse{}, nil
}

// claimConsumer decides the owner of a consumer being registered: a
// consumer belongs to its owner team, so the caller may replace one only
// of its own team, and declares new ones for its own team (the owner is
// its team when not given). Admins may do either for any team. Deciding
// in the write transaction leaves no window between check and write.
func claimConsumer(p *auth.Principal, c, existing *registryv1.Consumer) error {
	if existing != nil {
		if err := mayChangeConsumer(p, existing, "replace"); err != nil {
			return err
		}
		if c.GetOwner() == "" {
			c.Owner = existing.GetOwner()
		}
	}
	if c.GetOwner() == "" && !p.Has(auth.RoleAdmin) {
		c.Owner = p.Team
	}
	if !p.Has(auth.RoleAdmin) && c.GetOwner() != p.Team {
		return rpcerr.PermissionDenied(ReasonNotConsumerOwner, fmt.Sprintf(
			"%s acts for team %q and may not declare consumer %q for team %q; set owner to %q, or ask that team or an admin",
			p.Name, p.Team, c.GetName(), c.GetOwner(), p.Team))
	}
	return nil
}

// mayChangeConsumer refuses a caller outside the consumer's owner team.
func mayChangeConsumer(p *auth.Principal, c *registryv1.Consumer, verb string) error {
	if p.Has(auth.RoleAdmin) || c.GetOwner() == p.Team {
		return nil
	}
	owner := c.GetOwner()
	if owner == "" {
		owner = "no team (declared before consumers had owners)"
	} else {
		owner = fmt.Sprintf("team %q", owner)
	}
	return rpcerr.PermissionDenied(ReasonNotConsumerOwner, fmt.Sprintf(
		"consumer %q belongs to %s; %s (team %q) may not %s it: only its owner team or an admin may",
		c.GetName(), owner, p.Name, p.Team, verb))
}

func (s *Server) blastRadius(_ context.Context, p *auth.Principal, req *registryv1.GetBlastRadiusRequest) (*registryv1.GetBlastRadiusResponse, error) {
	subject := req.GetSubject()
	if subject == "" {
		subject = req.GetProposed().GetSubject()
	}
	if subject == "" {
		return nil, required("subject", `"shop.orders"`)
	}
	txn := s.model.snapshot()
	consumers, err := consumersOf(txn, nil, "")
	if err != nil {
		return nil, err
	}
	fields := req.GetFields()
	if proposed := req.GetProposed(); proposed != nil {
		if proposed.GetSubject() != subject {
			return nil, invalid("the proposed contract is for another subject", rpcerr.FieldViolation{Field: "proposed.subject",
				Description: fmt.Sprintf("%q, but the request asks about %q", proposed.GetSubject(), subject)})
		}
		if problems := contract.Validate(proposed); len(problems) > 0 {
			var vs []rpcerr.FieldViolation
			for _, pr := range problems {
				vs = append(vs, rpcerr.FieldViolation{Field: "proposed." + pr.Path, Description: pr.Message})
			}
			return nil, invalid("the proposed contract is invalid", vs...)
		}
		subj, err := s.knownSubject(txn, subject)
		if err != nil {
			return nil, err
		}
		history, err := versionsOf(txn, nil, subject)
		if err != nil {
			return nil, err
		}
		older := make([]*contractv1.Contract, len(history))
		for i, v := range history {
			older[i] = v.GetContract()
		}
		res := classify.Classify(older, proposed, subj.GetCompatibility())
		changed, whole := breakingFields(res.Changes)
		resp := &registryv1.GetBlastRadiusResponse{ChangedFields: changed}
		mappings := lineageMappings(history, subj.GetActiveVersion(), proposed)
		if whole {
			resp.Consumers = blastRadius(consumers, subject, nil, feeds(mappings, nil, true))
		} else if len(changed) > 0 {
			resp.Consumers = blastRadius(consumers, subject, changed, feeds(mappings, changed, false))
		}
		return resp, nil
	}
	subj, history, err := subjectWithHistory(txn, subject)
	if err != nil {
		return nil, err
	}
	mappings := lineageMappings(history, subj.GetActiveVersion(), nil)
	return &registryv1.GetBlastRadiusResponse{Consumers: blastRadius(consumers, subject, fields, feeds(mappings, fields, len(fields) == 0)), ChangedFields: fields}, nil
}
