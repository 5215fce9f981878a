package gate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/partition"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/platform/rpcerr"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// compiled is one contract version compiled once for the life of the
// process: versions are immutable, so the plan never goes stale.
type compiled struct {
	subject  string
	version  int32
	contract *contractv1.Contract
	plan     *check.Plan
	// spec is the contract's partition time, nil when it declares none.
	spec *partition.Spec
	// decoders pools record decoders of the plan's schema; give each back
	// once nothing of the batches it decoded is used any more.
	decoders *record.DecoderPool
	// paths names every field of the plan's schema in slot order, as
	// records travel to the adapter decoded (adapterv1.DecodedRecords).
	paths []string
}

type versionKey struct {
	subject string
	version int32
}

// activeEntry is the registry's answer to "which version is active", with
// when it was asked.
type activeEntry struct {
	version int32
	fetched time.Time
}

// contracts resolves and caches contract versions. The active version of a
// subject is re-asked after Config.ContractRefresh; every version the
// registry returned is also written to the store, so a registry outage,
// even across a restart, keeps the last known contract serving.
type contracts struct {
	cfg      Config
	registry registryv1.RegistryServiceClient
	store    contractStore

	mu       sync.Mutex
	versions map[versionKey]*compiled
	active   map[string]activeEntry
	// listed caches, per subject, the registry's list of versions, for
	// picking a version by data date.
	listed map[string]listedEntry
}

// listedEntry is a subject's versions as the registry last listed them.
type listedEntry struct {
	versions []storedVersion
	fetched  time.Time
}

func newContracts(ctx context.Context, cfg Config, reg registryv1.RegistryServiceClient, st contractStore) (*contracts, error) {
	c := &contracts{cfg: cfg, registry: reg, store: st, versions: map[versionKey]*compiled{}, active: map[string]activeEntry{}, listed: map[string]listedEntry{}}
	known, err := st.ActiveContracts(ctx)
	if err != nil {
		return nil, err
	}
	for subject, e := range known {
		// Loaded entries count as stale: they answer only when the
		// registry cannot, and their age is what the gauge reports.
		c.active[subject] = e
	}
	_, err = cfg.Meter.Float64ObservableGauge("seam.gate.contract.age",
		metric.WithDescription("Seconds since the registry last confirmed the active contract a subject is validated with; it grows while the registry is unreachable."),
		metric.WithUnit("s"),
		metric.WithFloat64Callback(func(_ context.Context, o metric.Float64Observer) error {
			now := cfg.Clock()
			c.mu.Lock()
			defer c.mu.Unlock()
			for subject, e := range c.active {
				o.Observe(now.Sub(e.fetched).Seconds(), metric.WithAttributes(attribute.String("subject", subject)))
			}
			return nil
		}))
	if err != nil {
		return nil, fmt.Errorf("gate: register contract age gauge: %w", err)
	}
	return c, nil
}

// unreachable reports whether a registry error means it could not answer,
// as opposed to answering no.
func unreachable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted, codes.ResourceExhausted, codes.Internal, codes.Unknown:
		return true
	}
	return false
}

// resolve returns the compiled contract a batch is validated with: the
// pinned version when version > 0, else the version active now. fresh
// skips the active-version cache (replays run through today's contract).
func (c *contracts) resolve(ctx context.Context, subject string, version int32, fresh bool) (*compiled, error) {
	if version > 0 {
		return c.pinned(ctx, subject, version)
	}
	now := c.cfg.Clock()
	c.mu.Lock()
	e, ok := c.active[subject]
	c.mu.Unlock()
	if ok && !fresh && now.Sub(e.fetched) < c.cfg.ContractRefresh {
		if cv := c.cached(subject, e.version); cv != nil {
			return cv, nil
		}
	}
	rctx, cancel := context.WithTimeout(ctx, c.cfg.RegistryTimeout)
	resp, err := c.registry.GetContract(rctx, &registryv1.GetContractRequest{Subject: subject})
	cancel()
	if err != nil {
		if status.Code(err) == codes.NotFound {
			return nil, rpcerr.NotFound("subject", subject, "it has no active contract; register one with seam contract register")
		}
		if unreachable(err) {
			return c.lastKnown(ctx, subject, err)
		}
		return nil, rpcerr.Unavailable("registry", err)
	}
	cv, err := c.install(ctx, resp.GetVersion())
	if err != nil {
		return nil, err
	}
	if err := c.store.SetActive(ctx, subject, cv.version, now); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.active[subject] = activeEntry{version: cv.version, fetched: now}
	c.mu.Unlock()
	return cv, nil
}

// subjects lists the subjects whose active contract the gate knows.
func (c *contracts) subjects() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.active))
	for subject := range c.active {
		out = append(out, subject)
	}
	return out
}

