// Package canonical holds `seam canonical`: register and read the canonical
// models adapters map into.
package canonical

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/core/contract"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// New returns the `seam canonical` group.
func New(g *client.Globals) *cobra.Command {
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
		RunE: g.Run(func(cmd *cobra.Command, _ []string, conn *grpc.ClientConn) error {
			data, err := client.ReadInput(cmd, file)
			if err != nil {
				return err
			}
			m, err := contract.LoadCanonicalModel(data, file)
			if err != nil {
				return exit.Failf("%w", err)
			}
			ctx, cancel := g.CallCtx(cmd.Context())
			defer cancel()
			resp, err := registryv1.NewRegistryServiceClient(conn).RegisterCanonicalModel(ctx, &registryv1.RegisterCanonicalModelRequest{Model: m})
			if err != nil {
				return g.RPCError("register canonical model "+m.GetName(), err)
			}
			if g.JSON() {
				return output.Proto(cmd.OutOrStdout(), resp)
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
		RunE: g.Run(func(cmd *cobra.Command, args []string, conn *grpc.ClientConn) error {
			ctx, cancel := g.CallCtx(cmd.Context())
			defer cancel()
			resp, err := registryv1.NewRegistryServiceClient(conn).GetCanonicalModel(ctx, &registryv1.GetCanonicalModelRequest{Name: args[0], Version: version})
			if err != nil {
				return g.RPCError("get canonical model "+args[0], err)
			}
			if g.JSON() {
				return output.Proto(cmd.OutOrStdout(), resp)
			}
			v := resp.GetVersion()
			fmt.Fprintf(cmd.OutOrStdout(), "%s v%d, owner %s, registered %s by %s\n\n", v.GetName(), v.GetVersion(), output.OrDash(v.GetModel().GetOwner()), output.Time(v.GetCreateTime()), v.GetAuthor())
			t := output.NewTable(cmd.OutOrStdout(), "FIELD", "TYPE", "REQUIRED", "KEY", "IDENTIFIER")
			for ref := range contract.Fields(v.GetModel().GetFields()) {
				f := ref.Field
				t.Row(ref.Name, output.Enum(f.GetType(), "FIELD_TYPE_"), output.YesNo(f.GetRequired()), output.YesNo(f.GetKey()), output.OrDash(contract.IdentifierString(f.GetIdentifier())))
			}
			return t.Flush()
		}),
	}
	get.Flags().Int32Var(&version, "version", 0, "version number (default: the latest)")

	list := &cobra.Command{
		Use:     "list",
		Short:   "List canonical models with their latest version",
		Example: "  seam canonical list",
		Args:    cobra.NoArgs,
		RunE: g.Run(func(cmd *cobra.Command, _ []string, conn *grpc.ClientConn) error {
			ctx, cancel := g.CallCtx(cmd.Context())
			defer cancel()
			resp, err := registryv1.NewRegistryServiceClient(conn).ListCanonicalModels(ctx, &registryv1.ListCanonicalModelsRequest{})
			if err != nil {
				return g.RPCError("list canonical models", err)
			}
			if g.JSON() {
				return output.Proto(cmd.OutOrStdout(), resp)
			}
			t := output.NewTable(cmd.OutOrStdout(), "MODEL", "LATEST", "FIELDS", "OWNER")
			for _, v := range resp.GetModels() {
				t.Row(v.GetName(), "v"+strconv.Itoa(int(v.GetVersion())), strconv.Itoa(len(v.GetModel().GetFields())), output.OrDash(v.GetModel().GetOwner()))
			}
			return t.Flush()
		}),
	}
	cmd.AddCommand(register, get, list)
	return cmd
}
