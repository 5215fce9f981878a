package registry

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// auditHold records in a subject's history that a due version waits.
const auditHold = "ACTIVATION_HELD"

// idmapSilent is the hold reason while idmap cannot be asked. It is one
// fixed text, so an idmap that stays down is reported once, not per try.
const idmapSilent = "idmap did not answer whether the migration can run; the registry asks again until it does"

// holdIfNotReady asks idmap whether a due version's migration can run and
// reports whether the version must wait. A version that waits stays
// SCHEDULED; why is recorded once per distinct reason: on the version
// (activation_hold), as an ACTIVATION_HELD event to the consumers the
// change reaches, and in the subject's history. The scheduler asks again
// on every tick and activates the version once idmap can run it.
func (s *Server) holdIfNotReady(ctx context.Context, v *registryv1.ContractVersion) (bool, error) {
	if s.idmap == nil || len(translationsOf(v.GetContract())) == 0 {
		return false, nil
	}
	report, err := s.idmap.check(ctx, v.GetContract(), nil, 0)
	var reason string
	switch {
	case status.Code(err) == codes.Unavailable:
		reason = idmapSilent
	case err != nil:
		return true, fmt.Errorf("ask idmap about %s v%d: %w", v.GetSubject(), v.GetVersion(), err)
	default:
		reason = holdReason(report)
	}
	if reason == "" {
		return false, nil
	}
	return true, s.recordHold(ctx, v, reason)
}

func (s *Server) recordHold(ctx context.Context, v *registryv1.ContractVersion, reason string) error {
	now := timestamppb.New(s.clock().UTC())
	changed := false
	err := s.store.Write(ctx, func(tx StoreTx) error {
		var err error
		changed, err = tx.UpdateVersion(v.GetSubject(), v.GetVersion(), func(cur *registryv1.ContractVersion) bool {
			if cur.GetStatus() != registryv1.VersionStatus_VERSION_STATUS_SCHEDULED || cur.GetActivationHold() == reason {
				return false
			}
			cur.ActivationHold = reason
			return true
		})
		if err != nil || !changed {
			return err
		}
		consumers, err := tx.Consumers()
		if err != nil {
			return err
		}
		subj, history, err := tx.Subject(v.GetSubject())
		if err != nil {
			return err
		}
		var names []string
		if v.GetBreaking() {
			for _, a := range affectedBy(consumers, v.GetSubject(), v.GetChanges(), lineageMappings(history, subj.GetActiveVersion(), v.GetContract())) {
				names = append(names, a.GetConsumer())
			}
		}
		msg := fmt.Sprintf("%s v%d reached its effective time %s but stays SCHEDULED: %s; it activates as soon as its migration can run",
			v.GetSubject(), v.GetVersion(), v.GetEffectiveTime().AsTime().Format(time.RFC3339), reason)
		if err := tx.AppendEvent(&registryv1.Event{Type: registryv1.EventType_EVENT_TYPE_ACTIVATION_HELD, Time: now, Subject: v.GetSubject(),
			Version: v.GetVersion(), Principal: schedulerPrincipal, Message: msg, Consumers: names, EffectiveTime: v.GetEffectiveTime(),
			Attributes: map[string]string{"reason": reason}}); err != nil {
			return err
		}
		return tx.Audit(v.GetSubject(), &registryv1.AuditEntry{Time: now, Principal: schedulerPrincipal, Action: auditHold, Version: v.GetVersion(), Detail: msg})
	})
	if err != nil {
		return fmt.Errorf("hold %s v%d: %w", v.GetSubject(), v.GetVersion(), err)
	}
	if changed {
		s.log.WarnContext(ctx, "registry: scheduled version held at its effective time", "subject", v.GetSubject(), "version", v.GetVersion(), "reason", reason)
		s.sync(ctx)
	}
	return nil
}

// releaseHold, in the activation's transaction, clears a version's hold
// and moves its effective time to the moment it really took effect, so
// "the version in effect at T" stays true for the time it was held.
func releaseHold(tx StoreTx, v *registryv1.ContractVersion, now *timestamppb.Timestamp) error {
	if v.GetActivationHold() == "" {
		return nil
	}
	_, err := tx.UpdateVersion(v.GetSubject(), v.GetVersion(), func(cur *registryv1.ContractVersion) bool {
		if cur.GetActivationHold() == "" {
			return false
		}
		cur.ActivationHold, cur.EffectiveTime = "", now
		return true
	})
	return err
}
