package gate

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/command/alerts"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// maxServerWait is the longest wait one WaitPartition call may ask for;
// `seam gate wait` asks again until its own --max-wait has passed.
const maxServerWait = 5 * time.Minute

func newSealCmd(g *client.Globals) *cobra.Command {
	return client.ServiceCommand(g, gatev1.NewGateServiceClient, "seal SUBJECT PARTITION", cobra.ExactArgs(2), client.Help{
		Short: "Seal a partition: judge it whole and give its verdict",
		Long: `Seal PARTITION of SUBJECT: the gate judges the whole partition once
(BLOCK thresholds over all its records, row count, null rate, drift and
match rate against the trailing sealed partitions) and answers with its
verdict: PASSED, PASSED_WITH_ALERTS or BLOCKED. Records that arrive for it
later open an amendment, judged and sealed on its own.

Sealing a sealed partition answers its verdict again; sealing a partition
never sent seals it empty (a missing day is judged by its row count).
'seam gate ingest' seals after a file's last chunk by default.

Exits 1 when the partition is BLOCKED: publish nothing of it.`,
		Example: `  seam gate seal shop.orders 2026-03-01
  seam gate seal shop.orders 2026-03-01 -o json`,
	}, func(cmd *cobra.Command, args []string, gc gatev1.GateServiceClient) error {
		ctx, cancel := g.CallCtx(cmd.Context())
		defer cancel()
		resp, err := gc.SealPartition(ctx, &gatev1.SealPartitionRequest{Subject: args[0], Partition: args[1]})
		if err != nil {
			return g.RPCError("seal "+args[0]+" "+args[1], err)
		}
		if err := printState(cmd.OutOrStdout(), g, resp, resp.GetPartition(), 0); err != nil {
			return err
		}
		return blockedError(resp.GetPartition())
	})
}

func newPartitionCmd(g *client.Globals) *cobra.Command {
	var amendment int32
	return client.ServiceCommand(g, gatev1.NewGateServiceClient, "partition SUBJECT PARTITION", cobra.ExactArgs(2), client.Help{
		Short: "Show a partition's status, verdict, counts and the checks that decided",
		Long: `Show PARTITION of SUBJECT: OPEN or SEALED, its verdict once sealed, its
counts (received, accepted, quarantined, duplicates, released, batches),
the contract version judging it, its match rate, the checks that decided
(while open: the BLOCK checks failing so far) and the alerts raised at
its seal. --amendment selects an amendment (records that arrived after
the seal); the default is the latest.

A read: exits 0 whatever the verdict ('seam gate wait' exits 1 on BLOCKED).`,
		Example: `  seam gate partition shop.orders 2026-03-01
  seam gate partition shop.orders 2026-03-01 --amendment 0 -o json`,
		Flags: func(fs *pflag.FlagSet) {
			fs.Int32Var(&amendment, "amendment", 0, "amendment to show: 0 is the partition itself (default: the latest)")
		},
	}, func(cmd *cobra.Command, args []string, gc gatev1.GateServiceClient) error {
		ctx, cancel := g.CallCtx(cmd.Context())
		defer cancel()
		req := &gatev1.GetPartitionRequest{Subject: args[0], Partition: args[1]}
		if cmd.Flags().Changed("amendment") {
			if amendment < 0 {
				return exit.Usagef("--amendment %d: give 0 (the partition itself) or a positive amendment number", amendment)
			}
			req.Amendment = &amendment
		}
		resp, err := gc.GetPartition(ctx, req)
		if err != nil {
			return g.RPCError("get partition "+args[0]+" "+args[1], err)
		}
		return printState(cmd.OutOrStdout(), g, resp, resp.GetPartition(), resp.GetAmendments())
	})
}

