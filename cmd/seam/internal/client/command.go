package client

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
)

// A seam command is its usage line (use: the name and what it takes), the
// positional arguments it accepts (args, which checks what use says), its
// Help and its body. Leaf makes the cobra command of them; Command,
// ServiceCommand and Local do so for the bodies that call Seam or check
// -o first.

// Help is what a command's --help says besides the usage line: the
// summary, the description and examples, and the flags.
type Help struct {
	Short   string
	Long    string
	Example string
	// Flags declares the command's own flags (nil: none).
	Flags func(fs *pflag.FlagSet)
}

// Leaf returns the command of use, args and help that runs run as it is.
func Leaf(use string, args cobra.PositionalArgs, help Help, run func(cmd *cobra.Command, args []string) error) *cobra.Command {
	cmd := &cobra.Command{Use: use, Args: args, Short: help.Short, Long: help.Long, Example: help.Example, RunE: run}
	if help.Flags != nil {
		help.Flags(cmd.Flags())
	}
	return cmd
}

// RunFunc is the body of a command that calls Seam.
type RunFunc func(cmd *cobra.Command, args []string, conn grpc.ClientConnInterface) error

// Command returns a command that calls Seam: it validates the output
// format, opens the connection, runs run on it and closes it.
func (g *Globals) Command(use string, args cobra.PositionalArgs, help Help, run RunFunc) *cobra.Command {
	return Leaf(use, args, help, func(cmd *cobra.Command, args []string) error {
		conn, err := g.Connect()
		if err != nil {
			return err
		}
		defer conn.Close()
		return run(cmd, args, conn)
	})
}

// ServiceCommand is Command for a command that calls one Seam service:
// run gets that service's client, made by newClient (such as
// gatev1.NewGateServiceClient) on the connection.
func ServiceCommand[C any](g *Globals, newClient func(grpc.ClientConnInterface) C, use string, args cobra.PositionalArgs, help Help, run func(cmd *cobra.Command, args []string, c C) error) *cobra.Command {
	return g.Command(use, args, help, func(cmd *cobra.Command, args []string, conn grpc.ClientConnInterface) error {
		return run(cmd, args, newClient(conn))
	})
}

// Local returns a command that works without Seam (on local files, or
// starting it): it validates the output format, then runs run.
func (g *Globals) Local(use string, args cobra.PositionalArgs, help Help, run func(cmd *cobra.Command, args []string) error) *cobra.Command {
	return Leaf(use, args, help, func(cmd *cobra.Command, args []string) error {
		if err := g.ValidateOutput(); err != nil {
			return err
		}
		return run(cmd, args)
	})
}
