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

	coreshape "github.com/seamdata/seam/core/shape"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

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

// heldDigestsChunk bounds the digests one query asks about.
const heldDigestsChunk = 500

func (t *sqlTx) HeldDigests(ctx context.Context, subject, part string, digests []string) (map[string]bool, error) {
	out := map[string]bool{}
	for start := 0; start < len(digests); start += heldDigestsChunk {
		chunk := digests[start:min(len(digests), start+heldDigestsChunk)]
		args := []any{subject, int32(gatev1.QuarantineState_QUARANTINE_STATE_HELD), part}
		marks := make([]string, len(chunk))
		for i, d := range chunk {
			args = append(args, d)
			marks[i] = fmt.Sprintf("$%d", len(args))
		}
		rows, err := t.tx.QueryContext(ctx, `SELECT DISTINCT raw_sha256 FROM gate_quarantine WHERE subject = $1 AND state = $2 AND part = $3 AND raw_sha256 IN (`+
			strings.Join(marks, ", ")+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("look for records held already in %s/%s: %w", subject, part, err)
		}
		for rows.Next() {
			var d string
			if err := rows.Scan(&d); err != nil {
				rows.Close()
				return nil, fmt.Errorf("look for records held already in %s/%s: %w", subject, part, err)
			}
			out[d] = true
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

const insertQuarantineSQL = `INSERT INTO gate_quarantine (id, subject, part, batch_id, idx, position, contract_version, format, raw,
	reasons, reason, reason_codes, check_name, check_names, id_state, created_at, state, state_at, raw_size, raw_sha256, amendment)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $16, $18, $19, $20)`

// quarantineArgs are the values insertQuarantineSQL writes for q.
func quarantineArgs(q quarantineRow) ([]any, error) {
	reasons, err := proto.Marshal(&gatev1.RecordVerdict{Reasons: q.reasons})
	if err != nil {
		return nil, fmt.Errorf("encode reasons of quarantined record %d: %w", q.index, err)
	}
	var codes, checks []string
	for _, r := range q.reasons {
		codes = append(codes, codeName(r.GetCode()))
		checks = append(checks, r.GetCheck())
	}
	if len(codes) == 0 {
		return nil, fmt.Errorf("quarantine record %d of batch %s: no reason", q.index, q.batchID)
	}
	return []any{q.id, q.subject, q.part, q.batchID, q.index, q.position, q.version, int32(q.format), q.raw,
		reasons, codes[0], listColumn(codes), checks[0], listColumn(checks), q.idState, q.at.UnixNano(), int32(gatev1.QuarantineState_QUARANTINE_STATE_HELD),
		q.rawSize, q.rawSHA256, q.amendment}, nil
}

func (t *sqlTx) InsertQuarantine(ctx context.Context, rows []quarantineRow) error {
	if len(rows) == 0 {
		return nil
	}
	stmt, err := t.tx.PrepareContext(ctx, insertQuarantineSQL)
	if err != nil {
		return fmt.Errorf("prepare quarantine insert: %w", err)
	}
	defer stmt.Close()
	for _, q := range rows {
		args, err := quarantineArgs(q)
		if err != nil {
			return err
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("quarantine record %d of batch %s: %w", q.index, q.batchID, err)
		}
	}
	return nil
}

func (t *sqlTx) InsertAlert(ctx context.Context, a *gatev1.Alert, dedupe string) (bool, error) {
	err := t.tx.QueryRowContext(ctx, `INSERT INTO gate_alerts (dedupe, at, subject, part, check_name, kind, severity, message, observed, baseline, field, count, first_seen, batch_id, amendment)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) ON CONFLICT (dedupe) DO NOTHING RETURNING seq`,
		dedupe, a.GetTime().AsTime().UnixNano(), a.GetSubject(), a.GetPartition(), a.GetCheck(), a.GetKind(), int32(a.GetSeverity()), a.GetMessage(),
		nullFloat(a.GetObserved()), nullFloat(a.GetBaseline()), a.GetField(), a.GetCount(), a.GetFirstSeen().AsTime().UnixNano(), a.GetBatchId(), a.GetAmendment()).Scan(&a.Sequence)
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
	if n != 1 {
		return false, nil
	}
	// A change reported before Seam had one classifier is recorded under
	// its version-1 name (migration "shapes of one classifier"): it was reported already.
	rows, err := t.tx.QueryContext(ctx, `SELECT shape FROM gate_shapes WHERE subject = $1 AND field = $2 AND shape LIKE 'v1:%'`, subject, field)
	if err != nil {
		return false, fmt.Errorf("read the shapes reported for %s.%s: %w", subject, field, err)
	}
	defer rows.Close()
	for rows.Next() {
		var old string
		if err := rows.Scan(&old); err != nil {
			return false, fmt.Errorf("read the shapes reported for %s.%s: %w", subject, field, err)
		}
		if coreshape.V1Covers(strings.TrimPrefix(old, v1ShapePrefix), shape) {
			return false, nil
		}
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("read the shapes reported for %s.%s: %w", subject, field, err)
	}
	return true, nil
}

func (t *sqlTx) Rewrite(ctx context.Context, id string, reasons []*recordv1.RecordError) error {
	blob, err := proto.Marshal(&gatev1.RecordVerdict{Reasons: reasons})
	if err != nil {
		return fmt.Errorf("encode the reasons of held record %s: %w", id, err)
	}
	var codes, checks []string
	for _, r := range reasons {
		codes = append(codes, codeName(r.GetCode()))
		checks = append(checks, r.GetCheck())
	}
	if len(codes) == 0 {
		return fmt.Errorf("rewrite the reasons of held record %s: no reason", id)
	}
	// ingest_reasons keeps the reasons the partition's figures count: the
	// replay that rewrites them counts the new ones in the figures, so a
	// later release takes back exactly those.
	if _, err := t.tx.ExecContext(ctx, `UPDATE gate_quarantine SET ingest_reasons = $1, reasons = $1, reason = $2, reason_codes = $3,
	check_name = $4, check_names = $5 WHERE id = $6 AND state = $7`, blob, codes[0], listColumn(codes), checks[0], listColumn(checks), id,
		int32(gatev1.QuarantineState_QUARANTINE_STATE_HELD)); err != nil {
		return fmt.Errorf("rewrite the reasons of held record %s: %w", id, err)
	}
	return nil
}
