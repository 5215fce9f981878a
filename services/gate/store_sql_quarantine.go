package gate

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/platform/storage"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// where is a SQL condition with its arguments, numbered from $1.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	for _, a := range args {
		w.args = append(w.args, a)
		cond = strings.Replace(cond, "?", "$"+strconv.Itoa(len(w.args)), 1)
	}
	w.conds = append(w.conds, cond)
}

func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// shift renumbers a condition's placeholders after n leading arguments.
func shift(w *where, n int) *where {
	out := &where{}
	for _, c := range w.conds {
		for i := len(w.args); i >= 1; i-- {
			c = strings.ReplaceAll(c, "$"+strconv.Itoa(i), "$#"+strconv.Itoa(i+n))
		}
		out.conds = append(out.conds, strings.ReplaceAll(c, "$#", "$"))
	}
	out.args = w.args
	return out
}

// filterWhere turns a quarantine filter into a condition. Reason and
// check match one element of their list columns exactly: by position of
// the delimited element, never as a LIKE pattern, so "%" or "_" in a
// filter match only themselves.
func (s *sqlStore) filterWhere(f quarantineFilter) *where {
	w := &where{}
	if f.subject != "" {
		w.add("subject = ?", f.subject)
	}
	if f.from != "" {
		w.add("part >= ?", f.from)
	}
	if f.to != "" {
		w.add("part <= ?", f.to)
	}
	if f.reason != "" {
		w.add(s.contains("reason_codes"), listColumn([]string{f.reason}))
	}
	if f.check != "" {
		w.add(s.contains("check_names"), listColumn([]string{f.check}))
	}
	if f.version > 0 {
		w.add("contract_version = ?", f.version)
	}
	if f.state != gatev1.QuarantineState_QUARANTINE_STATE_UNSPECIFIED {
		w.add("state = ?", int32(f.state))
	}
	return w
}

// contains is the condition "column holds the argument as a substring",
// without pattern characters.
func (s *sqlStore) contains(column string) string {
	if s.db.Dialect == storage.Postgres {
		return "strpos(" + column + ", ?) > 0"
	}
	return "instr(" + column + ", ?) > 0"
}

const quarantineColumns = `id, subject, part, batch_id, idx, position, contract_version, format, raw, reasons, created_at, state, state_at, state_reason, state_by, raw_size, raw_sha256, amendment`

func scanQuarantined(rows interface{ Scan(...any) error }) (*gatev1.QuarantinedRecord, error) {
	q := &gatev1.QuarantinedRecord{}
	var format, state int32
	var reasons []byte
	var created, stateAt int64
	if err := rows.Scan(&q.Id, &q.Subject, &q.Partition, &q.BatchId, &q.Index, &q.Position, &q.ContractVersion, &format, &q.Raw,
		&reasons, &created, &state, &stateAt, &q.StateReason, &q.StateBy, &q.RawSize, &q.RawSha256, &q.Amendment); err != nil {
		return nil, err
	}
	q.RawTruncated = q.RawSize > int64(len(q.Raw))
	if q.RawSha256 == "" { // rows quarantined before sizes were kept are whole
		sum := sha256.Sum256(q.Raw)
		q.RawSha256 = hex.EncodeToString(sum[:])
	}
	q.Format = recordv1.Format(format)
	q.State = gatev1.QuarantineState(state)
	q.Time = timestamppb.New(time.Unix(0, created))
	q.StateTime = timestamppb.New(time.Unix(0, stateAt))
	v := &gatev1.RecordVerdict{}
	if err := proto.Unmarshal(reasons, v); err != nil {
		return nil, fmt.Errorf("decode reasons of %s: %w", q.Id, err)
	}
	q.Reasons = v.GetReasons()
	return q, nil
}

