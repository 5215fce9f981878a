// Package telemetrytest gives tests a log sink that a server's goroutines
// (or a child process's output copiers) may write to together, and that
// reads back as text or as the JSON lines of a slog JSON handler; and the
// data of one metric a manual reader collects.
package telemetrytest

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Metric collects reader now and returns the data of the metric named
// name (a metricdata.Sum, Gauge or Histogram), or nil when no scope
// reported it.
func Metric(t testing.TB, reader *sdkmetric.ManualReader, name string) metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collect metrics: %v", err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m.Data
			}
		}
	}
	return nil
}

// LogBuffer is an io.Writer safe for concurrent writers. The zero value
// is ready to use.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p under the buffer's lock.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns all that was written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Tail returns the last n bytes written so far, after "…" when there
// was more: enough of a long log for a failure message.
func (b *LogBuffer) Tail(n int) string {
	s := b.String()
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// Lines decodes the JSON log lines written so far, one map a line; a
// line that is not a JSON object fails the test.
func (b *LogBuffer) Lines(t testing.TB) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace([]byte(b.String())), []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		m := map[string]any{}
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("log line %q is not a JSON object: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}
