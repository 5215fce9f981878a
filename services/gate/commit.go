package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/core/check"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// commitBatch writes everything a batch decided in one transaction: its
// idempotency row, its quarantined records, its partition's counters and
// field statistics, and the alerts and registry events it raised. The
// idempotency row is inserted first, so a concurrent duplicate waits on
// its unique key and then finds it taken (errDuplicateBatch).
func (s *Server) commitBatch(ctx context.Context, o *outcome) ([]*gatev1.Alert, error) {
	var alerts []*gatev1.Alert
	now := s.cfg.Clock()
	in := o.in
	key := batchKey{in.subject, in.partition, in.batchID}
	sum := o.resp.GetSummary()
	err := s.store.InTx(ctx, func(tx storeTx) error {
		alerts = nil
		claimed, err := tx.ClaimBatch(ctx, key, batchRow{status: sum.GetStatus(), version: o.cv.version,
			received: sum.GetReceived(), accepted: sum.GetAccepted(), quarantined: sum.GetQuarantined(), at: now})
		if err != nil {
			return err
		}
		if !claimed {
			return errDuplicateBatch
		}
		if err := tx.InsertQuarantine(ctx, o.quarantineRows(now, s.cfg.QuarantineMaxRaw)); err != nil {
			return err
		}
		c := partitionCounts{received: sum.GetReceived(), accepted: sum.GetAccepted(), quarantined: sum.GetQuarantined(),
			idChecked: o.idChecked, idMatched: o.idMatched}
		if o.blocked != nil {
			c.blocked = sum.GetReceived()
		}
		if err := tx.CountBatch(ctx, in.subject, in.partition, c, now); err != nil {
			return err
		}
		if o.stats != nil {
			if err := tx.AddFieldStats(ctx, in.subject, in.partition, o.stats.Fields); err != nil {
				return err
			}
			if alerts, err = s.raiseAlerts(ctx, tx, o, now); err != nil {
				return err
			}
		}
		var blob []byte
		if o.blocked != nil {
			blob, err = proto.Marshal(o.blocked)
		} else {
			stored := proto.CloneOf(o.resp)
			stored.Alerts = alerts
			blob, err = proto.Marshal(stored)
		}
		if err != nil {
			return fmt.Errorf("encode verdicts of batch %s: %w", in.batchID, err)
		}
		if err := tx.SetBatchAnswer(ctx, key, blob); err != nil {
			return err
		}
		if len(alerts) > 0 {
			return tx.Notify(ctx, alertChannel)
		}
		return nil
	})
	return alerts, err
}

// quarantineRows are the rows of the records a batch set aside, each
// keeping at most maxRaw bytes of the record as sent.
func (o *outcome) quarantineRows(at time.Time, maxRaw int) []quarantineRow {
	out := make([]quarantineRow, len(o.quar))
	for i, q := range o.quar {
		sum := sha256.Sum256(q.raw)
		raw := q.raw
		if len(raw) > maxRaw {
			raw = raw[:maxRaw]
		}
		out[i] = quarantineRow{id: q.id, subject: o.in.subject, part: o.in.partition, batchID: o.in.batchID, index: q.index, position: q.position,
			version: o.cv.version, format: o.format, raw: raw, rawSize: int64(len(q.raw)), rawSHA256: hex.EncodeToString(sum[:]),
			reasons: q.reasons, idState: q.idState, at: at}
	}
	return out
}

