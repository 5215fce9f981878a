// Package jetstreamtest gives a test a source and an output stream of its
// own on the JetStream server the tests use, deleted with the connector's
// journal when the test ends.
package jetstreamtest

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	seamjs "github.com/seamdata/seam/connectors/stream/jetstream"
)

// URL is the JetStream server the tests use.
const URL = "nats://127.0.0.1:4222"

// Streams are a test's source and output streams and their subjects,
// named after a random ID.
type Streams struct {
	JS                           jetstream.JetStream
	ID                           string
	Source, Output               string
	SourceSubject, OutputSubject string
	// Other is a second subject of the source stream, for messages the
	// connector must leave alone.
	Other string
}

// New connects to the server at URL, skipping the test when none answers,
// and creates the streams. The output stream drops duplicates within
// dupWindow. When the test ends the streams and the journal of connector
// are deleted.
func New(t testing.TB, connector string, dupWindow time.Duration) *Streams {
	t.Helper()
	nc, err := nats.Connect(URL, nats.Timeout(2*time.Second))
	if err != nil {
		t.Skipf("no NATS server at %s (%v): start one with JetStream (nats-server -js) to run this test", URL, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.Itoa(rand.IntN(1 << 30))
	s := &Streams{JS: js, ID: id, Source: "T_SRC_" + id, Output: "T_OUT_" + id,
		SourceSubject: "t." + id + ".src", OutputSubject: "t." + id + ".out", Other: "t." + id + ".other"}
	journal := seamjs.JournalStream(connector)
	t.Cleanup(func() {
		for _, name := range []string{s.Source, s.Output, journal} {
			if err := js.DeleteStream(context.Background(), name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				t.Errorf("delete stream %s: %v", name, err)
			}
		}
	})
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: s.Source, Subjects: []string{s.SourceSubject, s.Other}}); err != nil {
		t.Fatalf("create source stream: %v", err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: s.Output, Subjects: []string{s.OutputSubject}, Duplicates: dupWindow}); err != nil {
		t.Fatalf("create output stream: %v", err)
	}
	return s
}
