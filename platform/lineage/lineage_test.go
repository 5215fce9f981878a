package lineage_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/seamdata/seam/platform/lineage"
	"github.com/seamdata/seam/platform/lineage/lineagetest"
	"github.com/seamdata/seam/platform/telemetry/telemetrytest"
)

func start(t *testing.T, c *lineagetest.Collector, cfg lineage.Config) *lineage.Transport {
	t.Helper()
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	if cfg.URL == "" {
		cfg.URL = srv.URL
	}
	cfg.URL = strings.ReplaceAll(cfg.URL, "SERVER", srv.URL)
	if cfg.Backoff == 0 {
		cfg.Backoff, cfg.MaxBackoff = time.Millisecond, 5*time.Millisecond
	}
	tr, err := lineage.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.Hold != nil {
			select {
			case <-c.Hold:
			default:
				close(c.Hold)
			}
		}
		_ = tr.Close(context.Background())
	})
	return tr
}

func event(i int) []byte { return []byte(fmt.Sprintf(`{"eventType":"COMPLETE","n":%d}`, i)) }

func closeWithin(t *testing.T, tr *lineage.Transport, d time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return tr.Close(ctx)
}

// TestDelivers: events arrive in order, whole, with the API key, at the
// default path when the URL names only the server, gzip-compressed when
// asked; the metrics count them.
func TestDelivers(t *testing.T) {
	t.Parallel()
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			t.Parallel()
			reader := sdkmetric.NewManualReader()
			c := &lineagetest.Collector{}
			tr := start(t, c, lineage.Config{APIKey: "k-123", Gzip: gz, Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("t")})
			for i := range 20 {
				if !tr.Enqueue(event(i)) {
					t.Fatalf("event %d dropped", i)
				}
			}
			if err := closeWithin(t, tr, 30*time.Second); err != nil {
				t.Fatal(err)
			}
			bodies := c.Bodies()
			if len(bodies) != 20 {
				t.Fatalf("collector got %d events, want 20", len(bodies))
			}
			for i, b := range bodies {
				if b != string(event(i)) {
					t.Fatalf("event %d is %s, want %s (in order, whole)", i, b, event(i))
				}
			}
			first := c.Accepted()[0]
			h := first.Header
			if h.Get("Authorization") != "Bearer k-123" || h.Get("Content-Type") != "application/json" || first.Path != lineage.DefaultPath {
				t.Errorf("headers %v at %s, want the bearer key, JSON, and %s", h, first.Path, lineage.DefaultPath)
			}
			if got := (h.Get("Content-Encoding") == "gzip"); got != gz {
				t.Errorf("Content-Encoding %q, want gzip %v", h.Get("Content-Encoding"), gz)
			}
			if s := tr.Stats(); s.Sent != 20 || len(s.Dropped) != 0 {
				t.Errorf("stats %+v, want 20 sent, none dropped", s)
			}
			if got := counter(t, reader, "seam.openlineage.events.sent", ""); got != 20 {
				t.Errorf("metric seam.openlineage.events.sent = %d, want 20", got)
			}
		})
	}
}

// TestRetries: a collector that fails (5xx, 429, 408) is tried again with
// backoff until it answers; one that refuses (4xx) is not; one that never
// recovers gets MaxAttempts tries. Either way the next event goes on.
func TestRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		script   []int
		requests int
		sent     int64
		retries  int64
		dropped  string
	}{
		{"recovers", []int{503, 500, 200, 200}, 4, 2, 2, ""},
		{"too many requests, Retry-After capped", []int{429, 408, 200, 200}, 4, 2, 2, ""},
		{"refused is final", []int{400, 200}, 2, 1, 0, lineage.DroppedRejected},
		{"unauthorized is final", []int{401, 200}, 2, 1, 0, lineage.DroppedRejected},
		{"never recovers", []int{502, 502, 502, 200}, 4, 1, 2, lineage.DroppedRetries},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &lineagetest.Collector{Script: tt.script}
			tr := start(t, c, lineage.Config{MaxAttempts: 3})
			tr.Enqueue(event(1))
			tr.Enqueue(event(2))
			if err := closeWithin(t, tr, 30*time.Second); err != nil {
				t.Fatal(err)
			}
			requests, bodies := c.Requests(), c.Bodies()
			s := tr.Stats()
			if requests != tt.requests || s.Sent != tt.sent || s.Retries != tt.retries {
				t.Fatalf("%d requests, stats %+v; want %d requests, %d sent, %d retries", requests, s, tt.requests, tt.sent, tt.retries)
			}
			if tt.dropped != "" && s.Dropped[tt.dropped] != 1 {
				t.Fatalf("dropped %v, want one %s", s.Dropped, tt.dropped)
			}
			if bodies[len(bodies)-1] != string(event(2)) {
				t.Fatalf("last event delivered %s, want the second event", bodies[len(bodies)-1])
			}
		})
	}
}

