package gate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	otelcodes "go.opentelemetry.io/otel/codes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/openlineage"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/rpcerr"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// A partition is judged whole. Its batches add their records' figures to
// it (every record is judged at once, accepted or quarantined); its seal
// judges the figures against the partition's contract version: BLOCK
// thresholds against all its records, statistics against the trailing
// sealed partitions. A record that arrives for a sealed partition opens
// an amendment of it, judged and sealed on its own. A batch sent with
// replace supersedes the partition's previous sending.

// Wait bounds of WaitPartition.
const (
	defaultWait = 30 * time.Second
	maxWait     = 5 * time.Minute
)

// sealUnit judges an open unit and seals it (or re-judges a sealed one
// after a replay), raising the alerts of its judgment once each and
// resolving, as resolver ("replay <id>"), the unit's alerts a re-judgment
// no longer upholds. It changes u; the caller writes it, and once the
// transaction has committed, reports the seal (s.reportSealed): the
// transaction may run more than once.
func (s *Server) sealUnit(ctx context.Context, tx storeTx, cv *compiled, p partRow, u *unitRow, cause gatev1.SealCause, by, batchID, resolver string, now time.Time) (_ *sealed, _ []*gatev1.Alert, err error) {
	ctx, span := s.startSeal(ctx, p.subject, p.part, u.amendment, cv.version, cause, batchID)
	var blockedNotice string
	defer func() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(otelcodes.Error, "seal failed: "+err.Error())
		} else {
			endSeal(span, u, blockedNotice)
		}
		span.End()
	}()
	plan := cv.plan
	want := map[string]int{}
	for _, ch := range plan.Checks() {
		if ch.Kind.Statistical() && ch.Baseline > 0 {
			want[ch.Name] = ch.Baseline
		}
	}
	trail, err := tx.Trailing(ctx, p.subject, p.part, want)
	if err != nil {
		return nil, nil, err
	}
	j := plan.Judge(u.figures.Figures, trail, check.JudgeOptions{Amendment: u.amendment > 0})
	var out []*gatev1.Alert
	raise := func(a *gatev1.Alert, dedupe string, typ registryv1.EventType) error {
		ok, err := s.storeAlert(ctx, tx, a, dedupe, typ)
		if ok {
			out = append(out, a)
		}
		return err
	}
	base := func(kind, name, field, msg string, sev gatev1.Severity) *gatev1.Alert {
		return &gatev1.Alert{Time: timestamppb.New(now), Subject: p.subject, Partition: p.part, Amendment: u.amendment, Check: name, Severity: sev,
			Message: msg, Field: field, Kind: kind, FirstSeen: timestamppb.New(now), BatchId: batchID, Observed: math.NaN(), Baseline: math.NaN()}
	}
	scope := fmt.Sprintf("%s/%s/%d/%d", p.subject, p.part, p.attempt, u.amendment)
	what := "partition " + p.part
	if u.amendment > 0 {
		what = fmt.Sprintf("amendment %d of partition %s", u.amendment, p.part)
	}
	var blocking []string
	for _, o := range j.Outcomes {
		if !o.Exceeded {
			continue
		}
		switch {
		case o.Policy == contractPolicyBlock:
			blocking = append(blocking, o.Message)
		case o.Check >= 0 && !plan.Checks()[o.Check].Kind.Statistical():
			a := base("RECORD_CHECK", o.Name, o.Field, fmt.Sprintf("%s of %s: %s", what, p.subject, o.Message), gatev1.Severity_SEVERITY_WARNING)
			a.Count, a.Observed = o.Failures, float64(o.Failures)
			if err := raise(a, "record/"+scope+"/"+o.Name, registryv1.EventType_EVENT_TYPE_ALERT_RAISED); err != nil {
				return nil, nil, err
			}
		default:
			kind, sev := statKind(o.Kind)
			a := base(kind, o.Name, o.Field, fmt.Sprintf("%s of %s: %s", what, p.subject, o.Message), sev)
			a.Observed, a.Baseline, a.Count = o.Observed, o.Baseline, o.Rows
			if o.Kind == "match_rate" {
				a.Count = u.figures.Stats.Fields[o.Field].IDs
			}
			if err := raise(a, "stat/"+scope+"/"+o.Name, registryv1.EventType_EVENT_TYPE_ALERT_RAISED); err != nil {
				return nil, nil, err
			}
		}
	}
	verdict := j.Verdict
	learned, err := tx.LearnedShapes(ctx, p.subject)
	if err != nil {
		return nil, nil, err
	}
	changes := u.figures.changes(learned, u.version, s.cfg.UnannouncedShare)
	for _, c := range changes {
		if verdict < check.PassedWithAlerts {
			verdict = check.PassedWithAlerts
		}
		rows := u.figures.Stats.Rows
		j.Outcomes = append(j.Outcomes, check.Outcome{Check: -1, Name: c.Field + ".shape", Kind: "shape", Policy: contractPolicyAlert, Field: c.Field,
			Failures: c.Moved, Rows: rows, Exceeded: true, Observed: c.share(), Baseline: math.NaN(),
			Message: fmt.Sprintf("%d of %d values of %s are %s%s", c.Moved, c.Values, c.Field, c.Shape, c.was())})
		fresh, err := tx.NewShape(ctx, p.subject, c.Field, c.Shape, batchID, now)
		if err != nil {
			return nil, nil, err
		}
		if !fresh {
			continue // one alert per field and shape, not one per partition
		}
		msg := fmt.Sprintf("unannounced change: %d of %d values of %s in %s of %s are %s (for example %s)%s, where the contract (version %d) declares %s; %s — announce a new contract version with a mapping, or contain the source",
			c.Moved, c.Values, c.Field, what, p.subject, c.Shape, c.Sample, c.was(), cv.version, c.Declared, c.fate())
		a := base("UNANNOUNCED_CHANGE", c.Field+".shape", c.Field, msg, gatev1.Severity_SEVERITY_CRITICAL)
		a.Count, a.Observed = c.Moved, c.share()
		if err := raise(a, "shape/"+p.subject+"/"+c.Field+"/"+c.Shape, registryv1.EventType_EVENT_TYPE_UNANNOUNCED_CHANGE); err != nil {
			return nil, nil, err
		}
	}
	if len(blocking) > 0 {
		first := ""
		for _, o := range j.Outcomes {
			if o.Exceeded && o.Policy == contractPolicyBlock {
				first = o.Name
				break
			}
		}
		blockedNotice = fmt.Sprintf("%s of %s is BLOCKED: %s; publish none of it, and resend it corrected with replace",
			what, p.subject, strings.Join(blocking, "; "))
		a := base("PARTITION_BLOCKED", first, "", blockedNotice, gatev1.Severity_SEVERITY_CRITICAL)
		a.Count = u.counts.received
		if err := raise(a, "blocked/"+scope, registryv1.EventType_EVENT_TYPE_ALERT_RAISED); err != nil {
			return nil, nil, err
		}
	}
	if err := s.settleAlerts(ctx, tx, p, u, j.Outcomes, verdict, out, resolver, now); err != nil {
		return nil, nil, err
	}
	if u.amendment == 0 {
		// What the partition may serve as a baseline for, as it now
		// stands: a replay's re-judgment records it again.
		if err := tx.SetBaselineSkips(ctx, u.pid, baselineSkips(j.Outcomes, u.figures.Contained > 0)); err != nil {
			return nil, nil, err
		}
	}
	// Learn the shapes of what passed, once, at the first seal, and only
	// from a partition that may be published: a blocked day is no baseline.
	if u.status != gatev1.PartitionStatus_PARTITION_STATUS_SEALED && verdict != check.Blocked && u.figures.Stats.Rows >= minClusterRecords {
		if err := tx.LearnShapes(ctx, p.subject, p.part, u.version, u.figures.learnable()); err != nil {
			return nil, nil, err
		}
	}
	if u.status != gatev1.PartitionStatus_PARTITION_STATUS_SEALED {
		rate := -1.0
		if u.counts.idChecked > 0 {
			rate = float64(u.counts.idMatched) / float64(u.counts.idChecked)
		}
		u.figures.AsSealed = &asSealed{Verdict: int32(verdictProto(verdict)), MatchRate: rate}
	}
	u.status = gatev1.PartitionStatus_PARTITION_STATUS_SEALED
	u.verdict = verdictProto(verdict)
	u.decision = outcomesProto(j.Outcomes)
	u.sealedAt, u.sealCause, u.sealedBy, u.updatedAt = now, cause, by, now
	if err := s.sealedEvent(ctx, tx, p, u, cv.version, len(out), now); err != nil {
		return nil, nil, err
	}
	if err := tx.Notify(ctx, partitionChannel); err != nil {
		return nil, nil, err
	}
	return &sealed{subject: p.subject, part: p.part, amendment: u.amendment, version: cv.version, verdict: u.verdict,
		checks: blockingChecks(j.Outcomes), cause: cause, by: by, batchID: batchID, counts: u.counts, alerts: len(out)}, out, nil
}

