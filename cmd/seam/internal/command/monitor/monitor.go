// Package monitor holds `seam monitor`: a source's per-partition counters.
package monitor

import (
	"fmt"
	"io"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/command/source"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// New returns `seam monitor`.
func New(g *client.Globals) *cobra.Command {
	var from, to, sourceTarget string
	var fields bool
	return client.ServiceCommand(g, gatev1.NewGateServiceClient, "monitor SUBJECT", cobra.ExactArgs(1), client.Help{
		Short: "Show a source's per-partition counters and match rate",
		Example: `  seam monitor shop.orders
  seam monitor shop.orders --from 2025-03-01 --to 2025-03-07 --fields`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&sourceTarget, "source-target", "", "also show the PostgreSQL source feeding SUBJECT: lag, snapshot progress, held changes (the source's target URL)")
			fs.StringVar(&from, "from", "", "first partition (inclusive)")
			fs.StringVar(&to, "to", "", "last partition (inclusive)")
			fs.BoolVar(&fields, "fields", false, "also show per-field statistics")
		},
	}, func(cmd *cobra.Command, args []string, gc gatev1.GateServiceClient) error {
		return client.Show(cmd, g, "monitor "+args[0], gc.GetMonitor, &gatev1.GetMonitorRequest{Subject: args[0], PartitionFrom: from, PartitionTo: to},
			func(w io.Writer, resp *gatev1.GetMonitorResponse) error {
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
			})
	})
}
