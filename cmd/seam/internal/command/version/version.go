// Package version holds `seam version` and how the build's version is
// found.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/output"
)

// Resolve returns the version of this build: the one set at link time
// (main.version, "-ldflags -X main.version=v1.2.3"), else the module
// version `go install` recorded, else "dev".
func Resolve(linked string) string {
	if linked != "" && linked != "dev" {
		return linked
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// New returns `seam version`.
func New(g *client.Globals) *cobra.Command {
	return g.Local("version", cobra.NoArgs, client.Help{
		Short:   "Print the version of seam",
		Example: "  seam version",
		Flags:   g.AddOutputFlag,
	}, func(cmd *cobra.Command, _ []string) error {
		if g.JSON() {
			return output.Value(cmd.OutOrStdout(), map[string]string{"version": g.Version, "go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH})
		}
		fmt.Fprintf(cmd.OutOrStdout(), "seam %s (%s, %s/%s)\n", g.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return nil
	})
}
