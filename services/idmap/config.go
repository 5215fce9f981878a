// Package idmap is the idmap service: it translates identifiers between the
// formats of an entity namespace, by deterministic rules (core/idrule) and
// by bulk-loaded one-to-one lookup tables served from an in-memory index
// (idtable) built from the store.
package idmap

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/seamdata/seam/platform/storage"
)

// DefaultMaxTranslateIDs is the per-call id limit of Translate.
const DefaultMaxTranslateIDs = 100_000

// DefaultMaxImportPairs bounds one import, which is staged in memory.
const DefaultMaxImportPairs = 50_000_000

// Config configures the idmap service.
type Config struct {
	// StoreURL opens the store when DB is nil: a SQLite path or postgres:// URL.
	StoreURL string
	// DB is an already open store to use instead of StoreURL; the caller
	// keeps ownership and closes it after Close.
	DB *storage.DB
	// Meter receives the translation counters; nil disables them.
	Meter metric.Meter
	// Principal names who makes a change, for the audit log; nil records
	// "anonymous". The runtime wires the authenticated caller into it.
	Principal func(context.Context) string
	// Logger receives internal errors that clients only see masked.
	Logger *slog.Logger
	// MaxTranslateIDs is the per-call id limit (default 100,000).
	MaxTranslateIDs int
	// MaxImportPairs bounds one import (default 50,000,000).
	MaxImportPairs int
	// CompactAt is how many changes a lookup table's overlay takes before
	// it is folded into a new compact index in the background (default
	// 65,536); one change larger than that rebuilds the index at once.
	CompactAt int
	// CounterFlushInterval is how often translation counters are added to
	// the store that GetStats reads (default 1s).
	CounterFlushInterval time.Duration
}

// DefaultCompactAt is the default of Config.CompactAt.
const DefaultCompactAt = 65_536

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.MaxTranslateIDs == 0 {
		c.MaxTranslateIDs = DefaultMaxTranslateIDs
	}
	if c.MaxImportPairs == 0 {
		c.MaxImportPairs = DefaultMaxImportPairs
	}
	if c.CompactAt == 0 {
		c.CompactAt = DefaultCompactAt
	}
	if c.CounterFlushInterval == 0 {
		c.CounterFlushInterval = time.Second
	}
	if c.Principal == nil {
		c.Principal = func(context.Context) string { return "anonymous" }
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports what is wrong with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.DB == nil && c.StoreURL == "" {
		errs = append(errs, errors.New("idmap config: set StoreURL (a SQLite path or postgres:// URL) or DB"))
	}
	if c.MaxTranslateIDs < 0 {
		errs = append(errs, fmt.Errorf("idmap config: MaxTranslateIDs is %d, want a positive limit or 0 for the default", c.MaxTranslateIDs))
	}
	if c.MaxImportPairs < 0 {
		errs = append(errs, fmt.Errorf("idmap config: MaxImportPairs is %d, want a positive limit or 0 for the default", c.MaxImportPairs))
	}
	if c.CompactAt < 0 {
		errs = append(errs, fmt.Errorf("idmap config: CompactAt is %d, want a positive number of changes or 0 for the default", c.CompactAt))
	}
	if c.CounterFlushInterval < 0 {
		errs = append(errs, fmt.Errorf("idmap config: CounterFlushInterval is %s, want a positive interval or 0 for the default", c.CounterFlushInterval))
	}
	return errors.Join(errs...)
}
