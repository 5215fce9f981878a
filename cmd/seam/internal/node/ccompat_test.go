package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
	"github.com/seamdata/seam/connectors/stream"
	"github.com/seamdata/seam/connectors/stream/kafka"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

const paymentsV1 = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "properties": {
    "payment_id": {"type": "string"},
    "amount": {"type": "number"}
  },
  "required": ["payment_id", "amount"]
}`

// paymentsV2 adds an optional field: additive.
const paymentsV2 = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"payment_id":{"type":"string"},"amount":{"type":"number"},"note":{"type":"string"}},"required":["payment_id","amount"]}`

// paymentsBreaking changes amount from a number to a string: breaking.
const paymentsBreaking = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"payment_id":{"type":"string"},"amount":{"type":"string"},"note":{"type":"string"}},"required":["payment_id","amount"]}`

const ordersAvro = `{
  "type": "record", "name": "Order", "namespace": "shop",
  "fields": [
    {"name": "order_id", "type": "string"},
    {"name": "customer_id", "type": ["null", "long"], "default": null},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
    {"name": "placed_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}}
  ]
}`

// TestConfluentAPIWithFranzGoSR drives Seam's Confluent-compatible API
// with franz-go's schema registry client, a client no one here wrote:
// JSON Schema and Avro subjects, ids, lookups, a refused breaking change;
// then its Serde's records go through a Kafka topic and the stream
// connector into canonical records, and an unknown schema id into
// quarantine.
func TestConfluentAPIWithFranzGoSR(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := sr.NewClient(sr.URLs("http://"+n.HTTPAddr+"/apis/ccompat/v7"), sr.BearerToken(n.Admin))
	if err != nil {
		t.Fatal(err)
	}

	types, err := cl.SupportedTypes(ctx)
	if err != nil || len(types) != 2 {
		t.Fatalf("SupportedTypes: got %v, %v; want AVRO and JSON", types, err)
	}

	// A JSON Schema subject.
	v1, err := cl.CreateSchema(ctx, "payments-value", sr.Schema{Schema: paymentsV1, Type: sr.TypeJSON})
	if err != nil {
		t.Fatalf("register payments-value v1: %v", err)
	}
	if v1.ID < 1 || v1.Version != 1 || v1.Subject != "payments-value" || v1.Type != sr.TypeJSON {
		t.Fatalf("register payments-value v1: got %+v, want id >= 1, version 1, type JSON", v1)
	}
	byID, err := cl.SchemaByID(ctx, v1.ID)
	if err != nil {
		t.Fatalf("SchemaByID(%d): %v", v1.ID, err)
	}
	if byID.Type != sr.TypeJSON || !sameJSON(t, byID.Schema, paymentsV1) {
		t.Fatalf("SchemaByID(%d): got %s %s, want the JSON Schema registered", v1.ID, byID.Type, byID.Schema)
	}
	found, err := cl.LookupSchema(ctx, "payments-value", sr.Schema{Schema: paymentsV1, Type: sr.TypeJSON})
	if err != nil || found.ID != v1.ID || found.Version != 1 {
		t.Fatalf("LookupSchema: got %+v, %v; want id %d version 1", found, err, v1.ID)
	}
	// The same schema written otherwise is the same schema: same id, no
	// new version.
	again, err := cl.RegisterSchema(ctx, "payments-value", sr.Schema{Schema: strings.Join(strings.Fields(paymentsV1), " "), Type: sr.TypeJSON}, -1, -1)
	if err != nil || again != v1.ID {
		t.Fatalf("register v1 again: got id %d, %v; want %d", again, err, v1.ID)
	}
	v2, err := cl.CreateSchema(ctx, "payments-value", sr.Schema{Schema: paymentsV2, Type: sr.TypeJSON})
	if err != nil || v2.Version != 2 || v2.ID == v1.ID {
		t.Fatalf("register additive v2: got %+v, %v; want version 2 with a new id", v2, err)
	}
	versions, err := cl.SubjectVersions(ctx, "payments-value")
	if err != nil || len(versions) != 2 {
		t.Fatalf("SubjectVersions: got %v, %v; want [1 2]", versions, err)
	}

	// A consumer reads amount; a breaking change to it is reported
	// incompatible, names the consumer, and is refused with 409.
	reg := registryv1.NewRegistryServiceClient(n.Conn(t, n.Admin))
	if _, err := reg.RegisterConsumer(ctx, &registryv1.RegisterConsumerRequest{Consumer: &registryv1.Consumer{
		Name: "finance.ledger", Owner: "team-finance",
		Inputs: []*registryv1.Input{{Source: &registryv1.Input_Subject{Subject: "payments.value"}, Fields: []string{"amount"}}},
	}}); err != nil {
		t.Fatalf("RegisterConsumer: %v", err)
	}
	breaking := sr.Schema{Schema: paymentsBreaking, Type: sr.TypeJSON}
	compat, err := cl.CheckCompatibility(ctx, "payments-value", -1, breaking)
	if err != nil {
		t.Fatalf("CheckCompatibility: %v", err)
	}
	if compat.Is || !strings.Contains(strings.Join(compat.Messages, "\n"), "finance.ledger") {
		t.Fatalf("CheckCompatibility of a breaking change: got %+v, want incompatible naming finance.ledger", compat)
	}
	if ok, err := cl.CheckCompatibility(ctx, "payments-value", 2, sr.Schema{Schema: paymentsV2, Type: sr.TypeJSON}); err != nil || !ok.Is {
		t.Fatalf("CheckCompatibility of v2 itself: got %+v, %v; want compatible", ok, err)
	}
	_, err = cl.CreateSchema(ctx, "payments-value", breaking)
	var re *sr.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusConflict || re.ErrorCode != 409 ||
		!strings.Contains(re.Message, "finance.ledger") || !strings.Contains(re.Message, "BREAKING") {
		t.Fatalf("register a breaking change: got %v (%+v), want 409 naming Seam's reason and finance.ledger", err, re)
	}
	if vs, _ := cl.SubjectVersions(ctx, "payments-value"); len(vs) != 2 {
		t.Fatalf("after the refusal: versions %v, want still [1 2]", vs)
	}

	// An Avro subject registers and reads back.
	orders, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: ordersAvro})
	if err != nil {
		t.Fatalf("register orders-value: %v", err)
	}
	latest, err := cl.SchemaByVersion(ctx, "orders-value", -1)
	if err != nil || latest.ID != orders.ID || latest.Type != sr.TypeAvro || latest.Version != 1 {
		t.Fatalf("SchemaByVersion(orders-value, latest): got %+v, %v; want id %d, AVRO, version 1", latest, err, orders.ID)
	}
	// The gate emits canonical records: the platform team maps the
	// subject to a canonical model in Seam (a version in Seam's form), and
	// the serializer's schema, registered again, names that version: same
	// id, the mapping kept.
	mapToCanonical(ctx, t, reg, "orders.value", "shop.order_event", "team-shop")
	if id, err := cl.RegisterSchema(ctx, "orders-value", sr.Schema{Schema: ordersAvro}, -1, -1); err != nil || id != orders.ID {
		t.Fatalf("register orders-value again: got id %d, %v; want %d", id, err, orders.ID)
	}
	if latest, err = cl.SchemaByVersion(ctx, "orders-value", -1); err != nil || latest.ID != orders.ID || latest.Version != 2 {
		t.Fatalf("SchemaByVersion(orders-value, latest) after the mapping: got %+v, %v; want id %d version 2", latest, err, orders.ID)
	}
	parsed, err := hamba.Parse(latest.Schema.Schema)
	if err != nil {
		t.Fatalf("the Avro schema read back does not parse: %v\n%s", err, latest.Schema.Schema)
	}
	subjects, err := cl.Subjects(ctx)
	if err != nil || strings.Join(subjects, ",") != "orders-value,payments-value" {
		t.Fatalf("Subjects: got %v, %v; want [orders-value payments-value]", subjects, err)
	}

	// Records encoded by franz-go's Serde go through a Kafka topic and the
	// stream connector.
	type order struct {
		OrderID    string    `avro:"order_id"`
		CustomerID *int64    `avro:"customer_id"`
		Status     string    `avro:"status"`
		PlacedAt   time.Time `avro:"placed_at"`
		Amount     *big.Rat  `avro:"amount"`
	}
	var serde sr.Serde
	serde.Register(orders.ID, order{}, sr.EncodeFn(func(v any) ([]byte, error) { return hamba.Marshal(parsed, v) }))
	cust := int64(42)
	day1 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	records := []order{
		{OrderID: "ORD-1", CustomerID: &cust, Status: "PAID", PlacedAt: day1, Amount: big.NewRat(12345, 100)},
		{OrderID: "ORD-2", Status: "NEW", PlacedAt: day1.Add(time.Hour), Amount: big.NewRat(5, 1)},
		// A later day moves the watermark past day 1, which is then
		// sealed and published.
		{OrderID: "ORD-3", Status: "NEW", PlacedAt: day1.Add(49 * time.Hour), Amount: big.NewRat(1, 1)},
	}
	var values [][]byte
	for _, r := range records {
		b, err := serde.Encode(r)
		if err != nil {
			t.Fatalf("Serde.Encode: %v", err)
		}
		values = append(values, b)
	}
	unknown := append([]byte{0, 0, 0, 0x27, 0x0f}, values[0][5:]...) // schema id 9999
	values = append(values[:2], unknown, values[2])

	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	kc, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	adm := kadm.NewClient(kc)
	for _, topic := range []string{"orders", "orders.canonical"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatalf("create topic %s: %v", topic, err)
		}
	}
	for _, v := range values {
		if err := kc.ProduceSync(ctx, &kgo.Record{Value: v}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	kconn, parts, err := kafka.Open(ctx, kafka.Config{Brokers: cluster.ListenAddrs(), Connector: "orders-ccompat", Topic: "orders", Output: "orders.canonical"})
	if err != nil {
		t.Fatalf("kafka.Open: %v", err)
	}
	defer kconn.Close()
	runConfluentConnector(ctx, t, n, stream.Config{Name: "orders-ccompat", Subject: "orders.value", EventTimeField: "placed_at"}, parts,
		stream.Stats{Accepted: 3, Quarantined: 1, Published: 2})

	// Day 1's canonical records on the output topic.
	out, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics("orders.canonical"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var got []map[string]any
	deadline := time.Now().Add(time.Minute)
	for len(got) < 2 && time.Now().Before(deadline) {
		fctx, fcancel := context.WithTimeout(ctx, 5*time.Second)
		out.PollFetches(fctx).EachRecord(func(r *kgo.Record) {
			m := map[string]any{}
			if err := json.Unmarshal(r.Value, &m); err != nil {
				t.Errorf("output record is not JSON: %v: %s", err, r.Value)
			}
			got = append(got, m)
		})
		fcancel()
	}
	if len(got) != 2 {
		t.Fatalf("read %d canonical records, want 2", len(got))
	}
	first := got[0]
	if first["order_id"] != "ORD-1" || first["customer_id"] != 42.0 || first["status"] != "PAID" ||
		first["placed_at"] != "2026-01-01T10:00:00Z" || first["amount"] != "123.45" {
		t.Errorf("first canonical record: got %v, want ORD-1 as registered", first)
	}
	if second := got[1]; second["order_id"] != "ORD-2" || second["customer_id"] != nil || second["amount"] != "5.00" {
		t.Errorf("second canonical record: got %v, want ORD-2 with a null customer_id", second)
	}

	// The unknown schema id is in quarantine with its reason.
	gate := gatev1.NewGateServiceClient(n.Conn(t, n.Admin))
	q, err := gate.ListQuarantine(ctx, &gatev1.ListQuarantineRequest{Filter: &gatev1.QuarantineFilter{Subject: "orders.value"}})
	if err != nil {
		t.Fatalf("ListQuarantine: %v", err)
	}
	if len(q.GetRecords()) != 1 || !strings.Contains(string(q.GetRecords()[0].GetRaw()), "unknown schema id 9999") {
		t.Fatalf("quarantine of orders.value: got %v, want the message with schema id 9999 and its reason", q.GetRecords())
	}
}

// mapToCanonical registers a canonical model with the fields of
// subject's version 1, and subject's version 2 in Seam's form: those
// fields, each mapped to itself in the model.
func mapToCanonical(ctx context.Context, t *testing.T, reg registryv1.RegistryServiceClient, subject, model, owner string) {
	t.Helper()
	v1, err := reg.GetContract(ctx, &registryv1.GetContractRequest{Subject: subject, Version: 1})
	if err != nil {
		t.Fatalf("GetContract(%s v1): %v", subject, err)
	}
	if _, err := reg.RegisterCanonicalModel(ctx, &registryv1.RegisterCanonicalModelRequest{Model: &contractv1.CanonicalModel{
		Name: model, Owner: owner, Fields: v1.GetVersion().GetContract().GetFields()}}); err != nil {
		t.Fatalf("RegisterCanonicalModel(%s): %v", model, err)
	}
	mapped := proto.CloneOf(v1.GetVersion().GetContract())
	mapped.Mapping = &contractv1.Mapping{Canonical: model, Fields: map[string]*contractv1.FieldMapping{}}
	for _, f := range mapped.GetFields() {
		mapped.Mapping.Fields[f.GetName()] = &contractv1.FieldMapping{From: f.GetName()}
	}
	if r, err := reg.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: mapped}); err != nil || r.GetVersion().GetVersion() != 2 {
		t.Fatalf("register %s v2 with a mapping: got %v, %v; want version 2", subject, r.GetVersion(), err)
	}
}

// runConfluentConnector runs a connector of Confluent-framed messages
// (cfg with Confluent, a local sealer, replays ignored and short batches)
// until its stats reach want's accepted, quarantined and published counts,
// then stops it; it fails the test after a minute.
func runConfluentConnector(ctx context.Context, t *testing.T, n *seamtest.Node, cfg stream.Config, parts []stream.Partition, want stream.Stats) {
	t.Helper()
	cfg.Confluent, cfg.Sealer, cfg.IgnoreReplays, cfg.BatchWait = true, stream.LocalSealer{}, true, 50*time.Millisecond
	conn, err := stream.New(cfg, n.Conn(t, n.Admin), parts)
	if err != nil {
		t.Fatalf("stream.New: %v", err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- conn.Run(runCtx) }()
	deadline := time.Now().Add(time.Minute)
	for {
		st := conn.Stats(ctx)
		if st.Accepted == want.Accepted && st.Quarantined == want.Quarantined && st.Published == want.Published {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("connector stats: %+v; want %d accepted, %d quarantined, %d published", st, want.Accepted, want.Quarantined, want.Published)
		}
		select {
		case err := <-done:
			t.Fatalf("the connector stopped: %v (stats %+v)", err, st)
		case <-time.After(100 * time.Millisecond):
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("connector: %v", err)
	}
}

// sameJSON reports whether two JSON texts are the same value.
func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("not JSON: %v: %s", err, a)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
