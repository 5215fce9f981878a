package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/core/verdict"
	"github.com/seamdata/seam/platform/auth"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// claimBatch claims the batch key for the body digest, then locks the
// batch's partition, creating it; errDuplicateBatch when the key was
// claimed before.
func claimBatch(ctx context.Context, tx storeTx, key batchKey, digest []byte, now time.Time) (partRow, error) {
	claimed, err := tx.ClaimBatch(ctx, key, digest, now)
	if err != nil {
		return partRow{}, err
	}
	if !claimed {
		return partRow{}, errDuplicateBatch
	}
	p, _, err := tx.LockPartition(ctx, key.subject, key.part, true, now)
	return p, err
}

// commitBatch writes everything a batch decided in one transaction: its
// idempotency row (claimed first, so a concurrent duplicate waits on its
// unique key and then finds it taken), the supersession of the partition's
// previous sending when it replaces it, the partition's key index (which
// decides the duplicates), its quarantined records, the counters and
// figures of the partition (or amendment) it went into, the subject's
// watermark, and, when asked, the partition's seal with the alerts and
// registry events it raises.
func (s *Server) commitBatch(ctx context.Context, o *outcome, digest []byte) (*gatev1.IngestResponse, error) {
	now := s.cfg.Clock()
	in := o.in
	key := batchKey{in.subject, in.partition, in.batchID}
	by := auth.NameFromContext(ctx)
	var resp *gatev1.IngestResponse
	var report *sealed
	err := s.store.InPartitionTx(ctx, in.subject, in.partition, func(tx storeTx) error {
		report = nil
		p, err := claimBatch(ctx, tx, key, digest, now)
		if err != nil {
			return err
		}
		if in.replace && p.replacedBy != in.replaceKey {
			if err := s.supersede(ctx, tx, &p, in.replaceKey, by, now); err != nil {
				return err
			}
		}
		u, err := s.openUnit(ctx, tx, &p, o.cv.version, now)
		if err != nil {
			return err
		}

		final := o
		if len(o.keys) > 0 {
			hashes := make([][]byte, len(o.keys))
			for i, k := range o.keys {
				hashes[i] = k.hash
			}
			fresh, err := tx.InsertKeys(ctx, p.pid, hashes)
			if err != nil {
				return err
			}
			var dup []keyed
			for i, k := range o.keys {
				if !fresh[i] {
					dup = append(dup, k)
				}
			}
			if final, err = o.withDuplicates(dup); err != nil {
				return err
			}
		}
		rows := final.quarantineRows(now, s.cfg.QuarantineMaxRaw, u.amendment)
		if u.amendment > 0 {
			// Sent after the partition was sealed: a resend, or a late
			// file. (While the first sending is open, the check would
			// read the partition's held rows batch after batch.)
			if rows, final, err = final.heldAgain(ctx, tx, rows); err != nil {
				return err
			}
		}
		if err := tx.InsertQuarantine(ctx, rows); err != nil {
			return err
		}
		sum := final.resp.GetSummary()
		c := &u.counts
		c.received += sum.GetReceived()
		c.accepted += sum.GetAccepted()
		c.quarantined += sum.GetQuarantined()
		c.duplicates += sum.GetDuplicates()
		c.batches++
		c.idChecked += o.idChecked
		c.idMatched += o.idMatched
		u.figures.add(final.figures)
		u.updatedAt = now
		if o.cv.spec != nil && !o.maxTime.IsZero() {
			if err := tx.AdvanceWatermark(ctx, in.subject, o.maxTime); err != nil {
				return err
			}
		}
		if err := s.autoContain(ctx, tx, in.subject, in.partition, matchRateField(o.cv), u.counts, now); err != nil {
			return err
		}
		var alerts []*gatev1.Alert
		if in.seal {
			if report, alerts, err = s.sealUnit(ctx, tx, o.cv, p, &u, gatev1.SealCause_SEAL_CAUSE_REQUEST, by, in.batchID, "", now); err != nil {
				return err
			}
		}
		if err := tx.PutUnit(ctx, u); err != nil {
			return err
		}
		if err := tx.SetPartition(ctx, p, now); err != nil {
			return err
		}
		verdicts, err := encodeVerdicts(o.cv.plan, final.resp.GetRecords())
		if err != nil {
			return fmt.Errorf("batch %s: %w", in.batchID, err)
		}
		row := batchRow{status: sum.GetStatus(), version: o.cv.version, received: sum.GetReceived(), accepted: sum.GetAccepted(),
			quarantined: sum.GetQuarantined(), duplicates: sum.GetDuplicates(), amendment: u.amendment, attempt: p.attempt, verdicts: verdicts}
		for _, a := range alerts {
			row.alertSeqs = append(row.alertSeqs, a.GetSequence())
		}
		if err := tx.FinishBatch(ctx, key, row); err != nil {
			return err
		}
		var packed *gatev1.PackedVerdicts
		if in.withRecords {
			var packErr error
			packed, packErr = final.packedVerdicts()
			switch {
			case packErr == nil:
			case in.packed:
				_, err := packedForm(in, nil, nil, packErr)
				return err
			default:
				packed = nil // kept a record at a time; the answer is not packed
			}
		}
		if in.withRecords && sum.GetAccepted() > 0 {
			form, recs, free, err := encodeAnswer(final.resp.GetRecords(), packed)
			if err != nil {
				return err
			}
			err = tx.PutAnswer(ctx, key, form, recs, now.Add(s.cfg.AnswerTTL))
			free() // the statement has copied the bytes
			if err != nil {
				return err
			}
		}
		resp = &gatev1.IngestResponse{Summary: sum, Records: final.resp.GetRecords(), Alerts: alerts,
			Partition: s.stateOf(o.cv, p, u, alerts)}
		if in.packed && packed != nil {
			resp.Records, resp.Packed = nil, packed
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !in.withRecords {
		// The verdicts were built for this answer alone: drop their
		// canonical records (an adapter that predates packed answers sends
		// them anyway) in place.
		for _, v := range resp.GetRecords() {
			v.Record = nil
		}
	}
	s.reportSealed(ctx, report)
	s.raised(ctx, resp.GetAlerts())
	return resp, nil
}

// openUnit returns the unit a batch goes into: the partition's latest
// one while it is open, or a new one (the partition itself, or an
// amendment of it once it is sealed) judged by version. An open unit
// judged by another version than the batch was validated with has moved
// under it (errTargetMoved).
func (s *Server) openUnit(ctx context.Context, tx storeTx, p *partRow, version int32, now time.Time) (unitRow, error) {
	u, ok, err := tx.Unit(ctx, p.pid, p.amendment)
	if err != nil {
		return unitRow{}, err
	}
	switch {
	case !ok:
	case u.status == gatev1.PartitionStatus_PARTITION_STATUS_SEALED:
		p.amendment++
	case u.version == 0: // a partition counted before partitions were judged
		u.version = version
		return u, nil
	case u.version != version:
		return unitRow{}, errTargetMoved
	default:
		return u, nil
	}
	return unitRow{pid: p.pid, amendment: p.amendment, status: gatev1.PartitionStatus_PARTITION_STATUS_OPEN, version: version, openedAt: now, updatedAt: now}, nil
}

// supersede starts a new sending of a partition: its units and key index
// go, its held quarantine is marked SUPERSEDED (kept, counted nowhere),
// and the replacement is audited.
func (s *Server) supersede(ctx context.Context, tx storeTx, p *partRow, replaceKey, by string, now time.Time) error {
	old, _, err := tx.Unit(ctx, p.pid, 0)
	if err != nil {
		return err
	}
	n, err := tx.Supersede(ctx, *p, now)
	if err != nil {
		return err
	}
	detail := fmt.Sprintf("partition %s sending %d replaced by %s: %d records received before (amendment 0) and %d held records superseded",
		p.part, p.attempt, replaceKey, old.counts.received, n)
	if err := tx.Audit(ctx, now, by, p.subject, "REPLACE", detail); err != nil {
		return err
	}
	p.attempt++
	p.amendment = 0
	p.replacedBy = replaceKey
	return nil
}

// heldAgain drops the rows of records the partition holds already, the
// same bytes under a contract key: a day resent after it was sealed,
// while some of its records are still held (unmapped ids), holds each of
// them once, not twice. Such
// a record is a duplicate of the held one — counted against the key check
// instead of the checks it failed, whose failures the held record counts
// already — and its verdict says so. The outcome it is called on is not
// changed (the transaction may run again).
func (o *outcome) heldAgain(ctx context.Context, tx storeTx, rows []quarantineRow) ([]quarantineRow, *outcome, error) {
	idx, ok := o.cv.plan.KeyCheck()
	if !ok || len(rows) == 0 {
		return rows, o, nil
	}
	digests := make([]string, len(rows))
	for i, r := range rows {
		digests[i] = r.rawSHA256
	}
	held, err := tx.HeldDigests(ctx, o.in.subject, o.in.partition, digests)
	if err != nil || len(held) == 0 {
		return rows, o, err
	}
	ch := o.cv.plan.Checks()[idx]
	vs := o.resp.GetRecords()
	if o.direct {
		// The verdicts are in the packing: unpacked, changed, packed again.
		if o.packErr != nil {
			return nil, nil, o.packErr
		}
		if vs, err = verdict.Expand(o.packed); err != nil {
			return nil, nil, fmt.Errorf("batch %s: unpack its verdicts to mark records held already: %w", o.in.batchID, err)
		}
	}
	out := *o
	out.packed, out.packErr, out.direct = nil, nil, false
	out.resp = &gatev1.IngestResponse{Summary: proto.CloneOf(o.resp.GetSummary()), Records: slices.Clone(vs)}
	out.figures = unitFigures{}
	out.figures.add(o.figures)
	kept := rows[:0:0]
	var samples []int64
	changed := false
	for i, r := range rows {
		if !held[r.rawSHA256] {
			kept = append(kept, r)
			continue
		}
		if slices.ContainsFunc(o.quar[i].reasons, func(e *recordv1.RecordError) bool { return e.GetCode() == recordv1.ErrorCode_ERROR_CODE_DUPLICATE_KEY }) {
			changed = true // a duplicate of an accepted key, counted so already
			continue
		}
		changed = true
		failed := map[string]int64{}
		for _, why := range o.quar[i].reasons {
			if why.GetCheck() != "" {
				failed[why.GetCheck()]++
			}
		}
		out.figures.removeFailures(failed)
		if failed[containmentCheck] > 0 {
			out.figures.Contained = max(0, out.figures.Contained-1)
		}
		samples = append(samples, r.position)
		v := proto.CloneOf(out.resp.Records[r.index])
		v.Reasons = []*recordv1.RecordError{{Code: recordv1.ErrorCode_ERROR_CODE_DUPLICATE_KEY, Field: ch.Field, Check: ch.Name,
			Message: fmt.Sprintf("duplicate: the same record is held already in partition %s; it is held once (replay or discard that one)", o.in.partition)}}
		out.resp.Records[r.index] = v
	}
	switch {
	case !changed:
		return rows, o, nil
	case len(samples) == 0:
		return kept, &out, nil
	}
	out.figures.AddFailures(ch.Name, int64(len(samples)), samples)
	out.resp.Summary.Duplicates += int64(len(samples))
	return kept, &out, nil
}

// quarantineRows are the rows of the records a batch set aside, each
// keeping at most maxRaw bytes of the record as sent.
func (o *outcome) quarantineRows(at time.Time, maxRaw int, amendment int32) []quarantineRow {
	out := make([]quarantineRow, len(o.quar))
	for i, q := range o.quar {
		sum := sha256.Sum256(q.raw)
		raw := q.raw
		if len(raw) > maxRaw {
			raw = raw[:maxRaw]
		}
		out[i] = quarantineRow{id: q.id, subject: o.in.subject, part: o.in.partition, batchID: o.in.batchID, index: q.index, position: q.position,
			version: o.cv.version, amendment: amendment, format: o.format, raw: raw, rawSize: int64(len(q.raw)), rawSHA256: hex.EncodeToString(sum[:]),
			reasons: q.reasons, idState: q.idState, at: at}
	}
	return out
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
	a.State = gatev1.AlertState_ALERT_STATE_OPEN
	ok, err := tx.InsertAlert(ctx, a, dedupe)
	if err != nil || !ok {
		return false, err
	}
	alertEvent(ctx, a)
	ev, err := newEvent(ctx, &registryv1.Event{Type: typ, Time: a.GetTime(), Subject: a.GetSubject(), Principal: "gate",
		Message: a.GetMessage(), PartitionFrom: a.GetPartition(), PartitionTo: a.GetPartition(),
		Attributes: map[string]string{"kind": a.GetKind(), "check": a.GetCheck(), "field": a.GetField(), "severity": a.GetSeverity().String(),
			"observed": fmt.Sprint(a.GetObserved()), "baseline": fmt.Sprint(a.GetBaseline()), "alert_sequence": fmt.Sprint(a.GetSequence()),
			"amendment": fmt.Sprint(a.GetAmendment())}})
	if err != nil {
		return false, err
	}
	if err := tx.Enqueue(ctx, ev, a.GetTime().AsTime()); err != nil {
		return false, err
	}
	return true, tx.Notify(ctx, alertChannel)
}

// autoContain contains the source when the operator configured a match
// rate floor and the partition fell below it. It acts on the running
// counts: containing protects, it does not judge the partition.
func (s *Server) autoContain(ctx context.Context, tx storeTx, subject, part, idField string, c unitCounts, now time.Time) error {
	floor := s.cfg.MatchRateFloor
	if floor <= 0 || idField == "" || c.idChecked < s.cfg.MinMatchSample || float64(c.idMatched)/float64(c.idChecked) >= floor {
		return nil
	}
	cur, ok, err := tx.Containment(ctx, subject)
	if err != nil {
		return err
	}
	if ok && cur.Contained {
		return nil
	}
	reason := fmt.Sprintf("automatic: match rate of %s in partition %s is %.4f (%d of %d), below the floor %g",
		idField, part, float64(c.idMatched)/float64(c.idChecked), c.idMatched, c.idChecked, floor)
	cont := containment{Subject: subject, Contained: true, Reason: reason, Principal: "gate", Changed: now, Automatic: true}
	ev, err := newEvent(ctx, &registryv1.Event{Type: registryv1.EventType_EVENT_TYPE_SOURCE_CONTAINED, Time: timestamppb.New(now),
		Subject: subject, Principal: "gate", Message: "contain " + subject + ": " + reason,
		Attributes: map[string]string{"automatic": "true"}})
	if err != nil {
		return err
	}
	s.cfg.Logger.WarnContext(ctx, "source contained automatically", "subject", subject, "reason", reason)
	return tx.WriteContainment(ctx, cont, "CONTAIN", ev)
}
