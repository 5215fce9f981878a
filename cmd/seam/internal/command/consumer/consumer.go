// Package consumer holds `seam consumer`: declare and list the downstream
// consumers whose lineage decides who is told of a change.
package consumer

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/core/contract"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// New returns the `seam consumer` group.
func New(g *client.Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "consumer",
		Short: "Declare and list downstream consumers (lineage)",
	}
	var file string
	register := &cobra.Command{
		Use:   "register FILE",
		Short: "Create or replace a consumer: what it reads, how, and what it produces",
		Example: `  seam consumer register customer_ltv.yaml

  # customer_ltv.yaml
  name: features.customer_ltv
  owner: team-ml
  inputs:
    - {subject: shop.orders, fields: [customer_id, amount], usage: JOIN_KEY}
  produces: [features.customer_ltv]`,
		Args: cobra.MaximumNArgs(1),
		RunE: g.Run(func(cmd *cobra.Command, args []string, conn grpc.ClientConnInterface) error {
			path, data, err := client.ReadFile(cmd, args, file)
			if err != nil {
				return err
			}
			c := &registryv1.Consumer{}
			if err := contract.Decode(data, path, c); err != nil {
				return exit.Invalidf("%w", err)
			}
			resp, err := client.CallDocument(cmd.Context(), g, "register consumer "+c.GetName(), registryv1.NewRegistryServiceClient(conn).RegisterConsumer, &registryv1.RegisterConsumerRequest{Consumer: c})
			if err != nil {
				return err
			}
			return client.Print(cmd, g, resp, func(w io.Writer, resp *registryv1.RegisterConsumerResponse) error {
				fmt.Fprintf(w, "consumer %s registered (%d inputs, produces %s)\n", resp.GetConsumer().GetName(), len(resp.GetConsumer().GetInputs()), output.OrDash(strings.Join(resp.GetConsumer().GetProduces(), ", ")))
				return nil
			})
		}),
	}
	register.Flags().StringVarP(&file, "file", "f", "", "consumer YAML (- for standard input); or give FILE as the argument")

	var subject string
	list := &cobra.Command{
		Use:     "list [SUBJECT]",
		Short:   "List consumers, optionally only those reading a subject",
		Example: "  seam consumer list shop.orders",
		Args:    cobra.MaximumNArgs(1),
		RunE: g.Run(func(cmd *cobra.Command, args []string, conn grpc.ClientConnInterface) error {
			subject, err := client.Subject(args, subject)
			if err != nil {
				return err
			}
			return client.Show(cmd, g, "list consumers", registryv1.NewRegistryServiceClient(conn).ListConsumers, &registryv1.ListConsumersRequest{Subject: subject},
				func(w io.Writer, resp *registryv1.ListConsumersResponse) error {
					t := output.NewTable(w, "CONSUMER", "OWNER", "READS", "PRODUCES")
					for _, c := range resp.GetConsumers() {
						t.Row(c.GetName(), output.OrDash(c.GetOwner()), describeInputs(c.GetInputs()), output.OrDash(strings.Join(c.GetProduces(), ",")))
					}
					return t.Flush()
				})
		}),
	}
	list.Flags().StringVar(&subject, "subject", "", "only consumers reading this subject directly (or give it as the argument)")
	cmd.AddCommand(register, list)
	return cmd
}

func describeInputs(in []*registryv1.Input) string {
	var parts []string
	for _, i := range in {
		src := i.GetSubject()
		switch {
		case i.GetCanonical() != "":
			src = "canonical " + i.GetCanonical()
		case src == "":
			src = "dataset " + i.GetDataset()
		}
		if len(i.GetFields()) > 0 {
			src += "(" + strings.Join(i.GetFields(), ",") + ")"
		}
		if u := i.GetUsage(); u != registryv1.UsageKind_USAGE_KIND_UNSPECIFIED {
			src += " " + strings.ToLower(output.Enum(u, "USAGE_KIND_"))
		}
		parts = append(parts, src)
	}
	return output.OrDash(strings.Join(parts, "; "))
}
