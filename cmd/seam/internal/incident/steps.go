package incident

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	idmapcmd "github.com/seamdata/seam/cmd/seam/internal/command/idmap"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/cmd/seam/internal/proposal"
	"github.com/seamdata/seam/core/infer"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// ResolvedByFix are the registry problem reasons the fix itself resolves: the formats it
// creates, the table or rule it loads, the notice its reason waives.
var ResolvedByFix = map[string]bool{
	"IDMAP_FORMAT_NOT_FOUND":       true,
	"MIGRATION_NOT_READY":          true,
	"BREAKING_CHANGE_NEEDS_NOTICE": true,
}

// plan lists the steps of the fix, each with the command that does it by
// hand and what --apply runs for it.
func (inc *Incident) plan(c proposal.Clients, o Options) {
	reason := o.Reason
	if reason == "" {
		reason = "REASON"
	}
	q := proposal.ShellQuote
	subj := inc.Subject
	p := inc.Proposal
	add := func(s *Step) { inc.Steps = append(inc.Steps, s) }

	contain := &Step{Name: "contain the source", Command: fmt.Sprintf("seam gate contain %s --reason %s", subj, q(reason))}
	if ct := inc.Containment; ct.GetContained() {
		contain.Done, contain.Why = true, fmt.Sprintf("contained since %s by %s: %s", output.Time(ct.GetTime()), ct.GetPrincipal(), ct.GetReason())
	}
	contain.run = func(ctx context.Context) (string, error) {
		_, err := c.Gate.Contain(ctx, &gatev1.ContainRequest{Subject: subj, Reason: o.Reason})
		return "contained: what it sends now is held", err
	}
	add(contain)

	for _, mp := range inc.Migrations {
		if !mp.FormatExists {
			f := mp.CreateFormat
			ns := mp.Namespace
			add(&Step{Name: "add format " + ns + "/" + f.GetName(),
				Command: fmt.Sprintf("seam idmap namespace add-format %s --format %s", ns, infer.FormatFlag(f)),
				run: func(ctx context.Context) (string, error) {
					_, err := c.Idmap.AddFormat(ctx, &idmapv1.AddFormatRequest{Namespace: ns, Format: f})
					if status.Code(err) == codes.AlreadyExists {
						return "the format exists already", nil
					}
					return "format added", err
				}})
		}
		if mp.Target != "" {
			add(inc.translationStep(c, mp))
		}
	}

	if len(p.Changes) > 0 {
		reg := &Step{Name: fmt.Sprintf("register %s v%d", subj, inc.Next)}
		waive := inc.Check.GetNoticeOwed() != ""
		reg.Command = fmt.Sprintf("seam contract infer %s%s --out %s && seam contract register -f %s", subj, o.InferArgs, q(inc.File), q(inc.File))
		if o.Out != "" {
			reg.Command = fmt.Sprintf("seam contract register -f %s", q(inc.File))
		}
		if waive {
			reg.Command += " --override-reason " + q(reason)
		}
		dataFrom := inc.DataFrom
		if dataFrom != nil {
			reg.Command += fmt.Sprintf(" --data-effective %s --data-effective-reason %s", dataFrom.AsTime().Format(time.RFC3339), q(reason))
		}
		reg.run = func(ctx context.Context) (string, error) {
			req := &registryv1.RegisterContractRequest{Contract: p.Contract}
			if waive {
				req.Override = &registryv1.NoticeOverride{Reason: o.Reason}
			}
			if dataFrom != nil {
				req.DataEffectiveTime, req.DataEffectiveReason = dataFrom, o.Reason
			}
			resp, err := c.Registry.RegisterContract(ctx, req)
			if err != nil {
				return "", err
			}
			v := resp.GetVersion()
			inc.Registered = v.GetVersion()
			if v.GetStatus() != registryv1.VersionStatus_VERSION_STATUS_ACTIVE {
				return "", fmt.Errorf("v%d was registered %s, not ACTIVE (%s); the replay needs it active", v.GetVersion(),
					output.Enum(v.GetStatus(), "VERSION_STATUS_"), output.OrDash(v.GetActivationHold()))
			}
			var told []string
			for _, a := range resp.GetAffectedConsumers() {
				told = append(told, a.GetConsumer())
			}
			if resp.GetUnchanged() {
				return fmt.Sprintf("v%d is registered and ACTIVE already", v.GetVersion()), nil
			}
			msg := fmt.Sprintf("v%d ACTIVE", v.GetVersion())
			if v.GetOverride() != nil {
				msg += ", notice waived by " + v.GetOverrideBy()
			}
			if d := v.GetDataEffectiveTime(); d != nil && dataFrom != nil {
				msg += fmt.Sprintf(", judging partitions from %s (set by %s)", d.AsTime().Format(time.RFC3339), output.OrDash(v.GetDataEffectiveBy()))
			}
			if len(told) > 0 {
				msg += "; CHANGE_ANNOUNCED to " + strings.Join(told, ", ")
			}
			return msg, nil
		}
		add(reg)
	}

	release := &Step{Name: "release the source", Command: fmt.Sprintf("seam gate release %s --reason %s", subj, q(reason))}
	release.run = func(ctx context.Context) (string, error) {
		_, err := c.Gate.Release(ctx, &gatev1.ReleaseRequest{Subject: subj, Reason: o.Reason})
		return "released: what it sends now flows through the active version", err
	}
	add(release)

	from, to := inc.Window[0], inc.Window[len(inc.Window)-1]
	version := inc.Active
	if len(p.Changes) > 0 {
		version = inc.Next
	}
	if len(p.Changes) == 0 && !inc.Containment.GetContained() {
		// The held records need no new version, only a replay: the source
		// flows, and stays flowing.
		contain.Done, contain.Why = true, "not needed: the held records need no new version"
		release.Done, release.Why = true, "not contained"
	}
	replay := &Step{Name: fmt.Sprintf("replay %s..%s through v%d", from, to, version),
		Command: fmt.Sprintf("seam quarantine replay %s --from %s --to %s --contract-version %d --replay-id %s --summary-only", subj, from, to, version, q(inc.ReplayID))}
	replay.run = func(ctx context.Context) (string, error) {
		// Through the version the register step got, should it differ
		// from the number foreseen (the same version registered before).
		sum, err := proposal.RunReplay(ctx, c.Gate, &gatev1.ReplayRequest{
			Window:   &gatev1.ReplayWindow{Subject: subj, PartitionFrom: from, PartitionTo: to, ContractVersion: cmp.Or(inc.Registered, version)},
			ReplayId: inc.ReplayID, SummaryOnly: true, Reason: o.Reason, Progress: true}, inc.progress)
		if err != nil {
			return "", err
		}
		inc.Replay = sum
		msg := fmt.Sprintf("%d held, %d released, %d still held", sum.GetHeld(), sum.GetReleased(), sum.GetRemaining())
		switch rerun := sum.GetRerunConsumers(); {
		case sum.GetReleased() == 0:
			msg += "; nothing released, so no consumer has anything to rerun"
		case len(rerun) > 0:
			msg += "; rerun in order: " + strings.Join(rerun, " → ")
		default:
			msg += "; no consumer reads it to rerun"
		}
		return msg, nil
	}
	add(replay)
}

