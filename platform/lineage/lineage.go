// Package lineage sends OpenLineage events to a collector (Marquez,
// DataHub, any OpenLineage HTTP endpoint) without ever holding up the
// caller: events wait in a bounded queue, one goroutine posts them in order
// with retries and backoff, and what cannot be sent is dropped and counted,
// never blocked on. The events themselves are built by core/openlineage;
// this package only moves bytes.
package lineage

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// DefaultPath is where a collector takes events when the URL names only
// the server: Marquez's route, which Seam serves too.
const DefaultPath = "/api/v1/lineage"

// Defaults of Config.
const (
	DefaultQueueSize   = 10000
	DefaultTimeout     = 10 * time.Second
	DefaultMaxAttempts = 5
	DefaultBackoff     = 500 * time.Millisecond
	DefaultMaxBackoff  = 30 * time.Second
)

// Reasons an event is dropped, the values of the metric's reason attribute.
const (
	DroppedQueueFull = "queue_full"
	DroppedRejected  = "rejected"
	DroppedRetries   = "retries_exhausted"
	DroppedShutdown  = "shutdown"
)

// Config configures a Transport.
type Config struct {
	// URL is the collector's endpoint, such as
	// http://marquez:5000/api/v1/lineage; a URL without a path gets
	// DefaultPath.
	URL string
	// APIKey, when set, is sent as "Authorization: Bearer <key>".
	APIKey string
	// QueueSize bounds the events waiting to be sent; an event that finds
	// the queue full is dropped.
	QueueSize int
	// Timeout bounds one request.
	Timeout time.Duration
	// MaxAttempts bounds the tries of one event (network errors, 408, 429
	// and 5xx are retried; other answers are final).
	MaxAttempts int
	// Backoff is the wait before the first retry; it doubles up to
	// MaxBackoff, with jitter. A Retry-After answer is honoured up to
	// MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// Gzip compresses request bodies (Content-Encoding: gzip).
	Gzip bool
	// Client sends the requests; a client with Timeout when nil.
	Client *http.Client
	Logger *slog.Logger
	// Meter records the transport's metrics; none when nil.
	Meter metric.Meter
}

// Validate fills in defaults and checks the settings.
func (c *Config) Validate() error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("openlineage url %q: want an http:// or https:// URL such as http://marquez:5000/api/v1/lineage", c.URL)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = DefaultPath
	}
	c.URL = u.String()
	if c.QueueSize == 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Backoff == 0 {
		c.Backoff = DefaultBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	switch {
	case c.QueueSize < 1:
		return fmt.Errorf("openlineage queue size %d: want 1 or more", c.QueueSize)
	case c.Timeout < 0 || c.Backoff < 0 || c.MaxBackoff < c.Backoff:
		return fmt.Errorf("openlineage timeout %s, backoff %s, max backoff %s: want positive durations, the max at least the backoff", c.Timeout, c.Backoff, c.MaxBackoff)
	case c.MaxAttempts < 1:
		return fmt.Errorf("openlineage max attempts %d: want 1 or more", c.MaxAttempts)
	}
	if c.Client == nil {
		c.Client = &http.Client{Timeout: c.Timeout}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Meter == nil {
		c.Meter = noop.NewMeterProvider().Meter("github.com/seamdata/seam/platform/lineage")
	}
	return nil
}

// Stats are a transport's counts since it started.
type Stats struct {
	Sent    int64
	Retries int64
	// Dropped counts events by reason (DroppedQueueFull, …).
	Dropped map[string]int64
	Queued  int
}

// Transport posts events to a collector. Enqueue never blocks; Close
// flushes what is queued within a deadline.
type Transport struct {
	cfg   Config
	queue chan []byte
	// closing is closed by Close: the worker then sends what is queued and
	// stops; abort is closed when Close's deadline passes.
	closing, abort, done chan struct{}
	closeOnce, abortOnce sync.Once
	unregister           sync.Once
	mu                   sync.RWMutex // guards closed against Enqueue
	closed               bool

	sent, retries atomic.Int64
	dropped       sync.Map // reason → *atomic.Int64

	mSent, mDropped, mRetries metric.Int64Counter
	mQueue                    metric.Registration
	lastWarn                  atomic.Int64 // unix nanos of the last warning logged
}

// New validates cfg and starts the transport's goroutine; Close stops it.
func New(cfg Config) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &Transport{cfg: cfg, queue: make(chan []byte, cfg.QueueSize),
		closing: make(chan struct{}), abort: make(chan struct{}), done: make(chan struct{})}
	m := cfg.Meter
	var err error
	if t.mSent, err = m.Int64Counter("seam.openlineage.events.sent", metric.WithDescription("OpenLineage events the collector accepted")); err != nil {
		return nil, err
	}
	if t.mDropped, err = m.Int64Counter("seam.openlineage.events.dropped", metric.WithDescription("OpenLineage events given up, by reason: queue_full, rejected, retries_exhausted, shutdown")); err != nil {
		return nil, err
	}
	if t.mRetries, err = m.Int64Counter("seam.openlineage.retries", metric.WithDescription("OpenLineage requests tried again")); err != nil {
		return nil, err
	}
	gauge, err := m.Int64ObservableGauge("seam.openlineage.queue.length", metric.WithDescription("OpenLineage events waiting to be sent"))
	if err != nil {
		return nil, err
	}
	if t.mQueue, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(gauge, int64(len(t.queue)))
		return nil
	}, gauge); err != nil {
		return nil, err
	}
	go t.run()
	return t, nil
}