func newWaitCmd(g *client.Globals) *cobra.Command {
	var maxWait time.Duration
	return client.ServiceCommand(g, gatev1.NewGateServiceClient, "wait SUBJECT PARTITION", cobra.ExactArgs(2), client.Help{
		Short: "Wait until a partition is sealed; exit 1 when it is BLOCKED",
		Long: `Wait until PARTITION of SUBJECT is sealed (by 'seam gate seal', by the
batch that asks, or by the contract's watermark), then print its state.
The step of a pipeline between staging and publishing:

  seam gate wait shop.orders 2026-03-01 && publish 2026-03-01

Exits 0 when the sealed verdict is PASSED or PASSED_WITH_ALERTS, 1 when it
is BLOCKED or when --max-wait passed with the partition still open.`,
		Example: `  seam gate wait shop.orders 2026-03-01 --max-wait 2h
  seam gate wait shop.orders 2026-03-01 -o json`,
		Flags: func(fs *pflag.FlagSet) {
			fs.DurationVar(&maxWait, "max-wait", 30*time.Minute, "how long to wait for the seal before exiting 1")
		},
	}, func(cmd *cobra.Command, args []string, c gatev1.GateServiceClient) error {
		if maxWait <= 0 {
			return exit.Usagef("--max-wait %s: give a positive duration, for example 30m", maxWait)
		}
		deadline := time.Now().Add(maxWait)
		var resp *gatev1.WaitPartitionResponse
		for {
			left := time.Until(deadline)
			if left <= 0 {
				break
			}
			step := min(left, maxServerWait)
			// The call itself may take the wait plus --timeout to answer.
			ctx, cancel := context.WithTimeout(cmd.Context(), step+max(g.Timeout, 10*time.Second))
			r, err := c.WaitPartition(ctx, &gatev1.WaitPartitionRequest{Subject: args[0], Partition: args[1],
				Timeout: durationpb.New(step.Round(time.Millisecond))})
			cancel()
			if err != nil {
				return g.RPCError("wait for "+args[0]+" "+args[1], err)
			}
			resp = r
			if r.GetSealed() {
				break
			}
		}
		if resp == nil {
			return exit.Failf("partition %s of %s: --max-wait passed before the first answer", args[1], args[0])
		}
		if err := printState(cmd.OutOrStdout(), g, resp, resp.GetPartition(), 0); err != nil {
			return err
		}
		if !resp.GetSealed() {
			return exit.Failf("partition %s of %s is still OPEN after %s; seal it with seam gate seal %s %s once its last batch is in",
				args[1], args[0], maxWait, args[0], args[1])
		}
		return blockedError(resp.GetPartition())
	})
}

// blockedError is the exit-1 error of a partition sealed BLOCKED or
// doomed to be (a BLOCK check over a count threshold), nil otherwise.
func blockedError(p *gatev1.PartitionState) error {
	switch {
	case p.GetVerdict() == gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED:
		return exit.Failf("partition %s of %s is BLOCKED: %s; publish nothing of it — fix the records and send the partition again with --replace",
			p.GetPartition(), p.GetSubject(), blockedSummary(p))
	case p.GetWillBlock():
		return exit.Failf("partition %s of %s will be BLOCKED at its seal: %s; publish nothing of it — fix the records and send the partition again with --replace",
			p.GetPartition(), p.GetSubject(), blockedSummary(p))
	}
	return nil
}

// printState prints a partition's state: the whole answer with -o json,
// else a table of the state, its checks and its alerts.
func printState(w io.Writer, g *client.Globals, resp proto.Message, p *gatev1.PartitionState, amendments int32) error {
	if g.JSON() {
		return output.Proto(w, resp)
	}
	printPartition(w, p, amendments)
	return nil
}

// partitionLabel is a partition's status with its verdict, or what it
// will be.
func partitionLabel(p *gatev1.PartitionState) string {
	if p == nil {
		return "-"
	}
	s := output.Enum(p.GetStatus(), "PARTITION_STATUS_")
	switch {
	case p.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_UNSPECIFIED:
		s += " " + output.Enum(p.GetVerdict(), "PARTITION_VERDICT_")
	case p.GetWillBlock():
		s += " (will be BLOCKED)"
	}
	return s
}

