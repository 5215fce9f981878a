// Package standing reads where partitions of a subject stand, as the
// gate tells it: what an incident's window held, and after a fix, what it
// holds now.
package standing

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/cmd/seam/internal/proposal"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// Partition is where one partition of the window stands, as the
// gate's GetPartition tells it: the partition itself (amendment 0) with
// the counts of its amendments added. Verdict and MatchRate read as the
// partition now stands (a replay re-judges what it released into);
// SealedVerdict and SealedMatchRate are those of its first seal, what the
// source sent on the day.
type Partition struct {
	Partition       string  `json:"partition"`
	Status          string  `json:"status"`
	Verdict         string  `json:"verdict"`
	SealedVerdict   string  `json:"sealed_verdict,omitempty"`
	ContractVersion int32   `json:"contract_version"`
	Amendments      int32   `json:"amendments"`
	Received        int64   `json:"received"`
	Accepted        int64   `json:"accepted"`
	Quarantined     int64   `json:"quarantined"`
	Released        int64   `json:"released"`
	MatchRate       float64 `json:"match_rate"`
	SealedMatchRate float64 `json:"sealed_match_rate"`
}

// Read reads the window's partitions from the gate. A
// partition the gate does not know (expired, or never sent) is left out.
// A replay re-judges the partitions it released into before it answers,
// so reading them after the replay step reads them re-judged.
func Read(ctx context.Context, gate gatev1.GateServiceClient, subject string, parts []string) ([]Partition, error) {
	var out []Partition
	for _, part := range parts {
		zero := int32(0)
		resp, err := gate.GetPartition(ctx, &gatev1.GetPartitionRequest{Subject: subject, Partition: part, Amendment: &zero})
		if status.Code(err) == codes.NotFound {
			continue
		}
		if err != nil {
			return nil, proposal.Wrap(fmt.Sprintf("read partition %s of %s", part, subject), err)
		}
		st := resp.GetPartition()
		line := Partition{Partition: part, Status: trim(st.GetStatus().String(), "PARTITION_STATUS_"), Verdict: trim(st.GetVerdict().String(), "PARTITION_VERDICT_"),
			ContractVersion: st.GetContractVersion(), Amendments: resp.GetAmendments(), MatchRate: st.GetMatchRate(), SealedMatchRate: st.GetSealedMatchRate()}
		if v := st.GetSealedVerdict(); v != gatev1.PartitionVerdict_PARTITION_VERDICT_UNSPECIFIED {
			line.SealedVerdict = trim(v.String(), "PARTITION_VERDICT_")
		}
		line.add(st.GetCounts())
		for a := int32(1); a <= resp.GetAmendments(); a++ {
			am, err := gate.GetPartition(ctx, &gatev1.GetPartitionRequest{Subject: subject, Partition: part, Amendment: &a})
			if err != nil {
				return nil, proposal.Wrap(fmt.Sprintf("read amendment %d of partition %s of %s", a, part, subject), err)
			}
			line.add(am.GetPartition().GetCounts())
		}
		out = append(out, line)
	}
	return out, nil
}

func (l *Partition) add(c *gatev1.PartitionCounts) {
	l.Received += c.GetReceived()
	l.Accepted += c.GetAccepted()
	l.Quarantined += c.GetQuarantined()
	l.Released += c.GetReleased()
}

func trim(s, prefix string) string {
	if len(s) > len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):]
	}
	return s
}