// translationStep loads what idmap needs to translate one migrated id.
func (inc *Incident) translationStep(c proposal.Clients, mp *MigrationPlan) *Step {
	ns := mp.Namespace
	s := &Step{Name: fmt.Sprintf("translate %s/%s→%s", ns, mp.New, mp.Target)}
	switch {
	case mp.Ready:
		s.Done, s.Why = true, mp.How
		s.Command = fmt.Sprintf("seam idmap translate %s --from %s --to %s ID…", ns, mp.New, mp.Target)
	case mp.Rule != nil:
		rule, samples := mp.Rule, mp.Samples
		s.Name = "set rule " + infer.DescribeRule(rule)
		s.Command = fmt.Sprintf("seam idmap rule set %s %s", ns, infer.RuleFlags(rule))
		for _, x := range samples {
			s.Command += " --sample " + proposal.ShellQuote(x)
		}
		s.run = func(ctx context.Context) (string, error) {
			resp, err := c.Idmap.SetRule(ctx, &idmapv1.SetRuleRequest{Namespace: ns, Rule: rule, Samples: samples})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("rule set, checked on %d samples", resp.GetChecked()), nil
		}
	case len(mp.Pairs) > 0:
		pairs, from, to := mp.Pairs, mp.New, mp.Target
		s.Name = fmt.Sprintf("import the %s→%s table (%d pairs)", from, to, len(pairs))
		file := mp.PairsFrom
		if !strings.HasSuffix(file, ".csv") {
			file = "PAIRS.csv"
			s.Why = "--apply generates the pairs: " + mp.PairsFrom
		}
		s.Command = fmt.Sprintf("seam idmap import %s %s --from %s --to %s", ns, proposal.ShellQuote(file), from, to)
		s.run = func(ctx context.Context) (string, error) {
			resp, err := idmapcmd.ImportPairs(ctx, c.Idmap, ns, from, to, pairs)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%d pairs received, %d inserted, %d unchanged; table now %d pairs", resp.GetReceived(), resp.GetInserted(), resp.GetUnchanged(), resp.GetTableSize()), nil
		}
	default:
		s.Command = fmt.Sprintf("seam idmap import %s PAIRS.csv --from %s --to %s", ns, mp.New, mp.Target)
		s.Why = mp.Missing
		missing := mp.Missing
		s.run = func(context.Context) (string, error) { return "", errors.New(missing) }
	}
	return s
}

