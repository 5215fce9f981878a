package adapter

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/seamdata/seam/platform/backoff"

	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// watchedEvents are the registry events that can change a plan.
var watchedEvents = []registryv1.EventType{
	registryv1.EventType_EVENT_TYPE_VERSION_REGISTERED,
	registryv1.EventType_EVENT_TYPE_VERSION_ACTIVATED,
	registryv1.EventType_EVENT_TYPE_CANONICAL_MODEL_REGISTERED,
}

// planFetchTimeout bounds one background refresh of a stale plan, so a
// hung registry delays it instead of stopping it.
const planFetchTimeout = 10 * time.Second

// Backoff bounds of the event stream's reconnection.
const (
	watchBackoffMin = 100 * time.Millisecond
	watchBackoffMax = 5 * time.Second
)

// Run follows the registry's event stream and invalidates cached plans as
// versions are registered or activated and canonical models change. It
// reconnects with backoff, resuming after the last event it saw, and
// returns nil when ctx ends. While the stream is down, cached plans are
// fetched again after Config.RefreshInterval and the last good plan keeps
// serving when the registry cannot be reached.
func (s *Server) Run(ctx context.Context) error {
	refreshed := make(chan struct{})
	go func() {
		defer close(refreshed)
		s.plans.keepFresh(ctx, planFetchTimeout, watchBackoffMax)
	}()
	defer func() { <-refreshed }()
	var after int64
	retry := backoff.Backoff{Min: watchBackoffMin, Max: watchBackoffMax}
	for {
		up := time.Now()
		err := s.watch(ctx, &after)
		s.plans.setStream(false)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(up) > watchBackoffMax {
			retry.Reset() // it was healthy for a while: retry promptly
		}
		s.cfg.Logger.WarnContext(ctx, "registry event stream broke; cached plans are refreshed on use until it is back",
			"after_sequence", after, "retry_in", retry.Current(), "error", err)
		if retry.Wait(ctx) != nil {
			return nil
		}
	}
}

// watchHeader is the header the registry's WatchEvents sends once it has
// taken a subscription.
const watchHeader = "seam-watch"

// watch runs one event stream until it breaks, advancing *after.
func (s *Server) watch(ctx context.Context, after *int64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := s.registry.WatchEvents(ctx, &registryv1.WatchEventsRequest{AfterSequence: *after, Types: watchedEvents})
	if err != nil {
		return err
	}
	// The stream is up once the registry has taken the subscription,
	// which its header says: an attempt it refuses (stopped, overloaded)
	// ends without one and leaves the plans' staleness counting from the
	// stream that was lost, not from the attempt.
	if md, err := stream.Header(); err == nil && len(md.Get(watchHeader)) > 0 {
		s.plans.setStream(true)
	}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return errors.New("the registry closed the event stream")
		}
		if err != nil {
			return err
		}
		ev := resp.GetEvent()
		s.plans.invalidate(ev)
		*after = max(*after, ev.GetSequence())
	}
}
