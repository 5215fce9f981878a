package incident

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/cmd/seam/internal/proposal"
	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/infer"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// probePage is how many held records of a partition the proposal did not
// read are looked at to tell whether the change had begun there.
const probePage = 200

// since finds the first partition of the incident: the first one an open
// unannounced change concerns; without one, the oldest of the newest run
// of partitions holding records of the changed shape (records the
// proposed version's checks pass), looking past the sample read when
// --limit cut it. Alerts of earlier partitions are left out: they belong
// to another story.
func (inc *Incident) since(ctx context.Context, c proposal.Clients, g *proposal.Gathered) error {
	for _, a := range inc.Changed {
		if a.GetKind() == "UNANNOUNCED_CHANGE" && a.GetPartition() != "" {
			inc.Since = a.GetPartition()
			break
		}
	}
	if inc.Since == "" && inc.Proposal != nil && len(g.Held) > 0 {
		first, err := inc.firstOfShape(ctx, c, g)
		if err != nil {
			return err
		}
		inc.Since = first
	}
	if inc.Since == "" && len(g.Partitions) > 0 {
		inc.Since = g.Partitions[0]
	}
	inc.Changed = slices.DeleteFunc(inc.Changed, func(a *gatev1.Alert) bool {
		return a.GetPartition() != "" && a.GetPartition() < inc.Since
	})
	return nil
}

// firstOfShape walks the partitions holding records from the newest back
// and returns the oldest of the run whose held records include some of
// the changed shape: the proposal's checks pass them. The records read
// for the proposal answer for their partitions; of the others a page is
// read. It returns "" when not even the newest partition holds any.
func (inc *Incident) firstOfShape(ctx context.Context, c proposal.Clients, g *proposal.Gathered) (string, error) {
	byPart := map[string][]infer.Record{}
	for _, r := range g.Held {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	namespaces := slices.Clone(g.Namespaces)
	for _, m := range inc.Proposal.Migrations {
		if m.CreateFormat == nil {
			continue
		}
		if i := slices.IndexFunc(namespaces, func(n *idmapv1.Namespace) bool { return n.GetName() == m.Namespace }); i >= 0 {
			formats := append(slices.Clone(namespaces[i].GetFormats()), m.CreateFormat)
			namespaces[i] = &idmapv1.Namespace{Name: namespaces[i].GetName(), Formats: formats, Tables: namespaces[i].GetTables()}
		}
	}
	parts := slices.Sorted(maps.Keys(inc.HeldByPart))
	first := ""
	for i := len(parts) - 1; i >= 0; i-- {
		part := parts[i]
		recs, ok := byPart[part]
		if !ok {
			resp, err := c.Gate.ListQuarantine(ctx, &gatev1.ListQuarantineRequest{PageSize: probePage, Filter: &gatev1.QuarantineFilter{
				Subject: inc.Subject, PartitionFrom: part, PartitionTo: part, State: gatev1.QuarantineState_QUARANTINE_STATE_HELD}})
			if err != nil {
				return "", proposal.Wrap(fmt.Sprintf("read the held records of %s partition %s", inc.Subject, part), err)
			}
			for _, q := range resp.GetRecords() {
				if !q.GetRawTruncated() {
					recs = append(recs, infer.Record{Format: q.GetFormat(), Raw: q.GetRaw(), Partition: q.GetPartition(), ID: q.GetId(), Position: q.GetPosition()})
				}
			}
		}
		if infer.Verify(inc.Proposal.Contract, namespaces, recs).Passed == 0 {
			break
		}
		first = part
	}
	return first, nil
}

// window sets the incident's partitions: those named with --partition,
// else every partition from Since to the newest holding records, and
// those of the incident's alerts. The records they hold are what the fix
// replays, however many; --limit bounds only what the proposal reads.
func (inc *Incident) window(g *proposal.Gathered, o Options) {
	if len(o.Proposal.Partitions) > 0 || inc.Since == "" {
		inc.Window = g.Partitions
		return
	}
	var parts []string
	for p, n := range inc.HeldByPart {
		if n > 0 && p >= inc.Since {
			parts = append(parts, p)
		}
	}
	for _, a := range inc.Changed {
		if a.GetPartition() != "" {
			parts = append(parts, a.GetPartition())
		}
	}
	inc.Window = slices.Compact(slices.Sorted(slices.Values(parts)))
	if len(inc.Window) == 0 {
		inc.Window = []string{inc.Since}
	}
}

// dataEffective is the data date a version fixing the incident judges
// partitions from: the start of its first partition, for a contract that
// declares a partition time and a first partition named by its date. A
// late file for one of the incident's days is then judged by the new
// version, not by the one it broke.
func (inc *Incident) dataEffective(ct *contractv1.Contract) *timestamppb.Timestamp {
	if ct.GetPartitionTime() == nil || inc.Since == "" {
		return nil
	}
	start, _, err := check.PartitionWindow(inc.Since, nil)
	if err != nil {
		return nil
	}
	return timestamppb.New(start)
}

// WindowHeld counts the records held in the window.
func (inc *Incident) WindowHeld() int64 {
	var n int64
	for _, p := range inc.Window {
		n += inc.HeldByPart[p]
	}
	return n
}
