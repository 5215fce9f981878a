package contract

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/cmd/seam/internal/proposal"
)

func newContractInferCmd(g *client.Globals) *cobra.Command {
	var f proposal.Flags
	var out string
	cmd := g.Command("infer SUBJECT", cobra.ExactArgs(1), client.Help{
		Short: "Propose the next contract version from the records the gate holds",
		Long: `Read the records the gate holds for SUBJECT (the newest partitions, or
--partition), profile every field (type, shape, nulls, values, bounds)
and propose the next contract version: the smallest change to the active
one under which the changed records pass, with a mapping that keeps the
canonical model — and so every consumer — unchanged where it can: a
renamed field declared with renamed_from, an identifier in a new format
translated back to the one the canonical field holds, a widened type
cast back. A few odd records are not a change of the source (see
--min-share and --min-count): they stay held under the proposal too.

The proposal is contract YAML with comments saying what was observed; it
goes to standard output (or --out) and a summary to standard error. Run
` + "`seam contract check -f FILE`" + ` on it next. Records the gate accepted are not
kept by it (the pipeline owns them), so only held records are read;
the monitor's counts of the accepted ones go into the header.`,
		Example: `  seam contract infer shop.orders > shop_orders_v2.yaml
  seam contract infer bank.transactions --partition 2026-03-08 --out v2.yaml
  seam contract infer shop.orders -o json`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&out, "out", "", "write the proposal to this file instead of standard output")
		},
	}, func(cmd *cobra.Command, args []string, conn grpc.ClientConnInterface) error {
		gathered, p, err := proposal.Infer(cmd, g, conn, args[0], &f)
		if err != nil {
			return err
		}
		if out != "" {
			if err := os.WriteFile(out, p.YAML, 0o644); err != nil {
				return exit.Usagef("write the proposal: %w", err)
			}
		}
		if g.JSON() {
			return output.Value(cmd.OutOrStdout(), proposal.JSON(gathered, p))
		}
		if out == "" {
			if _, err := cmd.OutOrStdout().Write(p.YAML); err != nil {
				return err
			}
		}
		file := out
		if file == "" {
			file = "FILE"
		}
		return proposal.Print(cmd.ErrOrStderr(), p, file)
	})
	f.Add(cmd)
	return cmd
}
