// Package measure times the rows of `seam bench`: a workload run for a
// while from some goroutines, or once, with its CPU time and allocations,
// and the median of a row's rounds.
package measure

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Result is one row of `seam bench`, also its JSON form.
type Result struct {
	Name           string  `json:"name"`
	Records        int64   `json:"records"`
	Seconds        float64 `json:"seconds"`
	RecordsPerSec  float64 `json:"records_per_second"`
	NsPerRecord    float64 `json:"ns_per_record"`
	AllocsPerRec   float64 `json:"allocs_per_record"`
	BytesPerRecord float64 `json:"bytes_per_record"`
	// CPUNsPerRecord is the process's CPU time (user and system) per
	// record: for the ingest rows, the callers', the gate's, the
	// adapter's and idmap's together, all in this process. Steadier than
	// records/s on a shared machine, and what callers on more cores
	// divide between them.
	CPUNsPerRecord float64 `json:"cpu_ns_per_record,omitempty"`
	// CPUSeconds is the process's user and system CPU time over the run,
	// reported by the rows that compare CPU rather than wall time.
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	// Ratio is this row's figure relative to the row named by RatioOf
	// (records/s, or CPU seconds for validate), and Target the bound the
	// ingest issue sets for it: at least Target, or for CPU at most.
	Ratio   float64 `json:"ratio,omitempty"`
	RatioOf string  `json:"ratio_of,omitempty"`
	Target  float64 `json:"target,omitempty"`
	Note    string  `json:"note,omitempty"`
	// Rounds is how many times the row ran, in turn with the rows it is
	// compared with; its figures are those of the median round.
	Rounds int `json:"rounds,omitempty"`
}

// Run runs op (which handles perOp records) from workers goroutines
// until d has passed, and reports throughput and allocations.
func Run(name string, d time.Duration, workers int, perOp int64, op func() error) (Result, error) {
	// Warm up once, so lazily built state is not counted.
	if err := op(); err != nil {
		return Result{}, fmt.Errorf("%s: %w", name, err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpuBefore, cpuErr := cpuTime()
	var ops atomic.Int64
	var firstErr error
	var once sync.Once
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if err := op(); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpuAfter, err := cpuTime()
	runtime.ReadMemStats(&after)
	if firstErr != nil {
		return Result{}, fmt.Errorf("%s: %w", name, firstErr)
	}
	if cpuErr == nil {
		cpuErr = err
	}
	n := ops.Load() * perOp
	r := Result{Name: name, Records: n, Seconds: elapsed.Seconds()}
	if n > 0 {
		r.RecordsPerSec = float64(n) / elapsed.Seconds()
		r.NsPerRecord = float64(elapsed.Nanoseconds()) * float64(workers) / float64(n)
		r.AllocsPerRec = float64(after.Mallocs-before.Mallocs) / float64(n)
		r.BytesPerRecord = float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
		if cpuErr == nil {
			r.CPUNsPerRecord = float64((cpuAfter - cpuBefore).Nanoseconds()) / float64(n)
		}
	}
	return r, nil
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// Timed runs op and reports its records/s, the CPU time it took and its
// allocations per record.
func Timed(name string, n int64, op func() error) (Result, error) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0, err := cpuTime()
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	if err := op(); err != nil {
		return Result{}, fmt.Errorf("%s: %w", name, err)
	}
	elapsed := time.Since(start)
	cpu1, err := cpuTime()
	if err != nil {
		return Result{}, err
	}
	runtime.ReadMemStats(&after)
	return Result{Name: name, Records: n, Seconds: elapsed.Seconds(), RecordsPerSec: float64(n) / elapsed.Seconds(),
		NsPerRecord: float64(elapsed.Nanoseconds()) / float64(n), CPUSeconds: (cpu1 - cpu0).Seconds(),
		AllocsPerRec:   float64(after.Mallocs-before.Mallocs) / float64(n),
		BytesPerRecord: float64(after.TotalAlloc-before.TotalAlloc) / float64(n)}, nil
}

// ByRate and ByCPU are what a row's rounds are ranked by.
func ByRate(r Result) float64 { return r.RecordsPerSec }
func ByCPU(r Result) float64  { return r.CPUSeconds }

// Pick returns the median of a row's rounds ranked by figure (of an even
// number, the higher of the middle two), marked with how many ran.
func Pick(rounds []Result, figure func(Result) float64) Result {
	rounds = slices.Clone(rounds)
	slices.SortFunc(rounds, func(a, b Result) int { return cmp.Compare(figure(a), figure(b)) })
	r := rounds[len(rounds)/2]
	r.Rounds = len(rounds)
	return r
}

// Median runs a row n times in a row and picks its median round.
func Median(n int, figure func(Result) float64, run func() (Result, error)) (Result, error) {
	var rounds []Result
	for range n {
		r, err := run()
		if err != nil {
			return Result{}, err
		}
		rounds = append(rounds, r)
	}
	return Pick(rounds, figure), nil
}
