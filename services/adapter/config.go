package adapter

import (
	"errors"
	"log/slog"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"google.golang.org/grpc"
)

// Config configures an adapter Server.
type Config struct {
	// Registry and Idmap are connections to the peer services.
	Registry grpc.ClientConnInterface
	Idmap    grpc.ClientConnInterface
	Logger   *slog.Logger
	Meter    metric.Meter
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Meter == nil {
		c.Meter = noop.NewMeterProvider().Meter("github.com/seamdata/seam/services/adapter")
	}
	return c
}

// Validate reports what is wrong with c.
func (c Config) Validate() error {
	var errs []error
	if c.Registry == nil {
		errs = append(errs, errors.New("adapter config: no registry connection; mappings come from registered contracts"))
	}
	if c.Idmap == nil {
		errs = append(errs, errors.New("adapter config: no idmap connection; identifier translation goes through it"))
	}
	return errors.Join(errs...)
}
