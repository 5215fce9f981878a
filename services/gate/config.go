package gate

import (
	"errors"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"

	"github.com/seamdata/seam/core/openlineage"
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
	// TracerProvider makes the gate's own spans (gate.ingest, gate.seal,
	// gate.publish_event); nil means none.
	TracerProvider trace.TracerProvider
	// Clock returns the current time; tests inject one.
	Clock func() time.Time
	// Lineage emits an OpenLineage run for every sealing of a partition
	// (START, then COMPLETE, or FAIL when it is BLOCKED); nil emits
	// nothing. It never blocks and never fails a seal.
	Lineage *openlineage.Emitter
	// RelayInterval is how often undelivered registry events are retried.
	RelayInterval time.Duration
	// ContractRefresh is how long the active version of a subject is
	// trusted before the registry is asked again. Pinned versions are
	// immutable and cached for the life of the process.
	ContractRefresh time.Duration
	// ContractCheck is how often the gate confirms, in the background, the
	// active version of every subject it knows with the registry, so a
	// version change is seen and seam.gate.contract.age measures the
	// registry's reachability whether or not batches flow.
	ContractCheck time.Duration
	// MatchRateFloor, when above zero, contains a source automatically as
	// soon as a partition's identifier match rate falls below it (after at
	// least MinMatchSample identifiers). Off by default: containing stops a
	// whole feed, so an operator opts in.
	MatchRateFloor float64
	// MinMatchSample is how many identifiers a partition needs before the
	// automatic containment floor applies, so one odd first batch does not
	// contain a source.
	MinMatchSample int64
	// MaxMessageBytes is the largest gRPC message the gate sends or takes
	// (the server's limit, 64 MiB by default). The gate splits its calls
	// to the adapter to stay under it, and refuses an answer that would
	// exceed it with ResourceExhausted rather than fail to send it.
	MaxMessageBytes int
	// QuarantineMaxRaw is how many bytes of a quarantined record are kept.
	// A longer record keeps its first QuarantineMaxRaw bytes, its size and
	// its SHA-256, marked truncated, so a few huge records cannot make the
	// quarantine unreadable.
	QuarantineMaxRaw int
	// MaxPageBytes bounds the raw bytes of one page of quarantine list:
	// a page ends after the record that reaches it.
	MaxPageBytes int
	// AnswerTTL is how long the canonical records of a batch's answer are
	// kept for its retries, when the batch asked for them (summary-only
	// batches keep none): a retry after it gets ANSWER_EXPIRED, never the
	// records written twice.
	AnswerTTL time.Duration
	// BatchRetention is how long idempotency rows are kept: a batch retried
	// within it is recognised and written once (after it, its records'
	// keys are still in their partition, so they count as duplicates).
	BatchRetention time.Duration
	// QuarantineRetention is how long released, discarded and superseded
	// quarantine is kept after it settled; held records are kept until
	// they are released or discarded.
	QuarantineRetention time.Duration
	// RetentionInterval is how often the retention job runs.
	RetentionInterval time.Duration
	// RegistryTimeout bounds each call to the registry. A registry that
	// does not answer within it counts as unreachable: ingest then serves
	// the last known contract instead of waiting on a hung peer.
	RegistryTimeout time.Duration
	// UnannouncedShare is the share of a partition's values of one field
	// that must move to one shape (failing the field's checks, or never
	// learned from what passed) before the gate reports an unannounced
	// change of that field (docs/alerts.md).
	UnannouncedShare float64
	// KeyCacheKeys bounds the key hashes of partitions the gate holds in
	// memory to decide duplicates (about 30 bytes each); the partitions
	// used longest ago leave first, and a partition with more keys is
	// read from the store for each batch (see store_sql_keys.go).
	KeyCacheKeys int

	// wrapStore, set by tests only, puts a store of their own around the
	// one New opens, before anything uses it: one that behaves as under
	// contention, say.
	wrapStore func(gateStore) gateStore
}

