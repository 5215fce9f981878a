// Package quarantine holds `seam quarantine`: list, show, count, discard
// and replay the records the gate set aside.
package quarantine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// quarantineFlags are the filter flags of the quarantine commands.
type quarantineFlags struct {
	subject, from, to, reason, check, state string
	version                                 int32
}

func (f *quarantineFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.subject, "subject", "", "source subject (or give it as the argument)")
	fs.StringVar(&f.from, "from", "", "first partition (inclusive)")
	fs.StringVar(&f.to, "to", "", "last partition (inclusive)")
	fs.StringVar(&f.reason, "reason", "", "error code, for example ID_UNMAPPED or TYPE_MISMATCH")
	fs.StringVar(&f.check, "check", "", "check name, for example customer_id.type")
	fs.Int32Var(&f.version, "contract-version", 0, "contract version the records were checked with")
	fs.StringVar(&f.state, "state", "held", "held, released or discarded")
}

// filterArgs is filter with the subject taken from the argument, when
// given.
func (f *quarantineFlags) filterArgs(args []string) (*gatev1.QuarantineFilter, error) {
	s, err := client.Subject(args, f.subject)
	if err != nil {
		return nil, err
	}
	f.subject = s
	return f.filter()
}

func (f *quarantineFlags) filter() (*gatev1.QuarantineFilter, error) {
	st, ok := gatev1.QuarantineState_value["QUARANTINE_STATE_"+strings.ToUpper(f.state)]
	if !ok || st == 0 {
		return nil, exit.Usagef("--state %q: use held, released or discarded", f.state)
	}
	return &gatev1.QuarantineFilter{Subject: f.subject, PartitionFrom: f.from, PartitionTo: f.to, Reason: f.reason, Check: f.check,
		ContractVersion: f.version, State: gatev1.QuarantineState(st)}, nil
}

// New returns the `seam quarantine` group.
func New(g *client.Globals) *cobra.Command {
	cmd := &cobra.Command{Use: "quarantine", Short: "Inspect, discard and replay quarantined records"}
	cmd.AddCommand(newQuarantineListCmd(g), newQuarantineShowCmd(g), newQuarantineStatsCmd(g), newQuarantineDiscardCmd(g), newQuarantineReplayCmd(g))
	return cmd
}

func reasonsText(rs []*recordv1.RecordError) (codes, checks string) {
	var c, k []string
	for _, r := range rs {
		c = append(c, output.Enum(r.GetCode(), "ERROR_CODE_"))
		k = append(k, r.GetCheck())
	}
	return strings.Join(c, ","), strings.Join(k, ",")
}

func newQuarantineListCmd(g *client.Globals) *cobra.Command {
	var f quarantineFlags
	var limit int32
	var allPages bool
	return client.ServiceCommand(g, gatev1.NewGateServiceClient, "list [SUBJECT]", cobra.MaximumNArgs(1), client.Help{
		Short: "List quarantined records in partition order",
		Long: `List quarantined records in partition order, one page of --limit records,
or every page with --all. With -o json the answer is one JSON object with
the records and the token of the next page, like every other command.`,
		Example: `  seam quarantine list shop.orders --from 2025-03-01 --to 2025-03-01 --reason TYPE_MISMATCH
  seam quarantine list shop.orders --state released --all -o json`,
		Flags: func(fs *pflag.FlagSet) {
			f.add(fs)
			fs.Int32Var(&limit, "limit", 100, "records per page")
			fs.BoolVar(&allPages, "all", false, "follow every page")
		},
	}, func(cmd *cobra.Command, args []string, c gatev1.GateServiceClient) error {
		filter, err := f.filterArgs(args)
		if err != nil {
			return err
		}
		all := &gatev1.ListQuarantineResponse{}
		tok := ""
		for {
			ctx, cancel := g.CallCtx(cmd.Context())
			resp, err := c.ListQuarantine(ctx, &gatev1.ListQuarantineRequest{Filter: filter, PageSize: limit, PageToken: tok})
			cancel()
			if err != nil {
				return g.RPCError("list quarantine", err)
			}
			all.Records = append(all.Records, resp.GetRecords()...)
			all.NextPageToken = resp.GetNextPageToken()
			tok = resp.GetNextPageToken()
			if !allPages || tok == "" {
				break
			}
		}
		if g.JSON() {
			return output.Proto(cmd.OutOrStdout(), all)
		}
		t := output.NewTable(cmd.OutOrStdout(), "ID", "PARTITION", "BATCH", "POSITION", "VERSION", "REASONS", "CHECKS", "TIME")
		for _, q := range all.GetRecords() {
			codes, checks := reasonsText(q.GetReasons())
			t.Row(q.GetId(), q.GetPartition(), q.GetBatchId(), fmt.Sprint(q.GetPosition()), fmt.Sprint(q.GetContractVersion()), codes, checks, output.Time(q.GetTime()))
		}
		if err := t.Flush(); err != nil {
			return err
		}
		if all.GetNextPageToken() != "" {
			fmt.Fprintln(cmd.OutOrStdout(), "more records: use --all, or a larger --limit")
		}
		return nil
	})
}

