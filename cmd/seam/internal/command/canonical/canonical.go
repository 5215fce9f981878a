// Package canonical holds `seam canonical`: register and read the canonical
// models adapters map into.
package canonical

import (
	"fmt"
	"io"
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
		Use:     "register FILE",
		Short:   "Register a new version of a canonical model",
		Example: "  seam canonical register commerce_order.yaml",
		Args:    cobra.MaximumNArgs(1),
		RunE: g.Run(func(cmd *cobra.Command, args []string, conn grpc.ClientConnInterface) error {
			path, data, err := client.ReadFile(cmd, args, file)
			if err != nil {
				return err
			}
			m, err := contract.LoadCanonicalModel(data, path)
			if err != nil {
				return exit.Invalidf("%w", err)
			}
			resp, err := client.CallDocument(cmd.Context(), g, "register canonical model "+m.GetName(), registryv1.NewRegistryServiceClient(conn).RegisterCanonicalModel, &registryv1.RegisterCanonicalModelRequest{Model: m})
			if err != nil {
				return err
			}
			return client.Print(cmd, g, resp, func(w io.Writer, resp *registryv1.RegisterCanonicalModelResponse) error {
				v := resp.GetVersion()
				if resp.GetUnchanged() {
					fmt.Fprintf(w, "%s v%d is unchanged; nothing registered\n", v.GetName(), v.GetVersion())
					return nil
				}
				fmt.Fprintf(w, "%s v%d registered (%d fields)\n", v.GetName(), v.GetVersion(), len(v.GetModel().GetFields()))
				return nil
			})
		}),
	}
	register.Flags().StringVarP(&file, "file", "f", "", "canonical model YAML (- for standard input); or give FILE as the argument")

	var version int32
	get := &cobra.Command{
		Use:     "get NAME",
		Short:   "Show a canonical model version (default: the latest)",
		Example: "  seam canonical get commerce.order -o json",
		Args:    cobra.ExactArgs(1),
		RunE: g.Run(func(cmd *cobra.Command, args []string, conn grpc.ClientConnInterface) error {
			return client.Show(cmd, g, "get canonical model "+args[0], registryv1.NewRegistryServiceClient(conn).GetCanonicalModel, &registryv1.GetCanonicalModelRequest{Name: args[0], Version: version},
				func(w io.Writer, resp *registryv1.GetCanonicalModelResponse) error {
					v := resp.GetVersion()
					fmt.Fprintf(w, "%s v%d, owner %s, registered %s by %s\n\n", v.GetName(), v.GetVersion(), output.OrDash(v.GetModel().GetOwner()), output.Time(v.GetCreateTime()), v.GetAuthor())
					t := output.NewTable(w, "FIELD", "TYPE", "REQUIRED", "KEY", "IDENTIFIER")
					for ref := range contract.Fields(v.GetModel().GetFields()) {
						f := ref.Field
						t.Row(ref.Name, output.Enum(f.GetType(), "FIELD_TYPE_"), output.YesNo(f.GetRequired()), output.YesNo(f.GetKey()), output.OrDash(contract.IdentifierString(f.GetIdentifier())))
					}
					return t.Flush()
				})
		}),
	}
	get.Flags().Int32Var(&version, "version", 0, "version number (default: the latest)")

	list := &cobra.Command{
		Use:     "list",
		Short:   "List canonical models with their latest version",
		Example: "  seam canonical list",
		Args:    cobra.NoArgs,
		RunE: g.Run(func(cmd *cobra.Command, _ []string, conn grpc.ClientConnInterface) error {
			return client.Show(cmd, g, "list canonical models", registryv1.NewRegistryServiceClient(conn).ListCanonicalModels, &registryv1.ListCanonicalModelsRequest{},
				func(w io.Writer, resp *registryv1.ListCanonicalModelsResponse) error {
					t := output.NewTable(w, "MODEL", "LATEST", "FIELDS", "OWNER")
					for _, v := range resp.GetModels() {
						t.Row(v.GetName(), "v"+strconv.Itoa(int(v.GetVersion())), strconv.Itoa(len(v.GetModel().GetFields())), output.OrDash(v.GetModel().GetOwner()))
					}
					return t.Flush()
				})
		}),
	}
	cmd.AddCommand(register, get, list)
	return cmd
}
