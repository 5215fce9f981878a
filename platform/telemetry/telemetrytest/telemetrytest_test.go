package telemetrytest_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/seamdata/seam/platform/telemetry/telemetrytest"
)

// Records logged from many goroutines at once come back whole, one JSON
// line each.
func TestLogBufferConcurrentJSONLines(t *testing.T) {
	t.Parallel()
	var buf telemetrytest.LogBuffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				log.Info("tick", "writer", w, "i", i)
			}
		})
	}
	wg.Wait()
	lines := buf.Lines(t)
	if len(lines) != 8*50 {
		t.Fatalf("got %d lines, want %d", len(lines), 8*50)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		if l["msg"] != "tick" {
			t.Fatalf("line %v has msg %v, want tick", l, l["msg"])
		}
		seen[fmt.Sprint(l["writer"], "/", l["i"])] = true
	}
	if len(seen) != 8*50 {
		t.Errorf("got %d distinct records, want %d", len(seen), 8*50)
	}
}

func TestLogBufferEmptyHasNoLines(t *testing.T) {
	t.Parallel()
	var buf telemetrytest.LogBuffer
	if got := buf.Lines(t); len(got) != 0 {
		t.Errorf("Lines of an empty buffer = %v, want none", got)
	}
}

func TestLogBufferLinesRefusesText(t *testing.T) {
	t.Parallel()
	var buf telemetrytest.LogBuffer
	if _, err := fmt.Fprintln(&buf, "level=INFO msg=plain"); err != nil {
		t.Fatal(err)
	}
	ft := &fatalRecorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		buf.Lines(ft)
	}()
	if !strings.Contains(ft.msg, "not a JSON object") {
		t.Errorf("Lines of a text log failed with %q, want it to say the line is not a JSON object", ft.msg)
	}
}

func TestLogBufferTail(t *testing.T) {
	t.Parallel()
	var buf telemetrytest.LogBuffer
	if _, err := buf.Write([]byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.Tail(20), "0123456789"; got != want {
		t.Errorf("Tail(20) = %q, want %q", got, want)
	}
	if got, want := buf.Tail(4), "…6789"; got != want {
		t.Errorf("Tail(4) = %q, want %q", got, want)
	}
	if got, want := buf.String(), "0123456789"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// fatalRecorder keeps a Fatalf message instead of ending the test; it
// panics to stop the caller as FailNow would.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

// Metric finds a metric by name among what the reader collects, and is
// nil for a name never reported.
func TestMetric(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	c, err := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test").Int64Counter("seam.test.count")
	if err != nil {
		t.Fatal(err)
	}
	c.Add(context.Background(), 3)
	sum, ok := telemetrytest.Metric(t, reader, "seam.test.count").(metricdata.Sum[int64])
	if !ok || len(sum.DataPoints) != 1 || sum.DataPoints[0].Value != 3 {
		t.Errorf("Metric(seam.test.count) = %#v, want an int64 sum of 3", telemetrytest.Metric(t, reader, "seam.test.count"))
	}
	if got := telemetrytest.Metric(t, reader, "seam.test.none"); got != nil {
		t.Errorf("Metric(seam.test.none) = %#v, want nil", got)
	}
}
