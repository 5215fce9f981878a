package gate

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/platform/rpcerr"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// The gate's own span attributes. They follow the OpenTelemetry naming
// rules (lower case, dot separated) under Seam's namespace, so an operator
// can search Jaeger for seam.batch.id=… or seam.partition.verdict=….
const (
	attrSubject     = attribute.Key("seam.subject")
	attrPartition   = attribute.Key("seam.partition")
	attrAmendment   = attribute.Key("seam.partition.amendment")
	attrVerdict     = attribute.Key("seam.partition.verdict")
	attrSealCause   = attribute.Key("seam.seal.cause")
	attrBatchID     = attribute.Key("seam.batch.id")
	attrBatchStatus = attribute.Key("seam.batch.status")
	attrRetried     = attribute.Key("seam.batch.retried")
	attrVersion     = attribute.Key("seam.contract.version")
	attrReceived    = attribute.Key("seam.records.received")
	attrAccepted    = attribute.Key("seam.records.accepted")
	attrQuarantined = attribute.Key("seam.records.quarantined")
	attrDuplicates  = attribute.Key("seam.records.duplicates")
	attrReleased    = attribute.Key("seam.records.released")
	attrAlertKind   = attribute.Key("seam.alert.kind")
	attrAlertCheck  = attribute.Key("seam.alert.check")
	attrAlertField  = attribute.Key("seam.alert.field")
	attrAlertSev    = attribute.Key("seam.alert.severity")
	attrAlertSeq    = attribute.Key("seam.alert.sequence")
	attrEventID     = attribute.Key("seam.event.id")
	attrEventType   = attribute.Key("seam.event.type")
	attrReplayID    = attribute.Key("seam.replay.id")
	attrFrom        = attribute.Key("seam.partition.from")
	attrTo          = attribute.Key("seam.partition.to")
	attrPartitions  = attribute.Key("seam.partitions")
	attrHeld        = attribute.Key("seam.records.held")
	attrRemaining   = attribute.Key("seam.records.remaining")
)

// Span and event names.
const (
	spanIngest  = "gate.ingest"
	spanSeal    = "gate.seal"
	spanPublish = "gate.publish_event"
	spanReplay  = "gate.replay"
	eventAlert  = "seam.alert"
)

// traceparentAttribute is the registry event attribute carrying the W3C
// traceparent of the span that raised the event, so its delivery, which
// runs later in the outbox relay, links back to it.
const traceparentAttribute = "traceparent"

// startIngest starts the span of one batch (a unary batch or one chunk of
// a stream).
func (s *Server) startIngest(ctx context.Context, in batchInput) (context.Context, trace.Span) {
	return s.tracer.Start(ctx, spanIngest, trace.WithAttributes(
		attrSubject.String(in.subject), attrPartition.String(in.partition), attrBatchID.String(in.batchID)))
}

// endIngest records a batch's outcome on its span and logs one line for
// it, with the trace id (the logger adds it from ctx).
func (s *Server) endIngest(ctx context.Context, span trace.Span, in batchInput, began time.Time, resp *gatev1.IngestResponse, err error) {
	defer span.End()
	took := s.cfg.Clock().Sub(began)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(otelcodes.Error, status.Convert(err).Message())
		s.cfg.Logger.WarnContext(ctx, "batch refused", "subject", in.subject, "partition", in.partition, "batch", in.batchID,
			"code", rpcerr.Code(err).String(), "error", status.Convert(err).Message(), "duration", took)
		return
	}
	sum := resp.GetSummary()
	part := resp.GetPartition()
	span.SetAttributes(attrVersion.Int64(int64(sum.GetContractVersion())),
		attrReceived.Int64(sum.GetReceived()), attrAccepted.Int64(sum.GetAccepted()),
		attrQuarantined.Int64(sum.GetQuarantined()), attrDuplicates.Int64(sum.GetDuplicates()),
		attrBatchStatus.String(sum.GetStatus().String()), attrRetried.Bool(sum.GetRetried()),
		attrAmendment.Int64(int64(part.GetAmendment())), attrVerdict.String(part.GetVerdict().String()))
	s.cfg.Logger.InfoContext(ctx, "batch ingested", "subject", in.subject, "partition", in.partition, "amendment", part.GetAmendment(),
		"batch", in.batchID, "version", sum.GetContractVersion(), "received", sum.GetReceived(), "accepted", sum.GetAccepted(),
		"quarantined", sum.GetQuarantined(), "duplicates", sum.GetDuplicates(), "status", sum.GetStatus().String(),
		"retried", sum.GetRetried(), "partition_status", part.GetStatus().String(), "verdict", part.GetVerdict().String(),
		"alerts", len(resp.GetAlerts()), "duration", took)
}

