package incident

import (
	"context"

	"github.com/seamdata/seam/cmd/seam/internal/proposal"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// PartitionLine is where one partition of the window stands.
//
// This file is the one place the incident reads partition state. Today
// the gate keeps per-partition counters (GetMonitor) and judges records as
// they arrive. When the gate judges partitions whole (the partition work:
// SealPartition, GetPartition, a replay re-sealing what it released
// into), partitionStates should read each partition's sealed verdict
// from GetPartition, and afterReplay wait for the re-seal the replay
// causes, so the view says which partitions a pipeline may publish.
type PartitionLine struct {
	Partition   string  `json:"partition"`
	Received    int64   `json:"received"`
	Accepted    int64   `json:"accepted"`
	Quarantined int64   `json:"quarantined"`
	Released    int64   `json:"released"`
	MatchRate   float64 `json:"match_rate"`
}

// partitionStates reads the window's partitions from the monitor.
func partitionStates(ctx context.Context, gate gatev1.GateServiceClient, subject string, parts []string) ([]PartitionLine, error) {
	if len(parts) == 0 {
		return nil, nil
	}
	m, err := gate.GetMonitor(ctx, &gatev1.GetMonitorRequest{Subject: subject, PartitionFrom: parts[0], PartitionTo: parts[len(parts)-1]})
	if err != nil {
		return nil, proposal.Wrap("read the monitor of "+subject, err)
	}
	var out []PartitionLine
	for _, p := range m.GetPartitions() {
		out = append(out, PartitionLine{Partition: p.GetPartition(), Received: p.GetReceived(), Accepted: p.GetAccepted(),
			Quarantined: p.GetQuarantined(), Released: p.GetReleased(), MatchRate: p.GetMatchRate()})
	}
	return out, nil
}

// afterReplay is what follows a replay of the window. On today's gate
// nothing does: the monitor counts released records as the replay marks
// them. See PartitionLine for what the partition work changes here.
func afterReplay(context.Context, gatev1.GateServiceClient, string, []string) error { return nil }
