package stream_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/seamdata/seam/connectors/stream"
	seamjs "github.com/seamdata/seam/connectors/stream/jetstream"
	"github.com/seamdata/seam/connectors/stream/jetstream/jetstreamtest"
	seamkafka "github.com/seamdata/seam/connectors/stream/kafka"
)

// The benchmarks measure records per second through the connector, from
// the source topic to the output: b.N payments are produced first, then
// an in-process connector reads them, sends them through a `seam up`
// child process (gate, adapter, idmap, registry on SQLite) and publishes
// them; the clock runs from the connector's start until the output holds
// all of them. Run, for example:
//
//	go test ./connectors/stream -run '^$' -bench Connector -benchtime 20000x
//
// SEAM_BENCH_BATCH_RECORDS sets the batch size (default 1000).
func BenchmarkConnectorJetStream(b *testing.B) {
	n := benchSeam(b)
	name := fmt.Sprintf("bench-js-%d", rand.IntN(1<<30))
	br := newJSBroker(b, name)
	ctx := context.Background()
	// Asynchronous publishing keeps the setup short.
	for _, p := range benchPayments(b.N) {
		if _, err := br.JS.PublishAsync(br.SourceSubject, p.value()); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-br.JS.PublishAsyncComplete():
	case <-time.After(time.Minute):
		b.Fatal("the source was not written within a minute")
	}
	nc, err := nats.Connect(jetstreamtest.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	part, err := seamjs.Open(ctx, nc, seamjs.Config{Connector: name, Stream: br.Source, Subject: br.SourceSubject, OutputStream: br.Output, OutputSubject: br.OutputSubject})
	if err != nil {
		b.Fatal(err)
	}
	benchRun(b, n, name, []stream.Partition{part})
}

func BenchmarkConnectorKafka(b *testing.B) {
	n := benchSeam(b)
	name := fmt.Sprintf("bench-kafka-%d", rand.IntN(1<<30))
	br := newKafkaBroker(b)
	ps := benchPayments(b.N)
	for len(ps) > 0 {
		k := min(5000, len(ps))
		br.produce(b, ps[:k])
		ps = ps[k:]
	}
	kc, parts, err := seamkafka.Open(context.Background(), seamkafka.Config{Brokers: br.cluster.ListenAddrs(), Connector: name,
		Topic: "payments.raw", Output: "payments.canonical"})
	if err != nil {
		b.Fatal(err)
	}
	defer kc.Close()
	benchRun(b, n, name, parts)
}

func benchSeam(b *testing.B) *seamNode {
	b.Helper()
	b.StopTimer()
	n := startSeam(b)
	n.run(b, "idmap", "namespace", "create", "account", "--format", "legacy-int:int", "--format", "uuid:uuid")
	n.run(b, "canonical", "register", "-f", "testdata/finance_payment.yaml")
	n.run(b, "contract", "register", "-f", "testdata/bank_payments_v1.yaml")
	return n
}

// benchPayments are n valid payments 50 ms apart in event time, plus
// one a day later that seals every partition before it.
func benchPayments(n int) []payment {
	out := make([]payment, 0, n+1)
	for i := range n {
		out = append(out, payment{seq: i, account: i%37 + 1, at: base.Add(time.Duration(i) * 50 * time.Millisecond)})
	}
	return append(out, payment{seq: 99999999, account: 1, at: base.Add(48 * time.Hour)})
}

// benchBatch is the connector's batch size in the benchmarks
// (SEAM_BENCH_BATCH_RECORDS overrides the default of 1000).
func benchBatch() int {
	k := 1000
	if v := os.Getenv("SEAM_BENCH_BATCH_RECORDS"); v != "" {
		if _, err := fmt.Sscan(v, &k); err != nil || k < 1 {
			panic(fmt.Sprintf("SEAM_BENCH_BATCH_RECORDS=%q: want a positive number of records", v))
		}
	}
	return k
}

func benchRun(b *testing.B, n *seamNode, name string, parts []stream.Partition) {
	b.Helper()
	conn, err := grpc.NewClient(n.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	c, err := stream.New(stream.Config{Name: name, Subject: "bank.payments", EventTimeField: "booked_at", Granularity: stream.Minute,
		Idle: time.Second, BatchRecords: benchBatch()}, conn, parts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+n.token))
	done := make(chan error, 1)
	start := time.Now()
	b.StartTimer()
	go func() { done <- c.Run(ctx) }()
	for {
		s := c.Stats(ctx)
		if s.Published >= int64(b.N) {
			break
		}
		select {
		case err := <-done:
			b.Fatalf("the connector stopped: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	b.StopTimer()
	elapsed := time.Since(start)
	cancel()
	if err := <-done; err != nil && !strings.Contains(err.Error(), "context canceled") {
		b.Fatalf("the connector stopped: %v", err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
}
