// Package incident holds `seam incident`: one view of an ongoing incident
// on a source — what changed and since which partition, what the gate
// holds, who is affected, the proposed next contract version and id
// migration, how much of the window they would release — and the exact
// commands that fix it, which --apply carries out.
package incident

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/incident"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/cmd/seam/internal/proposal"
)

// New returns `seam incident`.
func New(g *client.Globals) *cobra.Command {
	var f proposal.Flags
	var o incident.Options
	var apply bool
	cmd := client.ServiceCommand(g, proposal.NewClients, "incident SUBJECT", cobra.ExactArgs(1), client.Help{
		Short: "See an incident on a source whole, with the fix; --apply carries it out",
		Long: `Show one incident on SUBJECT in one place: what changed (the unannounced
change, match rate and other change alerts) and since which partition,
whether the source is contained, how many records the gate holds and why,
the consumers the fix reaches (blast radius), the next contract version
inferred from the held records (as ` + "`seam contract infer`" + `) with the
registry's verdict on it, how idmap will translate a changed identifier
(a rule read off the values, a rule or table from --pairs, a table
generated from a UUIDv5 rule), the dry run of replaying the window through
all of it, and the exact commands that carry the fix out: contain, add
the format, set the rule or import the table, register, release, replay.

With --apply (an admin, with --reason) those steps run in order and stop
at the first that fails, saying what is done; every step is safe to run
again, so a second --apply after fixing the cause finishes the job. The
registry refuses a version whose migration idmap cannot run yet, so the
rule or table is loaded before the version is registered. It ends with
the reconciliation of the window: held before = released + still held.`,
		Example: `  seam incident shop.orders
  seam incident shop.orders --pairs uuid_to_int.csv --out shop_orders_v2.yaml
  seam incident shop.orders --pairs uuid_to_int.csv --apply --reason "INC-8: customer_id arrives as UUIDs"`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&o.Pairs, "pairs", "", "CSV of new-id,target-id pairs from the source (a one-time sync), for an identifier no rule translates")
			fs.BoolVar(&o.NoHeader, "no-header", false, "the first row of --pairs is data, not a header")
			fs.StringVar(&o.Out, "out", "", "write the proposed version to this file (the register command then reads it)")
			fs.StringVar(&o.ReplayID, "replay-id", "", "replay id of the window (default: one made of the subject, version and window, so a second --apply releases nothing twice)")
			fs.BoolVar(&apply, "apply", false, "carry the fix out, stopping at the first step that fails (admin; needs --reason)")
			fs.StringVar(&o.Reason, "reason", "", "why, for the containment, the notice waiver and the backfill (kept in the audit history)")
		},
	}, func(cmd *cobra.Command, args []string, c proposal.Clients) error {
		popts, err := f.Options()
		if err != nil {
			return err
		}
		o.Proposal = popts
		for _, p := range f.Partitions {
			o.InferArgs += " --partition " + proposal.ShellQuote(p)
		}
		if apply && strings.TrimSpace(o.Reason) == "" {
			return exit.Usagef("--apply needs --reason: it is kept with the containment, the notice waiver and the backfill")
		}
		// Each call is bounded by --timeout, not the whole: gathering a
		// long window, like replaying it, takes as long as it takes.
		ctx := cmd.Context()
		inc, err := incident.Build(ctx, c, args[0], o)
		if err != nil {
			return g.RPCError("incident "+args[0], err)
		}
		if o.Out != "" && inc.Proposal != nil {
			if err := os.WriteFile(o.Out, inc.Proposal.YAML, 0o644); err != nil {
				return exit.Usagef("write the proposal: %w", err)
			}
		}
		w, progress := cmd.OutOrStdout(), cmd.OutOrStdout()
		if g.JSON() {
			// The view goes into the JSON; the replay's progress, to
			// standard error when a person watches it there.
			w, progress = io.Discard, io.Discard
			if output.Terminal(cmd.ErrOrStderr()) {
				progress = cmd.ErrOrStderr()
			}
		}
		printView(w, inc, apply)
		var applyErr error
		var rec *incident.Reconciliation
		if apply {
			if err := inc.Preflight(o.Reason); err != nil {
				applyErr = exit.Failf("%w", err)
			} else {
				fmt.Fprintln(w, "\napplying:")
				if applyErr = inc.Apply(ctx, w, progress); applyErr != nil {
					applyErr = exit.Failf("%w", applyErr)
				} else if rec, err = inc.Reconcile(ctx, c); err != nil {
					applyErr = g.RPCError("reconcile "+args[0], err)
				} else {
					printReconciliation(w, rec)
				}
			}
		}
		if g.JSON() {
			if err := output.Value(cmd.OutOrStdout(), inc.View(rec, applyErr)); err != nil {
				return err
			}
		}
		return applyErr
	})
	f.Add(cmd)
	return cmd
}

