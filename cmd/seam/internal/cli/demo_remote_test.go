package cli_test

import (
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// seam demo --addr explains why it cannot play on a given Seam instead of
// printing a raw gRPC code: without a token it needs an admin token, and
// on a Seam that holds data it needs an empty one.
func TestDemoOnARemoteSeamExplainsRefusals(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	_, errOut, code := seamtest.Run(t.Context(), "demo", "--addr", n.GRPCAddr, "--data-dir", t.TempDir(), "--scale", "0.002")
	if code != exit.Usage || !strings.Contains(errOut, "admin token") || strings.Contains(errOut, "Unauthenticated") {
		t.Errorf("demo --addr without a token: exit %d, %s; want 2 and a word about the admin token", code, errOut)
	}
	n.SetupOrders(t)
	_, errOut, code = n.CLI(t, "demo", "--addr", n.GRPCAddr, "--scale", "0.002")
	if code != exit.Usage || !strings.Contains(errOut, "already holds data") || strings.Contains(errOut, "AlreadyExists") {
		t.Errorf("demo --addr on a Seam with data: exit %d, %s; want 2 and a word about an empty Seam", code, errOut)
	}
}