func newQuarantineShowCmd(g *client.Globals) *cobra.Command {
	return client.ServiceCommand(g, gatev1.NewGateServiceClient, "show ID", cobra.ExactArgs(1), client.Help{
		Short:   "Show one quarantined record with its reasons and raw bytes",
		Example: "  seam quarantine show 3f2a9c0d1e4b5a6978f0e1d2c3b4a596",
	}, func(cmd *cobra.Command, args []string, gc gatev1.GateServiceClient) error {
		resp, err := client.Call(cmd.Context(), g, "show "+args[0], gc.GetQuarantinedRecord, &gatev1.GetQuarantinedRecordRequest{Id: args[0]})
		if err != nil {
			return err
		}
		return client.Print(cmd, g, resp.GetRecord(), printRecord)
	})
}

// printRecord shows one quarantined record: where it came from, why it
// was held, and its raw bytes.
func printRecord(w io.Writer, q *gatev1.QuarantinedRecord) error {
	t := output.NewTable(w, "FIELD", "VALUE")
	t.Row("id", q.GetId())
	t.Row("subject", q.GetSubject())
	t.Row("partition", q.GetPartition())
	t.Row("batch", q.GetBatchId())
	t.Row("index / position", fmt.Sprintf("%d / %d", q.GetIndex(), q.GetPosition()))
	t.Row("contract version", fmt.Sprint(q.GetContractVersion()))
	t.Row("format", output.Enum(q.GetFormat(), "FORMAT_"))
	t.Row("quarantined", output.Time(q.GetTime()))
	t.Row("state", fmt.Sprintf("%s since %s %s %s", output.Enum(q.GetState(), "QUARANTINE_STATE_"), output.Time(q.GetStateTime()), q.GetStateBy(), q.GetStateReason()))
	if err := t.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nreasons:")
	for _, r := range q.GetReasons() {
		fmt.Fprintf(w, "  %s %s [%s]: %s\n", output.Enum(r.GetCode(), "ERROR_CODE_"), r.GetField(), r.GetCheck(), r.GetMessage())
	}
	fmt.Fprintf(w, "\nraw (%d bytes):\n%s\n", len(q.GetRaw()), q.GetRaw())
	return nil
}

func newQuarantineStatsCmd(g *client.Globals) *cobra.Command {
	var f quarantineFlags
	return client.ServiceCommand(g, gatev1.NewGateServiceClient, "stats [SUBJECT]", cobra.MaximumNArgs(1), client.Help{
		Short:   "Count quarantined records by reason, check and partition",
		Example: "  seam quarantine stats shop.orders --from 2025-03-01 --to 2025-03-07",
		Flags:   f.add,
	}, func(cmd *cobra.Command, args []string, gc gatev1.GateServiceClient) error {
		filter, err := f.filterArgs(args)
		if err != nil {
			return err
		}
		return client.Show(cmd, g, "quarantine stats", gc.GetQuarantineStats, &gatev1.GetQuarantineStatsRequest{Filter: filter},
			func(w io.Writer, resp *gatev1.GetQuarantineStatsResponse) error {
				fmt.Fprintf(w, "total: %d\n\n", resp.GetTotal())
				for _, grp := range []struct {
					name   string
					counts []*gatev1.QuarantineCount
				}{{"REASON", resp.GetByReason()}, {"CHECK", resp.GetByCheck()}, {"PARTITION", resp.GetByPartition()}} {
					t := output.NewTable(w, grp.name, "COUNT")
					for _, c := range grp.counts {
						t.Row(c.GetKey(), fmt.Sprint(c.GetCount()))
					}
					if err := t.Flush(); err != nil {
						return err
					}
					fmt.Fprintln(w)
				}
				return nil
			})
	})
}

