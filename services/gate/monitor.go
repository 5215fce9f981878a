package gate

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"sort"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/platform/rpcerr"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// GetMonitor returns the counters and field statistics of a subject's
// partitions, oldest first.
func (s *Server) GetMonitor(ctx context.Context, req *gatev1.GetMonitorRequest) (*gatev1.GetMonitorResponse, error) {
	if req.GetSubject() == "" {
		return nil, rpcerr.InvalidArgument("no subject", rpcerr.FieldViolation{Field: "subject", Description: "name the source subject, for example shop.orders"})
	}
	from, to := req.GetPartitionFrom(), req.GetPartitionTo()
	if to == "" {
		to = "\U0010FFFF"
	}
	rows, err := s.store.db.SQL.QueryContext(ctx, `SELECT part, received, accepted, quarantined, blocked, released, batches, id_checked, id_matched, updated_at
FROM gate_partitions WHERE subject = $1 AND part >= $2 AND part <= $3 ORDER BY part`, req.GetSubject(), from, to)
	if err != nil {
		return nil, fmt.Errorf("read monitor of %s: %w", req.GetSubject(), err)
	}
	resp := &gatev1.GetMonitorResponse{}
	byPart := map[string]*gatev1.PartitionMonitor{}
	for rows.Next() {
		m := &gatev1.PartitionMonitor{Subject: req.GetSubject()}
		var checked, matched, at int64
		if err := rows.Scan(&m.Partition, &m.Received, &m.Accepted, &m.Quarantined, &m.Blocked, &m.Released, &m.Batches, &checked, &matched, &at); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read monitor of %s: %w", req.GetSubject(), err)
		}
		m.MatchRate = -1
		if checked > 0 {
			m.MatchRate = float64(matched) / float64(checked)
		}
		m.UpdateTime = timestamppb.New(time.Unix(0, at))
		resp.Partitions = append(resp.Partitions, m)
		byPart[m.Partition] = m
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read monitor of %s: %w", req.GetSubject(), err)
	}
	frows, err := s.store.db.SQL.QueryContext(ctx, `SELECT part, field, count, nulls, numbers, total, ids, matched FROM gate_field_stats
WHERE subject = $1 AND part >= $2 AND part <= $3 ORDER BY part, field`, req.GetSubject(), from, to)
	if err != nil {
		return nil, fmt.Errorf("read field statistics of %s: %w", req.GetSubject(), err)
	}
	defer frows.Close()
	for frows.Next() {
		var part string
		var numbers int64
		var total float64
		f := &gatev1.FieldMonitor{}
		if err := frows.Scan(&part, &f.Field, &f.Count, &f.Nulls, &numbers, &total, &f.IdChecked, &f.IdMatched); err != nil {
			return nil, fmt.Errorf("read field statistics of %s: %w", req.GetSubject(), err)
		}
		if numbers > 0 {
			f.Mean = total / float64(numbers)
		}
		if m := byPart[part]; m != nil {
			m.Fields = append(m.Fields, f)
		}
	}
	return resp, frows.Err()
}

const alertColumns = `seq, at, subject, part, check_name, kind, severity, message, observed, baseline, field, count, first_seen, batch_id`

func scanAlert(rows interface{ Scan(...any) error }) (*gatev1.Alert, error) {
	a := &gatev1.Alert{}
	var at, first int64
	var sev int32
	var observed, baseline sql.NullFloat64
	if err := rows.Scan(&a.Sequence, &at, &a.Subject, &a.Partition, &a.Check, &a.Kind, &sev, &a.Message, &observed, &baseline, &a.Field, &a.Count, &first, &a.BatchId); err != nil {
		return nil, err
	}
	a.Severity = gatev1.Severity(sev)
	a.Time = timestamppb.New(time.Unix(0, at))
	a.FirstSeen = timestamppb.New(time.Unix(0, first))
	a.Observed, a.Baseline = math.NaN(), math.NaN()
	if observed.Valid {
		a.Observed = observed.Float64
	}
	if baseline.Valid {
		a.Baseline = baseline.Float64
	}
	return a, nil
}

func (s *store) alerts(ctx context.Context, subject string, after int64, limit int) ([]*gatev1.Alert, error) {
	w := &where{}
	w.add("seq > ?", after)
	if subject != "" {
		w.add("subject = ?", subject)
	}
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT `+alertColumns+` FROM gate_alerts`+w.String()+fmt.Sprintf(` ORDER BY seq LIMIT %d`, limit), w.args...)
	if err != nil {
		return nil, fmt.Errorf("list alerts: %w", err)
	}
	defer rows.Close()
	var out []*gatev1.Alert
	for rows.Next() {
		a, err := scanAlert(rows)
		if err != nil {
			return nil, fmt.Errorf("list alerts: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// ListAlerts lists alerts after a sequence number, oldest first.
func (s *Server) ListAlerts(ctx context.Context, req *gatev1.ListAlertsRequest) (*gatev1.ListAlertsResponse, error) {
	limit := int(req.GetLimit())
	switch {
	case limit < 0:
		return nil, rpcerr.InvalidArgument("bad limit", rpcerr.FieldViolation{Field: "limit", Description: "send a positive limit, or 0 for 100"})
	case limit == 0:
		limit = defaultPageSize
	case limit > maxPageSize:
		limit = maxPageSize
	}
	out, err := s.store.alerts(ctx, req.GetSubject(), req.GetAfterSequence(), limit)
	if err != nil {
		return nil, err
	}
	return &gatev1.ListAlertsResponse{Alerts: out}, nil
}

// WatchAlerts streams the alerts after a sequence number, then new ones as
// they are stored, on this replica or any other (the table is the truth;
// notifications only wake the reader).
func (s *Server) WatchAlerts(req *gatev1.WatchAlertsRequest, stream gatev1.GateService_WatchAlertsServer) error {
	ctx := stream.Context()
	wake, err := s.store.db.Listen(ctx, alertChannel)
	if err != nil {
		return fmt.Errorf("watch alerts: %w", err)
	}
	after := req.GetAfterSequence()
	tick := time.NewTicker(s.cfg.RelayInterval)
	defer tick.Stop()
	for {
		for {
			batch, err := s.store.alerts(ctx, req.GetSubject(), after, maxPageSize)
			if err != nil {
				return err
			}
			for _, a := range batch {
				if err := stream.Send(&gatev1.WatchAlertsResponse{Alert: a}); err != nil {
					return err
				}
				after = a.GetSequence()
			}
			if len(batch) < maxPageSize {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-tick.C:
		}
	}
}

// sortedKeys returns a map's keys in order, for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