func (s *sqlStore) ListQuarantine(ctx context.Context, f quarantineFilter, after *quarantineKey, limit, maxBytes int) ([]*gatev1.QuarantinedRecord, error) {
	w := s.filterWhere(f)
	if after != nil {
		w.add("(subject, part, batch_id, idx) > (?, ?, ?, ?)", after.subject, after.part, after.batchID, after.index)
	}
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT `+quarantineColumns+` FROM gate_quarantine`+w.String()+
		` ORDER BY subject, part, batch_id, idx LIMIT `+strconv.Itoa(limit), w.args...)
	if err != nil {
		return nil, fmt.Errorf("list quarantine: %w", err)
	}
	defer rows.Close()
	var out []*gatev1.QuarantinedRecord
	size := 0
	for size < maxBytes && rows.Next() {
		q, err := scanQuarantined(rows)
		if err != nil {
			return nil, fmt.Errorf("list quarantine: %w", err)
		}
		out = append(out, q)
		size += len(q.GetRaw())
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list quarantine: %w", err)
	}
	return out, nil
}

func (s *sqlStore) QuarantinedRecord(ctx context.Context, id string) (*gatev1.QuarantinedRecord, bool, error) {
	q, err := scanQuarantined(s.db.SQL.QueryRowContext(ctx, `SELECT `+quarantineColumns+` FROM gate_quarantine WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read quarantined record %s: %w", id, err)
	}
	return q, true, nil
}

// countColumns are the columns QuarantineCounts groups by.
var countColumns = map[string]string{"reason": "reason", "check": "check_name", "partition": "part"}

func (s *sqlStore) QuarantineCounts(ctx context.Context, f quarantineFilter, by string) ([]*gatev1.QuarantineCount, error) {
	col, ok := countColumns[by]
	if !ok {
		return nil, fmt.Errorf("count quarantine by %q: no such grouping", by)
	}
	w := s.filterWhere(f)
	order := "n DESC, key"
	if by == "partition" {
		order = "key"
	}
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT `+col+` AS key, COUNT(*) AS n FROM gate_quarantine`+w.String()+` GROUP BY `+col+` ORDER BY `+order, w.args...)
	return storage.ScanRows(rows, err, fmt.Sprintf("count quarantine by %s", by), func(row storage.Row) (*gatev1.QuarantineCount, error) {
		c := &gatev1.QuarantineCount{}
		if err := row.Scan(&c.Key, &c.Count); err != nil {
			return nil, err
		}
		return c, nil
	})
}

func (s *sqlStore) Discard(ctx context.Context, sel discardSelection, reason, principal string, at time.Time) (int64, error) {
	w := &where{}
	if len(sel.ids) > 0 {
		ph := make([]string, len(sel.ids))
		args := make([]any, len(sel.ids))
		for i, id := range sel.ids {
			ph[i], args[i] = "?", id
		}
		w.add("id IN ("+strings.Join(ph, ", ")+")", args...)
		w.add("state = ?", int32(gatev1.QuarantineState_QUARANTINE_STATE_HELD))
	} else {
		w = s.filterWhere(sel.filter)
	}
	var n int64
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		args := append([]any{int32(gatev1.QuarantineState_QUARANTINE_STATE_DISCARDED), at.UnixNano(), reason, principal}, w.args...)
		res, err := tx.ExecContext(ctx, `UPDATE gate_quarantine SET state = $1, state_at = $2, state_reason = $3, state_by = $4`+shift(w, 4).String(), args...)
		if err != nil {
			return fmt.Errorf("discard quarantined records: %w", err)
		}
		if n, err = res.RowsAffected(); err != nil {
			return fmt.Errorf("discard quarantined records: %w", err)
		}
		return audit(ctx, tx, at, principal, sel.subject, "DISCARD", fmt.Sprintf("%d records: %s", n, reason))
	})
	return n, err
}

func (s *sqlStore) HeldPartitions(ctx context.Context, subject, from, to, replayID string) ([]string, error) {
	q := `SELECT DISTINCT part FROM gate_quarantine WHERE subject = $1 AND state = $2 AND part >= $3 AND part <= $4`
	args := []any{subject, int32(gatev1.QuarantineState_QUARANTINE_STATE_HELD), from, to}
	if replayID != "" {
		q += ` UNION SELECT DISTINCT part FROM gate_quarantine WHERE replay_id = $5 AND subject = $1 AND part >= $3 AND part <= $4`
		args = append(args, replayID)
	}
	rows, err := s.db.SQL.QueryContext(ctx, q+` ORDER BY part`, args...)
	return storage.ScanRows(rows, err, "list partitions of the replay window", func(row storage.Row) (string, error) {
		var p string
		err := row.Scan(&p)
		return p, err
	})
}

func (s *sqlStore) HeldPage(ctx context.Context, subject, part, afterBatch string, afterIndex int64, limit int) ([]heldRow, error) {
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT id, part, amendment, batch_id, idx, position, format, raw, id_state, raw_size, COALESCE(ingest_reasons, reasons), reasons FROM gate_quarantine
WHERE subject = $1 AND state = $2 AND part = $3 AND (batch_id, idx) > ($4, $5) ORDER BY batch_id, idx LIMIT $6`,
		subject, int32(gatev1.QuarantineState_QUARANTINE_STATE_HELD), part, afterBatch, afterIndex, limit)
	return storage.ScanRows(rows, err, fmt.Sprintf("read held records of %s/%s", subject, part), func(row storage.Row) (heldRow, error) {
		var h heldRow
		var f int32
		var size int64
		var reasons, current []byte
		if err := row.Scan(&h.id, &h.part, &h.amendment, &h.batchID, &h.index, &h.position, &f, &h.raw, &h.idState, &size, &reasons, &current); err != nil {
			return h, err
		}
		v, now := &gatev1.RecordVerdict{}, &gatev1.RecordVerdict{}
		if err := proto.Unmarshal(reasons, v); err != nil {
			return h, fmt.Errorf("decode reasons of %s: %w", h.id, err)
		}
		if err := proto.Unmarshal(current, now); err != nil {
			return h, fmt.Errorf("decode reasons of %s: %w", h.id, err)
		}
		h.reasons = now.GetReasons()
		h.failed = map[string]int64{}
		for _, r := range v.GetReasons() {
			if r.GetCheck() != "" {
				h.failed[r.GetCheck()]++
			}
		}
		h.format = recordv1.Format(f)
		h.truncated = size > int64(len(h.raw))
		return h, nil
	})
}