// TestQueueFull: with the collector stuck, Enqueue keeps returning at once
// and drops what does not fit; what was queued is delivered once the
// collector answers again.
func TestQueueFull(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	c := &lineagetest.Collector{Hold: make(chan struct{})}
	tr := start(t, c, lineage.Config{QueueSize: 3, Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("t")})
	accepted := 0
	for i := range 50 {
		if tr.Enqueue(event(i)) {
			accepted++
		}
	}
	// At most the queue and the one request in flight.
	if accepted < 3 || accepted > 4 {
		t.Fatalf("%d of 50 events accepted with a queue of 3, want 3 or 4", accepted)
	}
	s := tr.Stats()
	if s.Dropped[lineage.DroppedQueueFull] != int64(50-accepted) {
		t.Fatalf("dropped %v, want %d queue_full", s.Dropped, 50-accepted)
	}
	if got := counter(t, reader, "seam.openlineage.events.dropped", lineage.DroppedQueueFull); got != int64(50-accepted) {
		t.Errorf("metric dropped{reason=queue_full} = %d, want %d", got, 50-accepted)
	}
	close(c.Hold)
	if err := closeWithin(t, tr, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if bodies := c.Bodies(); len(bodies) != accepted {
		t.Fatalf("collector got %d events, want the %d accepted", len(bodies), accepted)
	}
}

// TestShutdown: Close flushes what is queued; when its deadline passes
// first (a collector that hangs) it returns, counting the rest as dropped,
// and later events are refused.
func TestShutdown(t *testing.T) {
	t.Parallel()
	t.Run("flush", func(t *testing.T) {
		t.Parallel()
		c := &lineagetest.Collector{Script: []int{503}}
		tr := start(t, c, lineage.Config{})
		for i := range 100 {
			tr.Enqueue(event(i))
		}
		if err := closeWithin(t, tr, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if bodies := c.Bodies(); len(bodies) != 100 {
			t.Fatalf("collector got %d events, want all 100 flushed at Close", len(bodies))
		}
	})
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		c := &lineagetest.Collector{Hold: make(chan struct{})}
		tr := start(t, c, lineage.Config{Timeout: time.Hour})
		for i := range 5 {
			tr.Enqueue(event(i))
		}
		err := closeWithin(t, tr, 50*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), "not sent before shutdown") {
			t.Fatalf("Close = %v, want the events left unsent", err)
		}
		if tr.Enqueue(event(9)) {
			t.Fatal("a closed transport accepted an event")
		}
		if s := tr.Stats(); s.Dropped[lineage.DroppedShutdown] != 6 || s.Sent != 0 || s.Queued != 0 {
			t.Fatalf("stats %+v, want 6 dropped at shutdown (4 queued, 1 in flight, 1 after Close)", s)
		}
	})
}

// TestConfig refuses settings that cannot work and fills in defaults.
func TestConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  lineage.Config
		want string
	}{
		{lineage.Config{URL: ""}, "want an http:// or https:// URL"},
		{lineage.Config{URL: "ftp://x/y"}, "want an http:// or https:// URL"},
		{lineage.Config{URL: "marquez:5000"}, "want an http:// or https:// URL"},
		{lineage.Config{URL: "http://m", QueueSize: -1}, "queue size"},
		{lineage.Config{URL: "http://m", MaxAttempts: -2}, "max attempts"},
		{lineage.Config{URL: "http://m", Backoff: time.Minute, MaxBackoff: time.Second}, "max at least the backoff"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
	cfg := lineage.Config{URL: "https://datahub.example/openapi/openlineage/api/v1/lineage"}
	if err := cfg.Validate(); err != nil || cfg.URL != "https://datahub.example/openapi/openlineage/api/v1/lineage" || cfg.QueueSize != lineage.DefaultQueueSize {
		t.Errorf("Validate kept %q with queue %d (%v); want the path kept and the default queue", cfg.URL, cfg.QueueSize, err)
	}
}

// counter reads an int64 counter's value (for reason, when given).
func counter(t *testing.T, r *sdkmetric.ManualReader, name, reason string) int64 {
	t.Helper()
	data := telemetrytest.Metric(t, r, name)
	if data == nil {
		return 0
	}
	sum, ok := data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("metric %s is %T, want an int64 sum", name, data)
	}
	var total int64
	for _, dp := range sum.DataPoints {
		if v, _ := dp.Attributes.Value("reason"); reason == "" || v.AsString() == reason {
			total += dp.Value
		}
	}
	return total
}
