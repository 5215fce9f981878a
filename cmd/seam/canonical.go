package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/seamdata/seam/core/contract"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

func newCanonicalCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "canonical",
		Short: "Register and read canonical models (what adapters map into)",
	}
	var file string
	register := &cobra.Command{
		Use:     "register -f FILE",
		Short:   "Register a new version of a canonical model",
		Example: "  seam canonical register -f commerce_order.yaml",
		Args:    cobra.NoArgs,
		RunE: withClient(g, func(cmd *cobra.Command, _ []string, conn *grpc.ClientConn) error {
			data, err := readInput(cmd, file)
			if err != nil {
				return err
			}
			m, err := contract.LoadCanonicalModel(data, file)
			if err != nil {
				return answerNo("%w", err)
			}
			ctx, cancel := g.callCtx(cmd.Context())
			defer cancel()
			resp, err := registryv1.NewRegistryServiceClient(conn).RegisterCanonicalModel(ctx, &registryv1.RegisterCanonicalModelRequest{Model: m})
			if err != nil {
				return g.rpcError("register canonical model "+m.GetName(), err)
			}
			if g.Output == "json" {
				return printJSON(cmd.OutOrStdout(), resp)
			}
			v := resp.GetVersion()
			if resp.GetUnchanged() {
				fmt.Fprintf(cmd.OutOrStdout(), "%s v%d is unchanged; nothing registered\n", v.GetName(), v.GetVersion())
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s v%d registered (%d fields)\n", v.GetName(), v.GetVersion(), len(v.GetModel().GetFields()))
			return nil
		}),
	}
	register.Flags().StringVarP(&file, "file", "f", "", "canonical model YAML (- for standard input)")

	var version int32
	get := &cobra.Command{
		Use:     "get NAME",
		Short:   "Show a canonical model version (default: the latest)",
		Example: "  seam canonical get commerce.order -o json",
		Args:    cobra.ExactArgs(1),
		RunE: withClient(g, func(cmd *cobra.Command, args []string, conn *grpc.ClientConn) error {
			ctx, cancel := g.callCtx(cmd.Context())
			defer cancel()
			resp, err := registryv1.NewRegistryServiceClient(conn).GetCanonicalModel(ctx, &registryv1.GetCanonicalModelRequest{Name: args[0], Version: version})
			if err != nil {
				return g.rpcError("get canonical model "+args[0], err)
			}
			if g.Output == "json" {
				return printJSON(cmd.OutOrStdout(), resp)
			}
			v := resp.GetVersion()
			fmt.Fprintf(cmd.OutOrStdout(), "%s v%d, owner %s, registered %s by %s\n\n", v.GetName(), v.GetVersion(), orDash(v.GetModel().GetOwner()), fmtTime(v.GetCreateTime()), v.GetAuthor())
			t := newTable(cmd.OutOrStdout(), "FIELD", "TYPE", "REQUIRED", "KEY", "IDENTIFIER")
			for ref := range contract.Fields(v.GetModel().GetFields()) {
				f := ref.Field
				t.row(ref.Name, short(f.GetType(), "FIELD_TYPE_"), yesNo(f.GetRequired()), yesNo(f.GetKey()), orDash(contract.IdentifierString(f.GetIdentifier())))
			}
			return t.flush()
		}),
	}
	get.Flags().Int32Var(&version, "version", 0, "version number (default: the latest)")

	list := &cobra.Command{
		Use:     "list",
		Short:   "List canonical models with their latest version",
		Example: "  seam canonical list",
		Args:    cobra.NoArgs,
		RunE: withClient(g, func(cmd *cobra.Command, _ []string, conn *grpc.ClientConn) error {
			ctx, cancel := g.callCtx(cmd.Context())
			defer cancel()
			resp, err := registryv1.NewRegistryServiceClient(conn).ListCanonicalModels(ctx, &registryv1.ListCanonicalModelsRequest{})
			if err != nil {
				return g.rpcError("list canonical models", err)
			}
			if g.Output == "json" {
				return printJSON(cmd.OutOrStdout(), resp)
			}
			t := newTable(cmd.OutOrStdout(), "MODEL", "LATEST", "FIELDS", "OWNER")
			for _, v := range resp.GetModels() {
				t.row(v.GetName(), "v"+strconv.Itoa(int(v.GetVersion())), strconv.Itoa(len(v.GetModel().GetFields())), orDash(v.GetModel().GetOwner()))
			}
			return t.flush()
		}),
	}
	cmd.AddCommand(register, get, list)
	return cmd
}