func (s *sqlStore) ReleasedBy(ctx context.Context, subject, part, replayID string) ([]*recordv1.CanonicalRecord, error) {
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT canonical FROM gate_quarantine WHERE replay_id = $1 AND subject = $2 AND part = $3 ORDER BY batch_id, idx`,
		replayID, subject, part)
	return storage.ScanRows(rows, err, fmt.Sprintf("read records replay %s released in %s", replayID, part), func(row storage.Row) (*recordv1.CanonicalRecord, error) {
		var b []byte
		if err := row.Scan(&b); err != nil {
			return nil, err
		}
		rec := &recordv1.CanonicalRecord{}
		if err := proto.Unmarshal(b, rec); err != nil {
			return nil, fmt.Errorf("decode a record: %w", err)
		}
		return rec, nil
	})
}

func (t *sqlTx) Release(ctx context.Context, r releaseRow) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `UPDATE gate_quarantine SET state = $1, state_at = $2, state_reason = $3, state_by = $4, replay_id = $5, record_id = $6, canonical = $7
WHERE id = $8 AND state = $9`, int32(gatev1.QuarantineState_QUARANTINE_STATE_RELEASED), r.at.UnixNano(), "replay "+r.replayID, r.principal, r.replayID,
		r.recordID, r.canonical, r.id, int32(gatev1.QuarantineState_QUARANTINE_STATE_HELD))
	if err != nil {
		return false, fmt.Errorf("release record %s: %w", r.id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("release record %s: %w", r.id, err)
	}
	return n == 1, nil
}

func nanOr(f sql.NullFloat64) float64 {
	if f.Valid {
		return f.Float64
	}
	return math.NaN()
}
