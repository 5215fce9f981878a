package gate

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/rpcerr"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// replayPage is how many held records one replay step reads, evaluates
// and releases in one transaction.
const replayPage = 500

// replayVerdict is what today's contract, mapping and id tables say about
// a held record.
type replayVerdict struct {
	ok      bool
	reasons []*recordv1.RecordError
	record  *recordv1.CanonicalRecord
	matched bool // its identifier resolves now
	checked bool // it has an identifier value to count
	// key is the hash of its contract key (nil without one), which the
	// partition's key index must not hold yet for it to be released.
	key []byte
}

func validateWindow(w *gatev1.ReplayWindow) error {
	var bad []rpcerr.FieldViolation
	if w.GetSubject() == "" {
		bad = append(bad, rpcerr.FieldViolation{Field: "window.subject", Description: "name the source subject, for example shop.orders"})
	}
	if w.GetPartitionFrom() == "" || w.GetPartitionTo() == "" {
		bad = append(bad, rpcerr.FieldViolation{Field: "window.partition_from", Description: "bound the window with partition_from and partition_to (inclusive); a replay is scoped to partitions"})
	} else if w.GetPartitionFrom() > w.GetPartitionTo() {
		bad = append(bad, rpcerr.FieldViolation{Field: "window.partition_from", Description: fmt.Sprintf("%q is after partition_to %q; swap them", w.GetPartitionFrom(), w.GetPartitionTo())})
	}
	if w.GetContractVersion() < 0 {
		bad = append(bad, rpcerr.FieldViolation{Field: "window.contract_version", Description: "a version is positive; send 0 for the active version"})
	}
	bad = badNames(bad, "window.subject", w.GetSubject(), "window.partition_from", w.GetPartitionFrom(), "window.partition_to", w.GetPartitionTo())
	if len(bad) > 0 {
		return rpcerr.InvalidArgument("bad replay window", bad...)
	}
	return nil
}

