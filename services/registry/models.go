package registry

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/core/classify"
	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/rpcerr"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// modelAsContract lets the contract classifier compare canonical model
// versions: a model is a contract's field list under a name.
func modelAsContract(m *contractv1.CanonicalModel) *contractv1.Contract {
	return &contractv1.Contract{Subject: m.GetName(), Owner: m.GetOwner(), Description: m.GetDescription(), Fields: m.GetFields()}
}

func (s *Server) registerCanonicalModel(ctx context.Context, p *auth.Principal, req *registryv1.RegisterCanonicalModelRequest) (*registryv1.RegisterCanonicalModelResponse, error) {
	m, err := canonicalModelOf(req.GetModel(), req.GetDocument())
	if err != nil {
		return nil, err
	}
	if problems := contract.ValidateCanonicalModel(m); len(problems) > 0 {
		var vs []rpcerr.FieldViolation
		for _, pr := range problems {
			vs = append(vs, rpcerr.FieldViolation{Field: "model." + pr.Path, Description: pr.Message})
		}
		return nil, invalid("the canonical model is invalid; fix each field below and submit it again", vs...)
	}
	if !p.Owns(m.GetName()) && !p.Has(auth.RoleOperator) {
		return nil, rpcerr.PermissionDenied(ReasonNotOwner, fmt.Sprintf(
			"%s does not own canonical model %q; only its owners, operators or an admin may register versions of it", p.Name, m.GetName()))
	}
	fingerprint, err := contract.Fingerprint(m)
	if err != nil {
		return nil, fmt.Errorf("fingerprint canonical model %s: %w", m.GetName(), err)
	}
	var resp *registryv1.RegisterCanonicalModelResponse
	err = s.store.Write(ctx, func(tx StoreTx) error {
		versions, err := tx.Model(m.GetName())
		if err != nil {
			return err
		}
		next := &registryv1.CanonicalModelVersion{Name: m.GetName(), Version: 1, Model: m, CreateTime: timestamppb.New(s.clock()), Author: p.Name}
		if n := len(versions); n > 0 {
			latest := versions[n-1]
			latestFP, err := contract.Fingerprint(latest.GetModel())
			if err != nil {
				return fmt.Errorf("fingerprint canonical model %s v%d: %w", latest.GetName(), latest.GetVersion(), err)
			}
			if latestFP == fingerprint {
				resp = &registryv1.RegisterCanonicalModelResponse{Version: latest, Unchanged: true}
				return nil
			}
			next.Version = latest.GetVersion() + 1
			// Canonical models are read by every downstream consumer, so
			// their changes are classified as BACKWARD for the record.
			res := classify.Classify([]*contractv1.Contract{modelAsContract(latest.GetModel())}, modelAsContract(m), contractv1.Compatibility_COMPATIBILITY_BACKWARD)
			for _, c := range res.Changes {
				if c.GetComparedVersion() == 0 {
					c.ComparedVersion = latest.GetVersion()
				}
			}
			next.Changes = res.Changes
		}
		if err := tx.InsertModelVersion(next); err != nil {
			return err
		}
		if next.GetVersion() == 1 {
			consumers, err := tx.Consumers()
			if err != nil {
				return err
			}
			if _, err := linkLearned(tx, consumers, claim{canonical: m.GetName()}, p.Name, next.GetCreateTime()); err != nil {
				return err
			}
		}
		resp = &registryv1.RegisterCanonicalModelResponse{Version: next}
		return tx.AppendEvent(&registryv1.Event{
			Type: registryv1.EventType_EVENT_TYPE_CANONICAL_MODEL_REGISTERED, Time: next.GetCreateTime(), Subject: next.GetName(),
			Version: next.GetVersion(), Principal: p.Name, Changes: next.GetChanges(),
			Message: fmt.Sprintf("canonical model %s v%d registered", next.GetName(), next.GetVersion()),
		})
	})
	if err != nil {
		return nil, err
	}
	if !resp.GetUnchanged() {
		s.sync(ctx)
	}
	return resp, nil
}
