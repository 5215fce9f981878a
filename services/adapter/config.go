package adapter

import (
	"errors"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"google.golang.org/grpc"
)

// Defaults of Config.
const (
	DefaultRefreshInterval  = 30 * time.Second
	DefaultMaxPreviewRecord = 1000
	DefaultMaxRecordBytes   = 1 << 20
)

// Config configures an adapter Server.
type Config struct {
	// Registry and Idmap are connections to the peer services.
	Registry grpc.ClientConnInterface
	Idmap    grpc.ClientConnInterface
	Logger   *slog.Logger
	Meter    metric.Meter
	// RefreshInterval is how long a cached plan is trusted without the
	// registry's event stream: while the stream is down, a plan older than
	// this is fetched again on use (and kept serving if that fails).
	RefreshInterval time.Duration
	// MaxPreviewRecords bounds the sample records of one Preview.
	MaxPreviewRecords int
	// MaxRecordBytes bounds one source record; a larger one fails alone
	// with TOO_LARGE.
	MaxRecordBytes int
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Meter == nil {
		c.Meter = noop.NewMeterProvider().Meter("github.com/seamdata/seam/services/adapter")
	}
	if c.RefreshInterval <= 0 {
		c.RefreshInterval = DefaultRefreshInterval
	}
	if c.MaxRecordBytes <= 0 {
		c.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if c.MaxPreviewRecords <= 0 {
		c.MaxPreviewRecords = DefaultMaxPreviewRecord
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