// sealed is a seal as it is reported once its transaction has committed:
// counted in seam.gate.partitions and logged. A transaction may run more
// than once (the store retries conflicts), so neither happens inside it.
type sealed struct {
	subject, part string
	amendment     int32
	version       int32
	verdict       gatev1.PartitionVerdict
	checks        string // the blocking checks that were exceeded
	cause         gatev1.SealCause
	by, batchID   string
	counts        unitCounts
	alerts        int
}

// reportSealed counts and logs a committed seal; nil (nothing sealed) is
// nothing to report.
func (s *Server) reportSealed(ctx context.Context, r *sealed) {
	if r == nil {
		return
	}
	s.metrics.sealed(ctx, r.subject, r.verdict)
	c := r.counts
	s.cfg.Logger.Log(ctx, sealLevel(r.verdict), "partition sealed", "subject", r.subject, "partition", r.part, "amendment", r.amendment,
		"version", r.version, "verdict", r.verdict.String(), "check", r.checks, "cause", r.cause.String(), "by", r.by, "batch", r.batchID,
		"received", c.received, "accepted", c.accepted, "quarantined", c.quarantined, "duplicates", c.duplicates, "released", c.released,
		"alerts", r.alerts)
}

// sealedEvent queues the registry event saying a unit was sealed (or
// sealed again after a replay) with its verdict, in the seal's
// transaction: readers of the registry's stream (downstream jobs, the
// console) learn that a day is ready or BLOCKED without polling the gate.
func (s *Server) sealedEvent(ctx context.Context, tx storeTx, p partRow, u *unitRow, version int32, alerts int, now time.Time) error {
	what := "partition " + p.part
	if u.amendment > 0 {
		what = fmt.Sprintf("amendment %d of partition %s", u.amendment, p.part)
	}
	verdict := strings.TrimPrefix(u.verdict.String(), "PARTITION_VERDICT_")
	c := u.counts
	ev, err := newEvent(ctx, &registryv1.Event{Type: registryv1.EventType_EVENT_TYPE_PARTITION_SEALED, Time: timestamppb.New(now),
		Subject: p.subject, Version: version, Principal: "gate", PartitionFrom: p.part, PartitionTo: p.part,
		Message: fmt.Sprintf("%s of %s sealed %s (%d received, %d accepted, %d quarantined)", what, p.subject, verdict, c.received, c.accepted, c.quarantined),
		Attributes: map[string]string{"verdict": verdict, "amendment": fmt.Sprint(u.amendment), "attempt": fmt.Sprint(p.attempt),
			"cause": strings.TrimPrefix(u.sealCause.String(), "SEAL_CAUSE_"), "by": u.sealedBy, "alerts": fmt.Sprint(alerts),
			"received": fmt.Sprint(c.received), "accepted": fmt.Sprint(c.accepted), "quarantined": fmt.Sprint(c.quarantined)}})
	if err != nil {
		return err
	}
	return tx.Enqueue(ctx, ev, now)
}