// startSeal starts the span of one partition's (or amendment's) judgment.
func (s *Server) startSeal(ctx context.Context, subject, part string, amendment, version int32, cause gatev1.SealCause, batchID string) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{attrSubject.String(subject), attrPartition.String(part), attrAmendment.Int64(int64(amendment)),
		attrVersion.Int64(int64(version)), attrSealCause.String(cause.String())}
	if batchID != "" {
		attrs = append(attrs, attrBatchID.String(batchID))
	}
	return s.tracer.Start(ctx, spanSeal, trace.WithAttributes(attrs...))
}

// endSeal records a unit's verdict and counts on its seal span; a BLOCKED
// unit's span has status Error, so a search for errors finds it.
func endSeal(span trace.Span, u *unitRow, notice string) {
	c := u.counts
	span.SetAttributes(attrVerdict.String(u.verdict.String()), attrReceived.Int64(c.received), attrAccepted.Int64(c.accepted),
		attrQuarantined.Int64(c.quarantined), attrDuplicates.Int64(c.duplicates), attrReleased.Int64(c.released))
	if u.verdict == gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED {
		span.SetStatus(otelcodes.Error, notice)
	}
}

// startReplay starts the span of one replay of a window.
func (s *Server) startReplay(ctx context.Context, w *gatev1.ReplayWindow, replayID string) (context.Context, trace.Span) {
	return s.tracer.Start(ctx, spanReplay, trace.WithAttributes(attrSubject.String(w.GetSubject()), attrFrom.String(w.GetPartitionFrom()),
		attrTo.String(w.GetPartitionTo()), attrReplayID.String(replayID)))
}

// endSpan ends a span, with status Error when err is set.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(otelcodes.Error, status.Convert(err).Message())
	}
	span.End()
}

// alertEvent adds an alert raised to the span it was raised in.
func alertEvent(ctx context.Context, a *gatev1.Alert) {
	trace.SpanFromContext(ctx).AddEvent(eventAlert, trace.WithAttributes(attrAlertKind.String(a.GetKind()), attrAlertCheck.String(a.GetCheck()),
		attrAlertField.String(a.GetField()), attrAlertSev.String(a.GetSeverity().String()), attrAlertSeq.Int64(a.GetSequence()),
		attrSubject.String(a.GetSubject()), attrPartition.String(a.GetPartition())))
}

// stampTrace writes the traceparent of ctx's span into an event's
// attributes (nothing when ctx carries no sampled or unsampled span).
func stampTrace(ctx context.Context, e *registryv1.Event) {
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	if tp := carrier.Get(traceparentAttribute); tp != "" {
		e.Attributes[traceparentAttribute] = tp
	}
}

// startPublish starts the span of one outbox event's delivery. It is a
// trace of its own (delivery runs later, maybe on another replica), linked
// to the span that raised the event.
func (s *Server) startPublish(ctx context.Context, eventID string, e *registryv1.Event) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attrEventID.String(eventID), attrEventType.String(e.GetType().String()), attrSubject.String(e.GetSubject()))}
	if tp := e.GetAttributes()[traceparentAttribute]; tp != "" {
		origin := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{traceparentAttribute: tp}))
		if origin.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: origin}))
		}
	}
	return s.tracer.Start(ctx, spanPublish, opts...)
}

// raised counts alerts a committed judgment raised and logs each: at
// ERROR when critical, at WARN otherwise, with the trace id of ctx, so an
// on-call engineer grepping the logs finds every alarm the gate raised.
func (s *Server) raised(ctx context.Context, alerts []*gatev1.Alert) {
	for _, a := range alerts {
		s.metrics.alert(ctx, a.GetSubject(), a.GetKind())
		level := slog.LevelWarn
		if a.GetSeverity() == gatev1.Severity_SEVERITY_CRITICAL {
			level = slog.LevelError
		}
		s.cfg.Logger.Log(ctx, level, "alert raised", "subject", a.GetSubject(), "partition", a.GetPartition(), "amendment", a.GetAmendment(),
			"check", a.GetCheck(), "kind", a.GetKind(), "field", a.GetField(), "severity", severityName(a.GetSeverity()),
			"sequence", a.GetSequence(), "message", a.GetMessage())
	}
}

// sealLevel is the level a seal is logged at: WARN when the partition is
// BLOCKED (nothing of it may be published), INFO otherwise.
func sealLevel(v gatev1.PartitionVerdict) slog.Level {
	if v == gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED {
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// blockingChecks names the checks that blocked a judgment, "" when none did.
func blockingChecks(outcomes []check.Outcome) string {
	var names []string
	for _, o := range outcomes {
		if o.Exceeded && o.Policy == contractPolicyBlock {
			names = append(names, o.Name)
		}
	}
	return strings.Join(names, ",")
}
