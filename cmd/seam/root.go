package main

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
)

// Exit codes, the same for every subcommand.
const (
	exitOK = 0
	// exitNo means the answer is "no": a breaking change, a blocked batch,
	// a failed validation.
	exitNo = 1
	// exitUsage means the command could not run: bad flags or arguments,
	// or no connection to Seam.
	exitUsage = 2
)

// exitError carries an exit code with its message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// answerNo returns an error that exits 1: the command worked and the
// answer is no.
func answerNo(format string, a ...any) error {
	return &exitError{code: exitNo, err: fmt.Errorf(format, a...)}
}

// usageError returns an error that exits 2.
func usageError(format string, a ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

// envPrefix prefixes the environment variable of every flag: --grpc-addr
// is also SEAM_GRPC_ADDR.
const envPrefix = "SEAM_"

// envName returns the environment variable that sets flag name.
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
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
		if v := getenv(envName(f.Name)); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", envName(f.Name), v, err))
			}
		}
	})
	return errors.Join(errs...)
}

// run executes the command line args and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd(os.Getenv)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "seam: %v\n", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	// Errors from cobra itself (unknown command or flag) are usage errors;
	// so is anything else that stopped the command before an answer.
	return exitUsage
}

func newRootCmd(getenv func(string) string) *cobra.Command {
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
				return usageError("%w", err)
			}
			return nil
		},
	}
	g := &globals{}
	g.register(root.PersistentFlags())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError("%w (see --help)", err) })
	idmapGroup := newServeGroup(g, "idmap", "identifier translation")
	addIdmapCommands(idmapGroup, g)
	adapterGroup := newServeGroup(g, "adapter", "the adapter into the canonical model")
	addAdapterCommands(adapterGroup, g)
	gateGroup := newServeGroup(g, "gate", "the gate pipelines call")
	addGateCommands(gateGroup, root, g)
	root.AddCommand(
		newUpCmd(g),
		newServeGroup(g, "registry", "the contract registry"),
		adapterGroup,
		idmapGroup,
		gateGroup,
		newContractCmd(g),
		newCanonicalCmd(g),
		newConsumerCmd(g),
		newBlastRadiusCmd(g),
		newEventsCmd(g),
		newValidateCmd(g),
		newBenchCmd(g),
		newStreamCmd(g),
		newDemoCmd(g),
		newMigrateCmd(g),
		newVersionCmd(g),
	)
	return root
}