const contractPolicyBlock = 1 // contractv1.Policy_POLICY_BLOCK

// baselineSkips are the checks whose trailing baseline a judged partition
// may not serve: every check when it held contained records, else the
// statistical checks it failed. An outage never becomes the new normal.
func baselineSkips(outcomes []check.Outcome, contained bool) []string {
	if contained {
		return []string{allChecks}
	}
	var out []string
	for _, o := range outcomes {
		if o.Exceeded && o.Check >= 0 && check.IsMetric(o.Kind) {
			out = append(out, o.Name)
		}
	}
	return out
}

func verdictProto(v check.Verdict) gatev1.PartitionVerdict {
	switch v {
	case check.Blocked:
		return gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED
	case check.PassedWithAlerts:
		return gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED_WITH_ALERTS
	}
	return gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED
}

func outcomesProto(outcomes []check.Outcome) []*gatev1.CheckOutcome {
	out := make([]*gatev1.CheckOutcome, len(outcomes))
	for i, o := range outcomes {
		c := &gatev1.CheckOutcome{Check: o.Name, Rule: o.Rule, Policy: o.Policy, Field: o.Field, Kind: o.Kind, Failures: o.Failures, Rows: o.Rows,
			Exceeded: o.Exceeded, Observed: o.Observed, Baseline: o.Baseline, SamplePositions: o.Samples, Message: o.Message, BaselinePartitions: o.BaselineFrom}
		if o.Policy == contractPolicyBlock {
			if o.Threshold.IsFraction {
				c.Threshold = thresholdFraction(o.Threshold.Fraction)
			} else {
				c.Threshold = thresholdCount(o.Threshold.Count)
			}
		}
		out[i] = c
	}
	return out
}

