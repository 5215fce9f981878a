package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// The watch commands print what is already there, then follow, until
// interrupted (here, a deadline), and exit 0.
func TestCLIWatch(t *testing.T) {
	t.Parallel()
	n := seamtest.StartOrders(t)
	ingestBlockedDay(t, n)
	n.MustCLI(t, 0, "gate", "ingest", seamtest.WriteLines(t, "ok.ndjson", seamtest.OrderLines(3)[1:]), "--subject", "shop.orders", "--partition", "2026-03-02")
	// Sealed, the first day is judged whole and raises its alerts.
	n.Seal(t, "shop.orders", "2026-03-01")

	watch := func(args ...string) []map[string]any {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		var out, errOut bytes.Buffer
		if code := seamtest.RunTo(ctx, append([]string{"--addr", n.GRPCAddr, "--token", n.Admin, "-o", "json"}, args...), &out, &errOut); code != exit.OK {
			t.Fatalf("seam %v: exit %d (%s)", args, code, errOut.String())
		}
		return seamtest.NDJSON(t, fmt.Sprint("seam ", args), out.String())
	}
	events := watch("events", "watch", "--subject", "shop.orders")
	if len(events) == 0 || events[0]["type"] != "EVENT_TYPE_VERSION_REGISTERED" {
		t.Errorf("events watch = %v, want the history of shop.orders from its registration", events)
	}
	alerts := watch("alerts", "watch", "--subject", "shop.orders")
	if len(alerts) == 0 || alerts[0]["subject"] != "shop.orders" {
		t.Errorf("alerts watch = %v, want the alerts of shop.orders", alerts)
	}
}
