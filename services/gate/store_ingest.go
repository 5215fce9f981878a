package gate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/core/check"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// alertChannel wakes alert watchers when a transaction stores alerts.
const alertChannel = "seam_gate_alerts"

// storedBatch is an ingested batch's idempotency row.
type storedBatch struct {
	status  gatev1.BatchStatus
	resp    *gatev1.IngestResponse
	blocked *gatev1.BlockedDetail
}

// querier is what both *sql.DB and *sql.Tx offer.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// batch reads a batch's idempotency row.
func (s *store) batch(ctx context.Context, subject, partition, batchID string) (storedBatch, bool, error) {
	var st int32
	var blob []byte
	err := s.db.SQL.QueryRowContext(ctx, `SELECT status, response FROM gate_batches WHERE subject = $1 AND part = $2 AND batch_id = $3`,
		subject, partition, batchID).Scan(&st, &blob)
	if errors.Is(err, sql.ErrNoRows) {
		return storedBatch{}, false, nil
	}
	if err != nil {
		return storedBatch{}, false, fmt.Errorf("read batch %s of %s/%s: %w", batchID, subject, partition, err)
	}
	b := storedBatch{status: gatev1.BatchStatus(st)}
	if b.status == gatev1.BatchStatus_BATCH_STATUS_BLOCKED {
		b.blocked = &gatev1.BlockedDetail{}
		err = proto.Unmarshal(blob, b.blocked)
	} else {
		b.resp = &gatev1.IngestResponse{}
		err = proto.Unmarshal(blob, b.resp)
	}
	if err != nil {
		return storedBatch{}, false, fmt.Errorf("decode stored batch %s of %s/%s: %w", batchID, subject, partition, err)
	}
	return b, true, nil
}

