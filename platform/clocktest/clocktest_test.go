package clocktest

import (
	"testing"
	"time"
)

func TestClockMovesOnlyByHand(t *testing.T) {
	start := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	c := New(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now() = %v, want %v", got, start)
	}
	c.Add(time.Hour)
	if got, want := c.Now(), start.Add(time.Hour); !got.Equal(want) {
		t.Fatalf("after Add(1h), Now() = %v, want %v", got, want)
	}
	c.Set(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("after Set, Now() = %v, want %v", got, start)
	}
}

func TestEventuallyWaitsForTheCondition(t *testing.T) {
	t.Parallel()
	c := New(time.Time{})
	go func() {
		time.Sleep(30 * time.Millisecond)
		c.Add(time.Second)
	}()
	Eventually(t, "the clock to move", func() bool { return !c.Now().IsZero() })
}