func newQuarantineDiscardCmd(g *client.Globals) *cobra.Command {
	var f quarantineFlags
	var why string
	return client.ServiceCommand(g, gatev1.NewGateServiceClient, "discard [ID...] --why W", cobra.ArbitraryArgs, client.Help{
		Short: "Discard held records for good, with a reason (audited)",
		Long: `Discard the records named by id, or every held record matching the
filter flags (at least --subject). Discarded records are never replayed;
the discard is kept in the gate's audit trail with who and why.`,
		Example: `  seam quarantine discard 3f2a9c0d1e4b5a6978f0e1d2c3b4a596 --why "test order"
  seam quarantine discard --subject shop.orders --from 2025-03-01 --to 2025-03-01 --reason MALFORMED --why "truncated upload"`,
		Flags: func(fs *pflag.FlagSet) {
			f.add(fs)
			fs.StringVar(&why, "why", "", "why the records are discarded (audited)")
		},
	}, func(cmd *cobra.Command, args []string, gc gatev1.GateServiceClient) error {
		if strings.TrimSpace(why) == "" {
			return exit.Usagef("give --why: it is kept in the audit trail")
		}
		filter, err := f.filter()
		if err != nil {
			return err
		}
		if len(args) == 0 && filter.GetSubject() == "" {
			return exit.Usagef("name record ids, or give at least --subject")
		}
		return client.Show(cmd, g, "discard", gc.DiscardQuarantined, &gatev1.DiscardQuarantinedRequest{Ids: args, Filter: filter, Reason: why},
			func(w io.Writer, resp *gatev1.DiscardQuarantinedResponse) error {
				fmt.Fprintf(w, "discarded %d records\n", resp.GetDiscarded())
				return nil
			})
	})
}

