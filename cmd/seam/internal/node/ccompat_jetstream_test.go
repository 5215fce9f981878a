package node_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
	"github.com/seamdata/seam/connectors/stream"
	seamjs "github.com/seamdata/seam/connectors/stream/jetstream"
	"github.com/seamdata/seam/connectors/stream/jetstream/jetstreamtest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// TestConfluentFramingOnJetStream sends JSON Schema records in
// Confluent's wire format over JetStream: each is judged with the version
// of its schema id; a record of a deleted (retired) version, a payload
// that is not JSON and a message out of the wire format are quarantined
// with their reasons. It needs a JetStream server on 127.0.0.1:4222.
func TestConfluentFramingOnJetStream(t *testing.T) {
	t.Parallel()
	connector := "visits-" + strconv.Itoa(rand.IntN(1<<30))
	streams := jetstreamtest.New(t, connector, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	n := seamtest.StartNode(t)
	admin := basic(n.Admin)
	v1 := `{"type":"object","properties":{"visit_id":{"type":"string"},"at":{"type":"string","format":"date-time"}},"required":["visit_id","at"]}`
	v2 := `{"type":"object","properties":{"visit_id":{"type":"string"},"at":{"type":"string","format":"date-time"},"ref":{"type":"string"}},"required":["visit_id","at"]}`
	idOf := func(schema string) uint32 {
		t.Helper()
		body := srCheck(t, n, srCall{method: "POST", path: "/subjects/visits-value/versions", body: schemaBody(t, schema, "JSON"), auth: admin}, srWant{200, 0, `"id"`})
		var r struct {
			ID uint32 `json:"id"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	// The gate emits canonical records: the platform team maps the
	// subject in Seam's form (v2); v1's schema registered again names v2,
	// and v3 (additive) inherits the mapping.
	id1 := idOf(v1)
	mapToCanonical(ctx, t, registryv1.NewRegistryServiceClient(n.Conn(t, n.Admin)), "visits.value", "web.visit", "team-web")
	if again := idOf(v1); again != id1 {
		t.Fatalf("v1's schema again: id %d, want %d", again, id1)
	}
	id2 := idOf(v2)
	// Version 2, the newest with id1, is deleted: records framed with id1
	// are quarantined, saying so.
	srCheck(t, n, srCall{method: "DELETE", path: "/subjects/visits-value/versions/2", auth: admin}, srWant{200, 0, "2"})

	frame := func(id uint32, payload string) []byte {
		b := make([]byte, 5, 5+len(payload))
		binary.BigEndian.PutUint32(b[1:], id)
		return append(b, payload...)
	}
	msgs := [][]byte{
		frame(id2, `{"visit_id":"V-1","at":"2026-03-01T10:00:00Z","ref":"mail"}`),
		frame(id2, `{"visit_id":"V-2","at":"2026-03-01T11:00:00Z"}`),
		frame(id1, `{"visit_id":"V-3","at":"2026-03-01T12:00:00Z"}`),
		frame(id2, `not json`),
		[]byte(`{"visit_id":"V-5","at":"2026-03-01T12:00:00Z"}`),
		frame(id2, `{"visit_id":"V-6","at":"2026-03-04T10:00:00Z"}`),
	}
	for _, m := range msgs {
		if _, err := streams.JS.Publish(ctx, streams.SourceSubject, m); err != nil {
			t.Fatal(err)
		}
	}
	part, err := seamjs.Open(ctx, streams.JS.Conn(), seamjs.Config{Connector: connector, Stream: streams.Source, Subject: streams.SourceSubject, OutputStream: streams.Output, OutputSubject: streams.OutputSubject})
	if err != nil {
		t.Fatalf("jetstream.Open: %v", err)
	}
	runConfluentConnector(ctx, t, n, stream.Config{Name: connector, Subject: "visits.value", EventTimeField: "at"}, []stream.Partition{part},
		stream.Stats{Accepted: 3, Quarantined: 3, Published: 2})

	gate := gatev1.NewGateServiceClient(n.Conn(t, n.Admin))
	q, err := gate.ListQuarantine(ctx, &gatev1.ListQuarantineRequest{Filter: &gatev1.QuarantineFilter{Subject: "visits.value"}})
	if err != nil {
		t.Fatalf("ListQuarantine: %v", err)
	}
	var raws []string
	for _, r := range q.GetRecords() {
		raws = append(raws, string(r.GetRaw()))
	}
	all := strings.Join(raws, "\n")
	for _, want := range []string{"version 2 of visits.value, which its schema id names, is retired", "is a JSON Schema but the payload is not JSON", "not in Confluent's wire format"} {
		if !strings.Contains(all, want) {
			t.Errorf("quarantine of visits.value: no record says %q; got:\n%s", want, all)
		}
	}
}
