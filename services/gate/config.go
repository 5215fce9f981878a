package gate

import (
	"errors"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"google.golang.org/grpc"
)

// Config configures a gate Server.
type Config struct {
	// StoreURL selects the durable store: "postgres://…" or an SQLite path.
	StoreURL string
	// Registry, Adapter and Idmap are connections to the peer services.
	Registry grpc.ClientConnInterface
	Adapter  grpc.ClientConnInterface
	Idmap    grpc.ClientConnInterface
	Logger   *slog.Logger
	Meter    metric.Meter
	// Clock returns the current time; tests inject one.
	Clock func() time.Time
	// RelayInterval is how often undelivered registry events are retried.
	RelayInterval time.Duration
}

// DefaultRelayInterval is how often the outbox relay retries when no
// write wakes it.
const DefaultRelayInterval = 2 * time.Second

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Meter == nil {
		c.Meter = noop.NewMeterProvider().Meter("github.com/seamdata/seam/services/gate")
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.RelayInterval == 0 {
		c.RelayInterval = DefaultRelayInterval
	}
	return c
}

// Validate reports what is wrong with c.
func (c Config) Validate() error {
	var errs []error
	if c.StoreURL == "" {
		errs = append(errs, errors.New("gate config: StoreURL is empty; set postgres://… or an SQLite path"))
	}
	if c.Registry == nil {
		errs = append(errs, errors.New("gate config: no registry connection; the gate reads contracts and reports events there"))
	}
	if c.Adapter == nil {
		errs = append(errs, errors.New("gate config: no adapter connection"))
	}
	if c.Idmap == nil {
		errs = append(errs, errors.New("gate config: no idmap connection"))
	}
	if c.RelayInterval < 0 {
		errs = append(errs, errors.New("gate config: RelayInterval must be positive"))
	}
	return errors.Join(errs...)
}
