package postgres

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// metrics are the source's instruments: snapshot progress, staged and
// applied changes, held changes, lag, gate latency, schema changes.
type metrics struct {
	snapRows, snapBytes, stagedC, appliedC, schemaC, alertC metric.Int64Counter
	snapRefreshC                                            metric.Int64Counter
	gateLatency                                             metric.Float64Histogram
	reg                                                     metric.Registration

	serverEnd, captured atomic.Uint64
	mu                  sync.Mutex
	heldBy              map[string]int64
	pendingBy           map[string]int64
	lastCommit          map[string]time.Time
	sourceLag           atomic.Int64
	// retained is the WAL each of the source's slots keeps at the source;
	// openTx is the age of the oldest transaction the source holds open
	// there (0 when none).
	retained map[string]int64
	openTx   float64
}

func newMetrics(m metric.Meter, s *Source) (*metrics, error) {
	x := &metrics{heldBy: map[string]int64{}, pendingBy: map[string]int64{}, lastCommit: map[string]time.Time{}, retained: map[string]int64{}}
	var err error
	counter := func(name, desc, unit string) metric.Int64Counter {
		if err != nil {
			return nil
		}
		var c metric.Int64Counter
		c, err = m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit(unit))
		return c
	}
	x.snapRows = counter("seam.cdc.snapshot.rows", "Rows read by the snapshot and applied.", "{row}")
	x.snapBytes = counter("seam.cdc.snapshot.bytes", "Bytes of column text read by the snapshot.", "By")
	x.stagedC = counter("seam.cdc.changes.staged", "Changes staged from the replication stream.", "{change}")
	x.appliedC = counter("seam.cdc.changes.applied", "Changes accepted by the gate and applied to the replica.", "{change}")
	x.schemaC = counter("seam.cdc.schema_changes", "Schema changes seen in the stream, by level.", "{change}")
	x.alertC = counter("seam.cdc.halts", "Tables halted, by reason.", "{halt}")
	x.snapRefreshC = counter("seam.cdc.snapshot.refreshes", "Fresh exported snapshots taken because the snapshot's transactions reached their time limit.", "{snapshot}")
	if err != nil {
		return nil, err
	}
	x.gateLatency, err = m.Float64Histogram("seam.cdc.gate.duration", metric.WithDescription("Time to get a batch through the gate."), metric.WithUnit("s"))
	if err != nil {
		return nil, err
	}
	// The gauges, observed together by one callback.
	held, errHeld := m.Int64ObservableGauge("seam.cdc.changes.held", metric.WithDescription("Changes held for a halted table, by table."), metric.WithUnit("{change}"))
	pending, errPending := m.Int64ObservableGauge("seam.cdc.changes.pending", metric.WithDescription("Changes staged and not yet applied, by table (held ones included)."), metric.WithUnit("{change}"))
	lagBytes, errLagBytes := m.Int64ObservableGauge("seam.cdc.lag.bytes", metric.WithDescription("WAL bytes between the source's current position and what is staged."), metric.WithUnit("By"))
	lagSeconds, errLagSeconds := m.Float64ObservableGauge("seam.cdc.lag.seconds", metric.WithDescription("Age of the oldest change not yet applied, by table."), metric.WithUnit("s"))
	retained, errRetained := m.Int64ObservableGauge("seam.cdc.slot.retained_wal", metric.WithDescription("WAL bytes a replication slot of the source keeps at the source database (current WAL position minus the slot's restart_lsn), by slot."), metric.WithUnit("By"))
	openTx, errOpenTx := m.Float64ObservableGauge("seam.cdc.source.transaction.open", metric.WithDescription("Age of the oldest transaction the source holds open at the source database (the snapshot's); 0 when none. While one is open VACUUM cannot remove rows deleted after it began."), metric.WithUnit("s"))
	if err := errors.Join(errHeld, errPending, errLagBytes, errLagSeconds, errRetained, errOpenTx); err != nil {
		return nil, err
	}
	x.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		x.mu.Lock()
		defer x.mu.Unlock()
		for t, n := range x.heldBy {
			o.ObserveInt64(held, n, tableAttr(t))
		}
		for t, n := range x.pendingBy {
			o.ObserveInt64(pending, n, tableAttr(t))
			lag := 0.0
			if n > 0 && !x.lastCommit[t].IsZero() {
				lag = time.Since(x.lastCommit[t]).Seconds()
			}
			o.ObserveFloat64(lagSeconds, lag, tableAttr(t))
		}
		o.ObserveInt64(lagBytes, x.sourceLag.Load())
		for slot, n := range x.retained {
			o.ObserveInt64(retained, n, metric.WithAttributes(attribute.String("slot", slot)))
		}
		o.ObserveFloat64(openTx, x.openTx)
		return nil
	}, held, pending, lagBytes, lagSeconds, retained, openTx)
	return x, err
}

