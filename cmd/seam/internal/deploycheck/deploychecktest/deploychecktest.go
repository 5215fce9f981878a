// Package deploychecktest gives tests the deploy checker of the seam
// command tree.
package deploychecktest

import (
	"testing"

	"github.com/spf13/cobra"

	"github.com/seamdata/seam/cmd/seam/internal/cli"
	"github.com/seamdata/seam/cmd/seam/internal/deploycheck"
)

// New returns a checker of the seam command tree, failing the test when
// it cannot be built.
func New(t testing.TB) *deploycheck.Checker {
	t.Helper()
	c, err := deploycheck.New(func() *cobra.Command { return cli.NewRoot(nil, "") })
	if err != nil {
		t.Fatal(err)
	}
	return c
}
