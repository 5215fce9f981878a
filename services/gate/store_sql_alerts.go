package gate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/platform/storage"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

const alertColumns = `seq, at, subject, part, check_name, kind, severity, message, observed, baseline, field, count, first_seen, batch_id, amendment,
	state, acked_by, acked_at, resolved_by, resolution, resolved_at`

func scanAlert(rows storage.Row) (*gatev1.Alert, error) {
	a := &gatev1.Alert{}
	var at, first, ackedAt, resolvedAt int64
	var sev, state int32
	var observed, baseline sql.NullFloat64
	if err := rows.Scan(&a.Sequence, &at, &a.Subject, &a.Partition, &a.Check, &a.Kind, &sev, &a.Message, &observed, &baseline, &a.Field, &a.Count, &first, &a.BatchId, &a.Amendment,
		&state, &a.AcknowledgedBy, &ackedAt, &a.ResolvedBy, &a.Resolution, &resolvedAt); err != nil {
		return nil, err
	}
	a.Severity = gatev1.Severity(sev)
	a.State = gatev1.AlertState(state)
	a.Time = timestamppb.New(time.Unix(0, at))
	a.FirstSeen = timestamppb.New(time.Unix(0, first))
	if ackedAt > 0 {
		a.AcknowledgeTime = timestamppb.New(time.Unix(0, ackedAt))
	}
	if resolvedAt > 0 {
		a.ResolveTime = timestamppb.New(time.Unix(0, resolvedAt))
	}
	a.Observed, a.Baseline = nanOr(observed), nanOr(baseline)
	return a, nil
}

// alertFilter selects alerts; empty fields match all.
type alertFilter struct {
	subject, kind string
	states        []gatev1.AlertState
}

func (f alertFilter) where(after int64) *where {
	w := &where{}
	w.add("seq > ?", after)
	if f.subject != "" {
		w.add("subject = ?", f.subject)
	}
	if f.kind != "" {
		w.add("kind = ?", f.kind)
	}
	if len(f.states) > 0 {
		var in []string
		for _, st := range f.states {
			w.args = append(w.args, int32(st))
			in = append(in, fmt.Sprintf("$%d", len(w.args)))
		}
		w.conds = append(w.conds, "state IN ("+strings.Join(in, ", ")+")")
	}
	return w
}

func queryAlerts(ctx context.Context, q querier, what, query string, args ...any) ([]*gatev1.Alert, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	return storage.ScanRows(rows, err, "list "+what, scanAlert)
}

func (s *sqlStore) Alerts(ctx context.Context, f alertFilter, after int64, limit int) ([]*gatev1.Alert, error) {
	w := f.where(after)
	return queryAlerts(ctx, s.db.SQL, "alerts", `SELECT `+alertColumns+` FROM gate_alerts`+w.String()+fmt.Sprintf(` ORDER BY seq LIMIT %d`, limit), w.args...)
}

func (s *sqlStore) Alert(ctx context.Context, seq int64) (*gatev1.Alert, bool, error) {
	out, err := queryAlerts(ctx, s.db.SQL, fmt.Sprintf("alert %d", seq), `SELECT `+alertColumns+` FROM gate_alerts WHERE seq = $1`, seq)
	if err != nil || len(out) == 0 {
		return nil, false, err
	}
	return out[0], true, nil
}

// holding are the states of an alert that still holds.
var holding = []any{int32(gatev1.AlertState_ALERT_STATE_OPEN), int32(gatev1.AlertState_ALERT_STATE_ACKNOWLEDGED)}

func (t *sqlTx) HoldingAlerts(ctx context.Context, subject, part string, amendment int32, since time.Time) ([]*gatev1.Alert, error) {
	return queryAlerts(ctx, t.tx, "the holding alerts of "+subject+"/"+part, `SELECT `+alertColumns+` FROM gate_alerts
WHERE subject = $1 AND part = $2 AND amendment = $3 AND at >= $4 AND state IN ($5, $6) ORDER BY seq`,
		subject, part, amendment, since.UnixNano(), holding[0], holding[1])
}