// stateOf is a unit's state as the API shows it: while open, with the
// BLOCK checks failing so far and whether they already doom it.
func (s *Server) stateOf(cv *compiled, p partRow, u unitRow, alerts []*gatev1.Alert) *gatev1.PartitionState {
	c := u.counts
	st := &gatev1.PartitionState{Subject: p.subject, Partition: p.part, Amendment: u.amendment, Attempt: p.attempt, Status: u.status, Verdict: u.verdict,
		ContractVersion: u.version, Counts: &gatev1.PartitionCounts{Received: c.received, Accepted: c.accepted, Quarantined: c.quarantined,
			Duplicates: c.duplicates, Released: c.released, Batches: c.batches},
		MatchRate: -1, SealCause: u.sealCause, SealedBy: u.sealedBy, Alerts: alerts}
	if st.Status == gatev1.PartitionStatus_PARTITION_STATUS_UNSPECIFIED {
		st.Status = gatev1.PartitionStatus_PARTITION_STATUS_OPEN // sealed by nobody yet, and empty
	}
	if c.idChecked > 0 {
		st.MatchRate = float64(c.idMatched) / float64(c.idChecked)
	}
	if !u.openedAt.IsZero() {
		st.OpenTime, st.UpdateTime = timestamppb.New(u.openedAt), timestamppb.New(u.updatedAt)
	}
	if !u.sealedAt.IsZero() {
		st.SealTime = timestamppb.New(u.sealedAt)
	}
	what := fmt.Sprintf("partition %s of %s", p.part, p.subject)
	if u.amendment > 0 {
		what = fmt.Sprintf("amendment %d of partition %s of %s", u.amendment, p.part, p.subject)
	}
	st.SealedMatchRate = -1
	if a := u.figures.AsSealed; a != nil { // unset while open, and for units sealed before the gate kept it
		st.SealedVerdict, st.SealedMatchRate = gatev1.PartitionVerdict(a.Verdict), a.MatchRate
	}
	if u.status == gatev1.PartitionStatus_PARTITION_STATUS_SEALED {
		st.Checks = u.decision
		var msgs []string
		for _, o := range u.decision {
			if o.GetExceeded() {
				msgs = append(msgs, o.GetMessage())
			}
		}
		switch u.verdict {
		case gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED:
			st.Notice = fmt.Sprintf("%s is BLOCKED: %s; publish none of it, and resend it corrected with replace", what, strings.Join(msgs, "; "))
		case gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED_WITH_ALERTS:
			st.Notice = fmt.Sprintf("%s passed with alerts: %s", what, strings.Join(msgs, "; "))
		default:
			st.Notice = what + " passed"
		}
		return st
	}
	if cv == nil {
		return st
	}
	progress := cv.plan.Progress(u.figures.Figures)
	st.Checks = outcomesProto(progress)
	for _, o := range progress {
		if !o.Exceeded {
			continue
		}
		if o.Final {
			st.WillBlock = true
			st.Notice = fmt.Sprintf("%s will be BLOCKED: %s, and more records cannot undo that; stop sending it and resend it corrected with replace", what, o.Message)
			break
		}
		st.Notice = fmt.Sprintf("%s is over a BLOCK threshold so far: %s; unless enough further records pass, it will be BLOCKED at its seal", what, o.Message)
	}
	return st
}