// evaluate runs held records through the compiled contract, the adapter
// and idmap, as a batch would be, but judges each record alone: a replay
// has no batch to block.
func (s *Server) evaluate(ctx context.Context, cv *compiled, subject, replayID string, page []heldRow) ([]replayVerdict, error) {
	out := make([]replayVerdict, len(page))
	var groups record.HeldBatches
	for i, h := range page {
		if h.truncated {
			out[i].reasons = []*recordv1.RecordError{{Code: recordv1.ErrorCode_ERROR_CODE_TOO_LARGE, Check: "quarantine.size",
				Message: fmt.Sprintf("the record at position %d was larger than the quarantine keeps (its first bytes, size and SHA-256 are kept); it cannot be replayed — discard it, and have the source resend it", h.position)}}
			continue
		}
		if err := groups.Add(i, record.Held{ID: h.id, Position: h.position, Format: h.format, Raw: h.raw}); err != nil {
			out[i].reasons = []*recordv1.RecordError{{Code: recordv1.ErrorCode_ERROR_CODE_MALFORMED, Message: err.Error(), Check: "record.decode"}}
		}
	}
	for _, g := range groups.Batches {
		if err := s.evaluateGroup(ctx, cv, subject, replayID, g, page, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Server) evaluateGroup(ctx context.Context, cv *compiled, subject, replayID string, g *record.HeldBatch, page []heldRow, out []replayVerdict) error {
	dec := cv.decoders.Get()
	defer cv.decoders.Put(dec)
	decoded, err := dec.Decode(g.Format, g.Data, 0)
	if err != nil {
		return fmt.Errorf("re-decode held records of %s: %w", subject, err)
	}
	if len(decoded.Records) != len(g.Rows) {
		return fmt.Errorf("re-decode held records of %s: %d records from %d held rows", subject, len(decoded.Records), len(g.Rows))
	}
	plan := cv.plan
	res := plan.ValidatePartition(decoded.Records, page[g.Rows[0]].part) // a page holds one partition's records
	checks := plan.Checks()
	var passing []*record.Record
	for i := range res.Records {
		if !res.Records[i].Quarantined {
			passing = append(passing, &decoded.Records[i])
		}
	}
	adapted, err := s.adaptRecords(ctx, adaptTarget{cv: cv, batchID: "replay:" + replayID, records: true}, g.Header, passing, len(decoded.Records))
	if err != nil {
		return err
	}
	present, err := s.lookupIdentifiers(ctx, res.Identifiers)
	if err != nil {
		return peerError(ctx, "idmap", err)
	}
	if len(res.Identifiers) > 0 {
		ids := res.Identifiers[0]
		for j, ok := range present[0] {
			v := &out[g.Rows[ids.Records[j]]]
			v.checked, v.matched = true, ok
		}
	}
	for i := range decoded.Records {
		v := &out[g.Rows[i]]
		h := page[g.Rows[i]]
		rr := res.Records[i]
		if rr.Quarantined {
			for _, f := range rr.Failures {
				if checks[f.Check].Policy != contractPolicyAlert {
					v.reasons = append(v.reasons, &recordv1.RecordError{Code: f.Code, Field: f.Field, Message: f.Message, Check: checks[f.Check].Name})
				}
			}
			continue
		}
		ar := adapted.results[i]
		switch {
		case ar == nil:
			return rpcerr.Unavailable("adapter", fmt.Errorf("the adapter returned no result for replayed record %d", i))
		case len(ar.GetErrors()) > 0:
			v.reasons = ar.GetErrors()
			for _, e := range v.reasons {
				if e.GetCheck() == "" {
					e.Check = "mapping"
				}
			}
		default:
			rec := proto.CloneOf(ar.GetRecord())
			if rec.Provenance == nil {
				rec.Provenance = &recordv1.Provenance{}
			}
			p := rec.Provenance
			p.Subject, p.ContractVersion, p.Partition, p.BatchId, p.Index, p.Position = subject, cv.version, h.part, h.batchID, h.index, h.position
			v.ok, v.record = true, rec
			if k, ok := cv.plan.AppendKey(nil, decoded.Records[i].Values); ok {
				sum := sha256.Sum256(k)
				v.key = sum[:16]
			}
		}
	}
	return nil
}

// PlanReplay says, without changing anything, how many held records of the
// window would pass today and why the others would not.
func (s *Server) PlanReplay(ctx context.Context, req *gatev1.PlanReplayRequest) (*gatev1.PlanReplayResponse, error) {
	w := req.GetWindow()
	if err := validateWindow(w); err != nil {
		return nil, err
	}
	cv, err := s.contracts.resolve(ctx, w.GetSubject(), w.GetContractVersion(), true)
	if err != nil {
		return nil, err
	}
	parts, err := s.store.HeldPartitions(ctx, w.GetSubject(), w.GetPartitionFrom(), w.GetPartitionTo(), "")
	if err != nil {
		return nil, err
	}
	resp := &gatev1.PlanReplayResponse{}
	reasons := map[string]int64{}
	for _, part := range parts {
		pp := &gatev1.PartitionPlan{Partition: part}
		afterBatch, afterIndex := "", int64(-1)
		for {
			page, err := s.store.HeldPage(ctx, w.GetSubject(), part, afterBatch, afterIndex, replayPage)
			if err != nil {
				return nil, err
			}
			if len(page) == 0 {
				break
			}
			verdicts, err := s.evaluate(ctx, cv, w.GetSubject(), "plan", page)
			if err != nil {
				return nil, err
			}
			for _, v := range verdicts {
				pp.Held++
				if v.ok {
					pp.WouldRelease++
					continue
				}
				pp.WouldRemain++
				reasons[codeName(v.reasons[0].GetCode())]++
			}
			last := page[len(page)-1]
			afterBatch, afterIndex = last.batchID, last.index
		}
		resp.Held += pp.Held
		resp.WouldRelease += pp.WouldRelease
		resp.WouldRemain += pp.WouldRemain
		resp.Partitions = append(resp.Partitions, pp)
	}
	for _, k := range slices.Sorted(maps.Keys(reasons)) {
		resp.RemainReasons = append(resp.RemainReasons, &gatev1.QuarantineCount{Key: k, Count: reasons[k]})
	}
	sort.SliceStable(resp.RemainReasons, func(i, j int) bool { return resp.RemainReasons[i].Count > resp.RemainReasons[j].Count })
	return resp, nil
}

// maxReplayReason bounds the reason a replay carries into its event.
const maxReplayReason = 1024

// Replay releases the held records of a window that pass today, partition
// by partition in order. Each page is marked released (keyed by record
// and replay id) in one transaction and then sent; a retry with the same
// replay id first re-sends what that id released, and only held records
// are ever released, so nothing is released twice.
func (s *Server) Replay(req *gatev1.ReplayRequest, stream gatev1.GateService_ReplayServer) (err error) {
	ctx := stream.Context()
	w := req.GetWindow()
	if err := validateWindow(w); err != nil {
		return err
	}
	replayID := strings.TrimSpace(req.GetReplayId())
	if bad := badNames(nil, "replay_id", replayID); len(bad) > 0 {
		return rpcerr.InvalidArgument("bad replay id", bad...)
	}
	if replayID == "" {
		replayID = uuid.NewString()
	}
	ctx, span := s.startReplay(ctx, w, replayID)
	defer func() { endSpan(span, err) }()
	reason := strings.TrimSpace(req.GetReason())
	if len(reason) > maxReplayReason {
		return rpcerr.InvalidArgument("replay reason too long", rpcerr.FieldViolation{Field: "reason",
			Description: fmt.Sprintf("%d bytes; say why in at most %d", len(reason), maxReplayReason)})
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RegistryTimeout)
	rerun, err := s.registry.GetRerunOrder(rctx, &registryv1.GetRerunOrderRequest{Root: &registryv1.GetRerunOrderRequest_Subject{Subject: w.GetSubject()}})
	cancel()
	if err != nil {
		// Without the rerun order the backfill could not tell anyone to
		// rerun; refuse before releasing anything.
		return rpcerr.Unavailable("registry", err)
	}
	cv, err := s.contracts.resolve(ctx, w.GetSubject(), w.GetContractVersion(), true)
	if err != nil {
		return err
	}
	parts, err := s.store.HeldPartitions(ctx, w.GetSubject(), w.GetPartitionFrom(), w.GetPartitionTo(), replayID)
	if err != nil {
		return err
	}
	principal := auth.NameFromContext(ctx)
	sum := &gatev1.ReplaySummary{ReplayId: replayID, Partitions: int64(len(parts))}
	releasedNow := int64(0)
	send := func(rec *recordv1.CanonicalRecord) error {
		if req.GetSummaryOnly() {
			return nil
		}
		return stream.Send(&gatev1.ReplayResponse{Message: &gatev1.ReplayResponse_Record{Record: rec}})
	}
	for done, part := range parts {
		startHeld, startReleased := sum.Released+sum.Remaining, sum.Released
		before, err := s.store.ReleasedBy(ctx, w.GetSubject(), part, replayID)
		if err != nil {
			return err
		}
		for _, rec := range before {
			if err := send(rec); err != nil {
				return err
			}
		}
		sum.Released += int64(len(before))
		touched := map[int32]bool{}
		afterBatch, afterIndex := "", int64(-1)
		for {
			page, err := s.store.HeldPage(ctx, w.GetSubject(), part, afterBatch, afterIndex, replayPage)
			if err != nil {
				return err
			}
			if len(page) == 0 {
				if err := s.reseal(ctx, w.GetSubject(), part, principal, replayID, touched); err != nil {
					return err
				}
				break
			}
			verdicts, err := s.evaluate(ctx, cv, w.GetSubject(), replayID, page)
			if err != nil {
				return err
			}
			released, dups, amended, err := s.release(ctx, cv, w.GetSubject(), part, replayID, principal, page, verdicts)
			if err != nil {
				return err
			}
			sum.Remaining += dups
			for a := range amended {
				touched[a] = true
			}
			for _, rec := range released {
				if err := send(rec); err != nil {
					return err
				}
			}
			sum.Released += int64(len(released))
			releasedNow += int64(len(released))
			for _, v := range verdicts {
				if !v.ok {
					sum.Remaining++
				}
			}
			last := page[len(page)-1]
			afterBatch, afterIndex = last.batchID, last.index
		}
		if req.GetProgress() {
			held, released := sum.Released+sum.Remaining-startHeld, sum.Released-startReleased
			if err := stream.Send(&gatev1.ReplayResponse{Message: &gatev1.ReplayResponse_Progress{Progress: &gatev1.ReplayProgress{
				Partition: part, Held: held, Released: released, Remaining: held - released, Done: int64(done + 1), Partitions: int64(len(parts))}}}); err != nil {
				return err
			}
		}
	}
	sum.Held = sum.Released + sum.Remaining
	s.metrics.released.Add(ctx, releasedNow, metric.WithAttributes(attribute.String("subject", w.GetSubject())))
	if sum.Released > 0 {
		// Only a replay that released records gives consumers anything to
		// rerun.
		sum.RerunConsumers = rerun.GetConsumers()
		seq, err := s.backfillCompleted(ctx, w, cv.version, replayID, principal, reason, sum)
		if err != nil {
			return err
		}
		sum.EventSequence = seq
	}
	span.SetAttributes(attrVersion.Int64(int64(cv.version)), attrPartitions.Int64(sum.GetPartitions()), attrHeld.Int64(sum.GetHeld()),
		attrReleased.Int64(sum.GetReleased()), attrRemaining.Int64(sum.GetRemaining()))
	s.cfg.Logger.InfoContext(ctx, "replay finished", "audit", true, "event", "replay", "subject", w.GetSubject(), "from", w.GetPartitionFrom(), "to", w.GetPartitionTo(),
		"version", cv.version, "partitions", sum.GetPartitions(), "replay_id", replayID, "released", sum.Released, "remaining", sum.Remaining,
		"by", principal, "reason", reason)
	return stream.Send(&gatev1.ReplayResponse{Message: &gatev1.ReplayResponse_Summary{Summary: sum}})
}

// release marks the passing records of a page released in one
// transaction (and rewrites the reasons of those it leaves held), with their canonical record and replay id, into the
// partition (and amendment) each came from: its key enters the
// partition's key index (a record whose key is already there stays held,
// a duplicate), its unit counts it released, its identifier counts once
// in the match rate, and the checks it failed no longer count it. A
// record another replay released meanwhile is skipped: the conditional
// update decides, not this process. It returns the released records, the
// duplicates kept held, and the amendments that released records.
func (s *Server) release(ctx context.Context, cv *compiled, subject, part, replayID, principal string, page []heldRow, verdicts []replayVerdict) ([]*recordv1.CanonicalRecord, int64, map[int32]bool, error) {
	var out []*recordv1.CanonicalRecord
	var dups int64
	var touched map[int32]bool
	now := s.cfg.Clock()
	idField := matchRateField(cv)
	err := s.store.InTx(ctx, func(tx storeTx) error {
		out, dups, touched = out[:0], 0, map[int32]bool{}
		p, ok, err := tx.LockPartition(ctx, subject, part, false, now)
		if err != nil || !ok {
			return err
		}
		// The page's keys enter the key index as one run, in page order:
		// a key already there, or earlier in the page, is a duplicate.
		var hashes [][]byte
		for _, v := range verdicts {
			if v.ok && v.key != nil {
				hashes = append(hashes, v.key)
			}
		}
		var fresh []bool
		if len(hashes) > 0 {
			if fresh, err = tx.InsertKeys(ctx, p.pid, hashes); err != nil {
				return err
			}
		}
		units := map[int32]*unitRow{}
		unit := func(amendment int32) (*unitRow, error) {
			if u := units[amendment]; u != nil {
				return u, nil
			}
			got, ok, err := tx.Unit(ctx, p.pid, amendment)
			if err != nil {
				return nil, err
			}
			if !ok {
				got = unitRow{pid: p.pid, amendment: amendment, status: gatev1.PartitionStatus_PARTITION_STATUS_OPEN, version: cv.version, openedAt: now}
			}
			// The unit is judged again by the version replayed through
			// (when newer): its check table reads as that version's.
			got.version = max(got.version, cv.version)
			units[amendment] = &got
			return &got, nil
		}
		for i, v := range verdicts {
			if !v.ok {
				// Held still: say why today, so filters by reason find it,
				// and count it in the figures by those reasons, not by the
				// checks of the version it was held under. A truncated
				// record keeps the reasons it was held for.
				if h := page[i]; !h.truncated && len(v.reasons) > 0 && !sameReasons(h.reasons, v.reasons) {
					if err := tx.Rewrite(ctx, h.id, v.reasons); err != nil {
						return err
					}
					u, err := unit(h.amendment)
					if err != nil {
						return err
					}
					u.figures.removeFailures(h.failed)
					contained := false
					for _, r := range v.reasons {
						if r.GetCheck() != "" {
							u.figures.AddFailures(r.GetCheck(), 1, []int64{h.position})
						}
						contained = contained || r.GetCheck() == containmentCheck
					}
					if h.failed[containmentCheck] > 0 && !contained {
						u.figures.Contained = max(0, u.figures.Contained-1)
					}
					u.updatedAt = now
				}
				continue
			}
			h := page[i]
			if v.key != nil {
				isNew := fresh[0]
				fresh = fresh[1:]
				if !isNew {
					dups++
					continue
				}
			}
			blob, err := proto.Marshal(v.record)
			if err != nil {
				return fmt.Errorf("encode released record %s: %w", h.id, err)
			}
			ok, err := tx.Release(ctx, releaseRow{id: h.id, replayID: replayID, principal: principal, recordID: v.record.GetRecordId(), canonical: blob, at: now})
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			out = append(out, v.record)
			u, err := unit(h.amendment)
			if err != nil {
				return err
			}
			u.counts.released++
			u.figures.removeFailures(h.failed)
			if h.failed[containmentCheck] > 0 {
				u.figures.Contained = max(0, u.figures.Contained-1)
			}
			// The identifier counts once in the match rate: records counted
			// as unmatched at ingest now count as matched if they resolve.
			var checked, matched int64
			switch {
			case h.idState == idUncounted && v.checked:
				checked = 1
				if v.matched {
					matched = 1
				}
			case h.idState == idUnmatched && v.matched:
				matched = 1
			}
			u.counts.idChecked += checked
			u.counts.idMatched += matched
			if idField != "" && (checked > 0 || matched > 0) {
				if u.figures.Stats.Fields == nil {
					u.figures.Stats.Fields = map[string]check.FieldStats{}
				}
				f := u.figures.Stats.Fields[idField]
				f.IDs += checked
				f.Matched += matched
				u.figures.Stats.Fields[idField] = f
			}
			u.updatedAt = now
		}
		for a, u := range units {
			touched[a] = true
			if err := tx.PutUnit(ctx, *u); err != nil {
				return err
			}
		}
		return nil
	})
	return out, dups, touched, err
}

// sameReasons reports whether two reason lists name the same codes,
// checks and fields in order.
func sameReasons(a, b []*recordv1.RecordError) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].GetCode() != b[i].GetCode() || a[i].GetCheck() != b[i].GetCheck() || a[i].GetField() != b[i].GetField() || a[i].GetMessage() != b[i].GetMessage() {
			return false
		}
	}
	return true
}

