package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/rpcerr"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// An alert is OPEN when raised, ACKNOWLEDGED when someone takes it, and
// RESOLVED when someone closes it or when it no longer holds. An alert
// about a partition is a fact about that partition: only a re-judgment of
// that partition resolves it (a replay released records into it and the
// check passed: resolved by "replay <id>"; it was sent again with
// replace: "partition <p> attempt <n>"). A later partition never resolves
// an earlier one's alert. Every change is an event in the registry's
// stream.

// maxAlertReason bounds the reason of an acknowledgement or resolution.
const maxAlertReason = 1024

// settleAlerts resolves the alerts a judgment no longer upholds. On a
// re-judgment (the unit was sealed before) the unit's own holding alerts
// whose check now passes are resolved by resolver; on the first seal of a
// replacing sending, the alerts of the sendings it replaced. Alerts of
// other partitions are never touched.
func (s *Server) settleAlerts(ctx context.Context, tx storeTx, p partRow, u *unitRow, outcomes []check.Outcome, verdict check.Verdict, raised []*gatev1.Alert, resolver string, now time.Time) error {
	exceeded := map[string]bool{}
	shapes := map[string]bool{}
	for _, o := range outcomes {
		if !o.Exceeded {
			continue
		}
		exceeded[o.Name] = true
		if o.Kind == "shape" {
			shapes[o.Field] = true
		}
	}
	if u.status == gatev1.PartitionStatus_PARTITION_STATUS_SEALED {
		if resolver == "" {
			resolver = "gate"
		}
		held, err := tx.HoldingAlerts(ctx, p.subject, p.part, u.amendment, u.openedAt)
		if err != nil {
			return err
		}
		for _, a := range held {
			var holds bool
			switch a.GetKind() {
			case "UNANNOUNCED_CHANGE":
				holds = shapes[a.GetField()]
			case "PARTITION_BLOCKED":
				holds = verdict == check.Blocked
			default:
				holds = exceeded[a.GetCheck()]
			}
			if holds {
				continue
			}
			why := fmt.Sprintf("%s re-judged partition %s of %s: %s no longer fails", resolver, p.part, p.subject, a.GetCheck())
			if _, _, err := s.setAlertState(ctx, tx, a.GetSequence(), gatev1.AlertState_ALERT_STATE_RESOLVED, resolver, why, now); err != nil {
				return err
			}
		}
		return nil
	}
	if p.attempt <= 1 {
		return nil
	}
	// A replacement: the alerts of the sendings it replaced (all of the
	// unit's but those this judgment raised: alerts are raised only at a
	// seal) judged records that no longer count.
	held, err := tx.HoldingAlerts(ctx, p.subject, p.part, u.amendment, time.Time{})
	if err != nil {
		return err
	}
	fresh := map[int64]bool{}
	for _, a := range raised {
		fresh[a.GetSequence()] = true
	}
	by := fmt.Sprintf("partition %s attempt %d", p.part, p.attempt)
	for _, a := range held {
		if fresh[a.GetSequence()] {
			continue // raised by this judgment
		}
		why := fmt.Sprintf("partition %s of %s was sent again with replace (attempt %d), judged on its own", p.part, p.subject, p.attempt)
		if _, _, err := s.setAlertState(ctx, tx, a.GetSequence(), gatev1.AlertState_ALERT_STATE_RESOLVED, by, why, now); err != nil {
			return err
		}
	}
	return nil
}

// setAlertState moves an alert to state and queues the registry event
// saying so; false when it was not in a state that moves there.
func (s *Server) setAlertState(ctx context.Context, tx storeTx, seq int64, state gatev1.AlertState, by, reason string, now time.Time) (*gatev1.Alert, bool, error) {
	a, ok, err := tx.SetAlertState(ctx, seq, state, by, reason, now)
	if err != nil || !ok {
		return a, ok, err
	}
	typ, verb := registryv1.EventType_EVENT_TYPE_ALERT_RESOLVED, "resolved"
	if state == gatev1.AlertState_ALERT_STATE_ACKNOWLEDGED {
		typ, verb = registryv1.EventType_EVENT_TYPE_ALERT_ACKNOWLEDGED, "acknowledged"
	}
	msg := fmt.Sprintf("alert %d (%s %s of %s partition %s) %s by %s", seq, a.GetKind(), a.GetCheck(), a.GetSubject(), a.GetPartition(), verb, by)
	if reason != "" {
		msg += ": " + reason
	}
	ev, err := newEvent(ctx, &registryv1.Event{Type: typ, Time: timestamppb.New(now), Subject: a.GetSubject(), Principal: "gate", Message: msg,
		PartitionFrom: a.GetPartition(), PartitionTo: a.GetPartition(),
		Attributes: map[string]string{"alert_sequence": fmt.Sprint(seq), "kind": a.GetKind(), "check": a.GetCheck(), "field": a.GetField(),
			"state": strings.TrimPrefix(state.String(), "ALERT_STATE_"), "by": by, "reason": reason}})
	if err != nil {
		return nil, false, err
	}
	if err := tx.Enqueue(ctx, ev, now); err != nil {
		return nil, false, err
	}
	if err := tx.Audit(ctx, now, by, a.GetSubject(), "alert."+verb, msg); err != nil {
		return nil, false, err
	}
	s.cfg.Logger.InfoContext(ctx, "alert "+verb, "subject", a.GetSubject(), "sequence", seq, "kind", a.GetKind(), "by", by)
	return a, true, nil
}

