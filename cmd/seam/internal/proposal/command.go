package proposal

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/core/infer"
)

// Flags are the flags that choose the window and tune the inference,
// shared by `seam contract infer` and `seam incident`.
type Flags struct {
	Partitions []string
	Limit      int
	MinShare   float64
	MinCount   int
}

// Add declares the flags on cmd.
func (f *Flags) Add(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.Partitions, "partition", nil, "a partition to read held records from (repeatable; default: the newest partitions holding records)")
	cmd.Flags().IntVar(&f.Limit, "limit", DefaultLimit, "infer from at most this many held records, newest partitions first (seam incident replays its whole window whatever this is)")
	cmd.Flags().Float64Var(&f.MinShare, "min-share", infer.DefaultMinShare, "a deviation is a change of the source when at least this share of the records carrying the field show it")
	cmd.Flags().IntVar(&f.MinCount, "min-count", infer.DefaultMinCount, "and at least this many records")
}

// Options returns the gathering options.
func (f *Flags) Options() (Options, error) {
	if f.MinShare < 0 || f.MinShare > 1 {
		return Options{}, exit.Usagef("--min-share %g: give a share from 0 to 1", f.MinShare)
	}
	if f.MinCount < 1 {
		return Options{}, exit.Usagef("--min-count %d: give 1 or more", f.MinCount)
	}
	if f.Limit < 1 || f.Limit > MaxLimit {
		return Options{}, exit.Usagef("--limit %d: give 1 to %d", f.Limit, MaxLimit)
	}
	return Options{Partitions: f.Partitions, Limit: f.Limit, Options: infer.Options{MinShare: f.MinShare, MinCount: f.MinCount}}, nil
}

// Infer gathers and proposes; it fails (exit 1) when nothing is held.
func Infer(cmd *cobra.Command, g *client.Globals, conn grpc.ClientConnInterface, subject string, f *Flags) (*Gathered, *infer.Proposal, error) {
	opts, err := f.Options()
	if err != nil {
		return nil, nil, err
	}
	c := NewClients(conn)
	// Each call is bounded by --timeout, not the whole gathering.
	ctx := cmd.Context()
	gathered, err := Gather(ctx, c, subject, opts)
	if err != nil {
		return nil, nil, g.RPCError("infer "+subject, err)
	}
	if len(gathered.Held) == 0 {
		where := "any partition"
		if len(f.Partitions) > 0 {
			where = "partitions " + strings.Join(f.Partitions, ", ")
		}
		return gathered, nil, exit.Failf("the gate holds no records of %s in %s: there is nothing to infer a change from", subject, where)
	}
	p, err := gathered.Propose(ctx, c, opts.Options)
	if err != nil {
		return gathered, nil, g.RPCError("infer "+subject, err)
	}
	return gathered, p, nil
}

// Print summarises a proposal: its changes, what each migration
// needs, what a person must still decide, and (when file is not empty)
// the check to run on the file next.
func Print(w io.Writer, p *infer.Proposal, file string) error {
	subject := p.Contract.GetSubject()
	if len(p.Changes) == 0 {
		fmt.Fprintf(w, "%s: the held records need no change to v%d (%d of %d pass its checks; the others deviate too little to be a change of the source)\n",
			subject, p.ActiveVersion, p.After.Passed, p.After.Records)
		return nil
	}
	level := "ADDITIVE"
	if p.Breaking {
		level = "BREAKING"
	}
	fmt.Fprintf(w, "%s: proposed next version after v%d (%s), from %d held records; its checks pass %d of them (v%d: %d)\n",
		subject, p.ActiveVersion, level, p.Profile.Records, p.After.Passed, p.ActiveVersion, p.Before.Passed)
	t := output.NewTable(w, "LEVEL", "RULE", "PATH", "OLD", "NEW")
	for _, c := range p.Changes {
		t.Row(output.Enum(c.GetLevel(), "CHANGE_LEVEL_"), c.GetRule(), c.GetPath(), output.OrDash(c.GetOldValue()), output.OrDash(c.GetNewValue()))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	for _, m := range p.Migrations {
		fmt.Fprintf(w, "\nidentifier %s: %s/%s → %s/%s\n", m.Field, m.Namespace, m.Old, m.Namespace, m.New)
		if m.CreateFormat != nil {
			fmt.Fprintf(w, "  the format is new: seam idmap namespace add-format %s --format %s\n", m.Namespace, infer.FormatFlag(m.CreateFormat))
		}
		if m.Target == "" {
			fmt.Fprintln(w, "  no canonical field is produced from it, so nothing needs translating")
			continue
		}
		r := m.Rule
		switch {
		case r.Rule != nil && r.Answers:
			fmt.Fprintf(w, "  rule: %s\n  %s\n  set it: seam idmap rule set %s %s%s\n", infer.DescribeRule(r.Rule), r.Why, m.Namespace, infer.RuleFlags(r.Rule), sampleFlags(r.Samples))
		default:
			fmt.Fprintf(w, "  %s/%s→%s needs a lookup table: %s\n", m.Namespace, m.New, m.Target, r.Why)
		}
	}
	if len(p.Notes) > 0 {
		fmt.Fprintln(w, "\nto decide:")
		for _, n := range p.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
	if file != "" {
		fmt.Fprintf(w, "\nnext: seam contract check -f %s\n", file)
	}
	return nil
}

func sampleFlags(samples []string) string {
	var b strings.Builder
	for _, s := range samples {
		fmt.Fprintf(&b, " --sample %s", s)
	}
	return b.String()
}

// JSON is the proposal as `-o json` prints it.
func JSON(g *Gathered, p *infer.Proposal) map[string]any {
	changes := make([]map[string]any, len(p.Changes))
	for i, c := range p.Changes {
		changes[i] = map[string]any{"level": output.Enum(c.GetLevel(), "CHANGE_LEVEL_"), "rule": c.GetRule(), "path": c.GetPath(),
			"old": c.GetOldValue(), "new": c.GetNewValue(), "message": c.GetMessage()}
	}
	return map[string]any{
		"subject": p.Contract.GetSubject(), "active_version": p.ActiveVersion, "partitions": g.Partitions,
		"held": g.HeldTotal, "read": len(g.Held), "breaking": p.Breaking, "changes": changes,
		"migrations": MigrationsJSON(p.Migrations), "findings": p.Findings, "notes": p.Notes,
		"checks_before": p.Before, "checks_after": p.After, "yaml": string(p.YAML),
	}
}

// MigrationsJSON renders migrations with their rules in words and flags.
func MigrationsJSON(ms []*infer.Migration) []map[string]any {
	out := make([]map[string]any, len(ms))
	for i, m := range ms {
		r := m.Rule
		j := map[string]any{"field": m.Field, "namespace": m.Namespace, "old": m.Old, "new": m.New, "target": m.Target,
			"values": len(m.Values), "table_only": r.TableOnly(), "why": r.Why, "checked": r.Checked, "matched": r.Matched,
			"wrong": r.Wrong, "exceptions": r.Exceptions, "samples": r.Samples, "alternatives": r.Alternatives}
		if f := m.CreateFormat; f != nil {
			j["create_format"] = map[string]any{"name": f.GetName(), "kind": output.Enum(f.GetKind(), "FORMAT_KIND_"), "pattern": f.GetPattern()}
		}
		if r.Rule != nil {
			j["rule"] = infer.DescribeRule(r.Rule)
			j["rule_flags"] = infer.RuleFlags(r.Rule)
			j["answers"] = r.Answers
		}
		out[i] = j
	}
	return out
}
