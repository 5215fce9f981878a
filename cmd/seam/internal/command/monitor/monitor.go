// Package monitor holds `seam monitor` (a source's per-partition counters)
// and `seam alerts` (list and watch the gate's alerts).
package monitor

import (
	"context"
	"fmt"
	"io"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/command/source"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"
)

// New returns `seam monitor`.
func New(g *client.Globals) *cobra.Command {
	var from, to, sourceTarget string
	var fields bool
	cmd := &cobra.Command{
		Use:   "monitor SUBJECT",
		Short: "Show a source's per-partition counters and match rate",
		Example: `  seam monitor shop.orders
  seam monitor shop.orders --from 2025-03-01 --to 2025-03-07 --fields`,
		Args: cobra.ExactArgs(1),
		RunE: g.Run(func(cmd *cobra.Command, args []string, conn *grpc.ClientConn) error {
			ctx, cancel := g.CallCtx(cmd.Context())
			defer cancel()
			resp, err := gatev1.NewGateServiceClient(conn).GetMonitor(ctx, &gatev1.GetMonitorRequest{Subject: args[0], PartitionFrom: from, PartitionTo: to})
			if err != nil {
				return g.RPCError("monitor "+args[0], err)
			}
			if g.JSON() {
				return output.Proto(cmd.OutOrStdout(), resp)
			}
			w := cmd.OutOrStdout()
			t := output.NewTable(w, "PARTITION", "BATCHES", "RECEIVED", "ACCEPTED", "QUARANTINED", "BLOCKED", "RELEASED", "MATCH RATE", "UPDATED")
			for _, m := range resp.GetPartitions() {
				t.Row(m.GetPartition(), fmt.Sprint(m.GetBatches()), fmt.Sprint(m.GetReceived()), fmt.Sprint(m.GetAccepted()), fmt.Sprint(m.GetQuarantined()),
					fmt.Sprint(m.GetBlocked()), fmt.Sprint(m.GetReleased()), output.Rate(m.GetMatchRate()), output.Time(m.GetUpdateTime()))
			}
			if err := t.Flush(); err != nil {
				return err
			}
			if fields {
				ft := output.NewTable(w, "\nPARTITION", "FIELD", "COUNT", "NULLS", "MEAN", "IDS", "MATCHED")
				for _, m := range resp.GetPartitions() {
					for _, f := range m.GetFields() {
						ft.Row(m.GetPartition(), f.GetField(), fmt.Sprint(f.GetCount()), fmt.Sprint(f.GetNulls()), fmt.Sprintf("%.4g", f.GetMean()),
							fmt.Sprint(f.GetIdChecked()), fmt.Sprint(f.GetIdMatched()))
					}
				}
				if err := ft.Flush(); err != nil {
					return err
				}
			}
			if sourceTarget != "" {
				return source.PrintMonitor(cmd.Context(), w, sourceTarget, args[0])
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&sourceTarget, "source-target", "", "also show the PostgreSQL source feeding SUBJECT: lag, snapshot progress, held changes (the source's target URL)")
	cmd.Flags().StringVar(&from, "from", "", "first partition (inclusive)")
	cmd.Flags().StringVar(&to, "to", "", "last partition (inclusive)")
	cmd.Flags().BoolVar(&fields, "fields", false, "also show per-field statistics")
	return cmd
}

// NewAlerts returns the `seam alerts` group.
func NewAlerts(g *client.Globals) *cobra.Command {
	cmd := &cobra.Command{Use: "alerts", Short: "List and watch the gate's alerts"}
	var subject string
	var after int64
	var limit int32
	list := &cobra.Command{
		Use:     "list",
		Short:   "List alerts after a sequence number",
		Example: "  seam alerts list --subject shop.orders -o json",
		Args:    cobra.NoArgs,
		RunE: g.Run(func(cmd *cobra.Command, _ []string, conn *grpc.ClientConn) error {
			ctx, cancel := g.CallCtx(cmd.Context())
			defer cancel()
			resp, err := gatev1.NewGateServiceClient(conn).ListAlerts(ctx, &gatev1.ListAlertsRequest{Subject: subject, AfterSequence: after, Limit: limit})
			if err != nil {
				return g.RPCError("list alerts", err)
			}
			if g.JSON() {
				return output.Proto(cmd.OutOrStdout(), resp)
			}
			for _, a := range resp.GetAlerts() {
				PrintAlert(cmd.OutOrStdout(), a)
			}
			return nil
		}),
	}
	list.Flags().StringVar(&subject, "subject", "", "only this subject")
	list.Flags().Int64Var(&after, "after", 0, "start after this sequence number")
	list.Flags().Int32Var(&limit, "limit", 100, "most alerts to list")

	var wsubject string
	var wafter int64
	watch := &cobra.Command{
		Use:   "watch",
		Short: "Stream alerts as they are raised, resuming after a disconnect",
		Long: `Print alerts from --after on, then new ones as any gate replica raises
them, until interrupted. When the connection drops it reconnects and
resumes after the last alert printed. With -o json each alert is one line.`,
		Example: `  seam alerts watch
  seam alerts watch --subject shop.orders --after 40 -o json`,
		Args: cobra.NoArgs,
		RunE: g.Run(func(cmd *cobra.Command, _ []string, conn *grpc.ClientConn) error {
			return watchAlerts(cmd.Context(), g, gatev1.NewGateServiceClient(conn), &gatev1.WatchAlertsRequest{Subject: wsubject, AfterSequence: wafter}, cmd.OutOrStdout())
		}),
	}
	watch.Flags().StringVar(&wsubject, "subject", "", "only this subject")
	watch.Flags().Int64Var(&wafter, "after", 0, "start after this sequence number")
	cmd.AddCommand(list, watch)
	return cmd
}

// watchAlerts follows the alert stream, resuming after the last alert
// printed.
func watchAlerts(ctx context.Context, g *client.Globals, c gatev1.GateServiceClient, req *gatev1.WatchAlertsRequest, w io.Writer) error {
	return client.Follow(ctx, g, "watch alerts",
		func() (grpc.ServerStreamingClient[gatev1.WatchAlertsResponse], error) { return c.WatchAlerts(ctx, req) },
		func(resp *gatev1.WatchAlertsResponse) error {
			a := resp.GetAlert()
			req.AfterSequence = a.GetSequence()
			if g.JSON() {
				return output.ProtoLine(w, a)
			}
			PrintAlert(w, a)
			return nil
		})
}

// PrintAlert writes one alert as one line.
func PrintAlert(w io.Writer, a *gatev1.Alert) {
	fmt.Fprintf(w, "#%d %s %s %s %s/%s %s: %s\n", a.GetSequence(), output.Time(a.GetTime()), output.Enum(a.GetSeverity(), "SEVERITY_"), a.GetKind(),
		a.GetSubject(), a.GetPartition(), a.GetCheck(), a.GetMessage())
}
