package stream_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaBroker is an in-process kfake cluster: a real Kafka protocol
// implementation the connector child process reaches over TCP.
type kafkaBroker struct {
	cluster *kfake.Cluster
	cl      *kgo.Client
	adm     *kadm.Client
}

const kafkaPartitions = 3

func newKafkaBroker(t testing.TB) *kafkaBroker {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("payments.raw"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	b := &kafkaBroker{cluster: c, cl: cl, adm: kadm.NewClient(cl)}
	for _, topic := range []string{"payments.raw", "payments.canonical"} {
		if _, err := b.adm.CreateTopic(context.Background(), kafkaPartitions, 1, nil, topic); err != nil {
			t.Fatalf("create topic %s: %v", topic, err)
		}
	}
	return b
}

func (b *kafkaBroker) args() []string {
	return []string{"kafka", "--brokers", strings.Join(b.cluster.ListenAddrs(), ","), "--topic", "payments.raw", "--output-topic", "payments.canonical"}
}

func (b *kafkaBroker) produce(t testing.TB, ps []payment) {
	t.Helper()
	recs := make([]*kgo.Record, len(ps))
	for i, p := range ps {
		recs[i] = &kgo.Record{Key: []byte(p.key()), Value: p.value(), Timestamp: p.at}
	}
	if err := b.cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func (b *kafkaBroker) produceRaw(t testing.TB, values [][]byte) {
	t.Helper()
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Value: v}
	}
	if err := b.cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func (b *kafkaBroker) output(t testing.TB) []outRecord {
	t.Helper()
	ctx := context.Background()
	ends, err := b.adm.ListEndOffsets(ctx, "payments.canonical")
	if err != nil {
		t.Fatal(err)
	}
	var out []outRecord
	for p := range int32(kafkaPartitions) {
		end, _ := ends.Lookup("payments.canonical", p)
		if end.Offset <= 0 {
			continue
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.cluster.ListenAddrs()...),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"payments.canonical": {p: kgo.NewOffset().AtStart()}}))
		if err != nil {
			t.Fatal(err)
		}
		n := int64(0)
		deadline := time.Now().Add(30 * time.Second)
		for n < end.Offset && time.Now().Before(deadline) {
			fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			fs := cl.PollFetches(fctx)
			cancel()
			fs.EachRecord(func(r *kgo.Record) {
				if r.Offset >= end.Offset {
					return
				}
				n++
				seq := ""
				for _, h := range r.Headers {
					if h.Key == "Seam-Seq" {
						seq = string(h.Value)
					}
				}
				out = append(out, decodeOut(t, r.Value, seq, p))
			})
		}
		cl.Close()
		if n < end.Offset {
			t.Fatalf("read %d of %d records of output partition %d", n, end.Offset, p)
		}
	}
	return out
}

func TestKafkaConnectorSurvivesSIGKILL(t *testing.T) {
	b := newKafkaBroker(t)
	scenario(t, b, fmt.Sprintf("t-kafka-%d", rand.IntN(1<<30)))
}
