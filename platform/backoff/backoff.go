// Package backoff is the one retry schedule of Seam's hand-written retry
// loops (a stream reconnecting, a transaction retried): waits that double
// from Min to Max, optionally with full jitter, and start over after a
// success. Calls between services do not loop by hand: their retries are
// the dial policy's (platform/dial).
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is the state of one retry loop. The zero value is not usable:
// set Min and Max.
type Backoff struct {
	// Min is the first wait, and the wait after Reset.
	Min time.Duration
	// Max caps the wait.
	Max time.Duration
	// Jitter waits a random time up to the step instead of the step (full
	// jitter), so retriers that failed together do not retry together.
	Jitter bool

	step time.Duration
}

// Next returns how long to wait before the next attempt, and doubles the
// step after it.
func (b *Backoff) Next() time.Duration {
	if b.step < b.Min {
		b.step = b.Min
	}
	d := b.step
	b.step = min(2*b.step, b.Max)
	if b.Jitter && d > 0 {
		d = time.Duration(rand.Int64N(int64(d))) + time.Millisecond
	}
	return d
}

// Current is the step Next will wait next (before jitter), for logs.
func (b *Backoff) Current() time.Duration { return max(b.step, b.Min) }

// Reset starts over from Min, after a success.
func (b *Backoff) Reset() { b.step = 0 }

// Wait sleeps Next, or returns ctx's error when ctx ends first.
func (b *Backoff) Wait(ctx context.Context) error {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
