package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Config configures a connector.
type Config struct {
	// Name names the connector: its journal, its consumer group, the
	// Seam-Connector header on its output.
	Name string
	// Subject is the source's subject in the registry.
	Subject string
	// ContractVersion pins a contract version; 0 uses the active one.
	ContractVersion int32
	// EventTimeField is the top-level field holding each record's event
	// time; empty uses the broker's timestamp.
	EventTimeField string
	// Granularity cuts event time into gate partitions.
	Granularity Granularity
	// Lateness is how long after a partition's end records may still
	// arrive before it is sealed and published.
	Lateness time.Duration
	// Idle leaves a source partition without traffic out of the watermark
	// after this long.
	Idle time.Duration
	// BatchRecords and BatchBytes bound one batch; BatchWait is how long
	// a batch waits to fill.
	BatchRecords int
	BatchBytes   int
	BatchWait    time.Duration
	// CallTimeout bounds each call to the gate and the registry.
	CallTimeout time.Duration
	// ContainmentPoll is how often containment is re-read from the gate.
	ContainmentPoll time.Duration
	// EventPoll is how often the registry is asked for new backfills.
	EventPoll time.Duration
	// Confluent, when true, reads every message in Confluent's wire format
	// (magic byte 0, a 4-byte schema id, an Avro or JSON payload): each is
	// decoded with the schema of its id, which the registry names, and
	// judged with the contract version registered from that schema. A
	// message that cannot be decoded is quarantined with the reason.
	Confluent bool
	// IgnoreReplays, when true, does not publish what replays release
	// (the token then needs no operator role).
	IgnoreReplays bool
	// TrimEvery trims the journal after this many appended entries.
	TrimEvery int
	// Sealer decides the verdict of a sealed partition; nil asks the
	// gate (SealPartition).
	Sealer Sealer
	// Crash, when set, is called at the points where a crash is most
	// dangerous (CrashPoints); fault-injection tests kill the process there.
	Crash  func(point string)
	Logger *slog.Logger
	Meter  metric.Meter
	// Now is the clock (tests); nil uses time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.Granularity == "" {
		c.Granularity = Day
	}
	if c.Idle == 0 {
		c.Idle = time.Minute
	}
	if c.BatchRecords == 0 {
		c.BatchRecords = 1000
	}
	if c.BatchBytes == 0 {
		c.BatchBytes = 4 << 20
	}
	if c.BatchWait == 0 {
		c.BatchWait = 200 * time.Millisecond
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = 30 * time.Second
	}
	if c.ContainmentPoll == 0 {
		c.ContainmentPoll = time.Second
	}
	if c.EventPoll == 0 {
		c.EventPoll = 2 * time.Second
	}
	if c.TrimEvery == 0 {
		c.TrimEvery = 256
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Meter == nil {
		c.Meter = noop.NewMeterProvider().Meter("")
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports every configuration error at once.
func (c *Config) Validate() error {
	var errs []error
	if strings.TrimSpace(c.Name) == "" || strings.ContainsAny(c.Name, " .*>/\\") {
		errs = append(errs, fmt.Errorf("name %q: give the connector a name without spaces, dots, slashes or wildcards (it names its journal)", c.Name))
	}
	if strings.TrimSpace(c.Subject) == "" {
		errs = append(errs, errors.New("subject: name the registry subject of the source, for example shop.orders"))
	}
	if _, ok := layouts[c.Granularity]; !ok {
		errs = append(errs, fmt.Errorf("granularity %q: use day, hour or minute", c.Granularity))
	}
	if c.Lateness < 0 {
		errs = append(errs, fmt.Errorf("lateness %s: must not be negative", c.Lateness))
	}
	if c.BatchRecords < 1 || c.BatchRecords > 100_000 {
		errs = append(errs, fmt.Errorf("batch records %d: use 1 to 100000", c.BatchRecords))
	}
	if c.BatchBytes < 1024 {
		errs = append(errs, fmt.Errorf("batch bytes %d: use at least 1024", c.BatchBytes))
	}
	if c.ContractVersion < 0 {
		errs = append(errs, fmt.Errorf("contract version %d: a version is positive; 0 uses the active one", c.ContractVersion))
	}
	return errors.Join(errs...)
}

// CrashPoints are the points Config.Crash is called at: after a batch's
// plan is journaled, after the gate answered a batch and before its
// answer is journaled, after the output took a chunk and before that is
// journaled, and after a replay's records came back and before they are
// journaled.
var CrashPoints = []string{"planned", "ingested", "published", "replayed"}

func (c *Connector) crash(point string) {
	if c.cfg.Crash != nil {
		c.cfg.Crash(point)
	}
}

// Verdict is a sealed partition's verdict.
type Verdict string

// Verdicts of a sealed partition.
const (
	Passed           Verdict = "PASSED"
	PassedWithAlerts Verdict = "PASSED_WITH_ALERTS"
	Blocked          Verdict = "BLOCKED"
)

// Sealer seals a partition whose watermark has passed and says whether
// it may be published. The default asks the gate (SealPartition): see
// docs/streaming.md.
type Sealer interface {
	Seal(ctx context.Context, subject, part string) (Verdict, string, error)
}

// gateSealer seals through the gate, which judges the whole partition:
// its partition-level checks (BLOCK thresholds, row count, null rate,
// drift) decide the verdict.
type gateSealer struct{ c *Connector }

func (g gateSealer) Seal(ctx context.Context, subject, part string) (Verdict, string, error) {
	var resp *gatev1.SealPartitionResponse
	err := g.c.retry(ctx, "seal partition "+part, func(ctx context.Context) error {
		var err error
		resp, err = g.c.gate.SealPartition(ctx, &gatev1.SealPartitionRequest{Subject: subject, Partition: part})
		return err
	})
	if err != nil {
		return "", "", err
	}
	st := resp.GetPartition()
	switch st.GetVerdict() {
	case gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED:
		return Passed, "", nil
	case gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED_WITH_ALERTS:
		return PassedWithAlerts, st.GetNotice(), nil
	case gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED:
		var deciding []string
		for _, o := range st.GetChecks() {
			if o.GetExceeded() && o.GetPolicy() == contractv1.Policy_POLICY_BLOCK {
				deciding = append(deciding, o.GetMessage())
			}
		}
		if len(deciding) == 0 {
			deciding = append(deciding, st.GetNotice())
		}
		return Blocked, strings.Join(deciding, "; "), nil
	}
	return "", "", fmt.Errorf("%w: the gate sealed partition %s without a verdict (status %s)", errFatal, part, st.GetStatus())
}

// LocalSealer passes every partition without asking the gate; a partition
// one of whose batches the gate BLOCKED is held by the engine before it
// asks.
type LocalSealer struct{}

// Seal passes every partition.
func (LocalSealer) Seal(context.Context, string, string) (Verdict, string, error) {
	return Passed, "", nil
}

// Connector runs one engine per source partition against one gate.
type Connector struct {
	cfg      Config
	gate     gatev1.GateServiceClient
	registry registryv1.RegistryServiceClient
	log      *slog.Logger
	marks    *Watermarks
	engines  []*engine
	met      *meters
	stats    counters

	containMu   sync.Mutex
	contained   bool
	containedAt time.Time // when contained was last read from the gate

	// schemas caches the schema ids of Confluent-framed messages.
	schemas schemaCache

	// replayMu serialises replay calls, so the engines of one connector
	// never race each other for the same replay id.
	replayMu sync.Mutex
}

// counters are the connector's running totals, read by Stats.
type counters struct {
	read, accepted, quarantined, blockedRecs, published, replayed, batches atomic.Int64
}

// New returns a connector over the given partitions. conn reaches Seam
// (the gate and the registry).
func New(cfg Config, conn grpc.ClientConnInterface, parts []Partition) (*Connector, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return nil, errors.New("no source partition to read")
	}
	c := &Connector{cfg: cfg, gate: gatev1.NewGateServiceClient(conn), registry: registryv1.NewRegistryServiceClient(conn),
		log: cfg.Logger.With("connector", cfg.Name, "subject", cfg.Subject), marks: NewWatermarks(cfg.Idle, cfg.Now),
		schemas: schemaCache{known: map[int32]*framedSchema{}}}
	if c.cfg.Sealer == nil {
		c.cfg.Sealer = gateSealer{c}
	}
	for _, p := range parts {
		c.engines = append(c.engines, &engine{c: c, p: p, name: p.Source.Name(), st: newState()})
	}
	met, err := newMeters(cfg.Meter, c)
	if err != nil {
		return nil, err
	}
	c.met = met
	return c, nil
}

// Run runs every engine until ctx ends or one fails.
func (c *Connector) Run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, e := range c.engines {
		g.Go(func() error { return e.run(gctx) })
	}
	err := g.Wait()
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return nil
	}
	return err
}

