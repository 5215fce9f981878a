package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// ledger is what the suite sent and what the gate acknowledged, to hold
// against what the gate stored.
type ledger struct {
	mu      sync.Mutex
	acked   map[string]batch // by batch id
	answers map[codes.Code]int
	// wrong lists acknowledged answers that disagree with the records sent
	// or with the first answer to the same batch.
	wrong []string
	// undelivered lists batches no attempt got acknowledged in time.
	undelivered []string
	resent      int
	lastAck     atomic.Int64 // unix nanoseconds
}

func newLedger() *ledger {
	return &ledger{acked: map[string]batch{}, answers: map[codes.Code]int{}}
}

func (l *ledger) answer(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.answers[status.Code(err)]++
}

func (l *ledger) fail(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.wrong) < 50 {
		l.wrong = append(l.wrong, fmt.Sprintf(format, a...))
	}
}

// retryable says which answers a pipeline retries: the gate or a peer
// could not answer now. Anything else is an answer on the merits, and for
// the suite's well-formed batches a wrong one.
func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.ResourceExhausted, codes.Canceled:
		return true
	}
	return false
}

// deliver sends b until the gate acknowledges it, as a pipeline with
// retries does, for at most limit; every answer is tallied. It returns
// when the batch was acknowledged, and checks the answer.
func (l *ledger) deliver(ctx context.Context, gate gatev1.GateServiceClient, b batch, attempt, every, limit time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(limit)
	for {
		actx, cancel := context.WithTimeout(ctx, attempt)
		resp, err := gate.Ingest(actx, b.request())
		cancel()
		l.answer(err)
		if err == nil {
			now := time.Now()
			l.lastAck.Store(now.UnixNano())
			l.check(b, resp.GetSummary())
			return now, true
		}
		if !retryable(err) {
			l.fail("batch %s: %v (a retry cannot help; want it acknowledged)", b.id, err)
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			l.mu.Lock()
			l.undelivered = append(l.undelivered, fmt.Sprintf("%s (last answer: %v)", b.id, err))
			l.mu.Unlock()
			return time.Time{}, false
		}
		time.Sleep(every)
	}
}

// check holds an acknowledged summary against the records sent: every
// record counted once, the bad ones quarantined, and a batch sent again
// answered as the first time, marked retried.
func (l *ledger) check(b batch, s *gatev1.BatchSummary) {
	if s.GetReceived() != b.records || s.GetQuarantined() != b.bad || s.GetAccepted() != b.records-b.bad {
		l.fail("batch %s: acknowledged received %d accepted %d quarantined %d; sent %d records of which %d bad",
			b.id, s.GetReceived(), s.GetAccepted(), s.GetQuarantined(), b.records, b.bad)
	}
	l.mu.Lock()
	_, again := l.acked[b.id]
	l.acked[b.id] = b
	if again {
		l.resent++
	}
	l.mu.Unlock()
	if again && !s.GetRetried() {
		l.fail("batch %s sent again was not marked retried: %v", b.id, s)
	}
}

// load runs workers that send batches of the kind "load" until stop is
// closed; every fifth batch is sent a second time once acknowledged, as a
// pipeline that lost the first answer would.
func (l *ledger) load(ctx context.Context, gate gatev1.GateServiceClient, workers, size int, stop <-chan struct{}, attempt time.Duration) *sync.WaitGroup {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				n := int(next.Add(1))
				b := makeBatch("load", n, size)
				if _, ok := l.deliver(ctx, gate, b, attempt, 100*time.Millisecond, 3*time.Minute); ok && n%5 == 0 {
					l.deliver(ctx, gate, b, attempt, 100*time.Millisecond, 3*time.Minute)
				}
			}
		})
	}
	return &wg
}

// reconciliation is what the gate stored against what it acknowledged.
type reconciliation struct {
	batches, records, accepted, quarantined int64 // acknowledged
	storedBatches, storedRecords            int64
	storedAccepted, storedQuarantined       int64
	quarantineHeld                          int64
	lost, duplicated                        int64
}

// reconcile reads the gate's monitors and quarantine and counts the
// records lost (acknowledged, not stored) and duplicated (stored more
// often than sent).
func (l *ledger) reconcile(ctx context.Context, gate gatev1.GateServiceClient) (reconciliation, error) {
	var r reconciliation
	l.mu.Lock()
	for _, b := range l.acked {
		r.batches++
		r.records += b.records
		r.quarantined += b.bad
		r.accepted += b.records - b.bad
	}
	l.mu.Unlock()
	mon, err := gate.GetMonitor(ctx, &gatev1.GetMonitorRequest{Subject: subject})
	if err != nil {
		return r, fmt.Errorf("GetMonitor: %w", err)
	}
	for _, p := range mon.GetPartitions() {
		r.storedBatches += p.GetBatches()
		r.storedRecords += p.GetReceived()
		r.storedAccepted += p.GetAccepted()
		r.storedQuarantined += p.GetQuarantined()
	}
	stats, err := gate.GetQuarantineStats(ctx, &gatev1.GetQuarantineStatsRequest{Filter: &gatev1.QuarantineFilter{Subject: subject}})
	if err != nil {
		return r, fmt.Errorf("GetQuarantineStats: %w", err)
	}
	r.quarantineHeld = stats.GetTotal()
	for _, pair := range [][2]int64{{r.records, r.storedRecords}, {r.accepted, r.storedAccepted},
		{r.quarantined, r.storedQuarantined}, {r.quarantined, r.quarantineHeld}} {
		r.lost = max(r.lost, pair[0]-pair[1])
		r.duplicated = max(r.duplicated, pair[1]-pair[0])
	}
	return r, nil
}

func (l *ledger) answerSummary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for c, n := range l.answers {
		parts = append(parts, fmt.Sprintf("%s %d", c, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