// reseal judges again the sealed units a replay released records into,
// so their verdict and figures read as the partition now stands, and
// their alerts that no longer hold are resolved by "replay <id>".
func (s *Server) reseal(ctx context.Context, subject, part, principal, replayID string, amendments map[int32]bool) error {
	for a := range amendments {
		_, u, ok, err := s.store.Head(ctx, subject, part, &a)
		if err != nil {
			return err
		}
		if !ok || u.status != gatev1.PartitionStatus_PARTITION_STATUS_SEALED {
			continue
		}
		cv, err := s.contracts.resolve(ctx, subject, u.version, false)
		if err != nil {
			return err
		}
		now := s.cfg.Clock()
		var alerts []*gatev1.Alert
		var report *sealed
		err = s.store.InTx(ctx, func(tx storeTx) error {
			alerts, report = nil, nil
			p, ok, err := tx.LockPartition(ctx, subject, part, false, now)
			if err != nil || !ok {
				return err
			}
			u, ok, err := tx.Unit(ctx, p.pid, a)
			if err != nil || !ok || u.status != gatev1.PartitionStatus_PARTITION_STATUS_SEALED {
				return err
			}
			if report, alerts, err = s.sealUnit(ctx, tx, cv, p, &u, gatev1.SealCause_SEAL_CAUSE_REPLAY, principal, "", "replay "+replayID, now); err != nil {
				return err
			}
			return tx.PutUnit(ctx, u)
		})
		if err != nil {
			return err
		}
		s.reportSealed(ctx, report)
		s.raised(ctx, alerts)
	}
	return nil
}

