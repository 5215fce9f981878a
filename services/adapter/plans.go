package adapter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/mapping"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/platform/rpcerr"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// planKey names a cached plan; version 0 is the subject's active version.
type planKey struct {
	subject string
	version int32
}

// compiled is a plan with the versions it was compiled from. It is
// immutable once cached.
type compiled struct {
	plan             *mapping.Plan
	version          int32 // the contract version (resolved when 0 was asked)
	canonical        string
	canonicalVersion int32
	// decoders keeps record decoders of the plan's source schema for
	// batch after batch: a reused decoder allocates nothing per record.
	decoders *record.DecoderPool
}

// entry is one cached plan and what the cache knows about its freshness.
type entry struct {
	*compiled
	// fetched is when the plan was last fetched successfully.
	fetched time.Time
	// stale is set when an event said the plan may have changed, at
	// staleSince: until then the plan was known current.
	stale      bool
	staleSince time.Time
}

// plans caches compiled plans per subject version. Registry events mark
// entries stale; a stale entry is fetched again on use and, when the
// registry or idmap cannot be reached, keeps serving: the last good plan
// is better than refusing every batch, and its staleness is a metric.
type plans struct {
	registry registryv1.RegistryServiceClient
	idmap    idmapv1.IdMapServiceClient
	log      *slog.Logger
	refresh  time.Duration
	// decode is how the plans' decoders read records (the record size limit).
	decode record.Options
	now    func() time.Time

	mu      sync.Mutex
	entries map[planKey]*entry
	// gen counts invalidations, so a fetch that raced with an event does not
	// store a plan the event already superseded as fresh.
	gen uint64
	// streamUp reports whether the registry event stream is connected, and
	// streamLost when it last went down (or the cache was made).
	streamUp   bool
	streamLost time.Time
	// kick wakes keepFresh after an invalidation.
	kick chan struct{}
}

func newPlans(reg registryv1.RegistryServiceClient, idm idmapv1.IdMapServiceClient, log *slog.Logger, refresh time.Duration, decode record.Options) *plans {
	return &plans{registry: reg, idmap: idm, log: log, refresh: refresh, decode: decode, now: time.Now,
		entries: map[planKey]*entry{}, streamLost: time.Now(), kick: make(chan struct{}, 1)}
}

// get returns the plan for subject and version (0: active).
func (c *plans) get(ctx context.Context, subject string, version int32) (*compiled, error) {
	key := planKey{subject, version}
	c.mu.Lock()
	e := c.entries[key]
	gen := c.gen
	fresh := e != nil && !e.stale && (c.streamUp || c.now().Sub(e.fetched) < c.refresh)
	c.mu.Unlock()
	if fresh {
		return e.compiled, nil
	}
	got, err := c.fetch(ctx, subject, version)
	if err != nil {
		if e != nil && isUnavailable(err) {
			c.log.WarnContext(ctx, "serving the last good plan: could not refresh it",
				"subject", subject, "version", version, "fetched", e.fetched, "error", err)
			return e.compiled, nil
		}
		return nil, err
	}
	c.mu.Lock()
	c.entries[key] = c.fetched(got, gen)
	c.mu.Unlock()
	return got, nil
}

// fetched is the entry of a plan just fetched; it is stale already when
// an event arrived since the fetch began (gen). c.mu is held.
func (c *plans) fetched(got *compiled, gen uint64) *entry {
	now := c.now()
	return &entry{compiled: got, fetched: now, stale: c.gen != gen, staleSince: now}
}

// invalidate marks the plans an event may have changed as stale and
// wakes keepFresh to fetch them again. A registered version never
// changes, so version events touch only a subject's active-version plan;
// a new canonical model touches every plan mapping to it.
func (c *plans) invalidate(ev *registryv1.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	marked := false
	now := c.now()
	mark := func(e *entry) {
		if !e.stale {
			e.stale, e.staleSince = true, now
		}
		marked = true
	}
	for k, e := range c.entries {
		switch ev.GetType() {
		case registryv1.EventType_EVENT_TYPE_CANONICAL_MODEL_REGISTERED:
			if ev.GetSubject() == "" || e.canonical == ev.GetSubject() {
				mark(e)
			}
		default:
			if k.subject == ev.GetSubject() && k.version == 0 {
				mark(e)
			}
		}
	}
	if marked {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// keepFresh fetches stale plans again as soon as an event marks them, and
// retries every retry while the registry cannot answer, so a plan nobody
// used since a version change is current anyway and the staleness gauge
// measures the registry, not the traffic. It returns when ctx ends.
func (c *plans) keepFresh(ctx context.Context, timeout, retry time.Duration) {
	tick := time.NewTicker(retry)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		case <-tick.C:
		}
		c.refreshStale(ctx, timeout)
	}
}

// refreshStale fetches every stale plan once; a failed fetch leaves the
// last good plan serving, stale.
func (c *plans) refreshStale(ctx context.Context, timeout time.Duration) {
	c.mu.Lock()
	var keys []planKey
	for k, e := range c.entries {
		if e.stale {
			keys = append(keys, k)
		}
	}
	gen := c.gen
	c.mu.Unlock()
	for _, k := range keys {
		fctx, cancel := context.WithTimeout(ctx, timeout)
		got, err := c.fetch(fctx, k.subject, k.version)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				c.log.DebugContext(ctx, "could not refresh a stale plan; it is tried again", "subject", k.subject, "version", k.version, "error", err)
			}
			continue
		}
		c.mu.Lock()
		if old := c.entries[k]; old != nil && old.compiled.version != got.version {
			c.log.InfoContext(ctx, "plan refreshed to a new version", "subject", k.subject, "from_version", old.compiled.version, "to_version", got.version)
		}
		c.entries[k] = c.fetched(got, gen)
		c.mu.Unlock()
	}
}

