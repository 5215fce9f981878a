package node_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/node"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// A second seam on the same data directory refuses to start, naming the
// directory, instead of opening the same store files; seam migrate too.
func TestDataDirectoryIsLocked(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	err := node.Run(context.Background(), node.Config{Services: node.ServiceNames, Bootstrap: true, DataDir: n.DataDir,
		GRPCAddr: "127.0.0.1:0", LogFormat: "text", LogLevel: "error"}, node.Hooks{Log: io.Discard})
	if exit.CodeOf(err) != exit.Usage || err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), n.DataDir) {
		t.Errorf("a second seam up on %s: %v, want a usage error saying the directory is in use", n.DataDir, err)
	}
	_, errOut, code := seamtest.Run(context.Background(), "migrate", "--data-dir", n.DataDir)
	if code != exit.Usage || !strings.Contains(errOut, "in use") {
		t.Errorf("migrate while seam up runs: exit %d (%s), want 2 and \"in use\"", code, errOut)
	}
	n.Stop()
	// Once the first one stopped, the directory is free again.
	_, errOut, code = seamtest.Run(context.Background(), "migrate", "--data-dir", n.DataDir)
	if code != exit.OK {
		t.Errorf("migrate after seam up stopped: exit %d (%s), want 0", code, errOut)
	}
}