// AcknowledgeAlert marks an open alert ACKNOWLEDGED by the caller.
func (s *Server) AcknowledgeAlert(ctx context.Context, req *gatev1.AcknowledgeAlertRequest) (*gatev1.AcknowledgeAlertResponse, error) {
	a, err := s.moveAlert(ctx, req.GetSequence(), req.GetReason(), gatev1.AlertState_ALERT_STATE_ACKNOWLEDGED, false)
	if err != nil {
		return nil, err
	}
	return &gatev1.AcknowledgeAlertResponse{Alert: a}, nil
}

// ResolveAlert marks an alert RESOLVED by the caller, with a reason.
func (s *Server) ResolveAlert(ctx context.Context, req *gatev1.ResolveAlertRequest) (*gatev1.ResolveAlertResponse, error) {
	a, err := s.moveAlert(ctx, req.GetSequence(), req.GetReason(), gatev1.AlertState_ALERT_STATE_RESOLVED, true)
	if err != nil {
		return nil, err
	}
	return &gatev1.ResolveAlertResponse{Alert: a}, nil
}

func (s *Server) moveAlert(ctx context.Context, seq int64, reason string, state gatev1.AlertState, needReason bool) (*gatev1.Alert, error) {
	reason = strings.TrimSpace(reason)
	var bad []rpcerr.FieldViolation
	if seq <= 0 {
		bad = append(bad, rpcerr.FieldViolation{Field: "sequence", Description: "name the alert by its sequence (seam alerts list shows it)"})
	}
	if needReason && reason == "" {
		bad = append(bad, rpcerr.FieldViolation{Field: "reason", Description: "say why the alert no longer needs attention"})
	}
	if len(reason) > maxAlertReason {
		bad = append(bad, rpcerr.FieldViolation{Field: "reason", Description: fmt.Sprintf("%d bytes; say it in at most %d", len(reason), maxAlertReason)})
	}
	if len(bad) > 0 {
		return nil, rpcerr.InvalidArgument("bad alert change", bad...)
	}
	if p, ok := auth.FromContext(ctx); ok && p.Scoped() {
		// The alert's subject is known only from the store: a token limited
		// to subjects may move only their alerts.
		a, found, err := s.store.Alert(ctx, seq)
		if err != nil {
			return nil, err
		}
		if found {
			if err := auth.RequireSubject(ctx, a.GetSubject()); err != nil {
				return nil, err
			}
		}
	}
	by := auth.NameFromContext(ctx)
	if by == "" {
		by = "anonymous"
	}
	var out *gatev1.Alert
	var moved bool
	err := s.store.InTx(ctx, func(tx storeTx) error {
		var err error
		out, moved, err = s.setAlertState(ctx, tx, seq, state, by, reason, s.cfg.Clock())
		return err
	})
	if errors.Is(err, errAlertNotFound) {
		return nil, rpcerr.NotFound("alert", fmt.Sprint(seq), "list alerts with seam alerts list --all")
	}
	if err != nil {
		return nil, err
	}
	if moved {
		verb := strings.ToLower(strings.TrimPrefix(state.String(), "ALERT_STATE_"))
		s.cfg.Logger.InfoContext(ctx, "alert "+verb, "audit", true, "event", "alert_"+verb, "subject", out.GetSubject(), "partition", out.GetPartition(),
			"check", out.GetCheck(), "sequence", seq, "kind", out.GetKind(), "by", by, "reason", reason)
	}
	if !moved {
		if out.GetState() == state {
			return out, nil // done before: the same answer, nothing changes
		}
		return nil, rpcerr.FailedPrecondition("ALERT_"+strings.TrimPrefix(out.GetState().String(), "ALERT_STATE_"),
			fmt.Sprintf("alert %d is %s; only an open alert is acknowledged, and a resolved one stays resolved", seq, strings.TrimPrefix(out.GetState().String(), "ALERT_STATE_")), nil)
	}
	return out, nil
}
