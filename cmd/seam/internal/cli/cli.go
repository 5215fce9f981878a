// Package cli assembles the seam command: the root, every command group
// and the shared flags, the environment variables that set flags, and the
// exit code of a run. Each group lives in its own package under
// internal/command; this package only wires them together.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/command/adapter"
	"github.com/seamdata/seam/cmd/seam/internal/command/bench"
	"github.com/seamdata/seam/cmd/seam/internal/command/canonical"
	"github.com/seamdata/seam/cmd/seam/internal/command/consumer"
	"github.com/seamdata/seam/cmd/seam/internal/command/contract"
	"github.com/seamdata/seam/cmd/seam/internal/command/demo"
	"github.com/seamdata/seam/cmd/seam/internal/command/events"
	"github.com/seamdata/seam/cmd/seam/internal/command/gate"
	"github.com/seamdata/seam/cmd/seam/internal/command/idmap"
	"github.com/seamdata/seam/cmd/seam/internal/command/monitor"
	"github.com/seamdata/seam/cmd/seam/internal/command/quarantine"
	"github.com/seamdata/seam/cmd/seam/internal/command/source"
	"github.com/seamdata/seam/cmd/seam/internal/command/stream"
	"github.com/seamdata/seam/cmd/seam/internal/command/up"
	"github.com/seamdata/seam/cmd/seam/internal/command/validate"
	"github.com/seamdata/seam/cmd/seam/internal/command/version"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
)

// EnvPrefix prefixes the environment variable of every flag: --grpc-addr
// is also SEAM_GRPC_ADDR.
const EnvPrefix = "SEAM_"

// EnvName returns the environment variable that sets flag name.
func EnvName(flag string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyEnv sets every flag not given on the command line from its SEAM_*
// variable, so flags win over the environment and the environment over
// defaults.
func applyEnv(fs *pflag.FlagSet, getenv func(string) string) error {
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "help" {
			return
		}
		if v := getenv(EnvName(f.Name)); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", EnvName(f.Name), v, err))
			}
		}
	})
	return errors.Join(errs...)
}

// Env is what a run of seam takes from its surroundings.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads SEAM_* variables; nil reads none.
	Getenv func(string) string
	// Version is the version linked into the binary (main.version).
	Version string
}

// Run executes the command line args and returns the exit code.
func Run(ctx context.Context, args []string, env Env) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := NewRoot(env.Getenv, env.Version)
	root.SetArgs(args)
	if env.Stdin != nil {
		root.SetIn(env.Stdin)
	}
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exit.OK
	}
	fmt.Fprintf(env.Stderr, "seam: %v\n", err)
	// Errors from cobra itself (unknown command or flag) are usage errors;
	// so is anything else that stopped the command before an answer.
	return exit.CodeOf(err)
}

// NewRoot returns the whole command tree. getenv reads the SEAM_*
// variables (nil: none); linkedVersion is main.version.
func NewRoot(getenv func(string) string, linkedVersion string) *cobra.Command {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	root := &cobra.Command{
		Use:   "seam",
		Short: "Seam: the contract boundary for external data sources",
		Long: `Seam stops silent breakage at the boundary with external data sources:
a contract registry with enforced notice for breaking changes, adapters into
your canonical model, identifier translation, and a gate that blocks,
quarantines or alerts per check and replays quarantine as a backfill.

Every flag can also be set by an environment variable: --grpc-addr is
SEAM_GRPC_ADDR, --token is SEAM_TOKEN, and so on. Flags win.`,
		Example: `  # run everything on this machine (embedded store in ./seam-data)
  seam up

  # run one service against a shared PostgreSQL
  seam gate serve --store postgres://seam@db/seam --registry-addr registry:7070`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags(), getenv); err != nil {
				return exit.Usagef("%w", err)
			}
			return nil
		},
	}
	g := &client.Globals{Version: version.Resolve(linkedVersion)}
	g.Register(root.PersistentFlags())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return exit.Usagef("%w (see --help)", err) })

	idmapGroup := up.ServeGroup(g, "idmap", "identifier translation")
	idmap.AddCommands(idmapGroup, g)
	adapterGroup := up.ServeGroup(g, "adapter", "the adapter into the canonical model")
	adapter.AddCommands(adapterGroup, g)
	gateGroup := up.ServeGroup(g, "gate", "the gate pipelines call")
	gate.AddCommands(gateGroup, g)
	root.AddCommand(
		up.New(g),
		up.ServeGroup(g, "registry", "the contract registry"),
		adapterGroup,
		idmapGroup,
		gateGroup,
		contract.New(g),
		canonical.New(g),
		consumer.New(g),
		contract.NewBlastRadius(g),
		events.New(g),
		quarantine.New(g),
		monitor.New(g),
		monitor.NewAlerts(g),
		validate.New(g),
		bench.New(g),
		demo.New(g),
		up.NewMigrate(g),
		source.New(g),
		stream.New(g),
		version.New(g),
	)
	return root
}
