package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/seamdata/seam/cmd/seam/internal/client"
)

// A stream bounded by --timeout stays up while Allow lets it wait for an
// answer, longer than --timeout, and ends once that allowance is spent.
func TestAllowKeepsAStreamWaiting(t *testing.T) {
	t.Parallel()
	const idle = 200 * time.Millisecond
	g := &client.Globals{Timeout: idle}
	ctx, progress, stop := g.Stream(context.Background())
	defer stop()
	done := client.Allow(progress, idle, 5*idle)
	defer done()
	time.Sleep(3 * idle)
	if err := context.Cause(ctx); err != nil {
		t.Fatalf("after %s of an allowance of %s with --timeout %s: %v, want the stream up", 3*idle, 5*idle, idle, err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * idle):
		t.Fatalf("the stream was still up %s after its allowance of %s", 13*idle, 5*idle)
	}
}

// With no --timeout there is nothing to keep up, and done may be called
// more than once.
func TestAllowWithoutTimeout(t *testing.T) {
	t.Parallel()
	done := client.Allow(func() { t.Error("progress called with no --timeout") }, 0, time.Second)
	done()
	done()
}