// backfillCompleted records the backfill in the registry's event stream
// through the outbox. The event id derives from the replay id, so a
// retried replay queues it once; the registry's sequence is returned when
// the registry took the event at once, 0 while it is unreachable.
func (s *Server) backfillCompleted(ctx context.Context, w *gatev1.ReplayWindow, version int32, replayID, principal, reason string, sum *gatev1.ReplaySummary) (int64, error) {
	now := s.cfg.Clock()
	why := ""
	if reason != "" {
		why = "; reason: " + reason
	}
	ev := &registryv1.Event{Type: registryv1.EventType_EVENT_TYPE_BACKFILL_COMPLETED, Time: timestamppb.New(now), Subject: w.GetSubject(),
		Version: version, Principal: principal, PartitionFrom: w.GetPartitionFrom(), PartitionTo: w.GetPartitionTo(),
		Consumers: sum.GetRerunConsumers(),
		Message: fmt.Sprintf("backfill of %s partitions %s..%s released %d records (replay %s%s); rerun in order: %s",
			w.GetSubject(), w.GetPartitionFrom(), w.GetPartitionTo(), sum.GetReleased(), replayID, why, strings.Join(sum.GetRerunConsumers(), ", ")),
		Attributes: map[string]string{eventIDAttribute: "gate-backfill-" + replayID, "replay_id": replayID, "released": fmt.Sprint(sum.GetReleased())}}
	if reason != "" {
		ev.Attributes["reason"] = reason
	}
	payload, err := proto.Marshal(ev)
	if err != nil {
		return 0, fmt.Errorf("encode backfill event: %w", err)
	}
	id := "gate-backfill-" + replayID
	if err := s.store.QueueEventOnce(ctx, outboxEvent{EventID: id, Payload: payload}, now); err != nil {
		return 0, err
	}
	return s.awaitDelivery(ctx, id, backfillDeliveryWait)
}

// backfillDeliveryWait is how long a replay waits for the relay to deliver
// its BACKFILL_COMPLETED event before answering without its sequence.
const backfillDeliveryWait = 5 * time.Second

// awaitDelivery waits, up to limit, until the relay (of this replica or
// another) has delivered event id, and returns its registry sequence, or
// 0 when it still waits in the outbox.
func (s *Server) awaitDelivery(ctx context.Context, id string, limit time.Duration) (int64, error) {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(s.cfg.RelayInterval / 4)
	defer tick.Stop()
	for {
		woken := s.delivered.wait()
		seq, err := s.store.RegistrySeq(ctx, id)
		if err != nil || seq > 0 {
			return seq, err
		}
		select {
		case <-woken:
		case <-tick.C:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-deadline.C:
			s.cfg.Logger.WarnContext(ctx, "backfill event queued; the registry will get it when reachable", "event_id", id)
			return 0, nil
		}
	}
}
