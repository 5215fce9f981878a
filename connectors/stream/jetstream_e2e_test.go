package stream_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seamdata/seam/connectors/stream/jetstream/jetstreamtest"
)

// jsBroker is a source and an output stream of its own on the real
// JetStream server, deleted after the test with the connector's journal.
type jsBroker struct{ *jetstreamtest.Streams }

// newJSBroker makes the streams with a 100 ms duplicate window on the
// output: exactly-once must hold without it, through the connector's
// restart check.
func newJSBroker(t testing.TB, connector string) *jsBroker {
	t.Helper()
	return &jsBroker{jetstreamtest.New(t, connector, 100*time.Millisecond)}
}

func (b *jsBroker) args() []string {
	return []string{"jetstream", "--nats-url", jetstreamtest.URL, "--stream", b.Source, "--source-subject", b.SourceSubject,
		"--output-stream", b.Output, "--output-subject", b.OutputSubject}
}

func (b *jsBroker) produce(t testing.TB, ps []payment) {
	t.Helper()
	ctx := context.Background()
	for i, p := range ps {
		if _, err := b.JS.Publish(ctx, b.SourceSubject, p.value()); err != nil {
			t.Fatalf("publish source record %d: %v", p.seq, err)
		}
		// Messages on another subject of the same stream leave gaps in
		// the positions the connector reads.
		if i%97 == 0 {
			if _, err := b.JS.Publish(ctx, b.Other, []byte(`{"noise":true}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func (b *jsBroker) produceRaw(t testing.TB, values [][]byte) {
	t.Helper()
	for _, v := range values {
		if _, err := b.JS.Publish(context.Background(), b.SourceSubject, v); err != nil {
			t.Fatal(err)
		}
	}
}

func (b *jsBroker) output(t testing.TB) []outRecord {
	t.Helper()
	ctx := context.Background()
	s, err := b.JS.Stream(ctx, b.Output)
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

// startMinuteConnector starts a JetStream broker, a Seam node with the
// finance model and the contract in contractFile, and a connector of
// subject that judges minute partitions in batches of batchRecords.
func startMinuteConnector(t *testing.T, prefix, contractFile, subject, batchRecords string) (*jsBroker, *seamNode) {
	t.Helper()
	name := fmt.Sprintf("%s-%d", prefix, rand.IntN(1<<30))
	b := newJSBroker(t, name)
	n := startFinanceSeam(t, contractFile)
	startConnector(t, n, append(b.args(), "--name", name, "--subject", subject, "--event-time", "booked_at",
		"--granularity", "minute", "--batch-records", batchRecords, "--batch-wait", "50ms")...)
	return b, n
}

// A partition one of whose batches the gate BLOCKED is held, not
// published; the partitions around it are.
func TestJetStreamBlockedPartitionIsHeld(t *testing.T) {
	b, _ := startMinuteConnector(t, "t-jsb", "testdata/bank_cards.yaml", "bank.cards", "50")
	ps := payments(0, 300, false)
	bad := ps[130] // minute 2
	b.produce(t, ps[:130])
	if _, err := b.JS.Publish(context.Background(), b.SourceSubject, []byte(strings.Replace(string(bad.value()), `"amount":`, `"amount":5000`, 1))); err != nil {
		t.Fatal(err)
	}
	b.produce(t, ps[131:])
	b.produce(t, []payment{{seq: 99999999, account: 1, at: base.Add(time.Hour)}})
	var out []outRecord
	deadline := time.Now().Add(60 * time.Second)
	for len(out) < 239 && time.Now().Before(deadline) {
		time.Sleep(300 * time.Millisecond)
		out = b.output(t)
	}
	time.Sleep(2 * time.Second)
	out = b.output(t)
	want := map[string]bool{}
	for _, p := range ps {
		if p.at.Minute() != 2 {
			want[p.id()] = true
		}
	}
	checkOutput(t, out, want)
}
