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

	"github.com/seamdata/seam/core/check"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

func (s *sqlStore) Batch(ctx context.Context, subject, partition, batchID string) (storedBatch, bool, error) {
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

func (t *sqlTx) ClaimBatch(ctx context.Context, k batchKey, b batchRow) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `INSERT INTO gate_batches (subject, part, batch_id, status, contract_version, received, accepted, quarantined, response, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (subject, part, batch_id) DO NOTHING`,
		k.subject, k.part, k.batchID, int32(b.status), b.version, b.received, b.accepted, b.quarantined, []byte{}, b.at.UnixNano())
	if err != nil {
		return false, fmt.Errorf("claim batch %s of %s/%s: %w", k.batchID, k.subject, k.part, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("claim batch %s: %w", k.batchID, err)
	}
	return n == 1, nil
}

func (t *sqlTx) SetBatchAnswer(ctx context.Context, k batchKey, answer []byte) error {
	if _, err := t.tx.ExecContext(ctx, `UPDATE gate_batches SET response = $1 WHERE subject = $2 AND part = $3 AND batch_id = $4`,
		answer, k.subject, k.part, k.batchID); err != nil {
		return fmt.Errorf("store verdicts of batch %s: %w", k.batchID, err)
	}
	return nil
}

// codeName is an error code's short name ("ID_UNMAPPED").
func codeName(c recordv1.ErrorCode) string { return strings.TrimPrefix(c.String(), "ERROR_CODE_") }

// listColumn joins names as "|a|b|", each with "%" and "|" escaped, so
// "|name|" occurs in it exactly when name is one of them.
func listColumn(names []string) string {
	var b strings.Builder
	b.WriteByte('|')
	for _, n := range names {
		b.WriteString(listEscaper.Replace(n))
		b.WriteByte('|')
	}
	return b.String()
}

var listEscaper = strings.NewReplacer("%", "%25", "|", "%7C")

func (t *sqlTx) InsertQuarantine(ctx context.Context, rows []quarantineRow) error {
	if len(rows) == 0 {
		return nil
	}
	stmt, err := t.tx.PrepareContext(ctx, `INSERT INTO gate_quarantine (id, subject, part, batch_id, idx, position, contract_version, format, raw,
	reasons, reason, reason_codes, check_name, check_names, id_state, created_at, state, state_at, raw_size, raw_sha256)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $16, $18, $19)`)
	if err != nil {
		return fmt.Errorf("prepare quarantine insert: %w", err)
	}
	defer stmt.Close()
	for _, q := range rows {
		reasons, err := proto.Marshal(&gatev1.RecordVerdict{Reasons: q.reasons})
		if err != nil {
			return fmt.Errorf("encode reasons of quarantined record %d: %w", q.index, err)
		}
		var codes, checks []string
		for _, r := range q.reasons {
			codes = append(codes, codeName(r.GetCode()))
			checks = append(checks, r.GetCheck())
		}
		if _, err := stmt.ExecContext(ctx, q.id, q.subject, q.part, q.batchID, q.index, q.position, q.version, int32(q.format), q.raw,
			reasons, codes[0], listColumn(codes), checks[0], listColumn(checks), q.idState, q.at.UnixNano(), int32(gatev1.QuarantineState_QUARANTINE_STATE_HELD),
			q.rawSize, q.rawSHA256); err != nil {
			return fmt.Errorf("quarantine record %d of batch %s: %w", q.index, q.batchID, err)
		}
	}
	return nil
}

func (t *sqlTx) CountBatch(ctx context.Context, subject, part string, c partitionCounts, at time.Time) error {
	if _, err := t.tx.ExecContext(ctx, `INSERT INTO gate_partitions (subject, part, received, accepted, quarantined, blocked, released, batches, id_checked, id_matched, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, 0, 1, $7, $8, $9)
ON CONFLICT (subject, part) DO UPDATE SET received = gate_partitions.received + excluded.received,
	accepted = gate_partitions.accepted + excluded.accepted, quarantined = gate_partitions.quarantined + excluded.quarantined,
	blocked = gate_partitions.blocked + excluded.blocked, batches = gate_partitions.batches + 1,
	id_checked = gate_partitions.id_checked + excluded.id_checked, id_matched = gate_partitions.id_matched + excluded.id_matched,
	updated_at = excluded.updated_at`,
		subject, part, c.received, c.accepted, c.quarantined, c.blocked, c.idChecked, c.idMatched, at.UnixNano()); err != nil {
		return fmt.Errorf("count a batch in partition %s/%s: %w", subject, part, err)
	}
	return nil
}

