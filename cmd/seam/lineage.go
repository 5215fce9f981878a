package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/seamdata/seam/core/contract"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

func newConsumerCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "consumer",
		Short: "Declare and list downstream consumers (lineage)",
	}
	var file string
	register := &cobra.Command{
		Use:   "register -f FILE",
		Short: "Create or replace a consumer: what it reads, how, and what it produces",
		Example: `  seam consumer register -f customer_ltv.yaml

  # customer_ltv.yaml
  name: features.customer_ltv
  owner: team-ml
  inputs:
    - {subject: shop.orders, fields: [customer_id, amount], usage: JOIN_KEY}
  produces: [features.customer_ltv]`,
		Args: cobra.NoArgs,
		RunE: withClient(g, func(cmd *cobra.Command, _ []string, conn *grpc.ClientConn) error {
			data, err := readInput(cmd, file)
			if err != nil {
				return err
			}
			c := &registryv1.Consumer{}
			if err := contract.Decode(data, file, c); err != nil {
				return answerNo("%w", err)
			}
			ctx, cancel := g.callCtx(cmd.Context())
			defer cancel()
			resp, err := registryv1.NewRegistryServiceClient(conn).RegisterConsumer(ctx, &registryv1.RegisterConsumerRequest{Consumer: c})
			if err != nil {
				return g.rpcError("register consumer "+c.GetName(), err)
			}
			if g.Output == "json" {
				return printJSON(cmd.OutOrStdout(), resp)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "consumer %s registered (%d inputs, produces %s)\n", resp.GetConsumer().GetName(), len(resp.GetConsumer().GetInputs()), orDash(strings.Join(resp.GetConsumer().GetProduces(), ", ")))
			return nil
		}),
	}
	register.Flags().StringVarP(&file, "file", "f", "", "consumer YAML (- for standard input)")

	var subject string
	list := &cobra.Command{
		Use:     "list",
		Short:   "List consumers, optionally only those reading a subject",
		Example: "  seam consumer list --subject shop.orders",
		Args:    cobra.NoArgs,
		RunE: withClient(g, func(cmd *cobra.Command, _ []string, conn *grpc.ClientConn) error {
			ctx, cancel := g.callCtx(cmd.Context())
			defer cancel()
			resp, err := registryv1.NewRegistryServiceClient(conn).ListConsumers(ctx, &registryv1.ListConsumersRequest{Subject: subject})
			if err != nil {
				return g.rpcError("list consumers", err)
			}
			if g.Output == "json" {
				return printJSON(cmd.OutOrStdout(), resp)
			}
			t := newTable(cmd.OutOrStdout(), "CONSUMER", "OWNER", "READS", "PRODUCES")
			for _, c := range resp.GetConsumers() {
				t.row(c.GetName(), orDash(c.GetOwner()), describeInputs(c.GetInputs()), orDash(strings.Join(c.GetProduces(), ",")))
			}
			return t.flush()
		}),
	}
	list.Flags().StringVar(&subject, "subject", "", "only consumers reading this subject directly")
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
			src += " " + strings.ToLower(short(u, "USAGE_KIND_"))
		}
		parts = append(parts, src)
	}
	return orDash(strings.Join(parts, "; "))
}

func newBlastRadiusCmd(g *globals) *cobra.Command {
	var fields []string
	var file string
	cmd := &cobra.Command{
		Use:   "blast-radius SUBJECT",
		Short: "Every consumer, direct and transitive, a change to a subject reaches",
		Example: `  seam blast-radius shop.orders
  seam blast-radius shop.orders --field customer_id
  seam blast-radius shop.orders -f shop_orders_v2.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: withClient(g, func(cmd *cobra.Command, args []string, conn *grpc.ClientConn) error {
			req := &registryv1.GetBlastRadiusRequest{Subject: args[0], Fields: fields}
			if file != "" {
				data, err := readInput(cmd, file)
				if err != nil {
					return err
				}
				c, err := contract.Load(data, file)
				if err != nil {
					return answerNo("%w", err)
				}
				req.Proposed = c
			}
			ctx, cancel := g.callCtx(cmd.Context())
			defer cancel()
			resp, err := registryv1.NewRegistryServiceClient(conn).GetBlastRadius(ctx, req)
			if err != nil {
				return g.rpcError("blast radius of "+args[0], err)
			}
			if g.Output == "json" {
				return printJSON(cmd.OutOrStdout(), resp)
			}
			w := cmd.OutOrStdout()
			scope := "the whole subject"
			if len(resp.GetChangedFields()) > 0 {
				scope = strings.Join(resp.GetChangedFields(), ", ")
			}
			fmt.Fprintf(w, "%s, changing %s: %d consumers\n", args[0], scope, len(resp.GetConsumers()))
			return printAffected(w, "consumers affected", resp.GetConsumers())
		}),
	}
	cmd.Flags().StringSliceVar(&fields, "field", nil, "changed fields (repeatable); default: the whole subject")
	cmd.Flags().StringVarP(&file, "file", "f", "", "a proposed contract: the changed fields are its breaking changes")
	return cmd
}