func (x *metrics) close() {
	if x != nil && x.reg != nil {
		_ = x.reg.Unregister()
	}
}

func tableAttr(t string) metric.MeasurementOption {
	return metric.WithAttributes(attribute.String("table", t))
}

func (x *metrics) snapshotRefreshed(ctx context.Context) { x.snapRefreshC.Add(ctx, 1) }

func (x *metrics) snapshotRows(ctx context.Context, t string, rows, bytes int64) {
	x.snapRows.Add(ctx, rows, tableAttr(t))
	x.snapBytes.Add(ctx, bytes, tableAttr(t))
}

func (x *metrics) staged(ctx context.Context, n int64) {
	if n > 0 {
		x.stagedC.Add(ctx, n)
	}
}

func (x *metrics) applied(ctx context.Context, t string, n int64, commit time.Time) {
	x.appliedC.Add(ctx, n, tableAttr(t))
	x.mu.Lock()
	x.lastCommit[t] = commit
	x.mu.Unlock()
}

func (x *metrics) gateCall(ctx context.Context, t string, d time.Duration) {
	x.gateLatency.Record(ctx, d.Seconds(), tableAttr(t))
}

func (x *metrics) schemaChange(ctx context.Context, t, level string) {
	x.schemaC.Add(ctx, 1, metric.WithAttributes(attribute.String("table", t), attribute.String("level", level)))
}

func (x *metrics) alert(ctx context.Context, t, reason string) {
	x.alertC.Add(ctx, 1, metric.WithAttributes(attribute.String("table", t), attribute.String("reason", reason)))
}

func (x *metrics) held(t string, n int64) {
	x.mu.Lock()
	x.heldBy[t] = n
	x.mu.Unlock()
}

func (x *metrics) serverPosition(lsn uint64) {
	if lsn > x.serverEnd.Load() {
		x.serverEnd.Store(lsn)
	}
}

func (x *metrics) capturePosition(lsn uint64) { x.captured.Store(lsn) }

// watchLag refreshes the lag and pending counts every PollInterval.
func (s *Source) watchLag(ctx context.Context) error {
	tick := time.NewTicker(s.cfg.PollInterval)
	defer tick.Stop()
	for {
		st, err := ReadStatus(ctx, s.target, s.source, s.cfg.Name)
		if err == nil {
			s.metrics.mu.Lock()
			for _, t := range st.Tables {
				s.metrics.pendingBy[t.Table] = t.Pending
				if t.Phase != "halted" {
					s.metrics.heldBy[t.Table] = 0
				} else {
					s.metrics.heldBy[t.Table] = t.Pending
				}
			}
			clear(s.metrics.retained)
			for _, sl := range st.Slots {
				s.metrics.retained[sl.Name] = sl.RetainedBytes
			}
			s.metrics.openTx = 0
			if st.OpenTransaction != nil {
				s.metrics.openTx = st.OpenTransaction.Age.Seconds()
			}
			s.metrics.mu.Unlock()
			s.metrics.sourceLag.Store(st.LagBytes)
		} else if ctx.Err() == nil {
			s.log.Warn("read the source's status", "error", err)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil
		}
	}
}
