package stream

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// meters are the connector's OpenTelemetry instruments. Counters count
// records by stage; lag, held and contained are observed when scraped.
type meters struct {
	records metric.Int64Counter
	batches metric.Int64Counter
	attrs   []attribute.KeyValue
}

func newMeters(m metric.Meter, c *Connector) (*meters, error) {
	out := &meters{attrs: []attribute.KeyValue{attribute.String("connector", c.cfg.Name), attribute.String("subject", c.cfg.Subject)}}
	var err error
	wrap := func(err error) error { return fmt.Errorf("stream: create metric: %w", err) }
	if out.records, err = m.Int64Counter("seam.stream.records",
		metric.WithDescription("Records through the connector, by stage: read, accepted, quarantined, blocked, published, replayed.")); err != nil {
		return nil, wrap(err)
	}
	if out.batches, err = m.Int64Counter("seam.stream.batches", metric.WithDescription("Source batches sent through the gate.")); err != nil {
		return nil, wrap(err)
	}
	lag, err := m.Int64ObservableGauge("seam.stream.lag", metric.WithDescription("Source messages not yet done, over every source partition."))
	if err != nil {
		return nil, wrap(err)
	}
	held, err := m.Int64ObservableGauge("seam.stream.held", metric.WithDescription("Accepted records staged and not published (open, blocked or contained partitions) plus records of blocked batches."))
	if err != nil {
		return nil, wrap(err)
	}
	contained, err := m.Int64ObservableGauge("seam.stream.contained", metric.WithDescription("1 while the source is contained and publishing is paused."))
	if err != nil {
		return nil, wrap(err)
	}
	if _, err := m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		s := c.Stats(ctx)
		o.ObserveInt64(lag, s.Lag, metric.WithAttributes(out.attrs...))
		o.ObserveInt64(held, s.Held, metric.WithAttributes(out.attrs...))
		v := int64(0)
		if s.Contained {
			v = 1
		}
		o.ObserveInt64(contained, v, metric.WithAttributes(out.attrs...))
		return nil
	}, lag, held, contained); err != nil {
		return nil, wrap(err)
	}
	return out, nil
}

func (m *meters) add(ctx context.Context, stage string, n int64) {
	if n == 0 {
		return
	}
	m.records.Add(ctx, n, metric.WithAttributes(append(m.attrs[:len(m.attrs):len(m.attrs)], attribute.String("stage", stage))...))
}