// commitBatch writes everything a batch decided in one transaction: its
// idempotency row, its quarantined records, its partition's counters and
// field statistics, and the alerts and registry events it raised. The
// idempotency row is inserted first, so a concurrent duplicate waits on
// its unique key and then finds it taken.
func (s *store) commitBatch(ctx context.Context, srv *Server, o *outcome) ([]*gatev1.Alert, error) {
	var alerts []*gatev1.Alert
	now := srv.cfg.Clock()
	at := now.UnixNano()
	in := o.in
	sum := o.resp.GetSummary()
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		alerts = nil
		res, err := tx.ExecContext(ctx, `INSERT INTO gate_batches (subject, part, batch_id, status, contract_version, received, accepted, quarantined, response, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (subject, part, batch_id) DO NOTHING`,
			in.subject, in.partition, in.batchID, int32(sum.GetStatus()), o.cv.version, sum.GetReceived(), sum.GetAccepted(), sum.GetQuarantined(), []byte{}, at)
		if err != nil {
			return fmt.Errorf("claim batch %s of %s/%s: %w", in.batchID, in.subject, in.partition, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("claim batch %s: %w", in.batchID, err)
		} else if n == 0 {
			return errDuplicateBatch
		}
		if err := s.insertQuarantine(ctx, tx, o, at); err != nil {
			return err
		}
		blocked := int64(0)
		if o.blocked != nil {
			blocked = sum.GetReceived()
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO gate_partitions (subject, part, received, accepted, quarantined, blocked, released, batches, id_checked, id_matched, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, 0, 1, $7, $8, $9)
ON CONFLICT (subject, part) DO UPDATE SET received = gate_partitions.received + excluded.received,
	accepted = gate_partitions.accepted + excluded.accepted, quarantined = gate_partitions.quarantined + excluded.quarantined,
	blocked = gate_partitions.blocked + excluded.blocked, batches = gate_partitions.batches + 1,
	id_checked = gate_partitions.id_checked + excluded.id_checked, id_matched = gate_partitions.id_matched + excluded.id_matched,
	updated_at = excluded.updated_at`,
			in.subject, in.partition, sum.GetReceived(), sum.GetAccepted(), sum.GetQuarantined(), blocked, o.idChecked, o.idMatched, at); err != nil {
			return fmt.Errorf("count batch %s in partition %s/%s: %w", in.batchID, in.subject, in.partition, err)
		}
		if o.stats != nil {
			if err := addFieldStats(ctx, tx, in.subject, in.partition, o.stats.Fields); err != nil {
				return err
			}
			a, err := srv.raiseAlerts(ctx, tx, o, now)
			if err != nil {
				return err
			}
			alerts = a
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
		if _, err := tx.ExecContext(ctx, `UPDATE gate_batches SET response = $1 WHERE subject = $2 AND part = $3 AND batch_id = $4`,
			blob, in.subject, in.partition, in.batchID); err != nil {
			return fmt.Errorf("store verdicts of batch %s: %w", in.batchID, err)
		}
		if len(alerts) > 0 {
			return s.db.Notify(ctx, tx, alertChannel)
		}
		return nil
	})
	return alerts, err
}

// codeName is an error code's short name ("ID_UNMAPPED").
func codeName(c recordv1.ErrorCode) string { return strings.TrimPrefix(c.String(), "ERROR_CODE_") }

// listColumn joins names as "|a|b|" so a filter can match one with LIKE.
func listColumn(names []string) string { return "|" + strings.Join(names, "|") + "|" }

func (s *store) insertQuarantine(ctx context.Context, tx *sql.Tx, o *outcome, at int64) error {
	if len(o.quar) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO gate_quarantine (id, subject, part, batch_id, idx, position, contract_version, format, raw,
	reasons, reason, reason_codes, check_name, check_names, id_state, created_at, state, state_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $16)`)
	if err != nil {
		return fmt.Errorf("prepare quarantine insert: %w", err)
	}
	defer stmt.Close()
	for _, q := range o.quar {
		reasons, err := proto.Marshal(&gatev1.RecordVerdict{Reasons: q.reasons})
		if err != nil {
			return fmt.Errorf("encode reasons of quarantined record %d: %w", q.index, err)
		}
		var codes, checks []string
		for _, r := range q.reasons {
			codes = append(codes, codeName(r.GetCode()))
			checks = append(checks, r.GetCheck())
		}
		if _, err := stmt.ExecContext(ctx, q.id, o.in.subject, o.in.partition, o.in.batchID, q.index, q.position, o.cv.version, int32(o.format), q.raw,
			reasons, codes[0], listColumn(codes), checks[0], listColumn(checks), q.idState, at, int32(gatev1.QuarantineState_QUARANTINE_STATE_HELD)); err != nil {
			return fmt.Errorf("quarantine record %d of batch %s: %w", q.index, o.in.batchID, err)
		}
	}
	return nil
}

func addFieldStats(ctx context.Context, tx *sql.Tx, subject, partition string, fields map[string]check.FieldStats) error {
	for field, f := range fields {
		if _, err := tx.ExecContext(ctx, `INSERT INTO gate_field_stats (subject, part, field, count, nulls, numbers, total, ids, matched)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (subject, part, field) DO UPDATE SET count = gate_field_stats.count + excluded.count,
	nulls = gate_field_stats.nulls + excluded.nulls, numbers = gate_field_stats.numbers + excluded.numbers,
	total = gate_field_stats.total + excluded.total, ids = gate_field_stats.ids + excluded.ids,
	matched = gate_field_stats.matched + excluded.matched`,
			subject, partition, field, f.Count, f.Nulls, f.Numbers, f.Sum, f.IDs, f.Matched); err != nil {
			return fmt.Errorf("update statistics of %s in %s/%s: %w", field, subject, partition, err)
		}
	}
	return nil
}

// partitionStats reads the statistics of the partitions of subject in
// [from, to], oldest first.
func partitionStats(ctx context.Context, q querier, subject, from, to string) ([]string, map[string]*check.Stats, error) {
	rows, err := q.QueryContext(ctx, `SELECT part, received - blocked FROM gate_partitions WHERE subject = $1 AND part >= $2 AND part <= $3 ORDER BY part`, subject, from, to)
	if err != nil {
		return nil, nil, fmt.Errorf("read partitions of %s: %w", subject, err)
	}
	var parts []string
	out := map[string]*check.Stats{}
	for rows.Next() {
		var p string
		var n int64
		if err := rows.Scan(&p, &n); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("read partitions of %s: %w", subject, err)
		}
		parts = append(parts, p)
		out[p] = &check.Stats{Rows: n, Fields: map[string]check.FieldStats{}}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read partitions of %s: %w", subject, err)
	}
	frows, err := q.QueryContext(ctx, `SELECT part, field, count, nulls, numbers, total, ids, matched FROM gate_field_stats WHERE subject = $1 AND part >= $2 AND part <= $3`, subject, from, to)
	if err != nil {
		return nil, nil, fmt.Errorf("read field statistics of %s: %w", subject, err)
	}
	defer frows.Close()
	for frows.Next() {
		var p, field string
		var f check.FieldStats
		if err := frows.Scan(&p, &field, &f.Count, &f.Nulls, &f.Numbers, &f.Sum, &f.IDs, &f.Matched); err != nil {
			return nil, nil, fmt.Errorf("read field statistics of %s: %w", subject, err)
		}
		if st := out[p]; st != nil {
			st.Fields[field] = f
		}
	}
	return parts, out, frows.Err()
}

