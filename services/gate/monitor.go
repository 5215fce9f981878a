package gate

import (
	"context"
	"fmt"
	"sort"
	"time"

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
	parts, err := s.store.Partitions(ctx, req.GetSubject(), from, to)
	if err != nil {
		return nil, err
	}
	return &gatev1.GetMonitorResponse{Partitions: parts}, nil
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
	out, err := s.store.Alerts(ctx, req.GetSubject(), req.GetAfterSequence(), limit)
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
	wake, err := s.store.Listen(ctx, alertChannel)
	if err != nil {
		return fmt.Errorf("watch alerts: %w", err)
	}
	after := req.GetAfterSequence()
	tick := time.NewTicker(s.cfg.RelayInterval)
	defer tick.Stop()
	for {
		for {
			batch, err := s.store.Alerts(ctx, req.GetSubject(), after, maxPageSize)
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