func newQuarantineReplayCmd(g *client.Globals) *cobra.Command {
	var from, to, replayID, out, reason string
	var version int32
	var dryRun, summaryOnly bool
	return client.ServiceCommand(g, gatev1.NewGateServiceClient, "replay SUBJECT --from P --to P (--out FILE | --summary-only | --dry-run)", cobra.ExactArgs(1), client.Help{
		Short: "Replay held records of a partition window through today's contract",
		Long: `Re-run the held records of SUBJECT in partitions --from..--to (inclusive)
through today's contract, mapping and id tables. With --dry-run, say per
partition how many would pass and why the rest would not. Otherwise the
released canonical records are written, in partition order, one JSON
object per line with their deterministic record id, to --out (- for
standard output), and marked released with their delivery. Running the
same --replay-id again re-sends what it released and releases nothing
twice. When it ends, the registry records a backfill-completed event
naming the downstream consumers to rerun, in order, and --reason (the fix
the backfill follows, say) in its text and attributes. Each partition
records were released into is sealed again, so its verdict and match rate
read as the backfill left them.`,
		Example: `  seam quarantine replay shop.orders --from 2025-03-01 --to 2025-03-01 --dry-run
  seam quarantine replay shop.orders --from 2025-03-01 --to 2025-03-07 --replay-id inc-1 --out released.ndjson \
      --reason "INC-1: v2 maps the UUIDs back"`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&from, "from", "", "first partition (inclusive)")
			fs.StringVar(&to, "to", "", "last partition (inclusive)")
			fs.StringVar(&replayID, "replay-id", "", "id that makes a retried replay idempotent (default: a new one)")
			fs.StringVar(&out, "out", "", "append released canonical records to this file as NDJSON (- for standard output)")
			fs.Int32Var(&version, "contract-version", 0, "replay through this contract version (default: the active one)")
			fs.BoolVar(&dryRun, "dry-run", false, "only say what would pass and why the rest would not")
			fs.BoolVar(&summaryOnly, "summary-only", false, "release without receiving the records (they can be re-sent with the same --replay-id)")
			fs.StringVar(&reason, "reason", "", "why the window is replayed, for example the fix it follows (kept in the backfill event)")
		},
	}, func(cmd *cobra.Command, args []string, c gatev1.GateServiceClient) error {
		if from == "" || to == "" {
			return exit.Usagef("give --from and --to: a replay is scoped to a partition window")
		}
		w := &gatev1.ReplayWindow{Subject: args[0], PartitionFrom: from, PartitionTo: to, ContractVersion: version}
		if dryRun {
			return client.Show(cmd, g, "plan replay", c.PlanReplay, &gatev1.PlanReplayRequest{Window: w},
				func(w io.Writer, resp *gatev1.PlanReplayResponse) error {
					printPlan(w, resp)
					return nil
				})
		}
		if out == "" && !summaryOnly {
			return exit.Usagef("give --out FILE (or - for standard output) to keep the released records, or --summary-only")
		}
		var sink io.Writer = io.Discard
		report := cmd.OutOrStdout()
		if out == "-" {
			sink, report = cmd.OutOrStdout(), cmd.ErrOrStderr()
		} else if out != "" {
			f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
			if err != nil {
				return exit.Usagef("%w", err)
			}
			defer f.Close()
			sink = f
		}
		sctx, progress, stop := g.Stream(cmd.Context())
		defer stop()
		sum, err := runReplay(sctx, c, &gatev1.ReplayRequest{Window: w, ReplayId: replayID, SummaryOnly: summaryOnly, Reason: reason}, sink, progress)
		if err != nil {
			return g.RPCError("replay", client.Cause(sctx, err))
		}
		if g.JSON() {
			return output.Proto(report, sum)
		}
		t := output.NewTable(report, "REPLAY", "PARTITIONS", "HELD", "RELEASED", "REMAINING", "EVENT", "RERUN")
		t.Row(sum.GetReplayId(), fmt.Sprint(sum.GetPartitions()), fmt.Sprint(sum.GetHeld()), fmt.Sprint(sum.GetReleased()), fmt.Sprint(sum.GetRemaining()),
			fmt.Sprint(sum.GetEventSequence()), output.OrDash(strings.Join(sum.GetRerunConsumers(), " → ")))
		return t.Flush()
	})
}

// runReplay receives a replay: records to sink as NDJSON, then the summary.
func runReplay(ctx context.Context, c gatev1.GateServiceClient, req *gatev1.ReplayRequest, sink io.Writer, progress func()) (*gatev1.ReplaySummary, error) {
	stream, err := c.Replay(ctx, req)
	if err != nil {
		return nil, err
	}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil, exit.Failf("the replay ended without a summary; run it again with the same --replay-id")
		}
		if err != nil {
			return nil, err
		}
		progress()
		if s := msg.GetSummary(); s != nil {
			return s, nil
		}
		if err := output.Canonical(sink, msg.GetRecord()); err != nil {
			return nil, err
		}
	}
}

func printPlan(w io.Writer, p *gatev1.PlanReplayResponse) {
	t := output.NewTable(w, "PARTITION", "HELD", "WOULD RELEASE", "WOULD REMAIN")
	for _, pp := range p.GetPartitions() {
		t.Row(pp.GetPartition(), fmt.Sprint(pp.GetHeld()), fmt.Sprint(pp.GetWouldRelease()), fmt.Sprint(pp.GetWouldRemain()))
	}
	t.Row("total", fmt.Sprint(p.GetHeld()), fmt.Sprint(p.GetWouldRelease()), fmt.Sprint(p.GetWouldRemain()))
	_ = t.Flush()
	if len(p.GetRemainReasons()) > 0 {
		fmt.Fprintln(w, "\nwhy the rest would stay:")
		for _, r := range p.GetRemainReasons() {
			fmt.Fprintf(w, "  %s: %d\n", r.GetKey(), r.GetCount())
		}
	}
}
