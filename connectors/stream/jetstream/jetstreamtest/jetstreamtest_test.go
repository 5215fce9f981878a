package jetstreamtest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seamdata/seam/connectors/stream/jetstream/jetstreamtest"
)

// The streams exist for the test that made them, with their subjects and
// the output's duplicate window, and are gone when it ends.
func TestStreamsLiveAsLongAsTheirTest(t *testing.T) {
	t.Parallel()
	var s *jetstreamtest.Streams
	t.Run("user", func(t *testing.T) {
		s = jetstreamtest.New(t, "probe", 250*time.Millisecond)
		ctx := context.Background()
		src, err := s.JS.Stream(ctx, s.Source)
		if err != nil {
			t.Fatal(err)
		}
		if got := src.CachedInfo().Config.Subjects; len(got) != 2 || got[0] != s.SourceSubject || got[1] != s.Other {
			t.Errorf("source subjects %v, want %s and %s", got, s.SourceSubject, s.Other)
		}
		out, err := s.JS.Stream(ctx, s.Output)
		if err != nil {
			t.Fatal(err)
		}
		if cfg := out.CachedInfo().Config; cfg.Duplicates != 250*time.Millisecond || len(cfg.Subjects) != 1 || cfg.Subjects[0] != s.OutputSubject {
			t.Errorf("output config: subjects %v, duplicate window %v; want %s and 250ms", cfg.Subjects, cfg.Duplicates, s.OutputSubject)
		}
	})
	if s == nil {
		t.Skip("no JetStream server")
	}
	// The test's own connection closed with it: look on a new one.
	nc, err := nats.Connect(jetstreamtest.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{s.Source, s.Output} {
		if _, err := js.Stream(context.Background(), name); !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("stream %s after its test: %v, want it deleted", name, err)
		}
	}
}