// AddFieldStats merges a batch's field statistics into its partition's.
// Means merge by weight, which SQL arithmetic cannot do safely in both
// dialects, so the rows are read, merged and written back; the caller
// holds the partition's row lock (CountBatch runs first), so concurrent
// batches of one partition merge one after the other.
func (t *sqlTx) AddFieldStats(ctx context.Context, subject, part string, fields map[string]check.FieldStats) error {
	_, cur, err := t.PartitionStats(ctx, subject, part, part)
	if err != nil {
		return err
	}
	merged := check.Stats{Fields: map[string]check.FieldStats{}}
	if st := cur[part]; st != nil {
		merged.Fields = st.Fields
	}
	merged.Merge(check.Stats{Fields: fields})
	for _, field := range sortedKeys(fields) {
		f := merged.Fields[field]
		if _, err := t.tx.ExecContext(ctx, `INSERT INTO gate_field_stats (subject, part, field, count, nulls, numbers, total, mean, ids, matched)
VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $8, $9)
ON CONFLICT (subject, part, field) DO UPDATE SET count = excluded.count, nulls = excluded.nulls, numbers = excluded.numbers,
	mean = excluded.mean, ids = excluded.ids, matched = excluded.matched`,
			subject, part, field, f.Count, f.Nulls, f.Numbers, f.Mean, f.IDs, f.Matched); err != nil {
			return fmt.Errorf("update statistics of %s in %s/%s: %w", field, subject, part, err)
		}
	}
	return nil
}

func (t *sqlTx) PartitionStats(ctx context.Context, subject, from, to string) ([]string, map[string]*check.Stats, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT part, received - blocked FROM gate_partitions WHERE subject = $1 AND part >= $2 AND part <= $3 ORDER BY part`, subject, from, to)
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
	frows, err := t.tx.QueryContext(ctx, `SELECT part, field, count, nulls, numbers, mean, ids, matched FROM gate_field_stats WHERE subject = $1 AND part >= $2 AND part <= $3`, subject, from, to)
	if err != nil {
		return nil, nil, fmt.Errorf("read field statistics of %s: %w", subject, err)
	}
	defer frows.Close()
	for frows.Next() {
		var p, field string
		var f check.FieldStats
		if err := frows.Scan(&p, &field, &f.Count, &f.Nulls, &f.Numbers, &f.Mean, &f.IDs, &f.Matched); err != nil {
			return nil, nil, fmt.Errorf("read field statistics of %s: %w", subject, err)
		}
		if st := out[p]; st != nil {
			st.Fields[field] = f
		}
	}
	return parts, out, frows.Err()
}

func (t *sqlTx) BaselineFrom(ctx context.Context, subject, part string, n int) (string, error) {
	if n <= 0 {
		return part, nil
	}
	var from sql.NullString
	err := t.tx.QueryRowContext(ctx, `SELECT MIN(part) FROM (SELECT part FROM gate_partitions WHERE subject = $1 AND part < $2 ORDER BY part DESC LIMIT $3) AS recent`,
		subject, part, n).Scan(&from)
	if err != nil {
		return "", fmt.Errorf("find the baseline partitions of %s before %s: %w", subject, part, err)
	}
	if !from.Valid {
		return part, nil
	}
	return from.String, nil
}

func (t *sqlTx) MatchCounts(ctx context.Context, subject, part string) (int64, int64, error) {
	var checked, matched int64
	if err := t.tx.QueryRowContext(ctx, `SELECT id_checked, id_matched FROM gate_partitions WHERE subject = $1 AND part = $2`, subject, part).
		Scan(&checked, &matched); err != nil {
		return 0, 0, fmt.Errorf("read match rate of %s/%s: %w", subject, part, err)
	}
	return checked, matched, nil
}

func (t *sqlTx) InsertAlert(ctx context.Context, a *gatev1.Alert, dedupe string) (bool, error) {
	err := t.tx.QueryRowContext(ctx, `INSERT INTO gate_alerts (dedupe, at, subject, part, check_name, kind, severity, message, observed, baseline, field, count, first_seen, batch_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT (dedupe) DO NOTHING RETURNING seq`,
		dedupe, a.GetTime().AsTime().UnixNano(), a.GetSubject(), a.GetPartition(), a.GetCheck(), a.GetKind(), int32(a.GetSeverity()), a.GetMessage(),
		nullFloat(a.GetObserved()), nullFloat(a.GetBaseline()), a.GetField(), a.GetCount(), a.GetFirstSeen().AsTime().UnixNano(), a.GetBatchId()).Scan(&a.Sequence)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store alert %s: %w", dedupe, err)
	}
	return true, nil
}

// nullFloat stores NaN (no value) as NULL, which both dialects keep.
func nullFloat(f float64) sql.NullFloat64 {
	return sql.NullFloat64{Float64: f, Valid: !math.IsNaN(f)}
}

func (t *sqlTx) NewShape(ctx context.Context, subject, field, shape, batchID string, at time.Time) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `INSERT INTO gate_shapes (subject, field, shape, first_seen, batch_id) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (subject, field, shape) DO NOTHING`, subject, field, shape, at.UnixNano(), batchID)
	if err != nil {
		return false, fmt.Errorf("record shape %s of %s.%s: %w", shape, subject, field, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("record shape %s of %s.%s: %w", shape, subject, field, err)
	}
	return n == 1, nil
}