// Stats is a snapshot of a connector's progress.
type Stats struct {
	Read, Accepted, Quarantined, Blocked, Published, Replayed, Batches int64
	// Held counts accepted records staged and not published (open, blocked
	// or contained partitions) plus records of BLOCKED batches.
	Held int64
	// Lag is how many source messages are not yet done, over every source
	// partition (-1 when a broker could not say).
	Lag       int64
	Contained bool
	Watermark time.Time
}

// Stats returns the connector's progress now.
func (c *Connector) Stats(ctx context.Context) Stats {
	s := Stats{Read: c.stats.read.Load(), Accepted: c.stats.accepted.Load(), Quarantined: c.stats.quarantined.Load(),
		Blocked: c.stats.blockedRecs.Load(), Published: c.stats.published.Load(), Replayed: c.stats.replayed.Load(),
		Batches: c.stats.batches.Load(), Watermark: c.marks.Current()}
	c.containMu.Lock()
	s.Contained = c.contained
	c.containMu.Unlock()
	for _, e := range c.engines {
		s.Held += e.held.Load()
		lag, err := e.lag(ctx)
		if err != nil || s.Lag < 0 {
			s.Lag = -1
			continue
		}
		s.Lag += lag
	}
	return s
}

// isContained says whether the source is contained, reading it from the
// gate at most every ContainmentPoll.
func (c *Connector) isContained(ctx context.Context) (bool, error) {
	c.containMu.Lock()
	fresh := c.cfg.Now().Sub(c.containedAt) < c.cfg.ContainmentPoll
	cur := c.contained
	c.containMu.Unlock()
	if fresh {
		return cur, nil
	}
	var resp *gatev1.ListContainmentsResponse
	if err := c.retry(ctx, "list containments", func(ctx context.Context) error {
		var err error
		resp, err = c.gate.ListContainments(ctx, &gatev1.ListContainmentsRequest{})
		return err
	}); err != nil {
		return false, err
	}
	now := false
	for _, ct := range resp.GetContainments() {
		if ct.GetSubject() == c.cfg.Subject && ct.GetContained() {
			now = true
		}
	}
	c.setContained(now)
	return now, nil
}

// setContained records containment seen in a batch answer or read from
// the gate.
func (c *Connector) setContained(v bool) {
	c.containMu.Lock()
	defer c.containMu.Unlock()
	if v != c.contained {
		if v {
			c.log.Warn("the source is contained: publishing paused; records keep flowing into quarantine")
		} else {
			c.log.Info("the source is released: publishing resumes")
		}
	}
	c.contained, c.containedAt = v, c.cfg.Now()
}
