package stream_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	seamjs "github.com/seamdata/seam/connectors/stream/jetstream"
)

// natsURL is the JetStream server the tests use.
const natsURL = "nats://127.0.0.1:4222"

// jsBroker is a source and an output stream of its own on the real
// JetStream server, deleted after the test with the connector's journal.
type jsBroker struct {
	js                         jetstream.JetStream
	src, out                   string
	srcSubject, outSubj, other string
}

func newJSBroker(t testing.TB, connector string) *jsBroker {
	t.Helper()
	nc, err := nats.Connect(natsURL, nats.Timeout(2*time.Second))
	if err != nil {
		t.Skipf("no NATS server at %s (%v): start one with JetStream (nats-server -js) to run this test", natsURL, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.Itoa(rand.IntN(1 << 30))
	b := &jsBroker{js: js, src: "T_SRC_" + id, out: "T_OUT_" + id, srcSubject: "t." + id + ".src", outSubj: "t." + id + ".out", other: "t." + id + ".other"}
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: b.src, Subjects: []string{b.srcSubject, b.other}}); err != nil {
		t.Fatalf("create source stream: %v", err)
	}
	// A 100 ms duplicate window: exactly-once must hold without it,
	// through the connector's restart check.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: b.out, Subjects: []string{b.outSubj}, Duplicates: 100 * time.Millisecond}); err != nil {
		t.Fatalf("create output stream: %v", err)
	}
	t.Cleanup(func() {
		for _, s := range []string{b.src, b.out, seamjs.JournalStream(connector)} {
			if err := js.DeleteStream(context.Background(), s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				t.Errorf("delete stream %s: %v", s, err)
			}
		}
	})
	return b
}

func (b *jsBroker) args() []string {
	return []string{"jetstream", "--nats-url", natsURL, "--stream", b.src, "--source-subject", b.srcSubject,
		"--output-stream", b.out, "--output-subject", b.outSubj}
}

func (b *jsBroker) produce(t testing.TB, ps []payment) {
	t.Helper()
	ctx := context.Background()
	for i, p := range ps {
		if _, err := b.js.Publish(ctx, b.srcSubject, p.value()); err != nil {
			t.Fatalf("publish source record %d: %v", p.seq, err)
		}
		// Messages on another subject of the same stream leave gaps in
		// the positions the connector reads.
		if i%97 == 0 {
			if _, err := b.js.Publish(ctx, b.other, []byte(`{"noise":true}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func (b *jsBroker) output(t testing.TB) []outRecord {
	t.Helper()
	ctx := context.Background()
	s, err := b.js.Stream(ctx, b.out)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs == 0 {
		return nil
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var out []outRecord
	for len(out) < int(info.State.Msgs) {
		batch, err := cons.Fetch(int(info.State.Msgs)-len(out), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			out = append(out, decodeOut(t, m.Data(), m.Headers().Get("Seam-Seq"), 0))
		}
		if batch.Error() != nil && !errors.Is(batch.Error(), nats.ErrTimeout) {
			t.Fatal(batch.Error())
		}
		if n == 0 {
			t.Fatalf("read %d of %d output messages, then nothing", len(out), info.State.Msgs)
		}
	}
	return out
}

func decodeOut(t testing.TB, data []byte, seq string, partition int32) outRecord {
	t.Helper()
	var r outRecord
	if err := jsonUnmarshal(data, &r); err != nil {
		t.Fatalf("output record %s is not JSON: %v", data, err)
	}
	r.seamSeq, r.partition = seq, partition
	return r
}

func TestJetStreamConnectorSurvivesSIGKILL(t *testing.T) {
	name := fmt.Sprintf("t-js-%d", rand.IntN(1<<30))
	b := newJSBroker(t, name)
	scenario(t, b, name)
}
