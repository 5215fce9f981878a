package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// With Seam down, every client command gives up after --timeout with a
// connection error (exit 2): the watch commands too, which reconnect
// after a drop but do not wait for ever.
func TestEveryClientCommandHonoursTimeout(t *testing.T) {
	t.Parallel()
	file := seamtest.WriteLines(t, "day.ndjson", seamtest.OrderLines(3))
	ids := seamtest.WriteFile(t, "ids.csv", "uuid,legacy_int\n")
	for _, args := range [][]string{
		{"events", "watch"},
		{"alerts", "watch", "shop.orders"},
		{"contract", "list"},
		{"gate", "ingest", "shop.orders", file, "--partition", "p"},
		{"idmap", "import", "customer", ids, "--from", "uuid", "--to", "legacy-int"},
		{"quarantine", "replay", "shop.orders", "--from", "a", "--to", "b", "--summary-only"},
		{"demo", "--scale", "0.002"},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			t.Parallel()
			// The test's own deadline is far beyond --timeout: a command
			// that ignores --timeout ends with it instead, and fails here.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			full := append(args, "--addr", "127.0.0.1:1", "--token", "x", "--timeout", "1s")
			_, errOut, code := seamtest.Run(ctx, full...)
			if code != exit.Usage || !strings.Contains(errOut, "cannot reach Seam") {
				t.Errorf("seam %s with Seam down: exit %d after %s (%s), want 2 and \"cannot reach Seam\"", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond), errOut)
			}
			if ctx.Err() != nil {
				t.Errorf("seam %s ran until the test's deadline: --timeout 1s was ignored", strings.Join(args, " "))
			}
		})
	}
}