// confirm asks the registry for the active version of every subject the
// gate knows, as resolve does for a batch, and records the answer; it
// returns how many subjects it could not confirm and the last error. A
// subject the registry no longer knows is forgotten (its gauge goes).
func (c *contracts) confirm(ctx context.Context) (int, error) {
	subjects := c.subjects()
	failed := 0
	var last error
	for _, subject := range subjects {
		now := c.cfg.Clock()
		rctx, cancel := context.WithTimeout(ctx, c.cfg.RegistryTimeout)
		resp, err := c.registry.GetContract(rctx, &registryv1.GetContractRequest{Subject: subject})
		cancel()
		if status.Code(err) == codes.NotFound {
			c.mu.Lock()
			delete(c.active, subject)
			c.mu.Unlock()
			continue
		}
		if err == nil {
			var cv *compiled
			if cv, err = c.install(ctx, resp.GetVersion()); err == nil {
				err = c.store.SetActive(ctx, subject, cv.version, now)
			}
			if err == nil {
				c.mu.Lock()
				c.active[subject] = activeEntry{version: cv.version, fetched: now}
				c.mu.Unlock()
				continue
			}
		}
		failed++
		last = fmt.Errorf("confirm the active contract of %s: %w", subject, err)
	}
	return failed, last
}

// lastKnown serves the last active version the registry confirmed when
// it cannot be asked now.
func (c *contracts) lastKnown(ctx context.Context, subject string, cause error) (*compiled, error) {
	c.mu.Lock()
	e, ok := c.active[subject]
	c.mu.Unlock()
	if !ok {
		return nil, rpcerr.Unavailable("registry", fmt.Errorf("no contract of %s is known locally: %w", subject, cause))
	}
	c.cfg.Logger.WarnContext(ctx, "registry unreachable; serving the last known contract", "subject", subject,
		"version", e.version, "age", c.cfg.Clock().Sub(e.fetched).String(), "error", cause)
	return c.pinned(ctx, subject, e.version)
}

func (c *contracts) cached(subject string, version int32) *compiled {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.versions[versionKey{subject, version}]
}

// pinned returns a given version: from memory, from the registry, or from
// the store when the registry is unreachable.
func (c *contracts) pinned(ctx context.Context, subject string, version int32) (*compiled, error) {
	if cv := c.cached(subject, version); cv != nil {
		return cv, nil
	}
	rctx, cancel := context.WithTimeout(ctx, c.cfg.RegistryTimeout)
	resp, err := c.registry.GetContract(rctx, &registryv1.GetContractRequest{Subject: subject, Version: version})
	cancel()
	if err == nil {
		v := resp.GetVersion()
		switch v.GetStatus() {
		case registryv1.VersionStatus_VERSION_STATUS_SCHEDULED:
			return nil, rpcerr.FailedPrecondition("VERSION_NOT_EFFECTIVE",
				fmt.Sprintf("%s version %d is scheduled and takes effect at %s; send the batch without a version, or with the active one, until then",
					subject, version, v.GetEffectiveTime().AsTime().Format(time.RFC3339)),
				map[string]string{"subject": subject, "version": fmt.Sprint(version)})
		case registryv1.VersionStatus_VERSION_STATUS_RETIRED:
			return nil, rpcerr.FailedPrecondition("VERSION_RETIRED",
				fmt.Sprintf("%s version %d is retired; send batches with the active version", subject, version),
				map[string]string{"subject": subject, "version": fmt.Sprint(version)})
		}
		return c.install(ctx, v)
	}
	if status.Code(err) == codes.NotFound {
		return nil, rpcerr.NotFound("contract version", fmt.Sprintf("%s v%d", subject, version), "list the registered versions with seam contract list")
	}
	if !unreachable(err) {
		return nil, rpcerr.Unavailable("registry", err)
	}
	blob, ok, serr := c.store.Contract(ctx, subject, version)
	if serr != nil {
		return nil, serr
	}
	if !ok {
		return nil, rpcerr.Unavailable("registry", fmt.Errorf("%s version %d was never seen by this gate: %w", subject, version, err))
	}
	ct := &contractv1.Contract{}
	if err := proto.Unmarshal(blob, ct); err != nil {
		return nil, fmt.Errorf("decode stored %s version %d: %w", subject, version, err)
	}
	return c.compile(subject, version, ct)
}

// install compiles a version the registry returned and keeps a copy in the
// store for outages.
func (c *contracts) install(ctx context.Context, v *registryv1.ContractVersion) (*compiled, error) {
	if cv := c.cached(v.GetSubject(), v.GetVersion()); cv != nil {
		return cv, nil
	}
	if err := c.keep(ctx, v); err != nil {
		return nil, err
	}
	return c.compile(v.GetSubject(), v.GetVersion(), v.GetContract())
}

