// Package gate holds the gate's client commands under `seam gate`: ingest
// a file, seal a partition, show it and wait for its verdict, contain and
// release a source, list containments.
package gate

import (
	"fmt"
	"io"
	"strings"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// AddCommands adds the gate's client commands to the `seam gate` group.
func AddCommands(group *cobra.Command, g *client.Globals) {
	group.AddCommand(newGateIngestCmd(g), newSealCmd(g), newPartitionCmd(g), newWaitCmd(g), newContainCmd(g, true), newContainCmd(g, false), newContainmentsCmd(g))
}

func newContainCmd(g *client.Globals, contain bool) *cobra.Command {
	var reason string
	use, short, example := "contain", "Send everything a source sends to quarantine until released",
		`  seam gate contain shop.orders --reason "INC-1: customer_id switched to UUID"`
	if !contain {
		use, short, example = "release", "End a source's containment (held records stay held until replayed)",
			`  seam gate release shop.orders --reason "v2 with the uuid mapping is active"`
	}
	return client.ServiceCommand(g, gatev1.NewGateServiceClient, use+" SUBJECT --reason R", cobra.ExactArgs(1), client.Help{
		Short:   short,
		Example: example,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&reason, "reason", "", "why (audited)")
		},
	}, func(cmd *cobra.Command, args []string, c gatev1.GateServiceClient) error {
		if strings.TrimSpace(reason) == "" {
			return exit.Usagef("give --reason: it is kept in the audit trail and sent to the registry's event stream")
		}
		ctx, cancel := g.CallCtx(cmd.Context())
		defer cancel()
		var ct *gatev1.Containment
		var err error
		if contain {
			var r *gatev1.ContainResponse
			r, err = c.Contain(ctx, &gatev1.ContainRequest{Subject: args[0], Reason: reason})
			ct = r.GetContainment()
		} else {
			var r *gatev1.ReleaseResponse
			r, err = c.Release(ctx, &gatev1.ReleaseRequest{Subject: args[0], Reason: reason})
			ct = r.GetContainment()
		}
		if err != nil {
			return g.RPCError(use+" "+args[0], err)
		}
		if g.JSON() {
			return output.Proto(cmd.OutOrStdout(), ct)
		}
		printContainments(cmd.OutOrStdout(), []*gatev1.Containment{ct})
		return nil
	})
}

func newContainmentsCmd(g *client.Globals) *cobra.Command {
	return client.ServiceCommand(g, gatev1.NewGateServiceClient, "containments", cobra.NoArgs, client.Help{
		Short:   "List sources that were ever contained, with their state",
		Example: "  seam gate containments -o json",
	}, func(cmd *cobra.Command, _ []string, gc gatev1.GateServiceClient) error {
		return client.Show(cmd, g, "list containments", gc.ListContainments, &gatev1.ListContainmentsRequest{},
			func(w io.Writer, resp *gatev1.ListContainmentsResponse) error {
				printContainments(w, resp.GetContainments())
				return nil
			})
	})
}

func printContainments(w io.Writer, cs []*gatev1.Containment) {
	t := output.NewTable(w, "SUBJECT", "CONTAINED", "AUTOMATIC", "BY", "SINCE", "REASON")
	for _, c := range cs {
		t.Row(c.GetSubject(), fmt.Sprint(c.GetContained()), fmt.Sprint(c.GetAutomatic()), c.GetPrincipal(), output.Time(c.GetTime()), c.GetReason())
	}
	_ = t.Flush()
}
