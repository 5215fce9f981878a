package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/seamdata/seam/platform/storage/storagetest"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// TestEventWindowBoundsMemory: the read model keeps only the newest events
// in memory, and every reader still sees the whole log, in order, without
// gaps or repeats: older events come from the store. Before, the registry
// kept every event in memory forever.
func TestEventWindowBoundsMemory(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, url string) {
		const window, published = 4, 13
		ctx := context.Background()
		clock := newFakeClock()
		e := newEnv(t, url, clock, func(c *Config) { c.EventWindow = window })
		subjects := []string{"pay.settlements", "bank.statements"}
		for i := range published {
			if _, err := e.as("gate").PublishEvent(ctx, &registryv1.PublishEventRequest{Event: &registryv1.Event{
				Type: registryv1.EventType_EVENT_TYPE_ALERT_RAISED, Subject: subjects[i%2], Message: fmt.Sprintf("alert %d", i+1)}}); err != nil {
				t.Fatalf("PublishEvent %d: %v", i+1, err)
			}
		}
		if got := eventRows(t, e.srv); got > window {
			t.Errorf("the read model holds %d events, want at most the window of %d", got, window)
		}
		check := func(e *env, what string) {
			t.Helper()
			// Pages of 3 cross the window's edge mid-page.
			var seqs []int64
			after := int64(0)
			for {
				resp, err := e.as("viewer").ListEvents(ctx, &registryv1.ListEventsRequest{AfterSequence: after, Limit: 3})
				if err != nil {
					t.Fatalf("%s: ListEvents after %d: %v", what, after, err)
				}
				for _, ev := range resp.GetEvents() {
					seqs = append(seqs, ev.GetSequence())
				}
				if len(resp.GetEvents()) == 0 {
					break
				}
				after = resp.GetLastSequence()
			}
			if len(seqs) != published {
				t.Fatalf("%s: ListEvents pages = %v, want all %d events", what, seqs, published)
			}
			for i, s := range seqs {
				if s != int64(i+1) {
					t.Fatalf("%s: ListEvents pages = %v, want 1…%d in order", what, seqs, published)
				}
			}
			bank, err := e.as("viewer").ListEvents(ctx, &registryv1.ListEventsRequest{Subjects: []string{"bank.statements"}})
			if err != nil || len(bank.GetEvents()) != published/2 {
				t.Errorf("%s: events of bank.statements = %d (%v), want %d", what, len(bank.GetEvents()), err, published/2)
			}
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			stream, err := e.as("viewer").WatchEvents(wctx, &registryv1.WatchEventsRequest{Subjects: []string{"pay.settlements"}})
			if err != nil {
				t.Fatal(err)
			}
			var watched []int64
			for len(watched) < (published+1)/2 {
				resp, err := stream.Recv()
				if errors.Is(err, io.EOF) || err != nil {
					t.Fatalf("%s: WatchEvents after %v: %v", what, watched, err)
				}
				watched = append(watched, resp.GetEvent().GetSequence())
			}
			if watched[0] != 1 || watched[len(watched)-1] != published {
				t.Errorf("%s: watched pay.settlements events %v, want every odd sequence from 1 to %d", what, watched, published)
			}
		}
		check(e, "live")
		// A restarted registry loads only the window, and still serves all.
		restarted := newEnv(t, url, clock, func(c *Config) { c.EventWindow = window })
		if got := eventRows(t, restarted.srv); got > window {
			t.Errorf("after a restart the read model holds %d events, want at most %d", got, window)
		}
		check(restarted, "restarted")
	})
}

func eventRows(t *testing.T, s *Server) int {
	t.Helper()
	it, err := s.model.snapshot().Get(tableEvents, indexID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for raw := it.Next(); raw != nil; raw = it.Next() {
		n++
	}
	return n
}
