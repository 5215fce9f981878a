package client

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
)

// Leaf is what a seam command is besides its body: the usage line, the
// help, the positional arguments it takes and its flags. Command, Local
// and ServiceCommand make a cobra command of it.
type Leaf struct {
	Use     string
	Short   string
	Long    string
	Example string
	Args    cobra.PositionalArgs
	// Flags declares the command's own flags (nil: none).
	Flags func(fs *pflag.FlagSet)
}

func (l Leaf) command(run func(cmd *cobra.Command, args []string) error) *cobra.Command {
	cmd := &cobra.Command{Use: l.Use, Short: l.Short, Long: l.Long, Example: l.Example, Args: l.Args, RunE: run}
	if l.Flags != nil {
		l.Flags(cmd.Flags())
	}
	return cmd
}

// RunFunc is the body of a command that calls Seam.
type RunFunc func(cmd *cobra.Command, args []string, conn grpc.ClientConnInterface) error

// Command returns the command leaf describes, which calls Seam: it
// validates the output format, opens the connection, runs run on it and
// closes it.
func (g *Globals) Command(leaf Leaf, run RunFunc) *cobra.Command {
	return leaf.command(func(cmd *cobra.Command, args []string) error {
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
func ServiceCommand[C any](g *Globals, newClient func(grpc.ClientConnInterface) C, leaf Leaf, run func(cmd *cobra.Command, args []string, c C) error) *cobra.Command {
	return g.Command(leaf, func(cmd *cobra.Command, args []string, conn grpc.ClientConnInterface) error {
		return run(cmd, args, newClient(conn))
	})
}

// Local returns the command leaf describes, which works without Seam (on
// local files, or starting it): it validates the output format, then
// runs run.
func (g *Globals) Local(leaf Leaf, run func(cmd *cobra.Command, args []string) error) *cobra.Command {
	return leaf.command(func(cmd *cobra.Command, args []string) error {
		if err := g.ValidateOutput(); err != nil {
			return err
		}
		return run(cmd, args)
	})
}
