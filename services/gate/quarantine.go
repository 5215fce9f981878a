package gate

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/rpcerr"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Quarantine paging bounds.
const (
	defaultPageSize = 100
	maxPageSize     = 1000
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

// filterWhere turns a quarantine filter into a condition; the state
// defaults to HELD, what an operator is looking for.
func filterWhere(f *gatev1.QuarantineFilter) (*where, error) {
	w := &where{}
	if f.GetSubject() != "" {
		w.add("subject = ?", f.GetSubject())
	}
	if f.GetPartitionFrom() != "" {
		w.add("part >= ?", f.GetPartitionFrom())
	}
	if f.GetPartitionTo() != "" {
		w.add("part <= ?", f.GetPartitionTo())
	}
	if f.GetPartitionFrom() != "" && f.GetPartitionTo() != "" && f.GetPartitionFrom() > f.GetPartitionTo() {
		return nil, rpcerr.InvalidArgument("empty partition range", rpcerr.FieldViolation{Field: "filter.partition_from",
			Description: fmt.Sprintf("%q is after partition_to %q; swap them", f.GetPartitionFrom(), f.GetPartitionTo())})
	}
	if r := f.GetReason(); r != "" {
		name := strings.TrimPrefix(strings.ToUpper(r), "ERROR_CODE_")
		if _, ok := recordv1.ErrorCode_value["ERROR_CODE_"+name]; !ok {
			return nil, rpcerr.InvalidArgument("unknown reason", rpcerr.FieldViolation{Field: "filter.reason",
				Description: fmt.Sprintf("%q is not an error code; use one such as ID_UNMAPPED, TYPE_MISMATCH or SOURCE_CONTAINED", r)})
		}
		w.add("reason_codes LIKE ?", "%|"+name+"|%")
	}
	if c := f.GetCheck(); c != "" {
		w.add("check_names LIKE ?", "%|"+c+"|%")
	}
	if v := f.GetContractVersion(); v > 0 {
		w.add("contract_version = ?", v)
	}
	st := f.GetState()
	if st == gatev1.QuarantineState_QUARANTINE_STATE_UNSPECIFIED {
		st = gatev1.QuarantineState_QUARANTINE_STATE_HELD
	}
	w.add("state = ?", int32(st))
	return w, nil
}

const quarantineColumns = `id, subject, part, batch_id, idx, position, contract_version, format, raw, reasons, created_at, state, state_at, state_reason, state_by`

func scanQuarantined(rows interface{ Scan(...any) error }) (*gatev1.QuarantinedRecord, error) {
	q := &gatev1.QuarantinedRecord{}
	var format, state int32
	var reasons []byte
	var created, stateAt int64
	if err := rows.Scan(&q.Id, &q.Subject, &q.Partition, &q.BatchId, &q.Index, &q.Position, &q.ContractVersion, &format, &q.Raw,
		&reasons, &created, &state, &stateAt, &q.StateReason, &q.StateBy); err != nil {
		return nil, err
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

// pageToken is the position after the last record of a page.
func pageToken(q *gatev1.QuarantinedRecord) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Join([]string{q.GetSubject(), q.GetPartition(), q.GetBatchId(), strconv.FormatInt(q.GetIndex(), 10)}, "\x00")))
}

func parsePageToken(tok string) ([]any, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	parts := strings.Split(string(b), "\x00")
	if err != nil || len(parts) != 4 {
		return nil, rpcerr.InvalidArgument("bad page token", rpcerr.FieldViolation{Field: "page_token", Description: "pass the next_page_token of the previous page unchanged"})
	}
	idx, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil {
		return nil, rpcerr.InvalidArgument("bad page token", rpcerr.FieldViolation{Field: "page_token", Description: "pass the next_page_token of the previous page unchanged"})
	}
	return []any{parts[0], parts[1], parts[2], idx}, nil
}

// ListQuarantine lists quarantined records in partition order.
func (s *Server) ListQuarantine(ctx context.Context, req *gatev1.ListQuarantineRequest) (*gatev1.ListQuarantineResponse, error) {
	w, err := filterWhere(req.GetFilter())
	if err != nil {
		return nil, err
	}
	size := int(req.GetPageSize())
	switch {
	case size < 0:
		return nil, rpcerr.InvalidArgument("bad page size", rpcerr.FieldViolation{Field: "page_size", Description: "send a positive size, or 0 for 100"})
	case size == 0:
		size = defaultPageSize
	case size > maxPageSize:
		size = maxPageSize
	}
	if tok := req.GetPageToken(); tok != "" {
		after, err := parsePageToken(tok)
		if err != nil {
			return nil, err
		}
		w.add("(subject, part, batch_id, idx) > (?, ?, ?, ?)", after...)
	}
	rows, err := s.store.db.SQL.QueryContext(ctx, `SELECT `+quarantineColumns+` FROM gate_quarantine`+w.String()+
		` ORDER BY subject, part, batch_id, idx LIMIT `+strconv.Itoa(size+1), w.args...)
	if err != nil {
		return nil, fmt.Errorf("list quarantine: %w", err)
	}
	defer rows.Close()
	resp := &gatev1.ListQuarantineResponse{}
	for rows.Next() {
		q, err := scanQuarantined(rows)
		if err != nil {
			return nil, fmt.Errorf("list quarantine: %w", err)
		}
		resp.Records = append(resp.Records, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list quarantine: %w", err)
	}
	if len(resp.Records) > size {
		resp.Records = resp.Records[:size]
		resp.NextPageToken = pageToken(resp.Records[size-1])
	}
	return resp, nil
}

// GetQuarantinedRecord returns one quarantined record with its raw bytes.
func (s *Server) GetQuarantinedRecord(ctx context.Context, req *gatev1.GetQuarantinedRecordRequest) (*gatev1.GetQuarantinedRecordResponse, error) {
	if req.GetId() == "" {
		return nil, rpcerr.InvalidArgument("no record id", rpcerr.FieldViolation{Field: "id", Description: "pass the id from seam quarantine list"})
	}
	q, err := scanQuarantined(s.store.db.SQL.QueryRowContext(ctx, `SELECT `+quarantineColumns+` FROM gate_quarantine WHERE id = $1`, req.GetId()))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, rpcerr.NotFound("quarantined record", req.GetId(), "list records with seam quarantine list")
	}
	if err != nil {
		return nil, fmt.Errorf("read quarantined record %s: %w", req.GetId(), err)
	}
	return &gatev1.GetQuarantinedRecordResponse{Record: q}, nil
}