// seal seals the latest unit of a partition (creating the partition, empty,
// when it was never sent: an empty partition is judged too).
func (s *Server) seal(ctx context.Context, subject, part string, cause gatev1.SealCause, by string) (*gatev1.PartitionState, error) {
	for attempt := 0; ; attempt++ {
		_, head, ok, err := s.store.Head(ctx, subject, part, nil)
		if err != nil {
			return nil, err
		}
		var cv *compiled
		if ok && head.version > 0 && head.status == gatev1.PartitionStatus_PARTITION_STATUS_OPEN {
			cv, err = s.contracts.resolve(ctx, subject, head.version, false)
		} else {
			cv, err = s.versionFor(ctx, subject, part, 0)
		}
		if err != nil {
			return nil, err
		}
		now := s.cfg.Clock()
		var state *gatev1.PartitionState
		sealedNow := false
		var sealedStats check.Stats
		var report *sealed
		err = s.store.InTx(ctx, func(tx storeTx) error {
			sealedNow, report = false, nil
			p, _, err := tx.LockPartition(ctx, subject, part, true, now)
			if err != nil {
				return err
			}
			u, ok, err := tx.Unit(ctx, p.pid, p.amendment)
			if err != nil {
				return err
			}
			switch {
			case ok && u.status == gatev1.PartitionStatus_PARTITION_STATUS_SEALED:
				alerts, err := s.store.PartitionAlerts(ctx, subject, part, u.amendment, u.openedAt)
				if err != nil {
					return err
				}
				state = s.stateOf(cv, p, u, alerts)
				return nil
			case !ok:
				u = unitRow{pid: p.pid, amendment: p.amendment, status: gatev1.PartitionStatus_PARTITION_STATUS_OPEN, version: cv.version, openedAt: now, updatedAt: now}
			case u.version == 0:
				u.version = cv.version
			case u.version != cv.version:
				return errTargetMoved
			}
			var alerts []*gatev1.Alert
			report, alerts, err = s.sealUnit(ctx, tx, cv, p, &u, cause, by, "", "", now)
			if err != nil {
				return err
			}
			if err := tx.PutUnit(ctx, u); err != nil {
				return err
			}
			state = s.stateOf(cv, p, u, alerts)
			sealedStats = u.figures.Stats
			sealedNow = true
			return nil
		})
		if errors.Is(err, errTargetMoved) && attempt < 3 {
			continue
		}
		if err != nil {
			return nil, err
		}
		s.reportSealed(ctx, report)
		s.raised(ctx, state.GetAlerts())
		if sealedNow {
			s.emitSeal(ctx, cv, state, sealedStats, now)
		}
		return state, nil
	}
}

// sealIfAsked seals a batch's partition when the batch asked, and returns
// its partition's state either way.
func (s *Server) sealIfAsked(ctx context.Context, in batchInput) (*gatev1.PartitionState, error) {
	if in.seal {
		return s.seal(ctx, in.subject, in.partition, gatev1.SealCause_SEAL_CAUSE_REQUEST, auth.NameFromContext(ctx))
	}
	return s.partitionState(ctx, in.subject, in.partition, nil)
}

// sealDue seals, with a partition time, the partitions the subject's
// watermark has passed, except current, the partition of the batch just
// stored: a late partition (a replacement of an old day, or a day sent
// for the first time after the watermark passed it) arrives in several
// batches, and sealing it after the first would judge it in pieces, the
// rest going into an amendment. It is sealed on request, or by the next
// batch of another partition. A failure is logged, not returned: the
// batch that moved the watermark is stored, and the next one tries again.
func (s *Server) sealDue(ctx context.Context, cv *compiled, subject, current string) {
	if cv.spec == nil {
		return
	}
	w, ok, err := s.store.Watermark(ctx, subject)
	if err != nil || !ok {
		if err != nil {
			s.cfg.Logger.WarnContext(ctx, "could not read the watermark", "subject", subject, "error", err)
		}
		return
	}
	due, err := s.store.OpenBefore(ctx, subject, cv.spec.Cutoff(w))
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "could not find the partitions the watermark passed", "subject", subject, "error", err)
		return
	}
	for _, part := range due {
		if part == current {
			continue
		}
		if _, err := s.seal(ctx, subject, part, gatev1.SealCause_SEAL_CAUSE_WATERMARK, "gate"); err != nil {
			s.cfg.Logger.WarnContext(ctx, "sealing by watermark failed; the next batch tries again", "subject", subject, "partition", part, "error", err)
		}
	}
}