// baselineFrom returns the oldest of the n partitions of subject before
// partition, or partition itself when there are none.
func baselineFrom(ctx context.Context, q querier, subject, partition string, n int) (string, error) {
	if n <= 0 {
		return partition, nil
	}
	var from sql.NullString
	err := q.QueryRowContext(ctx, `SELECT MIN(part) FROM (SELECT part FROM gate_partitions WHERE subject = $1 AND part < $2 ORDER BY part DESC LIMIT $3) AS recent`,
		subject, partition, n).Scan(&from)
	if err != nil {
		return "", fmt.Errorf("find the baseline partitions of %s before %s: %w", subject, partition, err)
	}
	if !from.Valid {
		return partition, nil
	}
	return from.String, nil
}

// raiseAlerts evaluates, inside the batch's transaction, the alerts the
// batch raises: ALERT record checks, the partition's statistical checks
// against its trailing baseline, and clustered failure shapes. Each alert
// is stored once per partition (once per field and shape for unannounced
// changes) and sent to the registry through the outbox.
func (s *Server) raiseAlerts(ctx context.Context, tx *sql.Tx, o *outcome, now time.Time) ([]*gatev1.Alert, error) {
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
	from, err := baselineFrom(ctx, tx, in.subject, in.partition, window)
	if err != nil {
		return nil, err
	}
	parts, stats, err := partitionStats(ctx, tx, in.subject, from, in.partition)
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
		res, err := tx.ExecContext(ctx, `INSERT INTO gate_shapes (subject, field, shape, first_seen, batch_id) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (subject, field, shape) DO NOTHING`, in.subject, c.field, c.shape, now.UnixNano(), in.batchID)
		if err != nil {
			return nil, fmt.Errorf("record shape %s of %s.%s: %w", c.shape, in.subject, c.field, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err != nil {
				return nil, fmt.Errorf("record shape %s of %s.%s: %w", c.shape, in.subject, c.field, err)
			}
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
func (s *Server) storeAlert(ctx context.Context, tx *sql.Tx, a *gatev1.Alert, dedupe string, typ registryv1.EventType) (bool, error) {
	at := a.GetTime().AsTime().UnixNano()
	err := tx.QueryRowContext(ctx, `INSERT INTO gate_alerts (dedupe, at, subject, part, check_name, kind, severity, message, observed, baseline, field, count, first_seen, batch_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT (dedupe) DO NOTHING RETURNING seq`,
		dedupe, at, a.GetSubject(), a.GetPartition(), a.GetCheck(), a.GetKind(), int32(a.GetSeverity()), a.GetMessage(),
		nullFloat(a.GetObserved()), nullFloat(a.GetBaseline()), a.GetField(), a.GetCount(), a.GetFirstSeen().AsTime().UnixNano(), a.GetBatchId()).Scan(&a.Sequence)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store alert %s: %w", dedupe, err)
	}
	ev, err := newEvent(&registryv1.Event{Type: typ, Time: a.GetTime(), Subject: a.GetSubject(), Principal: "gate",
		Message: a.GetMessage(), PartitionFrom: a.GetPartition(), PartitionTo: a.GetPartition(),
		Attributes: map[string]string{"kind": a.GetKind(), "check": a.GetCheck(), "field": a.GetField(), "severity": a.GetSeverity().String(),
			"observed": fmt.Sprint(a.GetObserved()), "baseline": fmt.Sprint(a.GetBaseline()), "alert_sequence": fmt.Sprint(a.GetSequence())}})
	if err != nil {
		return false, err
	}
	return true, s.store.enqueue(ctx, tx, ev, at)
}

// nullFloat stores NaN (no value) as NULL, which both dialects keep.
func nullFloat(f float64) sql.NullFloat64 {
	return sql.NullFloat64{Float64: f, Valid: !math.IsNaN(f)}
}

// autoContain contains the source when the operator configured a match
// rate floor and the partition fell below it.
func (s *Server) autoContain(ctx context.Context, tx *sql.Tx, o *outcome, now time.Time) error {
	floor := s.cfg.MatchRateFloor
	if floor <= 0 || o.idField == "" {
		return nil
	}
	var checked, matched int64
	if err := tx.QueryRowContext(ctx, `SELECT id_checked, id_matched FROM gate_partitions WHERE subject = $1 AND part = $2`, o.in.subject, o.in.partition).
		Scan(&checked, &matched); err != nil {
		return fmt.Errorf("read match rate of %s/%s: %w", o.in.subject, o.in.partition, err)
	}
	if checked < s.cfg.MinMatchSample || float64(matched)/float64(checked) >= floor {
		return nil
	}
	var contained bool
	err := tx.QueryRowContext(ctx, `SELECT contained FROM gate_containments WHERE subject = $1`, o.in.subject).Scan(&contained)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read containment of %s: %w", o.in.subject, err)
	}
	if contained {
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
	return s.store.writeContainment(ctx, tx, c, "CONTAIN", ev)
}