func printPartition(w io.Writer, p *gatev1.PartitionState, amendments int32) {
	c := p.GetCounts()
	t := output.NewTable(w, "SUBJECT", "PARTITION", "AMENDMENT", "ATTEMPT", "STATUS", "VERSION", "RECEIVED", "ACCEPTED", "QUARANTINED", "DUPLICATES", "RELEASED", "BATCHES", "MATCH RATE")
	t.Row(p.GetSubject(), p.GetPartition(), fmt.Sprint(p.GetAmendment()), fmt.Sprint(p.GetAttempt()), partitionLabel(p), fmt.Sprint(p.GetContractVersion()),
		fmt.Sprint(c.GetReceived()), fmt.Sprint(c.GetAccepted()), fmt.Sprint(c.GetQuarantined()), fmt.Sprint(c.GetDuplicates()),
		fmt.Sprint(c.GetReleased()), fmt.Sprint(c.GetBatches()), output.Rate(p.GetMatchRate()))
	_ = t.Flush()
	if amendments > 0 {
		fmt.Fprintf(w, "amendments: %d (show one with --amendment N)\n", amendments)
	}
	if p.GetStatus() == gatev1.PartitionStatus_PARTITION_STATUS_SEALED {
		fmt.Fprintf(w, "sealed %s by %s (%s)\n", output.Time(p.GetSealTime()), output.OrDash(p.GetSealedBy()), output.Enum(p.GetSealCause(), "SEAL_CAUSE_"))
	}
	if n := p.GetNotice(); n != "" {
		fmt.Fprintln(w, n)
	}
	if len(p.GetChecks()) > 0 {
		fmt.Fprintln(w, "\nchecks that decided:")
		t := output.NewTable(w, "CHECK", "KIND", "POLICY", "FIELD", "FAILED", "OF", "THRESHOLD", "OBSERVED", "BASELINE", "EXCEEDED", "FIRST LINES")
		for _, ck := range p.GetChecks() {
			failed, threshold := fmt.Sprint(ck.GetFailures()), thresholdText(ck.GetThreshold())
			if metricKinds[ck.GetKind()] {
				failed, threshold = "-", "-"
			} else if ck.GetPolicy() != contractv1.Policy_POLICY_BLOCK {
				threshold = "-"
			}
			t.Row(ck.GetCheck(), ck.GetKind(), output.Enum(ck.GetPolicy(), "POLICY_"), output.OrDash(ck.GetField()), failed, fmt.Sprint(ck.GetRows()),
				threshold, figure(ck, ck.GetObserved()), figure(ck, ck.GetBaseline()), output.YesNo(ck.GetExceeded()), output.OrDash(positions(ck.GetSamplePositions())))
		}
		_ = t.Flush()
		printBaselines(w, p.GetChecks())
	}
	for _, a := range p.GetAlerts() {
		alerts.Print(w, a)
	}
}

// printBaselines says, for each metric judged against a trailing
// baseline, which partitions that baseline came from: those that passed
// the check and were not contained.
func printBaselines(w io.Writer, checks []*gatev1.CheckOutcome) {
	first := true
	for _, ck := range checks {
		from := ck.GetBaselinePartitions()
		if !metricKinds[ck.GetKind()] || len(from) == 0 {
			continue
		}
		if first {
			fmt.Fprintln(w, "\nbaselines (trailing partitions that passed the check, not contained):")
			first = false
		}
		fmt.Fprintf(w, "  %s: %s of %d partitions: %s\n", ck.GetCheck(), figure(ck, ck.GetBaseline()), len(from), strings.Join(from, ", "))
	}
}

// metricKinds are the kinds of partition metrics, which have an observed
// value and a baseline; record checks have failures instead.
var metricKinds = map[string]bool{"row_count": true, "null_rate": true, "mean": true, "match_rate": true}

// figure prints a metric's value or baseline; "-" for none (NaN) and for
// a record check.
func figure(c *gatev1.CheckOutcome, v float64) string {
	if !metricKinds[c.GetKind()] || math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.6g", v)
}
