package idmap

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// stats counts translation outcomes per namespace and ordered format pair
// (the order is the direction), for GetStats and OpenTelemetry.
type stats struct {
	mu       sync.RWMutex
	counters map[[3]string]*counter
	ids      metric.Int64Counter // nil without a meter
	// flushMu lets one flush at a time move counts to the store.
	flushMu sync.Mutex
}

type counter struct {
	hits, misses, invalid atomic.Int64
	// flushed are the counts already added to the store; guarded by flushMu.
	flushed [3]int64
	attrs   [3]metric.AddOption
}

func newStats(meter metric.Meter) (*stats, error) {
	s := &stats{counters: map[[3]string]*counter{}}
	if meter != nil {
		c, err := meter.Int64Counter("seam.idmap.translated_ids",
			metric.WithDescription("Ids translated by idmap, by namespace, from_format, to_format and outcome (hit, miss, invalid)."),
			metric.WithUnit("{id}"))
		if err != nil {
			return nil, fmt.Errorf("create translation counter: %w", err)
		}
		s.ids = c
	}
	return s, nil
}

func (s *stats) get(ns, from, to string) *counter {
	k := [3]string{ns, from, to}
	s.mu.RLock()
	c := s.counters[k]
	s.mu.RUnlock()
	if c != nil {
		return c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c = s.counters[k]; c == nil {
		c = &counter{}
		for i, outcome := range []string{"hit", "miss", "invalid"} {
			c.attrs[i] = metric.WithAttributeSet(attribute.NewSet(
				attribute.String("namespace", ns), attribute.String("from_format", from),
				attribute.String("to_format", to), attribute.String("outcome", outcome)))
		}
		s.counters[k] = c
	}
	return c
}

func (s *stats) add(ctx context.Context, ns, from, to string, hits, misses, invalid int64) {
	c := s.get(ns, from, to)
	c.hits.Add(hits)
	c.misses.Add(misses)
	c.invalid.Add(invalid)
	if s.ids == nil {
		return
	}
	for i, n := range []int64{hits, misses, invalid} {
		if n > 0 {
			s.ids.Add(ctx, n, c.attrs[i])
		}
	}
}

// counterStore is where flush adds counts.
type counterStore interface {
	AddCounters(ctx context.Context, counters []*idmapv1.Counter) error
}

// flush adds what was counted since the last flush to the store. Counts a
// failed flush did not add stay pending for the next.
func (s *stats) flush(ctx context.Context, store counterStore) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	type pending struct {
		c   *counter
		now [3]int64
	}
	var todo []pending
	var out []*idmapv1.Counter
	s.mu.RLock()
	for k, c := range s.counters {
		now := [3]int64{c.hits.Load(), c.misses.Load(), c.invalid.Load()}
		if now == c.flushed {
			continue
		}
		todo = append(todo, pending{c, now})
		out = append(out, &idmapv1.Counter{Namespace: k[0], FromFormat: k[1], ToFormat: k[2],
			Hits: now[0] - c.flushed[0], Misses: now[1] - c.flushed[1], Invalid: now[2] - c.flushed[2]})
	}
	s.mu.RUnlock()
	if len(out) == 0 {
		return nil
	}
	if err := store.AddCounters(ctx, out); err != nil {
		return err
	}
	for _, p := range todo {
		p.c.flushed = p.now
	}
	return nil
}
