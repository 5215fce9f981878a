// Package clocktest gives tests time: a clock they move by hand, to pass
// where a service's Config takes a Clock func() time.Time, and Eventually,
// which waits on the real clock for what a server's goroutines do.
package clocktest

import (
	"sync"
	"testing"
	"time"
)

// Eventually polls cond every 10ms until it holds, and fails the test
// if it still does not after 10s; what names what is waited for.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Clock is a clock that stands still until the test sets or moves it. It
// is safe for the servers' goroutines to read while the test moves it.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock standing at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
