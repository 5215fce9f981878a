package gate

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// metrics are the gate's OpenTelemetry instruments: the partition
// counters of GetMonitor as metrics, and gauges of what an operator
// alerts on (match rate, held records, containment, events waiting for
// the registry). Prometheus names them seam_gate_…; deploy/observability
// has the alert rules and dashboard built on them.
type metrics struct {
	records    metric.Int64Counter
	batches    metric.Int64Counter
	alerts     metric.Int64Counter
	released   metric.Int64Counter
	partitions metric.Int64Counter

	mu sync.Mutex
	// matchRate is, per subject and identifier field, the match rate of
	// the latest partition (or amendment) this process sealed.
	matchRate map[[2]string]float64
}

// newMetrics creates the instruments. The gauges of held records and
// containment read the store on each collection (a scrape), for the
// subjects subjects names; now is the clock in Unix nanoseconds.
func newMetrics(m metric.Meter, st gateStore, subjects func() []string, now func() int64) (*metrics, error) {
	out := metrics{matchRate: map[[2]string]float64{}}
	var errs []error
	counter := func(name, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	out.records = counter("seam.gate.records", "Records ingested, by subject and verdict (accepted, quarantined).")
	out.batches = counter("seam.gate.batches", "Batches ingested, by subject and status.")
	out.alerts = counter("seam.gate.alerts", "Alerts raised, by subject and kind.")
	out.released = counter("seam.gate.released", "Quarantined records released by replays, by subject.")
	out.partitions = counter("seam.gate.partitions", "Partitions and amendments sealed, by subject and verdict (PASSED, PASSED_WITH_ALERTS, BLOCKED).")

	matchRate, err := m.Float64ObservableGauge("seam.gate.match.rate",
		metric.WithDescription("Share of identifiers that resolve, in the latest partition this gate sealed, by subject and identifier field."))
	errs = append(errs, err)
	held, err := m.Int64ObservableGauge("seam.gate.quarantine.held",
		metric.WithDescription("Quarantined records held (not released, discarded or superseded), by subject and reason."), metric.WithUnit("{record}"))
	errs = append(errs, err)
	contained, err := m.Int64ObservableGauge("seam.gate.contained",
		metric.WithDescription("1 while a subject is contained (everything it sends is held), 0 once released, by subject."))
	errs = append(errs, err)
	pending, err := m.Int64ObservableGauge("seam.gate.events.pending",
		metric.WithDescription("Registry events (alerts, containment, backfills) queued and not yet delivered to the registry."), metric.WithUnit("{event}"))
	errs = append(errs, err)
	pendingAge, err := m.Float64ObservableGauge("seam.gate.events.pending.age",
		metric.WithDescription("Seconds the oldest undelivered registry event has waited; 0 when none wait."), metric.WithUnit("s"))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("gate: create metrics: %w", err)
	}
	_, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		out.mu.Lock()
		for k, v := range out.matchRate {
			o.ObserveFloat64(matchRate, v, metric.WithAttributes(attribute.String("subject", k[0]), attribute.String("field", k[1])))
		}
		out.mu.Unlock()

		var errs []error
		for _, subject := range subjects() {
			counts, err := st.QuarantineCounts(ctx, quarantineFilter{subject: subject, state: gatev1.QuarantineState_QUARANTINE_STATE_HELD}, "reason")
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for _, c := range counts {
				o.ObserveInt64(held, c.GetCount(), metric.WithAttributes(attribute.String("subject", subject), attribute.String("reason", c.GetKey())))
			}
		}
		conts, err := st.Containments(ctx)
		errs = append(errs, err)
		for _, c := range conts {
			v := int64(0)
			if c.Contained {
				v = 1
			}
			o.ObserveInt64(contained, v, metric.WithAttributes(attribute.String("subject", c.Subject)))
		}
		n, oldest, err := st.OutboxBacklog(ctx)
		errs = append(errs, err)
		if err == nil {
			o.ObserveInt64(pending, n)
			age := 0.0
			if n > 0 {
				age = float64(now()-oldest.UnixNano()) / 1e9
			}
			o.ObserveFloat64(pendingAge, max(age, 0))
		}
		return errors.Join(errs...)
	}, matchRate, held, contained, pending, pendingAge)
	if err != nil {
		return nil, fmt.Errorf("gate: register gauges: %w", err)
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

// sealed counts a unit's verdict and keeps its match rates.
func (m *metrics) sealed(ctx context.Context, subject string, u *unitRow) {
	m.partitions.Add(ctx, 1, metric.WithAttributes(attribute.String("subject", subject), attribute.String("verdict", verdictName(u.verdict))))
	m.mu.Lock()
	defer m.mu.Unlock()
	for field, fs := range u.figures.Stats.Fields {
		if fs.IDs > 0 {
			m.matchRate[[2]string{subject, field}] = float64(fs.Matched) / float64(fs.IDs)
		}
	}
}

// verdictName is a verdict without its enum prefix.
func verdictName(v gatev1.PartitionVerdict) string {
	switch v {
	case gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED:
		return "BLOCKED"
	case gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED_WITH_ALERTS:
		return "PASSED_WITH_ALERTS"
	case gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED:
		return "PASSED"
	}
	return "UNSPECIFIED"
}
