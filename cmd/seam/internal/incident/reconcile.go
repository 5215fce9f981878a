package incident

import (
	"context"
	"github.com/seamdata/seam/cmd/seam/internal/standing"
	"strings"

	"github.com/seamdata/seam/cmd/seam/internal/proposal"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// Reconciliation is the window after the fix: every record held before
// it is released or still held.
type Reconciliation struct {
	From      string             `json:"from"`
	To        string             `json:"to"`
	Before    int64              `json:"held_before"`
	Released  int64              `json:"released"`
	StillHeld int64              `json:"still_held"`
	AddsUp    bool               `json:"adds_up"`
	MatchRate map[string]float64 `json:"match_rate_after"`
	// Alerts are the incident's alerts as they stand after the fix: those
	// the replay's re-judgment no longer upholds are RESOLVED by it.
	Alerts []AlertLine `json:"alerts_after"`
}

// AlertLine is where one of the incident's alerts stands.
type AlertLine struct {
	Sequence   int64  `json:"sequence"`
	Kind       string `json:"kind"`
	Field      string `json:"field,omitempty"`
	Partition  string `json:"partition"`
	State      string `json:"state"`
	ResolvedBy string `json:"resolved_by,omitempty"`
}

// Reconcile reads the window after the fix: every record held before it
// is released or still held, and where the incident's alerts stand.
func (inc *Incident) Reconcile(ctx context.Context, c proposal.Clients) (*Reconciliation, error) {
	from, to := inc.Window[0], inc.Window[len(inc.Window)-1]
	r := &Reconciliation{From: from, To: to, MatchRate: map[string]float64{}}
	for _, p := range inc.Window {
		r.Before += inc.HeldByPart[p]
	}
	if s := inc.Replay; s != nil {
		r.Released = s.GetReleased()
	}
	st, err := c.Gate.GetQuarantineStats(ctx, &gatev1.GetQuarantineStatsRequest{Filter: &gatev1.QuarantineFilter{Subject: inc.Subject,
		PartitionFrom: from, PartitionTo: to, State: gatev1.QuarantineState_QUARANTINE_STATE_HELD}})
	if err != nil {
		return nil, err
	}
	r.StillHeld = st.GetTotal()
	r.AddsUp = r.Before == r.Released+r.StillHeld
	parts, err := standing.Read(ctx, c.Gate, inc.Subject, inc.Window)
	if err != nil {
		return nil, err
	}
	for _, p := range parts {
		r.MatchRate[p.Partition] = p.MatchRate
	}
	inc.Partitions = parts
	if len(inc.Changed) > 0 {
		now := map[int64]*gatev1.Alert{}
		after := inc.Changed[0].GetSequence() - 1
		for _, a := range inc.Changed {
			after = min(after, a.GetSequence()-1)
		}
		for {
			resp, err := c.Gate.ListAlerts(ctx, &gatev1.ListAlertsRequest{Subject: inc.Subject, AfterSequence: after, Limit: 1000})
			if err != nil {
				return nil, proposal.Wrap("list the alerts of "+inc.Subject, err)
			}
			for _, a := range resp.GetAlerts() {
				now[a.GetSequence()] = a
				after = a.GetSequence()
			}
			if len(resp.GetAlerts()) < 1000 {
				break
			}
		}
		for _, a := range inc.Changed {
			if cur := now[a.GetSequence()]; cur != nil {
				a = cur
			}
			r.Alerts = append(r.Alerts, AlertLine{Sequence: a.GetSequence(), Kind: a.GetKind(), Field: a.GetField(), Partition: a.GetPartition(),
				State: strings.TrimPrefix(a.GetState().String(), "ALERT_STATE_"), ResolvedBy: a.GetResolvedBy()})
		}
	}
	return r, nil
}
