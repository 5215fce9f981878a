package registry

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"google.golang.org/grpc"
)

// DefaultIdmapTimeout bounds one question to idmap, waiting for a peer
// that is still starting included.
const DefaultIdmapTimeout = 5 * time.Second

// DefaultSchedulerInterval is how often the scheduler looks for SCHEDULED
// versions whose effective time has come when no store wake-up arrives.
const DefaultSchedulerInterval = time.Second

// Config configures a registry Server.
type Config struct {
	// StoreURL selects the durable store: "postgres://…" for a PostgreSQL
	// shared by replicas, "sqlite:PATH" or a bare path for the embedded file.
	StoreURL string
	// Clock returns the current time. Tests inject a controllable clock so
	// notice periods and activation are tested without sleeping.
	Clock func() time.Time
	// SchedulerInterval is how often Run activates due versions and re-reads
	// the change log even without a wake-up (a safety net for lost
	// notifications).
	SchedulerInterval time.Duration
	// Logger receives operational logs; internal error details go here and
	// never to clients.
	Logger *slog.Logger
	// Meter records registrations and activations.
	Meter metric.Meter
	// Idmap is the connection to idmap, which the registry asks whether the
	// identifier namespaces a contract names exist and whether its
	// migration's translations can run (at registration and again at a
	// scheduled version's effective time). Nil skips those checks: only
	// tests and tools without idmap leave it out; every Seam node sets it.
	Idmap grpc.ClientConnInterface
	// IdmapTimeout bounds each question to idmap (0: DefaultIdmapTimeout).
	IdmapTimeout time.Duration
}

// withDefaults returns a copy of c with unset optional fields filled in.
func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.SchedulerInterval == 0 {
		c.SchedulerInterval = DefaultSchedulerInterval
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.IdmapTimeout == 0 {
		c.IdmapTimeout = DefaultIdmapTimeout
	}
	if c.Meter == nil {
		c.Meter = noop.NewMeterProvider().Meter("github.com/seamdata/seam/services/registry")
	}
	return c
}

// Validate reports what is wrong with c, naming each setting and the value
// that would be accepted.
func (c Config) Validate() error {
	var errs []error
	if c.StoreURL == "" {
		errs = append(errs, errors.New("registry config: StoreURL is empty; set a PostgreSQL URL (postgres://…) or an SQLite path (sqlite:PATH)"))
	}
	if c.SchedulerInterval < 0 {
		errs = append(errs, fmt.Errorf("registry config: SchedulerInterval is %s; it must be positive (or 0 for the default %s)", c.SchedulerInterval, DefaultSchedulerInterval))
	}
	if c.IdmapTimeout < 0 {
		errs = append(errs, fmt.Errorf("registry config: IdmapTimeout is %s; it must be positive (or 0 for the default %s)", c.IdmapTimeout, DefaultIdmapTimeout))
	}
	return errors.Join(errs...)
}
