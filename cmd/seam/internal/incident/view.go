package incident

import (
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/cmd/seam/internal/proposal"
)

// View is the incident as `seam incident -o json` prints it and the
// console reads it: the plan, and with rec and applyErr what --apply did.
func (inc *Incident) View(rec *Reconciliation, applyErr error) map[string]any {
	out := map[string]any{
		"subject": inc.Subject, "active_version": inc.Active, "next_version": inc.Next, "since": inc.Since,
		"contained": inc.Containment.GetContained(), "held": inc.Held, "held_by_partition": inc.HeldByPart,
		"held_by_reason": inc.HeldByWhy, "window": inc.Window, "window_held": inc.WindowHeld(), "sample": inc.Sample, "read": inc.Read, "partitions": inc.Partitions,
		"migrations": inc.Migrations, "steps": inc.Steps, "replay_id": inc.ReplayID, "file": inc.File,
	}
	var changed []map[string]any
	for _, a := range inc.Changed {
		changed = append(changed, map[string]any{"sequence": a.GetSequence(), "kind": a.GetKind(), "partition": a.GetPartition(),
			"field": a.GetField(), "message": a.GetMessage()})
	}
	out["changed"] = changed
	var radius []map[string]any
	for _, c := range inc.BlastRadius {
		radius = append(radius, map[string]any{"consumer": c.GetConsumer(), "depth": c.GetDepth(), "path": c.GetPath(), "owner": c.GetOwner()})
	}
	out["blast_radius"] = radius
	if p := inc.Proposal; p != nil {
		out["proposal"] = proposal.JSON(&proposal.Gathered{Partitions: inc.Sample, HeldTotal: inc.Held}, p)
		if inc.DataFrom != nil {
			out["data_effective_time"] = output.Time(inc.DataFrom)
		}
	}
	if ck := inc.Check; ck != nil {
		var problems []string
		for _, pr := range ck.GetProblems() {
			problems = append(problems, pr.GetReason()+": "+pr.GetMessage())
		}
		out["registry"] = map[string]any{"verdict": output.Enum(ck.GetVerdict(), "VERDICT_"), "notice_owed": ck.GetNoticeOwed(), "problems": problems}
	}
	if inc.DryRun != nil {
		out["dry_run"] = inc.DryRun
	} else if inc.DryRunErr != "" {
		out["dry_run_error"] = inc.DryRunErr
	}
	if s := inc.Replay; s != nil {
		var progress []map[string]any
		for _, p := range inc.Progress {
			progress = append(progress, map[string]any{"partition": p.GetPartition(), "held": p.GetHeld(), "released": p.GetReleased(), "remaining": p.GetRemaining()})
		}
		out["replay"] = map[string]any{"replay_id": s.GetReplayId(), "held": s.GetHeld(), "released": s.GetReleased(),
			"remaining": s.GetRemaining(), "rerun_consumers": s.GetRerunConsumers(), "event_sequence": s.GetEventSequence(), "partitions": progress}
	}
	if rec != nil {
		out["reconciliation"] = rec
	}
	if applyErr != nil {
		out["error"] = applyErr.Error()
	}
	return out
}