// raiseAlerts evaluates, inside the batch's transaction, the alerts the
// batch raises: ALERT record checks, the partition's statistical checks
// against its trailing baseline, and clustered failure shapes. Each alert
// is stored once per partition (once per field and shape for unannounced
// changes) and sent to the registry through the outbox.
func (s *Server) raiseAlerts(ctx context.Context, tx storeTx, o *outcome, now time.Time) ([]*gatev1.Alert, error) {
	in := o.in
	plan := o.cv.plan
	checks := plan.Checks()
	var out []*gatev1.Alert
	raise := func(a *gatev1.Alert, dedupe string, typ registryv1.EventType) error {
		ok, err := s.storeAlert(ctx, tx, a, dedupe, typ)
		if ok {
			out = append(out, a)
		}
		return err
	}
	base := func(kind, check, field, msg string, sev gatev1.Severity) *gatev1.Alert {
		return &gatev1.Alert{Time: timestamppb.New(now), Subject: in.subject, Partition: in.partition, Check: check, Severity: sev,
			Message: msg, Field: field, Kind: kind, FirstSeen: timestamppb.New(now), BatchId: in.batchID, Observed: math.NaN(), Baseline: math.NaN()}
	}
	for idx, n := range o.recordAlerts {
		ch := checks[idx]
		a := base("RECORD_CHECK", ch.Name, ch.Field, fmt.Sprintf("%d records of batch %s failed ALERT check %s (%s); they passed", n, in.batchID, ch.Name, ch.Rule), gatev1.Severity_SEVERITY_WARNING)
		a.Count, a.Observed = n, float64(n)
		if err := raise(a, "record/"+in.subject+"/"+in.partition+"/"+ch.Name, registryv1.EventType_EVENT_TYPE_ALERT_RAISED); err != nil {
			return nil, err
		}
	}

	window := 0
	for _, ch := range checks {
		window = max(window, ch.Baseline)
	}
	from, err := tx.BaselineFrom(ctx, in.subject, in.partition, window)
	if err != nil {
		return nil, err
	}
	parts, stats, err := tx.PartitionStats(ctx, in.subject, from, in.partition)
	if err != nil {
		return nil, err
	}
	cur := stats[in.partition]
	if cur == nil {
		return nil, fmt.Errorf("partition %s/%s vanished inside its own transaction", in.subject, in.partition)
	}
	var baseline []check.Stats
	for _, p := range parts {
		if p != in.partition {
			baseline = append(baseline, *stats[p])
		}
	}
	for _, m := range plan.Monitor(*cur, baseline) {
		kind, sev := statKind(m.Metric)
		a := base(kind, m.Name, m.Field, m.Message, sev)
		a.Observed, a.Baseline, a.Count = m.Observed, m.Baseline, cur.Rows
		if m.Metric == "match_rate" {
			a.Count = cur.Fields[m.Field].IDs
		}
		if err := raise(a, "stat/"+in.subject+"/"+in.partition+"/"+m.Name, registryv1.EventType_EVENT_TYPE_ALERT_RAISED); err != nil {
			return nil, err
		}
	}

	for _, c := range o.shapes {
		fresh, err := tx.NewShape(ctx, in.subject, c.field, c.shape, in.batchID, now)
		if err != nil {
			return nil, err
		}
		if !fresh {
			continue // already reported: one alert per field and shape, not one per batch
		}
		msg := fmt.Sprintf("unannounced change: %d of %d records of batch %s send %s as %s (for example %s) where the contract (version %d) declares %s; they are quarantined, not passed with the value nulled — announce a new contract version with a mapping, or contain the source",
			c.count, c.total, in.batchID, c.field, c.shape, c.sample, o.cv.version, c.declared)
		a := base("UNANNOUNCED_CHANGE", c.field+".type", c.field, msg, gatev1.Severity_SEVERITY_CRITICAL)
		a.Count, a.Observed = c.count, float64(c.count)/float64(c.total)
		if err := raise(a, "shape/"+in.subject+"/"+c.field+"/"+c.shape, registryv1.EventType_EVENT_TYPE_UNANNOUNCED_CHANGE); err != nil {
			return nil, err
		}
	}
	if err := s.autoContain(ctx, tx, o, now); err != nil {
		return nil, err
	}
	return out, nil
}

func statKind(metric string) (string, gatev1.Severity) {
	switch metric {
	case "match_rate":
		return "MATCH_RATE", gatev1.Severity_SEVERITY_CRITICAL
	case "mean":
		return "MEAN_DRIFT", gatev1.Severity_SEVERITY_WARNING
	case "null_rate":
		return "NULL_RATE", gatev1.Severity_SEVERITY_WARNING
	}
	return "ROW_COUNT", gatev1.Severity_SEVERITY_WARNING
}

// storeAlert stores a once under its dedupe key and queues its registry
// event; ok is false when the alert had been raised before.
func (s *Server) storeAlert(ctx context.Context, tx storeTx, a *gatev1.Alert, dedupe string, typ registryv1.EventType) (bool, error) {
	ok, err := tx.InsertAlert(ctx, a, dedupe)
	if err != nil || !ok {
		return false, err
	}
	ev, err := newEvent(&registryv1.Event{Type: typ, Time: a.GetTime(), Subject: a.GetSubject(), Principal: "gate",
		Message: a.GetMessage(), PartitionFrom: a.GetPartition(), PartitionTo: a.GetPartition(),
		Attributes: map[string]string{"kind": a.GetKind(), "check": a.GetCheck(), "field": a.GetField(), "severity": a.GetSeverity().String(),
			"observed": fmt.Sprint(a.GetObserved()), "baseline": fmt.Sprint(a.GetBaseline()), "alert_sequence": fmt.Sprint(a.GetSequence())}})
	if err != nil {
		return false, err
	}
	return true, tx.Enqueue(ctx, ev, a.GetTime().AsTime())
}

// autoContain contains the source when the operator configured a match
// rate floor and the partition fell below it.
func (s *Server) autoContain(ctx context.Context, tx storeTx, o *outcome, now time.Time) error {
	floor := s.cfg.MatchRateFloor
	if floor <= 0 || o.idField == "" {
		return nil
	}
	checked, matched, err := tx.MatchCounts(ctx, o.in.subject, o.in.partition)
	if err != nil {
		return err
	}
	if checked < s.cfg.MinMatchSample || float64(matched)/float64(checked) >= floor {
		return nil
	}
	cur, ok, err := tx.Containment(ctx, o.in.subject)
	if err != nil {
		return err
	}
	if ok && cur.Contained {
		return nil
	}
	reason := fmt.Sprintf("automatic: match rate of %s in partition %s is %.4f (%d of %d), below the floor %g",
		o.idField, o.in.partition, float64(matched)/float64(checked), matched, checked, floor)
	c := containment{Subject: o.in.subject, Contained: true, Reason: reason, Principal: "gate", Changed: now, Automatic: true}
	ev, err := newEvent(&registryv1.Event{Type: registryv1.EventType_EVENT_TYPE_SOURCE_CONTAINED, Time: timestamppb.New(now),
		Subject: o.in.subject, Principal: "gate", Message: "contain " + o.in.subject + ": " + reason,
		Attributes: map[string]string{"automatic": "true"}})
	if err != nil {
		return err
	}
	s.cfg.Logger.WarnContext(ctx, "source contained automatically", "subject", o.in.subject, "reason", reason)
	return tx.WriteContainment(ctx, c, "CONTAIN", ev)
}