// printView writes the view.
func printView(w io.Writer, inc *incident.Incident, applying bool) {
	state := "flowing"
	if ct := inc.Containment; ct.GetContained() {
		state = fmt.Sprintf("CONTAINED since %s by %s (%s)", output.Time(ct.GetTime()), ct.GetPrincipal(), ct.GetReason())
	}
	since := ""
	if inc.Since != "" {
		since = " since partition " + inc.Since
	}
	fmt.Fprintf(w, "%s: v%d active, %s; %d records held%s\n", inc.Subject, inc.Active, state, inc.Held, since)
	if len(inc.Window) > 0 {
		fmt.Fprintf(w, "the incident's window: %s (%d partitions, %d records held); the proposal read %d of them\n",
			span(inc.Window), len(inc.Window), inc.WindowHeld(), inc.Read)
	}
	if len(inc.Changed) > 0 {
		fmt.Fprintln(w, "\nwhat changed:")
		for _, a := range inc.Changed {
			fmt.Fprintf(w, "  %s #%d %s %s: %s\n", output.OrDash(a.GetPartition()), a.GetSequence(), a.GetKind(), output.OrDash(a.GetField()), a.GetMessage())
		}
	}
	if inc.Held > 0 {
		fmt.Fprintf(w, "\nheld: %d records; by partition: %s; by reason: %s\n", inc.Held, counts(inc.HeldByPart, true), counts(inc.HeldByWhy, false))
	}
	if len(inc.Partitions) > 0 {
		fmt.Fprintln(w, "\nwindow:")
		t := output.NewTable(w, "PARTITION", "VERDICT", "AS SEALED", "RECEIVED", "ACCEPTED", "QUARANTINED", "RELEASED", "MATCH RATE", "AS SEALED")
		for _, p := range inc.Partitions {
			t.Row(p.Partition, p.Verdict, output.OrDash(p.SealedVerdict), fmt.Sprint(p.Received), fmt.Sprint(p.Accepted), fmt.Sprint(p.Quarantined), fmt.Sprint(p.Released),
				output.Rate(p.MatchRate), output.Rate(p.SealedMatchRate))
		}
		t.Flush()
	}
	p := inc.Proposal
	switch {
	case p == nil:
		fmt.Fprintf(w, "\nno incident to fix: the gate holds no records of %s\n", inc.Subject)
		return
	case len(p.Changes) == 0:
		fmt.Fprintf(w, "\nthe held records need no change to v%d: its checks pass %d of the %d read; the others deviate too little to be a change of the source\n",
			inc.Active, p.After.Passed, p.After.Records)
	default:
		fmt.Fprintln(w)
		// Print fails only when writing to w does, as the lines around it.
		_ = proposal.Print(w, p, "")
	}
	if len(inc.BlastRadius) > 0 {
		fmt.Fprintln(w, "\nblast radius (consumers the fix reaches, in order):")
		t := output.NewTable(w, "CONSUMER", "DEPTH", "VIA", "OWNER")
		for _, c := range inc.BlastRadius {
			t.Row(c.GetConsumer(), strconv.Itoa(int(c.GetDepth())), strings.Join(c.GetPath(), " → "), output.OrDash(c.GetOwner()))
		}
		t.Flush()
	}
	if ck := inc.Check; ck != nil {
		fmt.Fprintf(w, "\nregistry on v%d: %s", inc.Next, output.Enum(ck.GetVerdict(), "VERDICT_"))
		if ck.GetNoticeOwed() != "" {
			fmt.Fprintf(w, "; owes %s notice (an admin waives it with the reason)", ck.GetNoticeOwed())
		}
		fmt.Fprintln(w)
		if d := inc.DataFrom; d != nil {
			fmt.Fprintf(w, "  v%d judges partitions from the incident's first, %s (data date %s), so late files for its days are judged by it (an admin sets it with the reason)\n",
				inc.Next, inc.Since, output.Time(d))
		}
		for _, pr := range ck.GetProblems() {
			tag := "stops it"
			if incident.ResolvedByFix[pr.GetReason()] {
				tag = "resolved by the fix"
			}
			fmt.Fprintf(w, "  %s (%s): %s\n", pr.GetReason(), tag, pr.GetMessage())
		}
		for _, pr := range inc.Waived.GetProblems() {
			if pr.GetReason() == "OVERRIDE_REQUIRES_ADMIN" {
				fmt.Fprintf(w, "  %s (stops --apply): %s\n", pr.GetReason(), pr.GetMessage())
			}
		}
	}
	for _, mp := range inc.Migrations {
		fmt.Fprintf(w, "\nmigration of %s (%s/%s→%s): ", mp.Field, mp.Namespace, mp.New, output.OrDash(mp.Target))
		switch {
		case mp.Missing != "":
			fmt.Fprintln(w, mp.Missing)
		case mp.RuleText != "":
			fmt.Fprintf(w, "rule %s — %s\n", mp.RuleText, mp.How)
		default:
			fmt.Fprintln(w, mp.How)
		}
	}
	if inc.DryRun != nil {
		d := inc.DryRun
		through := inc.Next
		if len(p.Changes) == 0 {
			through = inc.Active
		}
		fmt.Fprintf(w, "\ndry run of the %d records read through v%d (its checks, mapping and translations): %d would be released (%.1f%%)",
			d.Records, through, d.Passed, 100*d.PassRate())

		if stay := d.Records - d.Passed; stay > 0 {
			fmt.Fprintf(w, ", %d would stay (%s)", stay, counts(toInt64(d.Remain), false))
		}
		fmt.Fprintln(w)
		for _, e := range d.Examples {
			fmt.Fprintf(w, "  stays: %s\n", e)
		}
		if held := inc.WindowHeld(); int64(d.Records) < held {
			fmt.Fprintf(w, "  the replay runs on all %d held records of %s, not only on the %d read\n", held, span(inc.Window), d.Records)
		}
	} else if inc.DryRunErr != "" {
		fmt.Fprintf(w, "\ndry run not possible: %s\n", inc.DryRunErr)
	}
	if len(inc.Steps) == 0 {
		return
	}
	fmt.Fprintln(w, "\nto fix it:")
	for i, s := range inc.Steps {
		mark := ""
		if s.Done {
			mark = " — done: " + s.Why
		} else if s.Why != "" {
			mark = " — " + s.Why
		}
		fmt.Fprintf(w, "  %d. %s%s\n     %s\n", i+1, s.Name, mark, s.Command)
	}
	if !applying {
		fmt.Fprintf(w, "\n`seam incident %s%s --apply --reason REASON` carries these out (admin), stopping at the first that fails\n", inc.Subject, pairsFlag(inc))
	}
}