// partitionState reads a unit's state (the latest when amendment is nil).
func (s *Server) partitionState(ctx context.Context, subject, part string, amendment *int32) (*gatev1.PartitionState, error) {
	p, u, ok, err := s.store.Head(ctx, subject, part, amendment)
	if err != nil {
		return nil, err
	}
	if !ok {
		what := "partition"
		name := subject + "/" + part
		if amendment != nil {
			what, name = "amendment", fmt.Sprintf("%s/%s amendment %d", subject, part, *amendment)
		}
		return nil, rpcerr.NotFound(what, name, "send a batch for it first (seam gate ingest)")
	}
	var cv *compiled
	if u.version > 0 && u.status != gatev1.PartitionStatus_PARTITION_STATUS_SEALED {
		if cv, err = s.contracts.resolve(ctx, subject, u.version, false); err != nil {
			return nil, err
		}
	}
	alerts, err := s.store.PartitionAlerts(ctx, subject, part, u.amendment, u.openedAt)
	if err != nil {
		return nil, err
	}
	return s.stateOf(cv, p, u, alerts), nil
}

func partitionArgs(subject, part string) error {
	var bad []rpcerr.FieldViolation
	if strings.TrimSpace(subject) == "" {
		bad = append(bad, rpcerr.FieldViolation{Field: "subject", Description: "name the source subject, for example shop.orders"})
	}
	if strings.TrimSpace(part) == "" {
		bad = append(bad, rpcerr.FieldViolation{Field: "partition", Description: "name the partition, for example 2026-10-01"})
	}
	bad = badNames(bad, "subject", subject, "partition", part)
	if len(bad) > 0 {
		return rpcerr.InvalidArgument("no partition named", bad...)
	}
	return nil
}

// SealPartition seals a partition (or its open amendment) and judges it.
func (s *Server) SealPartition(ctx context.Context, req *gatev1.SealPartitionRequest) (*gatev1.SealPartitionResponse, error) {
	subject, part := strings.TrimSpace(req.GetSubject()), strings.TrimSpace(req.GetPartition())
	if err := partitionArgs(subject, part); err != nil {
		return nil, err
	}
	state, err := s.seal(ctx, subject, part, gatev1.SealCause_SEAL_CAUSE_REQUEST, auth.NameFromContext(ctx))
	if err != nil {
		return nil, err
	}
	return &gatev1.SealPartitionResponse{Partition: state}, nil
}

// GetPartition returns a partition's state.
func (s *Server) GetPartition(ctx context.Context, req *gatev1.GetPartitionRequest) (*gatev1.GetPartitionResponse, error) {
	subject, part := strings.TrimSpace(req.GetSubject()), strings.TrimSpace(req.GetPartition())
	if err := partitionArgs(subject, part); err != nil {
		return nil, err
	}
	state, err := s.partitionState(ctx, subject, part, req.Amendment)
	if err != nil {
		return nil, err
	}
	p, _, _, err := s.store.Head(ctx, subject, part, nil)
	if err != nil {
		return nil, err
	}
	return &gatev1.GetPartitionResponse{Partition: state, Amendments: p.amendment}, nil
}