// Defaults of Config.
const (
	DefaultContractRefresh     = time.Second
	DefaultContractCheck       = 15 * time.Second
	DefaultRegistryTimeout     = 2 * time.Second
	DefaultMaxMessageBytes     = 64 << 20
	DefaultQuarantineMaxRaw    = 1 << 20
	DefaultMaxPageBytes        = 4 << 20
	DefaultAnswerTTL           = 24 * time.Hour
	DefaultBatchRetention      = 30 * 24 * time.Hour
	DefaultQuarantineRetention = 90 * 24 * time.Hour
	DefaultRetentionInterval   = time.Hour
	DefaultMinMatchSample      = 100
	DefaultUnannouncedShare    = 0.5
	DefaultKeyCacheKeys        = 12 << 20
)

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
	if c.TracerProvider == nil {
		c.TracerProvider = tracenoop.NewTracerProvider()
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.RelayInterval == 0 {
		c.RelayInterval = DefaultRelayInterval
	}
	if c.ContractRefresh == 0 {
		c.ContractRefresh = DefaultContractRefresh
	}
	if c.ContractCheck == 0 {
		c.ContractCheck = DefaultContractCheck
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.QuarantineMaxRaw == 0 {
		c.QuarantineMaxRaw = DefaultQuarantineMaxRaw
	}
	if c.MaxPageBytes == 0 {
		c.MaxPageBytes = DefaultMaxPageBytes
	}
	if c.AnswerTTL == 0 {
		c.AnswerTTL = DefaultAnswerTTL
	}
	if c.BatchRetention == 0 {
		c.BatchRetention = DefaultBatchRetention
	}
	if c.QuarantineRetention == 0 {
		c.QuarantineRetention = DefaultQuarantineRetention
	}
	if c.RetentionInterval == 0 {
		c.RetentionInterval = DefaultRetentionInterval
	}
	if c.RegistryTimeout == 0 {
		c.RegistryTimeout = DefaultRegistryTimeout
	}
	if c.MinMatchSample == 0 {
		c.MinMatchSample = DefaultMinMatchSample
	}
	if c.KeyCacheKeys == 0 {
		c.KeyCacheKeys = DefaultKeyCacheKeys
	}
	if c.UnannouncedShare == 0 {
		c.UnannouncedShare = DefaultUnannouncedShare
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
	if c.ContractRefresh < 0 {
		errs = append(errs, errors.New("gate config: ContractRefresh must be positive (or 0 for the default 1s)"))
	}
	if c.ContractCheck < 0 {
		errs = append(errs, errors.New("gate config: ContractCheck must be positive (or 0 for the default 15s)"))
	}
	if c.MaxMessageBytes < 0 || (c.MaxMessageBytes > 0 && c.MaxMessageBytes < 1<<20) {
		errs = append(errs, errors.New("gate config: MaxMessageBytes must be at least 1 MiB (or 0 for the default 64 MiB)"))
	}
	if c.KeyCacheKeys < 0 {
		errs = append(errs, errors.New("gate config: KeyCacheKeys must be positive (or 0 for the default 12582912)"))
	}
	if c.QuarantineMaxRaw < 0 || c.MaxPageBytes < 0 {
		errs = append(errs, errors.New("gate config: QuarantineMaxRaw and MaxPageBytes must be positive (or 0 for their defaults)"))
	}
	if c.AnswerTTL < 0 || c.BatchRetention < 0 || c.QuarantineRetention < 0 || c.RetentionInterval < 0 {
		errs = append(errs, errors.New("gate config: AnswerTTL, BatchRetention, QuarantineRetention and RetentionInterval must be positive (or 0 for their defaults)"))
	}
	if c.AnswerTTL > c.BatchRetention && c.BatchRetention > 0 {
		errs = append(errs, errors.New("gate config: AnswerTTL must not exceed BatchRetention: an answer is kept only with its idempotency row"))
	}
	if c.RegistryTimeout < 0 {
		errs = append(errs, errors.New("gate config: RegistryTimeout must be positive (or 0 for the default 2s)"))
	}
	if c.MatchRateFloor < 0 || c.MatchRateFloor > 1 {
		errs = append(errs, errors.New("gate config: MatchRateFloor must be between 0 (off) and 1"))
	}
	if c.UnannouncedShare < 0 || c.UnannouncedShare > 1 {
		errs = append(errs, errors.New("gate config: UnannouncedShare must be between 0 and 1"))
	}
	return errors.Join(errs...)
}
