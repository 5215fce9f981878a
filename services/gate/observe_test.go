package gate

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/seamdata/seam/platform/storage/storagetest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// spanAttrs returns a span's attributes by key.
func spanAttrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

func spansNamed(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// wantAttrs fails unless the span carries each attribute with its value.
func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[attribute.Key]any) {
	t.Helper()
	got := spanAttrs(s)
	for k, w := range want {
		v, ok := got[k]
		if !ok {
			t.Errorf("span %s: attribute %s missing; it has %v", s.Name(), k, s.Attributes())
			continue
		}
		if v.AsInterface() != w {
			t.Errorf("span %s: %s = %v (%T), want %v (%T)", s.Name(), k, v.AsInterface(), v.AsInterface(), w, w)
		}
	}
}

// One batch with a quarantined record, sent with seal, blocks its
// partition: the ingest span says which batch of which partition under
// which version and what became of its records, the seal span under it
// has status Error and an event for the alert, and the alert's delivery
// to the registry is a span linked to the seal that raised it.
func TestIngestSpans(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, func(t *testing.T, url string) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
		e, _ := paymentsEnv(t, url, func(c *Config) { c.TracerProvider = tp })

		day := payDay(3)
		req := payIngest(day, "b-1", paymentsDay{day: 3, n: 100, missing: 1}.lines())
		req.Seal = true
		resp := mustIngest(t, e, req)
		if resp.GetPartition().GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED || resp.GetSummary().GetQuarantined() != 1 {
			t.Fatalf("answer = %v, want 1 quarantined and the partition BLOCKED (1 of 100 missing against 0.5%%)", resp.GetSummary())
		}

		var publish []sdktrace.ReadOnlySpan
		deadline := time.Now().Add(10 * time.Second)
		for len(publish) == 0 && time.Now().Before(deadline) {
			publish = spansNamed(rec.Ended(), spanPublish)
			time.Sleep(20 * time.Millisecond)
		}
		spans := rec.Ended()

		ingests := spansNamed(spans, spanIngest)
		if len(ingests) != 1 {
			t.Fatalf("%d %s spans, want 1", len(ingests), spanIngest)
		}
		in := ingests[0]
		wantAttrs(t, in, map[attribute.Key]any{
			attrSubject: "bank.payments", attrPartition: day, attrBatchID: "b-1", attrVersion: int64(1),
			attrReceived: int64(100), attrAccepted: int64(99), attrQuarantined: int64(1), attrDuplicates: int64(0),
			attrBatchStatus: "BATCH_STATUS_PARTIAL", attrVerdict: "PARTITION_VERDICT_BLOCKED",
		})

		seals := spansNamed(spans, spanSeal)
		if len(seals) != 1 {
			t.Fatalf("%d %s spans, want 1", len(seals), spanSeal)
		}
		seal := seals[0]
		if seal.Parent().SpanID() != in.SpanContext().SpanID() || seal.SpanContext().TraceID() != in.SpanContext().TraceID() {
			t.Errorf("seal span's parent = %s in trace %s, want the ingest span %s", seal.Parent().SpanID(), seal.SpanContext().TraceID(), in.SpanContext().SpanID())
		}
		wantAttrs(t, seal, map[attribute.Key]any{
			attrSubject: "bank.payments", attrPartition: day, attrBatchID: "b-1", attrVersion: int64(1), attrAmendment: int64(0),
			attrVerdict: "PARTITION_VERDICT_BLOCKED", attrReceived: int64(100), attrQuarantined: int64(1), attrSealCause: "SEAL_CAUSE_REQUEST",
		})
		if seal.Status().Code != otelcodes.Error {
			t.Errorf("blocked seal span status = %v, want Error", seal.Status())
		}
		if in.Status().Code == otelcodes.Error {
			t.Errorf("ingest span status = %v, want not Error: the batch itself was taken", in.Status())
		}
		var blockedEvent bool
		for _, ev := range seal.Events() {
			if ev.Name != eventAlert {
				continue
			}
			for _, kv := range ev.Attributes {
				if kv.Key == attrAlertKind && kv.Value.AsString() == "PARTITION_BLOCKED" {
					blockedEvent = true
				}
			}
		}
		if !blockedEvent {
			t.Errorf("seal span events = %v, want a %s event of kind PARTITION_BLOCKED", seal.Events(), eventAlert)
		}

		if len(publish) == 0 {
			t.Fatalf("no %s span within 10s: the alert's registry event was not delivered", spanPublish)
		}
		var linked bool
		for _, p := range publish {
			for _, l := range p.Links() {
				if l.SpanContext.SpanID() == seal.SpanContext().SpanID() && l.SpanContext.TraceID() == seal.SpanContext().TraceID() {
					linked = true
				}
			}
		}
		if !linked {
			t.Errorf("no %s span links to the seal span %s", spanPublish, seal.SpanContext().SpanID())
		}
	})
}

// A batch refused is an Error span naming it, and no seal.
func TestIngestSpanRefused(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	e, _ := paymentsEnv(t, storagetest.SQLiteURL(t), func(c *Config) { c.TracerProvider = tp })
	req := payIngest(payDay(3), "b-bad", nil) // no records: refused whole
	if _, err := e.as("pipeline").Ingest(t.Context(), req); err == nil {
		t.Fatal("Ingest of a batch without records succeeded")
	}
	ingests := spansNamed(rec.Ended(), spanIngest)
	if len(ingests) != 1 {
		t.Fatalf("%d %s spans, want 1", len(ingests), spanIngest)
	}
	if ingests[0].Status().Code != otelcodes.Error {
		t.Errorf("refused batch's span status = %v, want Error", ingests[0].Status())
	}
	wantAttrs(t, ingests[0], map[attribute.Key]any{attrBatchID: "b-bad", attrSubject: "bank.payments"})
	if n := len(spansNamed(rec.Ended(), spanSeal)); n != 0 {
		t.Errorf("%d seal spans for a refused batch, want 0", n)
	}
}

// A replay is a span naming its window, the version it replays through
// and what it released.
func TestReplaySpan(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	e := startGate(t, knownPeers(t), storagetest.SQLiteURL(t), func(c *Config) { c.TracerProvider = tp })
	resp, err := e.as("pipeline").Ingest(t.Context(), ingest("shop.orders", "2025-03-01", "b1", orders{first: 1, n: 10, amount: 85, uuids: 2}))
	if err != nil || resp.GetSummary().GetQuarantined() != 2 {
		t.Fatalf("Ingest = %v, %v; want 2 UUID customer ids quarantined under v1", resp.GetSummary(), err)
	}
	e.registerV2(t)
	e.loadLookup()
	got := replay(t, e, &gatev1.ReplayWindow{Subject: "shop.orders", PartitionFrom: "2025-03-01", PartitionTo: "2025-03-01"}, "r1")
	if got.summary.GetReleased() != 2 {
		t.Fatalf("replay summary = %v, want 2 released", got.summary)
	}
	spans := spansNamed(rec.Ended(), spanReplay)
	if len(spans) != 1 {
		t.Fatalf("%d %s spans, want 1", len(spans), spanReplay)
	}
	wantAttrs(t, spans[0], map[attribute.Key]any{
		attrSubject: "shop.orders", attrFrom: "2025-03-01", attrTo: "2025-03-01", attrReplayID: "r1", attrVersion: int64(2),
		attrReleased: int64(2), attrRemaining: int64(0), attrHeld: int64(2), attrPartitions: int64(1),
	})
}
