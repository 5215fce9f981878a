package measure_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seamdata/seam/cmd/seam/internal/command/bench/measure"
)

func TestPickTakesTheMedianRound(t *testing.T) {
	rounds := []measure.Result{{Name: "a", RecordsPerSec: 30}, {Name: "b", RecordsPerSec: 10}, {Name: "c", RecordsPerSec: 20}}
	if r := measure.Pick(rounds, measure.ByRate); r.Name != "c" || r.Rounds != 3 {
		t.Errorf("Pick = %s after %d rounds, want c (the median) after 3", r.Name, r.Rounds)
	}
	if rounds[0].Name != "a" {
		t.Error("Pick reordered the caller's rounds")
	}
	// Of an even number, the higher of the middle two.
	rounds = append(rounds, measure.Result{Name: "d", CPUSeconds: 4, RecordsPerSec: 40})
	rounds[0].CPUSeconds, rounds[1].CPUSeconds, rounds[2].CPUSeconds = 3, 1, 2
	if r := measure.Pick(rounds, measure.ByCPU); r.Name != "a" || r.Rounds != 4 {
		t.Errorf("Pick by CPU = %s after %d rounds, want a after 4", r.Name, r.Rounds)
	}
}

func TestRunCountsRecordsAndStopsAtAnError(t *testing.T) {
	ops := 0
	r, err := measure.Run("row", 20*time.Millisecond, 1, 7, func() error { ops++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	// The first call warms up and is not counted.
	if r.Name != "row" || r.Records != int64(7*(ops-1)) || r.Records == 0 || r.RecordsPerSec <= 0 {
		t.Errorf("Run = %+v after %d calls, want 7 records a counted call", r, ops)
	}
	var calls atomic.Int64
	_, err = measure.Run("failing", time.Second, 2, 1, func() error {
		if calls.Add(1) > 1 {
			return errors.New("boom")
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "failing: boom") {
		t.Errorf("Run of a failing op: %v, want the row's name and the error", err)
	}
}

func TestMedianAndTimed(t *testing.T) {
	figures := []float64{5, 1, 3}
	i := 0
	r, err := measure.Median(3, measure.ByRate, func() (measure.Result, error) {
		f := figures[i]
		i++
		return measure.Result{RecordsPerSec: f}, nil
	})
	if err != nil || r.RecordsPerSec != 3 || r.Rounds != 3 {
		t.Errorf("Median = %+v, %v; want the round at 3 records/s of 3", r, err)
	}
	r, err = measure.Timed("once", 100, func() error { time.Sleep(time.Millisecond); return nil })
	if err != nil || r.Records != 100 || r.RecordsPerSec <= 0 || r.Seconds <= 0 {
		t.Errorf("Timed = %+v, %v", r, err)
	}
}