// GetQuarantineStats counts quarantined records by primary reason (the
// first failure of each record), check and partition.
func (s *Server) GetQuarantineStats(ctx context.Context, req *gatev1.GetQuarantineStatsRequest) (*gatev1.GetQuarantineStatsResponse, error) {
	w, err := filterWhere(req.GetFilter())
	if err != nil {
		return nil, err
	}
	resp := &gatev1.GetQuarantineStatsResponse{}
	for _, g := range []struct {
		col string
		out *[]*gatev1.QuarantineCount
	}{{"reason", &resp.ByReason}, {"check_name", &resp.ByCheck}, {"part", &resp.ByPartition}} {
		order := "n DESC, key"
		if g.col == "part" {
			order = "key"
		}
		rows, err := s.store.db.SQL.QueryContext(ctx, `SELECT `+g.col+` AS key, COUNT(*) AS n FROM gate_quarantine`+w.String()+` GROUP BY `+g.col+` ORDER BY `+order, w.args...)
		if err != nil {
			return nil, fmt.Errorf("count quarantine by %s: %w", g.col, err)
		}
		for rows.Next() {
			c := &gatev1.QuarantineCount{}
			if err := rows.Scan(&c.Key, &c.Count); err != nil {
				rows.Close()
				return nil, fmt.Errorf("count quarantine by %s: %w", g.col, err)
			}
			*g.out = append(*g.out, c)
			if g.col == "part" {
				resp.Total += c.Count
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("count quarantine by %s: %w", g.col, err)
		}
	}
	return resp, nil
}

// DiscardQuarantined discards held records with a reason; the discard is
// audited with who, why and how many.
func (s *Server) DiscardQuarantined(ctx context.Context, req *gatev1.DiscardQuarantinedRequest) (*gatev1.DiscardQuarantinedResponse, error) {
	reason := strings.TrimSpace(req.GetReason())
	var bad []rpcerr.FieldViolation
	if reason == "" {
		bad = append(bad, rpcerr.FieldViolation{Field: "reason", Description: "say why the records are discarded; it is kept in the audit trail"})
	}
	if len(req.GetIds()) == 0 && req.GetFilter().GetSubject() == "" {
		bad = append(bad, rpcerr.FieldViolation{Field: "filter.subject", Description: "name record ids, or a filter with at least a subject"})
	}
	if len(bad) > 0 {
		return nil, rpcerr.InvalidArgument("discard needs a reason and a selection", bad...)
	}
	w := &where{}
	subject := req.GetFilter().GetSubject()
	if len(req.GetIds()) > 0 {
		ph := make([]string, len(req.GetIds()))
		args := make([]any, len(req.GetIds()))
		for i, id := range req.GetIds() {
			ph[i], args[i] = "?", id
		}
		w.add("id IN ("+strings.Join(ph, ", ")+")", args...)
		w.add("state = ?", int32(gatev1.QuarantineState_QUARANTINE_STATE_HELD))
		if subject == "" {
			subject = "(by id)"
		}
	} else {
		var err error
		if w, err = filterWhere(req.GetFilter()); err != nil {
			return nil, err
		}
		if st := req.GetFilter().GetState(); st != gatev1.QuarantineState_QUARANTINE_STATE_UNSPECIFIED && st != gatev1.QuarantineState_QUARANTINE_STATE_HELD {
			return nil, rpcerr.InvalidArgument("only held records can be discarded", rpcerr.FieldViolation{Field: "filter.state", Description: "leave it unset or HELD"})
		}
	}
	principal := auth.NameFromContext(ctx)
	now := s.cfg.Clock().UnixNano()
	var n int64
	err := s.store.db.InTx(ctx, func(tx *sql.Tx) error {
		args := append([]any{int32(gatev1.QuarantineState_QUARANTINE_STATE_DISCARDED), now, reason, principal}, w.args...)
		res, err := tx.ExecContext(ctx, `UPDATE gate_quarantine SET state = $1, state_at = $2, state_reason = $3, state_by = $4`+shift(w, 4).String(), args...)
		if err != nil {
			return fmt.Errorf("discard quarantined records: %w", err)
		}
		if n, err = res.RowsAffected(); err != nil {
			return fmt.Errorf("discard quarantined records: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO gate_audit (at, principal, subject, action, detail) VALUES ($1, $2, $3, $4, $5)`,
			now, principal, subject, "DISCARD", fmt.Sprintf("%d records: %s", n, reason)); err != nil {
			return fmt.Errorf("audit discard: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.cfg.Logger.InfoContext(ctx, "quarantined records discarded", "subject", subject, "count", n, "by", principal, "reason", reason)
	return &gatev1.DiscardQuarantinedResponse{Discarded: n}, nil
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