// Preflight refuses to start a fix that would stop halfway for a reason
// known now: no reason given, nothing to do, or a registry refusal the
// fix does not resolve (not an admin, an invalid contract…).
func (inc *Incident) Preflight(reason string) error {
	if strings.TrimSpace(reason) == "" {
		return errors.New("--apply needs --reason: it is kept with the containment, the notice waiver and the backfill")
	}
	if len(inc.Steps) == 0 {
		return errors.New("there is nothing to fix: no records are held that a new version or a replay would release")
	}
	var stops []string
	verdict := inc.Check
	if inc.Waived != nil {
		verdict = inc.Waived
	}
	for _, pr := range verdict.GetProblems() {
		if !ResolvedByFix[pr.GetReason()] {
			stops = append(stops, fmt.Sprintf("%s at %s: %s", pr.GetReason(), output.OrDash(pr.GetPath()), pr.GetMessage()))
		}
	}
	for _, mp := range inc.Migrations {
		if mp.Missing != "" {
			stops = append(stops, mp.Missing)
		}
	}
	if len(stops) > 0 {
		return fmt.Errorf("nothing was changed, because the fix would stop at:\n  %s", strings.Join(stops, "\n  "))
	}
	return nil
}

// Apply runs the steps in order and stops at the first that fails,
// saying on w what each did; the replay says on progress where it stands
// after each partition.
func (inc *Incident) Apply(ctx context.Context, w, progress io.Writer) error {
	inc.progress = func(p *gatev1.ReplayProgress) {
		fmt.Fprintf(progress, "     %s: %d held, %d released, %d still held (%d of %d partitions)\n",
			p.GetPartition(), p.GetHeld(), p.GetReleased(), p.GetRemaining(), p.GetDone(), p.GetPartitions())
		inc.Progress = append(inc.Progress, p)
		if inc.OnProgress != nil {
			inc.OnProgress(p)
		}
	}
	tell := func(i int, s *Step) {
		if inc.OnStep != nil {
			inc.OnStep(i, s)
		}
	}
	for i, s := range inc.Steps {
		if s.Done {
			fmt.Fprintf(w, "  %d. %s: already done (%s)\n", i+1, s.Name, s.Why)
			tell(i, s)
			continue
		}
		res, err := s.run(ctx)
		if err != nil {
			s.Failed = status.Convert(err).Message()
			fmt.Fprintf(w, "  %d. %s: FAILED: %s\n", i+1, s.Name, s.Failed)
			tell(i, s)
			done := "nothing was done"
			if i > 0 {
				done = fmt.Sprintf("steps 1 to %d are done", i)
			}
			return fmt.Errorf("step %d (%s) failed: %s; %s, and every step is safe to run again once this one can pass", i+1, s.Name, s.Failed, done)
		}
		s.Result = res
		fmt.Fprintf(w, "  %d. %s: %s\n", i+1, s.Name, res)
		tell(i, s)
	}
	return nil
}
