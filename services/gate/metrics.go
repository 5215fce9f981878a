package gate

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// metrics are the gate's OpenTelemetry instruments: the partition
// counters of GetMonitor, as metrics.
type metrics struct {
	records  metric.Int64Counter
	batches  metric.Int64Counter
	alerts   metric.Int64Counter
	released metric.Int64Counter
}

func newMetrics(m metric.Meter) (*metrics, error) {
	var out metrics
	var err error
	if out.records, err = m.Int64Counter("seam.gate.records", metric.WithDescription("Records ingested, by subject and verdict (accepted, quarantined).")); err != nil {
		return nil, fmt.Errorf("gate: create metric: %w", err)
	}
	if out.batches, err = m.Int64Counter("seam.gate.batches", metric.WithDescription("Batches ingested, by subject and status.")); err != nil {
		return nil, fmt.Errorf("gate: create metric: %w", err)
	}
	if out.alerts, err = m.Int64Counter("seam.gate.alerts", metric.WithDescription("Alerts raised, by subject and kind.")); err != nil {
		return nil, fmt.Errorf("gate: create metric: %w", err)
	}
	if out.released, err = m.Int64Counter("seam.gate.released", metric.WithDescription("Quarantined records released by replays, by subject.")); err != nil {
		return nil, fmt.Errorf("gate: create metric: %w", err)
	}
	return &out, nil
}

func (m *metrics) batch(ctx context.Context, subject string, sum *gatev1.BatchSummary) {
	subj := attribute.String("subject", subject)
	m.batches.Add(ctx, 1, metric.WithAttributes(subj, attribute.String("status", sum.GetStatus().String())))
	m.records.Add(ctx, sum.GetAccepted(), metric.WithAttributes(subj, attribute.String("verdict", "accepted")))
	m.records.Add(ctx, sum.GetQuarantined(), metric.WithAttributes(subj, attribute.String("verdict", "quarantined")))
}

func (m *metrics) alert(ctx context.Context, subject, kind string) {
	m.alerts.Add(ctx, 1, metric.WithAttributes(attribute.String("subject", subject), attribute.String("kind", kind)))
}
