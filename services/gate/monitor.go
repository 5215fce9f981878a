package gate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/core/check"
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
	if bad := badNames(nil, "subject", req.GetSubject(), "partition_from", from, "partition_to", to); len(bad) > 0 {
		return nil, rpcerr.InvalidArgument("bad name", bad...)
	}
	if to == "" {
		to = "\U0010FFFF"
	}
	parts, err := s.store.Units(ctx, req.GetSubject(), from, to)
	if err != nil {
		return nil, err
	}
	resp := &gatev1.GetMonitorResponse{}
	for _, pu := range parts {
		resp.Partitions = append(resp.Partitions, partitionMonitor(req.GetSubject(), pu))
	}
	return resp, nil
}

// partitionMonitor adds up a partition's units (the partition itself and its
// amendments) of its current sending.
func partitionMonitor(subject string, pu partUnits) *gatev1.PartitionMonitor {
	m := &gatev1.PartitionMonitor{Subject: subject, Partition: pu.part.part, MatchRate: -1, Attempt: pu.part.attempt, Amendments: pu.part.amendment}
	var stats check.Stats
	var checked, matched int64
	var updated time.Time
	for _, u := range pu.units {
		c := u.counts
		m.Received += c.received
		m.Quarantined += c.quarantined
		m.Duplicates += c.duplicates
		m.Released += c.released
		m.Batches += c.batches
		if u.verdict == gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED {
			// Held back: accepted, but not to be published.
			m.Blocked += c.accepted
		} else {
			m.Accepted += c.accepted
		}
		checked += c.idChecked
		matched += c.idMatched
		stats.Merge(u.figures.Stats)
		if u.updatedAt.After(updated) {
			updated = u.updatedAt
		}
		m.Status, m.Verdict = u.status, u.verdict
	}
	if checked > 0 {
		m.MatchRate = float64(matched) / float64(checked)
	}
	if !updated.IsZero() {
		m.UpdateTime = timestamppb.New(updated)
	}
	for _, name := range slices.Sorted(maps.Keys(stats.Fields)) {
		f := stats.Fields[name]
		m.Fields = append(m.Fields, &gatev1.FieldMonitor{Field: name, Count: f.Count, Nulls: f.Nulls, Mean: f.Mean, IdChecked: f.IDs, IdMatched: f.Matched})
	}
	return m
}

// ListAlerts lists alerts after a sequence number, oldest first, in the
// states asked for (all when none).
func (s *Server) ListAlerts(ctx context.Context, req *gatev1.ListAlertsRequest) (*gatev1.ListAlertsResponse, error) {
	limit, err := pageSize(req.GetLimit(), "limit", "limit")
	if err != nil {
		return nil, err
	}
	for i, st := range req.GetStates() {
		if _, ok := gatev1.AlertState_name[int32(st)]; !ok || st == gatev1.AlertState_ALERT_STATE_UNSPECIFIED {
			return nil, rpcerr.InvalidArgument("bad alert state", rpcerr.FieldViolation{Field: fmt.Sprintf("states[%d]", i), Description: "send OPEN, ACKNOWLEDGED or RESOLVED"})
		}
	}
	if bad := badNames(nil, "subject", req.GetSubject()); len(bad) > 0 {
		return nil, rpcerr.InvalidArgument("bad subject", bad...)
	}
	f := alertFilter{subject: req.GetSubject(), kind: req.GetKind(), states: req.GetStates()}
	out, err := s.store.Alerts(ctx, f, req.GetAfterSequence(), limit)
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
	if bad := badNames(nil, "subject", req.GetSubject()); len(bad) > 0 {
		return rpcerr.InvalidArgument("bad subject", bad...)
	}
	wake, err := s.store.Listen(ctx, alertChannel)
	if err != nil {
		return fmt.Errorf("watch alerts: %w", err)
	}
	after := req.GetAfterSequence()
	tick := time.NewTicker(s.cfg.RelayInterval)
	defer tick.Stop()
	for {
		for {
			batch, err := s.store.Alerts(ctx, alertFilter{subject: req.GetSubject()}, after, maxPageSize)
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
