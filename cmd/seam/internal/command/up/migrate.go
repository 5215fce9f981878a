package up

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/node"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/platform/storage"
	"github.com/seamdata/seam/services/gate"
	"github.com/seamdata/seam/services/idmap"
	"github.com/seamdata/seam/services/registry"
)

// migrations lists the stateful services with their schema migrations; the
// adapter keeps no state.
var migrations = []struct {
	service string
	migrate func(context.Context, *storage.DB) error
}{
	{"registry", registry.Migrate},
	{"idmap", idmap.Migrate},
	{"gate", gate.Migrate},
}

// NewMigrate returns `seam migrate`.
func NewMigrate(g *client.Globals) *cobra.Command {
	var store, dataDir string
	var create bool
	return g.Local("migrate", cobra.NoArgs, client.Help{
		Short: "Apply every service's schema migrations, then exit",
		Long: `Bring the stores of the registry, idmap and the gate up to the schema of
this seam version, then exit. Every service also migrates when it starts
(forward-only, idempotent, under a PostgreSQL advisory lock, so replicas
starting at once are safe); running this first, as a Kubernetes Job
before a rollout, makes a failing migration stop the rollout instead of
crash-looping new pods.

A data directory without a single store of seam is refused (a mistyped
--data-dir would otherwise get new, empty stores and report them up to
date); --create makes them.`,
		Example: `  seam migrate --store postgres://seam@db:5432/seam
  seam migrate --data-dir /var/lib/seam     # the embedded stores of seam up
  seam migrate --data-dir /var/lib/seam --create`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&store, "store", "", "store URL: postgres://… for a shared PostgreSQL; empty: the SQLite files of --data-dir")
			fs.StringVar(&dataDir, "data-dir", client.DefaultDataDir, "directory of the embedded stores of seam up")
			fs.BoolVar(&create, "create", false, "create the embedded stores when --data-dir has none")
			g.AddOutputFlag(fs)
		},
	}, func(cmd *cobra.Command, _ []string) error {
		cfg := node.Config{DataDir: dataDir, Store: store}
		migrated := map[string]string{}
		if cfg.Store == "" && cfg.DataDir == "" {
			return exit.Usagef("give --store (postgres://…) or --data-dir (the embedded stores)")
		}
		if cfg.Store == "" && !create {
			if err := node.HasStores(cfg.DataDir); err != nil {
				return exit.Usagef("%w; is --data-dir right? Pass --create to make new stores there", err)
			}
		}
		if cfg.Store == "" {
			unlock, err := node.LockDataDir(cfg.DataDir)
			if err != nil {
				return exit.Usagef("%w", err)
			}
			defer unlock()
		}
		for _, m := range migrations {
			url := cfg.StoreURL(m.service)
			db, err := storage.Open(cmd.Context(), url)
			if err != nil {
				return exit.Usagef("%s store: %w", m.service, err)
			}
			err = m.migrate(cmd.Context(), db)
			if cerr := db.Close(); err == nil && cerr != nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("%s store: %w", m.service, err)
			}
			migrated[m.service] = "up to date"
			if !g.JSON() {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: schema up to date\n", m.service)
			}
		}
		if g.JSON() {
			return output.Value(cmd.OutOrStdout(), migrated)
		}
		return nil
	})
}