func pairsFlag(inc *incident.Incident) string {
	for _, mp := range inc.Migrations {
		if strings.HasSuffix(mp.PairsFrom, ".csv") {
			return " --pairs " + proposal.ShellQuote(mp.PairsFrom)
		}
	}
	return ""
}

func toInt64(m map[string]int) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = int64(v)
	}
	return out
}

// counts renders "a 3, b 2": by key, or by count (largest first).
func counts(m map[string]int64, byKey bool) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if !byKey && m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// printReconciliation writes the window after the fix.
func printReconciliation(w io.Writer, r *incident.Reconciliation) {
	window := r.From
	if r.To != r.From {
		window += ".." + r.To
	}
	mark := "✓"
	if !r.AddsUp {
		mark = fmt.Sprintf("✗ (%d unaccounted: something else held or released records of the window meanwhile)", r.Before-r.Released-r.StillHeld)
	}
	fmt.Fprintf(w, "\nreconciliation of %s: held before %d = released %d + still held %d  %s\n", window, r.Before, r.Released, r.StillHeld, mark)
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(r.MatchRate)) {
		parts = append(parts, p+" "+output.Rate(r.MatchRate[p]))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "match rate after the fix: %s\n", strings.Join(parts, ", "))
	}
	if len(r.Alerts) > 0 {
		fmt.Fprintln(w, "alerts of the incident:")
		for _, a := range r.Alerts {
			by := ""
			if a.ResolvedBy != "" {
				by = " by " + a.ResolvedBy
			}
			fmt.Fprintf(w, "  #%d %s %s %s: %s%s\n", a.Sequence, a.Partition, a.Kind, output.OrDash(a.Field), a.State, by)
		}
	}
}

// span renders a window of partitions as FIRST..LAST (or the one).
func span(parts []string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	return parts[0] + ".." + parts[len(parts)-1]
}
