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
	"github.com/seamdata/seam/cmd/seam/internal/command/alerts"
	"github.com/seamdata/seam/cmd/seam/internal/command/bench"
	"github.com/seamdata/seam/cmd/seam/internal/command/blastradius"
	"github.com/seamdata/seam/cmd/seam/internal/command/contract"
	"github.com/seamdata/seam/cmd/seam/internal/command/demo"
	"github.com/seamdata/seam/cmd/seam/internal/command/gate"
	"github.com/seamdata/seam/cmd/seam/internal/command/idmap"
	"github.com/seamdata/seam/cmd/seam/internal/command/incident"
	"github.com/seamdata/seam/cmd/seam/internal/command/monitor"
	"github.com/seamdata/seam/cmd/seam/internal/command/quarantine"
	"github.com/seamdata/seam/cmd/seam/internal/command/registry"
	"github.com/seamdata/seam/cmd/seam/internal/command/source"
	"github.com/seamdata/seam/cmd/seam/internal/command/stream"
	"github.com/seamdata/seam/cmd/seam/internal/command/token"
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
	g := &client.Globals{Version: version.Resolve(linkedVersion), DataDir: client.DefaultDataDir}
	root := &cobra.Command{
		Use:   "seam",
		Short: "Seam: the contract boundary for external data sources",
		Long: `Seam stops silent breakage at the boundary with external data sources:
a contract registry with enforced notice for breaking changes, adapters into
your canonical model, identifier translation, and a gate that blocks,
quarantines or alerts per check and replays quarantine as a backfill.

seam up runs Seam on this machine; the other commands are its client and
find its address and the admin token it created in ./seam-data (or
--data-dir) by themselves.

Every flag can also be set by an environment variable named after it:
--addr is SEAM_ADDR, --token is SEAM_TOKEN, and so on. Flags win.

Exit codes, the same for every command:
  0  done; the answer is yes
  1  the data or the change was judged and failed (a blocked batch, a
     refused contract, a failing validation)
  2  usage, connection or authentication problem: nothing was judged
  3  the contract or the input file is not valid and could not be judged`,
		Example: `  # run everything on this machine (embedded store in ./seam-data)
  seam up

  # in another terminal: register a contract, send a day of data
  seam contract register core/examples/shop_orders_v1.yaml
  seam gate ingest shop.orders day1.ndjson --partition 2026-03-01

  # run one service against a shared PostgreSQL
  seam gate serve --store postgres://seam@db/seam --registry-addr registry:7070`,
		Version:       g.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags(), getenv); err != nil {
				return exit.Usagef("%w", err)
			}
			return nil
		},
	}
	root.SetVersionTemplate("seam {{.Version}}\n")
	root.SetFlagErrorFunc(flagError)

	// The seam <service> groups hold serve and the service's client
	// commands; the client commands get the client flags one by one, so
	// serve --help lists only what serve reads.
	serviceGroup := func(service, what string, add func(*cobra.Command, *client.Globals)) *cobra.Command {
		group := up.ServeGroup(g, service, what)
		if add != nil {
			add(group, g)
		}
		for _, c := range group.Commands() {
			if c.Name() != "serve" {
				g.AddClientFlags(c.PersistentFlags())
			}
		}
		return group
	}
	clientCmds := []*cobra.Command{
		contract.New(g),
		registry.NewCanonical(g),
		registry.NewConsumer(g),
		blastradius.New(g),
		incident.New(g),
		registry.NewEvents(g),
		quarantine.New(g),
		monitor.New(g),
		alerts.New(g),
		demo.New(g),
		source.New(g),
		stream.New(g),
	}
	for _, c := range clientCmds {
		g.AddClientFlags(c.PersistentFlags())
	}
	root.AddCommand(
		up.New(g),
		serviceGroup("registry", "the contract registry", nil),
		serviceGroup("adapter", "the adapter into the canonical model", adapter.AddCommands),
		serviceGroup("idmap", "identifier translation", idmap.AddCommands),
		serviceGroup("gate", "the gate pipelines call", gate.AddCommands),
	)
	root.AddCommand(clientCmds...)
	root.AddCommand(
		validate.New(g),
		bench.New(g, func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			return Run(ctx, args, Env{Stdout: stdout, Stderr: stderr, Getenv: getenv, Version: linkedVersion})
		}),
		up.NewMigrate(g),
		token.New(g),
		version.New(g),
	)
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands makes every group answer an unknown
// subcommand or a stray argument with an error that suggests the nearest
// subcommand by edit distance (exit 2), instead of printing its help and exiting 0. A
// group run alone still prints its help.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		refuseUnknownSubcommands(c)
	}
	if !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := suggestCommand(cmd, args[0]); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		} else {
			var names []string
			for _, c := range cmd.Commands() {
				if c.IsAvailableCommand() {
					names = append(names, c.Name())
				}
			}
			msg += "; its commands are " + strings.Join(names, ", ")
		}
		return exit.Usagef("%s (see %s --help)", msg, cmd.CommandPath())
	}
}
