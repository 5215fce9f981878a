package adapter

import (
	"context"
	"fmt"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/mapping"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/platform/rpcerr"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Preview implements adapterv1.AdapterServiceServer: it runs a registered
// or proposed mapping on sample records and shows each canonical field's
// source value and canonical value or error. A proposed mapping that does
// not compile still runs the fields that compiled, with the problems
// listed, so a source team sees everything wrong at once. With validate,
// the contract's record-level checks run first, as in the gate, and a
// record passes only when the gate would let it through and it maps.
func (s *Server) Preview(ctx context.Context, req *adapterv1.PreviewRequest) (*adapterv1.PreviewResponse, error) {
	proposed := req.GetProposed()
	subject := req.GetSubject()
	if proposed != nil && subject == "" {
		subject = proposed.GetSubject()
	}
	if proposed == nil {
		if err := validateTarget(subject, req.GetVersion(), req.GetBatch(), false, ""); err != nil {
			return nil, err
		}
	} else if v := validateBatch(req.GetBatch()); len(v) > 0 {
		return nil, rpcerr.InvalidArgument("invalid preview request: "+v[0].Field+": "+v[0].Description, v...)
	}
	resp := &adapterv1.PreviewResponse{}
	var plan *mapping.Plan
	if proposed != nil {
		p, problems, err := s.draft(ctx, req)
		if err != nil {
			return nil, err
		}
		resp.Problems = problems
		plan = p
	} else {
		c, err := s.plans.get(ctx, subject, req.GetVersion())
		if err != nil {
			return nil, err
		}
		plan = c.plan
	}
	if plan == nil {
		return resp, nil
	}
	recs, err := s.decodeBatch(record.NewDecoder(plan.Schema(), record.Options{MaxRecordBytes: s.cfg.MaxRecordBytes}), req.GetBatch(), "")
	if err != nil {
		return nil, err
	}
	if len(recs) > s.cfg.MaxPreviewRecords {
		return nil, rpcerr.InvalidArgument(fmt.Sprintf("preview takes at most %d sample records, got %d; send fewer", s.cfg.MaxPreviewRecords, len(recs)),
			rpcerr.FieldViolation{Field: "batch", Description: fmt.Sprintf("%d records, over the limit of %d", len(recs), s.cfg.MaxPreviewRecords)})
	}
	var checked [][]*recordv1.RecordError
	if req.GetValidate() {
		if checked, err = s.previewChecks(ctx, req, subject, len(recs)); err != nil {
			return nil, err
		}
	}
	batch := plan.Map(recs)
	if err := s.translate(ctx, batch); err != nil {
		return nil, err
	}
	results, err := batch.Results()
	if err != nil {
		return nil, err
	}
	fields := plan.Fields()
	for i := range results {
		r := &results[i]
		pr := &adapterv1.PreviewRecord{Index: r.Index, Position: r.Position}
		if checked != nil {
			pr.Errors = append(pr.Errors, checked[i]...)
		}
		fieldErr := make(map[int]*recordv1.RecordError, len(r.Errors))
		for _, e := range r.Errors {
			if e.Field < 0 {
				pr.Errors = append(pr.Errors, e.Err)
			} else if fieldErr[e.Field] == nil {
				fieldErr[e.Field] = e.Err
			}
		}
		if recs[i].Err == nil {
			vals := batch.FieldValues(i)
			for fi, f := range fields {
				if !f.Mapped {
					continue
				}
				pf := &adapterv1.PreviewField{Field: f.Name, Source: f.Source, SourceValue: mapping.SourceProto(plan.SourceValue(&recs[i], fi))}
				if e := fieldErr[fi]; e != nil {
					pf.Error = e
				} else if vals[fi].Kind() != mapping.KindAbsent {
					pf.CanonicalValue = vals[fi].Proto()
				}
				pr.Fields = append(pr.Fields, pf)
			}
		}
		pr.Passed = recs[i].Err == nil && len(pr.Errors) == 0 && len(fieldErr) == 0
		if pr.Passed {
			resp.Passed++
		} else {
			resp.Failed++
		}
		resp.Records = append(resp.Records, pr)
	}
	return resp, nil
}

// previewChecks runs the record-level checks of the proposed (or the
// registered) contract on the batch, as the gate does before adapting, and
// returns each record's failures of QUARANTINE and BLOCK checks. Each
// record is judged alone: a preview has no batch to block.
func (s *Server) previewChecks(ctx context.Context, req *adapterv1.PreviewRequest, subject string, n int) ([][]*recordv1.RecordError, error) {
	ct := req.GetProposed()
	if ct == nil {
		v, err := s.registry.GetContract(ctx, &registryv1.GetContractRequest{Subject: subject, Version: req.GetVersion()})
		if err != nil {
			return nil, peerError(ctx, "registry", "contract", subject, err, "")
		}
		ct = v.GetVersion().GetContract()
	}
	plan, err := check.Compile(ct)
	if err != nil {
		return nil, rpcerr.InvalidArgument("the contract's checks do not compile, so no record could pass the gate: "+err.Error(),
			rpcerr.FieldViolation{Field: "proposed.checks", Description: err.Error()})
	}
	recs, err := s.decodeBatch(record.NewDecoder(plan.Schema(), record.Options{MaxRecordBytes: s.cfg.MaxRecordBytes}), req.GetBatch(), "")
	if err != nil {
		return nil, err
	}
	if len(recs) != n {
		return nil, fmt.Errorf("preview: the batch decodes to %d records for the checks and %d for the mapping", len(recs), n)
	}
	res := plan.Validate(recs)
	checks := plan.Checks()
	out := make([][]*recordv1.RecordError, n)
	for i, r := range res.Records {
		for _, f := range r.Failures {
			if checks[f.Check].Policy == contractv1.Policy_POLICY_ALERT || f.Check == 0 {
				continue // alerts pass; a decode failure is the mapping's to report
			}
			out[i] = append(out[i], &recordv1.RecordError{Code: f.Code, Field: f.Field, Message: f.Message, Check: checks[f.Check].Name})
		}
	}
	return out, nil
}

// draft compiles a proposed contract's mapping as far as it goes.
func (s *Server) draft(ctx context.Context, req *adapterv1.PreviewRequest) (*mapping.Plan, []string, error) {
	ct := req.GetProposed()
	m := ct.GetMapping()
	if m == nil || m.GetCanonical() == "" {
		return nil, []string{"mapping.canonical: the proposed contract maps to no canonical model; add mapping.canonical and mapping.fields"}, nil
	}
	cm, err := s.registry.GetCanonicalModel(ctx, &registryv1.GetCanonicalModelRequest{Name: m.GetCanonical(), Version: m.GetCanonicalVersion()})
	if status.Code(err) == codes.NotFound {
		return nil, []string{fmt.Sprintf("mapping.canonical: canonical model %q is not registered; register it first (seam canonical register)", m.GetCanonical())}, nil
	}
	if err != nil {
		return nil, nil, peerError(ctx, "registry", "canonical model", m.GetCanonical(), err, "")
	}
	plan, problems, err := mapping.Draft(ct, cm.GetVersion().GetModel(), cm.GetVersion().GetVersion(), &catalog{ctx: ctx, idmap: s.idmap})
	if err != nil {
		return nil, nil, compileError(ctx, "the proposed contract", err)
	}
	out := make([]string, len(problems))
	for i, p := range problems {
		out[i] = p.String()
	}
	return plan, out, nil
}