// WaitPartition waits until a partition is sealed, woken by seals on any
// replica, and answers its state; after the timeout it answers the state
// as it is (sealed false). A partition not sent yet is waited for too.
func (s *Server) WaitPartition(ctx context.Context, req *gatev1.WaitPartitionRequest) (*gatev1.WaitPartitionResponse, error) {
	subject, part := strings.TrimSpace(req.GetSubject()), strings.TrimSpace(req.GetPartition())
	if err := partitionArgs(subject, part); err != nil {
		return nil, err
	}
	wait := defaultWait
	if d := req.GetTimeout(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() < 0 {
			return nil, rpcerr.InvalidArgument("bad timeout", rpcerr.FieldViolation{Field: "timeout", Description: "send a positive duration, at most 5m"})
		}
		wait = min(d.AsDuration(), maxWait)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	wake, err := s.store.Listen(wctx, partitionChannel)
	if err != nil {
		return nil, fmt.Errorf("wait for partition %s/%s: %w", subject, part, err)
	}
	tick := time.NewTicker(s.cfg.RelayInterval)
	defer tick.Stop()
	amendment := req.Amendment
	for {
		state, err := s.partitionState(ctx, subject, part, amendment)
		if err != nil && !isNotFound(err) {
			return nil, err
		}
		if state != nil {
			if state.GetStatus() == gatev1.PartitionStatus_PARTITION_STATUS_SEALED {
				return &gatev1.WaitPartitionResponse{Partition: state, Sealed: true}, nil
			}
			if amendment == nil {
				// Wait for this unit, not for amendments opened later.
				a := state.GetAmendment()
				amendment = &a
			}
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if state == nil {
				return nil, err
			}
			return &gatev1.WaitPartitionResponse{Partition: state}, nil
		case <-wake:
		case <-tick.C:
		}
	}
}

// columnMetrics are a partition's per-field figures as OpenLineage column
// metrics: nulls, values present, and the sum of a numeric field's values.
func columnMetrics(st check.Stats) map[string]openlineage.ColumnMetrics {
	if len(st.Fields) == 0 {
		return nil
	}
	out := make(map[string]openlineage.ColumnMetrics, len(st.Fields))
	for name, f := range st.Fields {
		present := f.Count - f.Nulls
		cm := openlineage.ColumnMetrics{NullCount: f.Nulls, Count: &present}
		if f.Numbers > 0 {
			sum := f.Mean * float64(f.Numbers)
			cm.Sum = &sum
		}
		out[name] = cm
	}
	return out
}

func isNotFound(err error) bool { return status.Code(err) == codes.NotFound }

// emitSeal reports a sealing as an OpenLineage run, once it is committed
// (a seal answered from a sealed partition is not a new run): every check
// of the contract with its result (statistical ones with what they
// expected), and the partition's column metrics. A run that cannot be
// described is logged; the seal stands either way.
func (s *Server) emitSeal(ctx context.Context, cv *compiled, st *gatev1.PartitionState, stats check.Stats, started time.Time) {
	if s.cfg.Lineage == nil {
		return
	}
	c := st.GetCounts()
	m := cv.contract.GetMapping()
	seal := openlineage.Seal{
		Judged: openlineage.Judged{
			Source: openlineage.Source{Subject: st.GetSubject(), ContractVersion: int64(st.GetContractVersion()), Labels: cv.contract.GetLabels(),
				Canonical: m.GetCanonical(), CanonicalVersion: int64(m.GetCanonicalVersion())},
			Partition: st.GetPartition(),
			Blocked:   st.GetVerdict() == gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED,
			Reason:    st.GetNotice(),
			Received:  c.GetReceived(), Accepted: c.GetAccepted(), Quarantined: c.GetQuarantined(),
			Metrics:  openlineage.Metrics{RowCount: c.GetReceived(), Columns: columnMetrics(stats)},
			Started:  started,
			Finished: s.cfg.Clock(),
		},
		// Each sealing is its own run: the partition's attempt, amendment
		// and seal time tell them apart (a replay re-seals a unit).
		Generation: st.GetSealTime().AsTime().UnixMilli(),
		Verdict:    strings.TrimPrefix(st.GetVerdict().String(), "PARTITION_VERDICT_"),
	}
	plan := map[string]*check.Check{}
	for i, ch := range cv.plan.Checks() {
		plan[ch.Name] = &cv.plan.Checks()[i]
	}
	judged := map[string]bool{}
	for _, o := range st.GetChecks() {
		judged[o.GetCheck()] = true
		r := openlineage.CheckResult{Name: o.GetCheck(), Rule: o.GetRule(), Kind: o.GetKind(), Field: o.GetField(),
			Policy: strings.TrimPrefix(o.GetPolicy().String(), "POLICY_"), Passed: !o.GetExceeded() && o.GetFailures() == 0, Failures: o.GetFailures()}
		if !math.IsNaN(o.GetObserved()) && o.GetFailures() == 0 {
			r.Actual = strconv.FormatFloat(o.GetObserved(), 'g', -1, 64)
		}
		if ch := plan[o.GetCheck()]; ch != nil && ch.Kind.Statistical() {
			r.Expected = ch.Expectation(o.GetBaseline())
		}
		seal.Checks = append(seal.Checks, r)
	}
	// The checks every record passed are not in the decision: listed as
	// passed. A statistical check that was not measured (too few rows)
	// did not pass either and is left out.
	for _, ch := range cv.plan.Checks() {
		if judged[ch.Name] || ch.Kind.Statistical() {
			continue
		}
		seal.Checks = append(seal.Checks, openlineage.CheckResult{Name: ch.Name, Rule: ch.Rule, Kind: ch.Kind.String(), Field: ch.Field,
			Policy: strings.TrimPrefix(ch.Policy.String(), "POLICY_"), Passed: true})
	}
	if err := s.cfg.Lineage.PartitionSealed(seal); err != nil {
		s.cfg.Logger.WarnContext(ctx, "could not describe the seal as an OpenLineage run", "subject", st.GetSubject(), "partition", st.GetPartition(), "error", err)
	}
}