// Enqueue queues one encoded event without blocking: false when the queue
// is full or the transport closed (the event is dropped and counted).
func (t *Transport) Enqueue(event []byte) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		t.drop(DroppedShutdown, 1)
		return false
	}
	select {
	case t.queue <- event:
		return true
	default:
		t.drop(DroppedQueueFull, 1)
		t.warn("OpenLineage queue full: dropping events", "queue_size", t.cfg.QueueSize)
		return false
	}
}

// Close stops taking events and sends those queued until ctx is done; the
// rest are dropped (counted as shutdown). It returns ctx's error when
// events were left, nil when everything queued was handled.
func (t *Transport) Close(ctx context.Context) error {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.closed = true
		t.mu.Unlock()
		close(t.closing)
	})
	var err error
	select {
	case <-t.done:
	case <-ctx.Done():
		err = fmt.Errorf("openlineage: %d events not sent before shutdown: %w", len(t.queue), ctx.Err())
		t.abortOnce.Do(func() { close(t.abort) })
		<-t.done
	}
	t.unregister.Do(func() {
		if uerr := t.mQueue.Unregister(); uerr != nil && err == nil {
			err = uerr
		}
	})
	return err
}

// Stats returns the transport's counts.
func (t *Transport) Stats() Stats {
	s := Stats{Sent: t.sent.Load(), Retries: t.retries.Load(), Dropped: map[string]int64{}, Queued: len(t.queue)}
	t.dropped.Range(func(k, v any) bool {
		s.Dropped[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return s
}

func (t *Transport) drop(reason string, n int64) {
	c, _ := t.dropped.LoadOrStore(reason, new(atomic.Int64))
	c.(*atomic.Int64).Add(n)
	t.mDropped.Add(context.Background(), n, metric.WithAttributes(attribute.String("reason", reason)))
}

// warn logs at most once every ten seconds, so a collector that is down
// does not flood the log with one line per event.
func (t *Transport) warn(msg string, args ...any) {
	now := time.Now().UnixNano()
	last := t.lastWarn.Load()
	if now-last < int64(10*time.Second) || !t.lastWarn.CompareAndSwap(last, now) {
		return
	}
	t.cfg.Logger.Warn(msg, append(args, "endpoint", t.cfg.URL)...)
}

// run sends events one at a time, in the order they were queued, until
// Close; then it drains the queue, unless aborted.
func (t *Transport) run() {
	defer close(t.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-t.abort:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case ev := <-t.queue:
			t.deliver(ctx, ev)
		case <-t.closing:
			for {
				select {
				case ev := <-t.queue:
					if ctx.Err() != nil {
						t.drop(DroppedShutdown, 1+int64(len(t.queue)))
						t.discard()
						return
					}
					t.deliver(ctx, ev)
				default:
					return
				}
			}
		}
	}
}

// discard empties the queue after an abort; the events were counted.
func (t *Transport) discard() {
	for {
		select {
		case <-t.queue:
		default:
			return
		}
	}
}

// deliver tries one event up to MaxAttempts times.
func (t *Transport) deliver(ctx context.Context, ev []byte) {
	body, encoding, err := t.encode(ev)
	if err != nil {
		t.drop(DroppedRejected, 1)
		t.warn("OpenLineage event not sent: compress", "error", err)
		return
	}
	wait := t.cfg.Backoff
	for attempt := 1; ; attempt++ {
		retry, after, err := t.post(ctx, body, encoding)
		if err == nil {
			t.sent.Add(1)
			t.mSent.Add(context.Background(), 1)
			return
		}
		switch {
		case ctx.Err() != nil:
			t.drop(DroppedShutdown, 1)
			return
		case !retry:
			t.drop(DroppedRejected, 1)
			t.warn("OpenLineage collector refused an event; it is dropped", "error", err)
			return
		case attempt >= t.cfg.MaxAttempts:
			t.drop(DroppedRetries, 1)
			t.warn("OpenLineage event dropped after retries", "attempts", attempt, "error", err)
			return
		}
		t.retries.Add(1)
		t.mRetries.Add(context.Background(), 1)
		d := jitter(wait)
		if after > 0 {
			d = min(after, t.cfg.MaxBackoff)
		}
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			t.drop(DroppedShutdown, 1)
			return
		}
		wait = min(2*wait, t.cfg.MaxBackoff)
	}
}

// jitter picks a wait in [d/2, d], so replicas that failed together do not
// retry together.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

func (t *Transport) encode(ev []byte) ([]byte, string, error) {
	if !t.cfg.Gzip {
		return ev, "", nil
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(ev); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return b.Bytes(), "gzip", nil
}

// post sends one request. retry says whether a failure is worth trying
// again; after is the collector's Retry-After, 0 when not given.
func (t *Transport) post(ctx context.Context, body []byte, encoding string) (retry bool, after time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return false, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	if t.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.cfg.APIKey)
	}
	resp, err := t.cfg.Client.Do(req)
	if err != nil {
		return true, 0, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
	if resp.StatusCode/100 == 2 {
		return false, 0, nil
	}
	err = fmt.Errorf("POST %s: %s: %s", t.cfg.URL, resp.Status, strings.TrimSpace(string(msg)))
	switch {
	case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500:
		return true, retryAfter(resp.Header.Get("Retry-After")), err
	}
	return false, 0, err
}

// retryAfter reads a Retry-After header given in seconds; 0 otherwise.
func retryAfter(h string) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}
