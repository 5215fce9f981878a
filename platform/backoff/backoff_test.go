package backoff_test

import (
	"context"
	"testing"
	"time"

	"github.com/seamdata/seam/platform/backoff"
)

func TestBackoffDoublesToMaxAndResets(t *testing.T) {
	t.Parallel()
	b := backoff.Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	var got []time.Duration
	for range 6 {
		got = append(got, b.Next())
	}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("waits %v, want %v ms", got, want)
		}
	}
	b.Reset()
	if d := b.Next(); d != 100*time.Millisecond {
		t.Errorf("after Reset: %v, want Min", d)
	}
}

func TestBackoffJitterStaysWithinTheStep(t *testing.T) {
	t.Parallel()
	b := backoff.Backoff{Min: 8 * time.Millisecond, Max: 64 * time.Millisecond, Jitter: true}
	for i := range 50 {
		step := b.Current()
		if d := b.Next(); d <= 0 || d > step+time.Millisecond {
			t.Fatalf("wait %d = %v, want in (0, %v]", i, d, step+time.Millisecond)
		}
	}
}

func TestBackoffWaitEndsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := backoff.Backoff{Min: time.Hour, Max: time.Hour}
	if err := b.Wait(ctx); err == nil {
		t.Fatal("Wait on an ended context returned nil")
	}
}