func (t *sqlTx) SetAlertState(ctx context.Context, seq int64, state gatev1.AlertState, by, reason string, at time.Time) (*gatev1.Alert, bool, error) {
	var res sql.Result
	var err error
	switch state {
	case gatev1.AlertState_ALERT_STATE_ACKNOWLEDGED:
		res, err = t.tx.ExecContext(ctx, `UPDATE gate_alerts SET state = $1, acked_by = $2, acked_at = $3 WHERE seq = $4 AND state = $5`,
			int32(state), by, at.UnixNano(), seq, holding[0])
	case gatev1.AlertState_ALERT_STATE_RESOLVED:
		res, err = t.tx.ExecContext(ctx, `UPDATE gate_alerts SET state = $1, resolved_by = $2, resolution = $3, resolved_at = $4 WHERE seq = $5 AND state IN ($6, $7)`,
			int32(state), by, reason, at.UnixNano(), seq, holding[0], holding[1])
	default:
		return nil, false, fmt.Errorf("set alert %d to %s: not a state an alert moves to", seq, state)
	}
	if err != nil {
		return nil, false, fmt.Errorf("set alert %d to %s: %w", seq, state, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, false, fmt.Errorf("set alert %d to %s: %w", seq, state, err)
	}
	out, err := queryAlerts(ctx, t.tx, fmt.Sprintf("alert %d", seq), `SELECT `+alertColumns+` FROM gate_alerts WHERE seq = $1`, seq)
	if err != nil {
		return nil, false, err
	}
	if len(out) == 0 {
		return nil, false, errAlertNotFound
	}
	return out[0], n == 1, nil
}

// errAlertNotFound is returned for a sequence no alert has.
var errAlertNotFound = errors.New("no alert with this sequence")

func (t *sqlTx) LearnedShapes(ctx context.Context, subject string) (map[string]learnedField, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT field, shape, records, version FROM gate_learned_shapes WHERE subject = $1`, subject)
	if err != nil {
		return nil, fmt.Errorf("read the learned shapes of %s: %w", subject, err)
	}
	defer rows.Close()
	out := map[string]learnedField{}
	for rows.Next() {
		var field, shape string
		var n int64
		var version int32
		if err := rows.Scan(&field, &shape, &n, &version); err != nil {
			return nil, fmt.Errorf("read the learned shapes of %s: %w", subject, err)
		}
		lf := out[field]
		if old, ok := strings.CutPrefix(shape, v1ShapePrefix); ok {
			if lf.v1 == nil {
				lf.v1 = map[string]int64{}
			}
			lf.v1[old] = n
		} else {
			if lf.shapes == nil {
				lf.shapes = map[string]int64{}
			}
			lf.shapes[shape] = n
		}
		lf.version = max(lf.version, version)
		out[field] = lf
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the learned shapes of %s: %w", subject, err)
	}
	return out, nil
}

func (t *sqlTx) LearnShapes(ctx context.Context, subject, part string, version int32, learned []shapeFigure) error {
	for _, l := range learned {
		if _, err := t.tx.ExecContext(ctx, `INSERT INTO gate_learned_shapes (subject, field, shape, records, version, first_part, last_part) VALUES ($1, $2, $3, $4, $5, $6, $6)
ON CONFLICT (subject, field, shape) DO UPDATE SET records = gate_learned_shapes.records + excluded.records,
	version = CASE WHEN excluded.version > gate_learned_shapes.version THEN excluded.version ELSE gate_learned_shapes.version END,
	first_part = CASE WHEN excluded.first_part < gate_learned_shapes.first_part THEN excluded.first_part ELSE gate_learned_shapes.first_part END,
	last_part = CASE WHEN excluded.last_part > gate_learned_shapes.last_part THEN excluded.last_part ELSE gate_learned_shapes.last_part END`,
			subject, l.Field, l.Shape, l.Passed, version, part); err != nil {
			return fmt.Errorf("learn shape %s of %s.%s: %w", l.Shape, subject, l.Field, err)
		}
	}
	return nil
}
