package gate

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/rpcerr"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Paging bounds of the quarantine and alert lists.
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// pageSize reads the page size a list request asks for in field: 0 is
// defaultPageSize, more than maxPageSize is maxPageSize, and a negative
// size is refused, calling the size noun.
func pageSize(n int32, field, noun string) (int, error) {
	switch {
	case n < 0:
		return 0, rpcerr.InvalidArgument("bad "+strings.ReplaceAll(field, "_", " "),
			rpcerr.FieldViolation{Field: field, Description: fmt.Sprintf("send a positive %s, or 0 for %d", noun, defaultPageSize)})
	case n == 0:
		return defaultPageSize, nil
	}
	return min(int(n), maxPageSize), nil
}

// quarantineFilterOf checks a request's filter; the state defaults to
// HELD, what an operator is looking for.
func quarantineFilterOf(f *gatev1.QuarantineFilter) (quarantineFilter, error) {
	out := quarantineFilter{subject: f.GetSubject(), from: f.GetPartitionFrom(), to: f.GetPartitionTo(), check: f.GetCheck(),
		version: f.GetContractVersion(), state: f.GetState()}
	if bad := badNames(nil, "filter.subject", out.subject, "filter.partition_from", out.from, "filter.partition_to", out.to); len(bad) > 0 {
		return out, rpcerr.InvalidArgument("bad name in the filter", bad...)
	}
	if _, ok := gatev1.QuarantineState_name[int32(out.state)]; !ok {
		return out, rpcerr.InvalidArgument("unknown quarantine state", rpcerr.FieldViolation{Field: "filter.state",
			Description: fmt.Sprintf("%d is not a quarantine state; use HELD, RELEASED, DISCARDED or SUPERSEDED, or leave it unset for HELD", out.state)})
	}
	if out.from != "" && out.to != "" && out.from > out.to {
		return out, rpcerr.InvalidArgument("empty partition range", rpcerr.FieldViolation{Field: "filter.partition_from",
			Description: fmt.Sprintf("%q is after partition_to %q; swap them", out.from, out.to)})
	}
	if r := f.GetReason(); r != "" {
		name := strings.TrimPrefix(strings.ToUpper(r), "ERROR_CODE_")
		if _, ok := recordv1.ErrorCode_value["ERROR_CODE_"+name]; !ok {
			return out, rpcerr.InvalidArgument("unknown reason", rpcerr.FieldViolation{Field: "filter.reason",
				Description: fmt.Sprintf("%q is not an error code; use one such as ID_UNMAPPED, TYPE_MISMATCH or SOURCE_CONTAINED", r)})
		}
		out.reason = name
	}
	if out.state == gatev1.QuarantineState_QUARANTINE_STATE_UNSPECIFIED {
		out.state = gatev1.QuarantineState_QUARANTINE_STATE_HELD
	}
	return out, nil
}

// pageToken is the position after the last record of a page.
func pageToken(q *gatev1.QuarantinedRecord) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Join([]string{q.GetSubject(), q.GetPartition(), q.GetBatchId(), strconv.FormatInt(q.GetIndex(), 10)}, "\x00")))
}

func parsePageToken(tok string) (*quarantineKey, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	parts := strings.Split(string(b), "\x00")
	if err != nil || len(parts) != 4 {
		return nil, rpcerr.InvalidArgument("bad page token", rpcerr.FieldViolation{Field: "page_token", Description: "pass the next_page_token of the previous page unchanged"})
	}
	idx, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil {
		return nil, rpcerr.InvalidArgument("bad page token", rpcerr.FieldViolation{Field: "page_token", Description: "pass the next_page_token of the previous page unchanged"})
	}
	return &quarantineKey{subject: parts[0], part: parts[1], batchID: parts[2], index: idx}, nil
}

// ListQuarantine lists quarantined records in partition order.
func (s *Server) ListQuarantine(ctx context.Context, req *gatev1.ListQuarantineRequest) (*gatev1.ListQuarantineResponse, error) {
	f, err := quarantineFilterOf(req.GetFilter())
	if err != nil {
		return nil, err
	}
	size, err := pageSize(req.GetPageSize(), "page_size", "size")
	if err != nil {
		return nil, err
	}
	var after *quarantineKey
	if tok := req.GetPageToken(); tok != "" {
		if after, err = parsePageToken(tok); err != nil {
			return nil, err
		}
	}
	recs, err := s.store.ListQuarantine(ctx, f, after, size+1, s.cfg.MaxPageBytes)
	if err != nil {
		return nil, err
	}
	resp := &gatev1.ListQuarantineResponse{Records: recs}
	switch {
	case len(recs) > size:
		resp.Records = recs[:size]
		resp.NextPageToken = pageToken(resp.Records[size-1])
	case len(recs) > 0 && pageBytes(recs) >= s.cfg.MaxPageBytes:
		// The page ended on bytes, not on the end of the matches.
		resp.NextPageToken = pageToken(recs[len(recs)-1])
	}
	return resp, nil
}