// keep stores a version and what the gate needs to pick versions by data
// date while the registry is unreachable.
func (c *contracts) keep(ctx context.Context, v *registryv1.ContractVersion) error {
	b, err := proto.Marshal(v.GetContract())
	if err != nil {
		return fmt.Errorf("encode %s version %d: %w", v.GetSubject(), v.GetVersion(), err)
	}
	return c.store.PutContract(ctx, storedVersionOf(v), b, c.cfg.Clock())
}

func storedVersionOf(v *registryv1.ContractVersion) storedVersion {
	sv := storedVersion{subject: v.GetSubject(), version: v.GetVersion(), status: v.GetStatus(), effective: v.GetEffectiveTime().AsTime()}
	if t := v.GetDataEffectiveTime(); t != nil {
		sv.dataEffective = t.AsTime()
	}
	return sv
}

func (c *contracts) compile(subject string, version int32, ct *contractv1.Contract) (*compiled, error) {
	plan, err := check.Compile(ct)
	if err != nil {
		// The registry validated this contract; failing here means the
		// gate's checks are stricter than the registry's, which an
		// operator must see, not the pipeline.
		return nil, fmt.Errorf("compile checks of %s version %d: %w", subject, version, err)
	}
	spec, err := partition.Compile(ct)
	if err != nil {
		return nil, fmt.Errorf("compile the partition time of %s version %d: %w", subject, version, err)
	}
	cv := &compiled{subject: subject, version: version, contract: ct, plan: plan, spec: spec, decoders: record.NewDecoderPool(plan.Schema(), record.Options{})}
	schema := plan.Schema()
	cv.paths = make([]string, schema.Len())
	for i := range cv.paths {
		cv.paths[i] = schema.Field(i).Path
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev := c.versions[versionKey{subject, version}]; prev != nil {
		return prev, nil
	}
	c.versions[versionKey{subject, version}] = cv
	return cv, nil
}

// forData returns the version that judges a partition ending at end: the
// highest version in effect (neither scheduled nor retired) whose data
// effective time is before end, a version without one applying to all
// earlier data. A version an admin made effective from a past data date
// thus judges the partitions from that date, and a late file for an old
// partition is judged by the version in force for it. The registry's list
// is asked again after Config.ContractRefresh; while it is unreachable
// the versions this gate kept decide.
func (c *contracts) forData(ctx context.Context, subject string, end time.Time) (*compiled, error) {
	versions, err := c.list(ctx, subject)
	if err != nil {
		return nil, err
	}
	var pick, lowest *storedVersion
	for i := range versions {
		v := &versions[i]
		if v.status == registryv1.VersionStatus_VERSION_STATUS_SCHEDULED || v.status == registryv1.VersionStatus_VERSION_STATUS_RETIRED {
			continue
		}
		if lowest == nil || v.version < lowest.version {
			lowest = v
		}
		if (v.dataEffective.IsZero() || v.dataEffective.Before(end)) && (pick == nil || v.version > pick.version) {
			pick = v
		}
	}
	if pick == nil {
		pick = lowest
	}
	if pick == nil {
		return nil, rpcerr.NotFound("subject", subject, "it has no version in effect; register one with seam contract register")
	}
	return c.pinned(ctx, subject, pick.version)
}

// list returns a subject's versions, from the registry or, when it cannot
// answer, from the store.
func (c *contracts) list(ctx context.Context, subject string) ([]storedVersion, error) {
	now := c.cfg.Clock()
	c.mu.Lock()
	e, ok := c.listed[subject]
	c.mu.Unlock()
	if ok && now.Sub(e.fetched) < c.cfg.ContractRefresh {
		return e.versions, nil
	}
	rctx, cancel := context.WithTimeout(ctx, c.cfg.RegistryTimeout)
	resp, err := c.registry.ListContracts(rctx, &registryv1.ListContractsRequest{Subject: subject})
	cancel()
	switch {
	case status.Code(err) == codes.NotFound:
		return nil, rpcerr.NotFound("subject", subject, "it has no active contract; register one with seam contract register")
	case err != nil && unreachable(err):
		kept, serr := c.store.Versions(ctx, subject)
		if serr != nil {
			return nil, serr
		}
		if len(kept) == 0 {
			return nil, rpcerr.Unavailable("registry", fmt.Errorf("no version of %s is known locally: %w", subject, err))
		}
		c.cfg.Logger.WarnContext(ctx, "registry unreachable; picking the version by data date from the versions kept", "subject", subject, "error", err)
		return kept, nil
	case err != nil:
		return nil, rpcerr.Unavailable("registry", err)
	}
	out := make([]storedVersion, 0, len(resp.GetVersions()))
	for _, v := range resp.GetVersions() {
		if err := c.keep(ctx, v); err != nil {
			return nil, err
		}
		out = append(out, storedVersionOf(v))
	}
	c.mu.Lock()
	c.listed[subject] = listedEntry{versions: out, fetched: now}
	c.mu.Unlock()
	return out, nil
}
