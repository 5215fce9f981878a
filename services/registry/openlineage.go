package registry

import (
	"context"
	"fmt"
	"slices"
	"strings"

	memdb "github.com/hashicorp/go-memdb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/core/openlineage"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/rpcerr"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Labels that bind a subject to the OpenLineage dataset its data lands in,
// so jobs reading that table are consumers of the subject.
const (
	LabelOpenLineageNamespace = "openlineage.namespace"
	LabelOpenLineageName      = "openlineage.name"
)

// lineageResolver maps OpenLineage datasets to subjects, in this order:
// a subject whose active contract carries the labels openlineage.namespace
// and openlineage.name of the dataset; in namespace "seam", the subject or
// canonical model of that name; in any namespace, a dataset named exactly
// like a subject or canonical model. A dataset that is a canonical model
// makes the job a consumer of the model's fields (the column lineage's
// field names are the model's), so it is told of a change to any subject
// that feeds those fields, now or later.
type lineageResolver struct {
	bound     map[[2]string]string
	subjects  map[string]bool
	canonical map[string]bool
}

func newLineageResolver(txn *memdb.Txn) (*lineageResolver, error) {
	r := &lineageResolver{bound: map[[2]string]string{}, subjects: map[string]bool{}, canonical: map[string]bool{}}
	subjects, err := subjectsWithPrefix(txn, nil, "")
	if err != nil {
		return nil, err
	}
	for _, s := range subjects {
		r.subjects[s.GetName()] = true
		v, err := activeVersionOf(txn, nil, s.GetName())
		if err != nil {
			return nil, err
		}
		c := v.GetContract()
		if ns, name := c.GetLabels()[LabelOpenLineageNamespace], c.GetLabels()[LabelOpenLineageName]; ns != "" && name != "" {
			r.bound[[2]string{ns, name}] = s.GetName()
		}
	}
	models, err := latestModels(txn, nil)
	if err != nil {
		return nil, err
	}
	for _, m := range models {
		r.canonical[m.GetName()] = true
	}
	return r, nil
}

// Resolve implements openlineage.Resolver.
func (r *lineageResolver) Resolve(namespace, name string) []openlineage.Binding {
	if s, ok := r.bound[[2]string{namespace, name}]; ok {
		return []openlineage.Binding{{Subject: s}}
	}
	if r.subjects[name] {
		return []openlineage.Binding{{Subject: name}}
	}
	if r.canonical[name] {
		return []openlineage.Binding{{Canonical: name}}
	}
	return nil
}

// claim resolves the datasets one registration makes known: those bound to
// a contract's subject (its openlineage.* labels, or named as the subject),
// or a canonical model's name.
type claim struct {
	subject, namespace, name string
	canonical                string
}

// Resolve implements openlineage.Resolver.
func (c claim) Resolve(namespace, name string) []openlineage.Binding {
	switch {
	case c.canonical != "" && name == c.canonical:
		return []openlineage.Binding{{Canonical: c.canonical}}
	case c.subject == "":
	case c.namespace != "" && c.name != "" && namespace == c.namespace && name == c.name, name == c.subject:
		return []openlineage.Binding{{Subject: c.subject}}
	}
	return nil
}

// linkLearned binds, in a registration's transaction, the dataset inputs
// of learned consumers that the registration claims: a consumer learned
// from a run before the contract (or model) of its dataset existed reads
// the subject from then on, as its job's next run would record, so the
// registration's blast radius and notices include it. It returns the
// consumers as they are after linking and records one event per consumer
// linked.
func linkLearned(tx StoreTx, consumers []*registryv1.Consumer, r claim, principal string, now *timestamppb.Timestamp) ([]*registryv1.Consumer, error) {
	out := make([]*registryv1.Consumer, len(consumers))
	for i, c := range consumers {
		out[i] = c
		if !slices.ContainsFunc(c.GetInputs(), func(in *registryv1.Input) bool { return in.GetDataset() != "" }) {
			continue
		}
		next := proto.Clone(c).(*registryv1.Consumer)
		if !openlineage.Relink(next, r) {
			continue
		}
		if vs := validateConsumer(next); len(vs) > 0 {
			continue // left as it is; its next run will say what it reads
		}
		next.UpdateTime = now
		if err := tx.PutConsumer(next); err != nil {
			return nil, err
		}
		out[i] = next
		what := "subject " + r.subject
		if r.canonical != "" {
			what = "canonical model " + r.canonical
		}
		if err := tx.AppendEvent(&registryv1.Event{
			Type: registryv1.EventType_EVENT_TYPE_CONSUMER_REGISTERED, Time: now, Principal: principal, Subject: r.subject,
			Consumers: []string{next.GetName()},
			Message:   fmt.Sprintf("consumer %s linked to %s: a dataset its job read (run %s) is now bound to it", next.GetName(), what, next.GetLearned().GetRunId()),
			Attributes: map[string]string{"origin": "openlineage", "job_namespace": next.GetLearned().GetJobNamespace(),
				"job_name": next.GetLearned().GetJobName(), "linked": "true"},
		}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// recordLineage applies each event in order: a learned consumer follows
// its job's latest run; events of the same run add to it; a declared
// consumer of the same name is left as it is.
func (s *Server) recordLineage(ctx context.Context, p *auth.Principal, req *registryv1.RecordLineageRequest) (*registryv1.RecordLineageResponse, error) {
	if req.GetEvents() == nil {
		return nil, required("events", "an OpenLineage RunEvent or a list of them")
	}
	js, err := protojson.Marshal(req.GetEvents())
	if err != nil {
		return nil, invalid("the events cannot be read", rpcerr.FieldViolation{Field: "events", Description: err.Error()})
	}
	events, err := openlineage.Parse(js)
	if err != nil {
		return nil, invalid("the events are not OpenLineage events", rpcerr.FieldViolation{Field: "events", Description: err.Error()})
	}
	resolver, err := newLineageResolver(s.model.snapshot())
	if err != nil {
		return nil, err
	}
	resp := &registryv1.RecordLineageResponse{}
	for i := range events {
		out, err := s.applyLineage(ctx, p, &events[i], resolver)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
		out.Index = int32(i)
		resp.Outcomes = append(resp.Outcomes, out)
	}
	s.sync(ctx)
	return resp, nil
}

func (s *Server) applyLineage(ctx context.Context, p *auth.Principal, e *openlineage.Event, r openlineage.Resolver) (*registryv1.LineageOutcome, error) {
	draft, notes := openlineage.Consumer(e, r)
	if draft == nil {
		msg := "the event names no input dataset"
		if e.Job == nil {
			msg = "a dataset event; only run and job events describe consumers"
		}
		if len(notes) > 0 {
			msg += ": " + strings.Join(notes, "; ")
		}
		return &registryv1.LineageOutcome{Action: registryv1.LineageAction_LINEAGE_ACTION_IGNORED, Message: msg}, nil
	}
	when, _ := e.Time()
	draft.Learned.EventTime = timestamppb.New(when)
	// A learned consumer belongs to the team that first reports it (an
	// admin's report keeps the job's ownership facet, or its namespace);
	// later runs may change it only from that team or an admin.
	switch {
	case !p.Has(auth.RoleAdmin):
		draft.Owner = p.Team
	case draft.GetOwner() == "":
		draft.Owner = e.Job.Namespace
	}
	out := &registryv1.LineageOutcome{Consumer: draft.GetName(), Message: strings.Join(notes, "; ")}
	err := s.store.Write(ctx, func(tx StoreTx) error {
		all, err := tx.Consumers()
		if err != nil {
			return err
		}
		idx := slices.IndexFunc(all, func(c *registryv1.Consumer) bool { return c.GetName() == draft.GetName() })
		next := proto.Clone(draft).(*registryv1.Consumer)
		action := registryv1.LineageAction_LINEAGE_ACTION_CREATED
		if idx >= 0 {
			have := all[idx]
			if have.GetOrigin() != registryv1.ConsumerOrigin_CONSUMER_ORIGIN_OPENLINEAGE {
				out.Action, out.Message = registryv1.LineageAction_LINEAGE_ACTION_KEPT_DECLARED,
					"a consumer of this name was declared by hand; declared lineage wins over learned lineage"
				return nil
			}
			if err := mayChangeConsumer(p, have, "update from OpenLineage"); err != nil {
				return err
			}
			switch {
			case have.GetLearned().GetRunId() == draft.GetLearned().GetRunId() && draft.GetLearned().GetRunId() != "":
				next = proto.Clone(have).(*registryv1.Consumer)
				openlineage.Merge(next, draft)
				if when.After(have.GetLearned().GetEventTime().AsTime()) {
					next.Learned.EventTime = draft.Learned.EventTime
				}
			case when.Before(have.GetLearned().GetEventTime().AsTime()):
				out.Action, out.Message = registryv1.LineageAction_LINEAGE_ACTION_IGNORED,
					fmt.Sprintf("older than run %s, which the consumer already follows", have.GetLearned().GetRunId())
				return nil
			}
			next.Owner = have.GetOwner() // the first reporter's team keeps it
			action = registryv1.LineageAction_LINEAGE_ACTION_UPDATED
			if sameLineage(have, next) {
				action = registryv1.LineageAction_LINEAGE_ACTION_UNCHANGED
			}
		}
		if vs := validateConsumer(next); len(vs) > 0 {
			return invalid("the event does not describe a valid consumer", vs...)
		}
		next.UpdateTime = timestamppb.New(s.clock())
		if action != registryv1.LineageAction_LINEAGE_ACTION_UNCHANGED {
			rest := slices.DeleteFunc(slices.Clone(all), func(c *registryv1.Consumer) bool { return c.GetName() == next.GetName() })
			if err := lineageCycle(append(rest, next)); err != nil {
				return cycleRefusal(err)
			}
		}
		if err := tx.PutConsumer(next); err != nil {
			return err
		}
		out.Action = action
		if action == registryv1.LineageAction_LINEAGE_ACTION_UNCHANGED {
			return nil
		}
		var subjects []string
		for _, in := range next.GetInputs() {
			if in.GetSubject() != "" && !slices.Contains(subjects, in.GetSubject()) {
				subjects = append(subjects, in.GetSubject())
			}
		}
		return tx.AppendEvent(&registryv1.Event{
			Type: registryv1.EventType_EVENT_TYPE_CONSUMER_REGISTERED, Time: next.GetUpdateTime(), Principal: p.Name,
			Consumers: []string{next.GetName()},
			Message: fmt.Sprintf("consumer %s learned from OpenLineage (run %s), reading %s", next.GetName(), next.GetLearned().GetRunId(),
				orNone(strings.Join(subjects, ", "))),
			Attributes: map[string]string{"origin": "openlineage", "job_namespace": e.Job.Namespace, "job_name": e.Job.Name},
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func orNone(s string) string {
	if s == "" {
		return "no subject"
	}
	return s
}

// sameLineage compares what a consumer reads and writes.
func sameLineage(a, b *registryv1.Consumer) bool {
	x := &registryv1.Consumer{Inputs: a.GetInputs(), Produces: a.GetProduces(), Owner: a.GetOwner(), Description: a.GetDescription()}
	y := &registryv1.Consumer{Inputs: b.GetInputs(), Produces: b.GetProduces(), Owner: b.GetOwner(), Description: b.GetDescription()}
	return proto.Equal(x, y)
}

// RecordLineage learns consumers from OpenLineage events.
func (s *Server) RecordLineage(ctx context.Context, req *registryv1.RecordLineageRequest) (*registryv1.RecordLineageResponse, error) {
	return asCaller(ctx, req, s.recordLineage)
}