// pageBytes is the raw bytes of a page's records.
func pageBytes(recs []*gatev1.QuarantinedRecord) int {
	n := 0
	for _, r := range recs {
		n += len(r.GetRaw())
	}
	return n
}

// GetQuarantinedRecord returns one quarantined record with its raw bytes.
func (s *Server) GetQuarantinedRecord(ctx context.Context, req *gatev1.GetQuarantinedRecordRequest) (*gatev1.GetQuarantinedRecordResponse, error) {
	if req.GetId() == "" {
		return nil, rpcerr.InvalidArgument("no record id", rpcerr.FieldViolation{Field: "id", Description: "pass the id from seam quarantine list"})
	}
	q, ok, err := s.store.QuarantinedRecord(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, rpcerr.NotFound("quarantined record", req.GetId(), "list records with seam quarantine list")
	}
	if err := auth.RequireSubject(ctx, q.GetSubject()); err != nil {
		return nil, err
	}
	return &gatev1.GetQuarantinedRecordResponse{Record: q}, nil
}

// GetQuarantineStats counts quarantined records by primary reason (the
// first failure of each record), check and partition.
func (s *Server) GetQuarantineStats(ctx context.Context, req *gatev1.GetQuarantineStatsRequest) (*gatev1.GetQuarantineStatsResponse, error) {
	f, err := quarantineFilterOf(req.GetFilter())
	if err != nil {
		return nil, err
	}
	resp := &gatev1.GetQuarantineStatsResponse{}
	if resp.ByReason, err = s.store.QuarantineCounts(ctx, f, "reason"); err != nil {
		return nil, err
	}
	if resp.ByCheck, err = s.store.QuarantineCounts(ctx, f, "check"); err != nil {
		return nil, err
	}
	if resp.ByPartition, err = s.store.QuarantineCounts(ctx, f, "partition"); err != nil {
		return nil, err
	}
	for _, c := range resp.ByPartition {
		resp.Total += c.GetCount()
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
	if err := s.discardInScope(ctx, req); err != nil {
		return nil, err
	}
	sel := discardSelection{ids: req.GetIds(), subject: req.GetFilter().GetSubject()}
	if len(sel.ids) > 0 {
		if sel.subject == "" {
			sel.subject = "(by id)"
		}
	} else {
		if st := req.GetFilter().GetState(); st != gatev1.QuarantineState_QUARANTINE_STATE_UNSPECIFIED && st != gatev1.QuarantineState_QUARANTINE_STATE_HELD {
			return nil, rpcerr.InvalidArgument("only held records can be discarded", rpcerr.FieldViolation{Field: "filter.state", Description: "leave it unset or HELD"})
		}
		var err error
		if sel.filter, err = quarantineFilterOf(req.GetFilter()); err != nil {
			return nil, err
		}
	}
	principal := auth.NameFromContext(ctx)
	n, err := s.store.Discard(ctx, sel, reason, principal, s.cfg.Clock())
	if err != nil {
		return nil, err
	}
	attrs := []any{"audit", true, "event", "discard", "count", n, "by", principal, "reason", reason}
	if len(sel.ids) > 0 {
		attrs = append(attrs, "ids", sel.ids)
	} else {
		attrs = append(attrs, "subject", sel.subject)
	}
	s.cfg.Logger.InfoContext(ctx, "quarantined records discarded", attrs...)
	return &gatev1.DiscardQuarantinedResponse{Discarded: n}, nil
}

// discardInScope refuses a discard that reaches a subject outside the
// caller's subject list: the filter's subject, and each record named by id.
func (s *Server) discardInScope(ctx context.Context, req *gatev1.DiscardQuarantinedRequest) error {
	p, ok := auth.FromContext(ctx)
	if !ok || !p.Scoped() {
		return nil
	}
	if sub := req.GetFilter().GetSubject(); sub != "" {
		if err := auth.RequireSubject(ctx, sub); err != nil {
			return err
		}
	}
	for _, id := range req.GetIds() {
		q, found, err := s.store.QuarantinedRecord(ctx, id)
		if err != nil {
			return err
		}
		if found {
			if err := auth.RequireSubject(ctx, q.GetSubject()); err != nil {
				return err
			}
		}
	}
	return nil
}
