package storage

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// txMetrics measure the store's transactions: how long InTx took, retries
// included, by dialect and outcome, and how often a transaction was
// retried. A slow or contended store shows here before it shows as
// ingest latency.
type txMetrics struct {
	duration metric.Float64Histogram
	retries  metric.Int64Counter
	dialect  attribute.KeyValue
}

func newTxMetrics(mp metric.MeterProvider, d Dialect) *txMetrics {
	m := mp.Meter("github.com/seamdata/seam/platform/storage")
	// Errors creating instruments give no-op ones; measuring is never a
	// reason for the store to fail.
	duration, _ := m.Float64Histogram("seam.store.transaction.duration", metric.WithUnit("s"),
		metric.WithDescription("Time a store transaction took, retries included, by outcome (committed or failed)"),
		metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	retries, _ := m.Int64Counter("seam.store.transaction.retries",
		metric.WithDescription("Store transactions run again after a serialization failure, deadlock or busy store"))
	return &txMetrics{duration: duration, retries: retries, dialect: attribute.String("db.system.name", d.String())}
}

// defaultTxMetrics use the process's meter provider (telemetry.Setup sets
// it), so every store of the process is measured on /metrics.
func defaultTxMetrics(d Dialect) *txMetrics { return newTxMetrics(otel.GetMeterProvider(), d) }

func (m *txMetrics) record(ctx context.Context, began time.Time, attempts int, err error) {
	outcome := "committed"
	if err != nil {
		outcome = "failed"
	}
	m.duration.Record(ctx, time.Since(began).Seconds(), metric.WithAttributes(m.dialect, attribute.String("outcome", outcome)))
	if attempts > 1 {
		m.retries.Add(ctx, int64(attempts-1), metric.WithAttributes(m.dialect))
	}
}