// setStream records the event stream's state.
func (c *plans) setStream(up bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.streamUp && !up {
		c.streamLost = c.now()
	}
	c.streamUp = up
}

// staleness is, over the cached plans, the longest time since the cache
// last knew a plan was current: zero for plans the connected event stream
// vouches for; for a plan an event marked stale, the time since that
// event (keepFresh fetches it again at once, so this stays near zero while
// the registry answers); else the time since the later of its fetch and
// the stream's loss.
func (c *plans) staleness() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	var worst time.Duration
	for _, e := range c.entries {
		var d time.Duration
		switch {
		case e.stale:
			d = now.Sub(later(e.fetched, e.staleSince))
		case !c.streamUp:
			d = now.Sub(later(e.fetched, c.streamLost))
		}
		worst = max(worst, d)
	}
	return worst, c.streamUp
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// fetch reads a contract version and its canonical model from the
// registry and compiles the plan, checking idmap namespaces.
func (c *plans) fetch(ctx context.Context, subject string, version int32) (*compiled, error) {
	name := fmt.Sprintf("%s version %d", subject, version)
	if version == 0 {
		name = subject + " (active version)"
	}
	cv, err := c.registry.GetContract(ctx, &registryv1.GetContractRequest{Subject: subject, Version: version})
	if err != nil {
		return nil, peerError(ctx, "registry", "contract", name, err, "register it (seam contract register) or name a registered version")
	}
	ct := cv.GetVersion().GetContract()
	m := ct.GetMapping()
	if m == nil {
		return nil, rpcerr.FailedPrecondition("MAPPING_MISSING",
			fmt.Sprintf("%s has no mapping to a canonical model; register a version whose contract has one", name),
			map[string]string{"subject": subject})
	}
	cm, err := c.registry.GetCanonicalModel(ctx, &registryv1.GetCanonicalModelRequest{Name: m.GetCanonical(), Version: m.GetCanonicalVersion()})
	if err != nil {
		return nil, peerError(ctx, "registry", "canonical model", m.GetCanonical(), err, "register it (seam canonical register)")
	}
	plan, err := mapping.CompileVersion(ct, cm.GetVersion().GetModel(), cm.GetVersion().GetVersion(), &catalog{ctx: ctx, idmap: c.idmap})
	if err != nil {
		return nil, compileError(ctx, name, err)
	}
	return &compiled{plan: plan, version: cv.GetVersion().GetVersion(), canonical: m.GetCanonical(), canonicalVersion: cm.GetVersion().GetVersion(),
		decoders: record.NewDecoderPool(plan.Schema(), c.decode)}, nil
}

// compileError turns a failed compile into a status: problems of the
// mapping are a precondition the source team must fix; anything else is
// idmap being unreachable.
func compileError(ctx context.Context, name string, err error) error {
	var problems contract.Problems
	if errors.As(err, &problems) {
		violations := make([]rpcerr.PreconditionViolation, len(problems))
		for i, p := range problems {
			violations[i] = rpcerr.PreconditionViolation{Type: p.Reason, Subject: p.Path, Description: p.Message}
		}
		return rpcerr.FailedPrecondition("MAPPING_INVALID",
			fmt.Sprintf("the mapping of %s does not compile: %v", name, problems), nil, violations...)
	}
	var pe *peerErr
	if errors.As(err, &pe) {
		return pe.status
	}
	return peerError(ctx, "idmap", "namespace", "", err, "")
}

// peerErr carries a status from a peer through mapping.IDCatalog.
type peerErr struct{ status error }

func (e *peerErr) Error() string { return status.Convert(e.status).Message() }

// catalog is mapping.IDCatalog over idmap's GetNamespace.
type catalog struct {
	ctx   context.Context
	idmap idmapv1.IdMapServiceClient
}

// Formats implements mapping.IDCatalog.
func (c *catalog) Formats(namespace string) ([]*idmapv1.Format, bool, error) {
	resp, err := c.idmap.GetNamespace(c.ctx, &idmapv1.GetNamespaceRequest{Name: namespace})
	if status.Code(err) == codes.NotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, &peerErr{status: peerError(c.ctx, "idmap", "namespace", namespace, err, "")}
	}
	return resp.GetNamespace().GetFormats(), true, nil
}

// unavailableCodes are the codes that say a peer could not answer now,
// rather than that the request is wrong.
var unavailableCodes = map[codes.Code]bool{
	codes.Unavailable: true, codes.DeadlineExceeded: true, codes.ResourceExhausted: true,
	codes.Aborted: true, codes.Internal: true, codes.Unknown: true, codes.Unauthenticated: true, codes.PermissionDenied: true,
}

// peerError maps a peer's failure to what the caller sees: the caller's
// own cancellation as is, NotFound as NotFound of what was asked,
// unreachable peers as Unavailable, and refusals as a precondition.
func peerError(ctx context.Context, peer, kind, name string, err error, hint string) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return status.FromContextError(ctxErr).Err()
	}
	st := status.Convert(err)
	switch {
	case st.Code() == codes.NotFound && name != "":
		return rpcerr.NotFound(kind, name, hint)
	case unavailableCodes[st.Code()] || st.Code() == codes.Canceled:
		return rpcerr.Unavailable(peer, err)
	}
	return rpcerr.FailedPrecondition(strings.ToUpper(peer)+"_REFUSED",
		fmt.Sprintf("%s refused the %s %s: %s", peer, kind, name, st.Message()), map[string]string{"code": st.Code().String()})
}

// isUnavailable reports whether err is a status saying a peer could not be
// reached, the case where the last good plan keeps serving.
func isUnavailable(err error) bool { return status.Code(err) == codes.Unavailable }
