package adapter

import (
	"context"
	"fmt"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/seamdata/seam/core/mapping"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/platform/rpcerr"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Server implements adapterv1.AdapterService: the handlers are thin, the
// mapping rules live in core/mapping, and plans are cached per subject
// version (see Run for their invalidation).
type Server struct {
	// Embedded for forward compatibility only: every RPC of the service is
	// implemented below.
	adapterv1.UnimplementedAdapterServiceServer

	cfg      Config
	registry registryv1.RegistryServiceClient
	idmap    idmapv1.IdMapServiceClient
	plans    *plans
	records  metric.Int64Counter
	gauges   metric.Registration
}

// New returns an adapter server. Call Run to follow the registry's events.
func New(_ context.Context, cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:      cfg,
		registry: registryv1.NewRegistryServiceClient(cfg.Registry),
		idmap:    idmapv1.NewIdMapServiceClient(cfg.Idmap),
	}
	s.plans = newPlans(s.registry, s.idmap, cfg.Logger, cfg.RefreshInterval, record.Options{MaxRecordBytes: cfg.MaxRecordBytes})
	if err := s.metrics(); err != nil {
		return nil, fmt.Errorf("adapter metrics: %w", err)
	}
	return s, nil
}

func (s *Server) metrics() error {
	m := s.cfg.Meter
	var err error
	if s.records, err = m.Int64Counter("seam.adapter.records",
		metric.WithDescription("Records adapted, by outcome (adapted, failed); the gate's calls include records its own checks then quarantine."), metric.WithUnit("{record}")); err != nil {
		return err
	}
	staleness, err := m.Float64ObservableGauge("seam.adapter.plan.staleness",
		metric.WithDescription("Longest time since a cached plan was known current: 0 while the registry event stream vouches for every plan."),
		metric.WithUnit("s"))
	if err != nil {
		return err
	}
	connected, err := m.Int64ObservableGauge("seam.adapter.registry.stream.connected",
		metric.WithDescription("1 while the registry event stream that invalidates cached plans is connected."))
	if err != nil {
		return err
	}
	s.gauges, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		d, up := s.plans.staleness()
		o.ObserveFloat64(staleness, d.Seconds())
		v := int64(0)
		if up {
			v = 1
		}
		o.ObserveInt64(connected, v)
		return nil
	}, staleness, connected)
	return err
}

// Register registers the adapter on a gRPC server.
func (s *Server) Register(r grpc.ServiceRegistrar) { adapterv1.RegisterAdapterServiceServer(r, s) }

// Close unregisters the metric callbacks.
func (s *Server) Close() error { return s.gauges.Unregister() }

// Adapt implements adapterv1.AdapterServiceServer.
func (s *Server) Adapt(ctx context.Context, req *adapterv1.AdaptRequest) (*adapterv1.AdaptResponse, error) {
	return s.adapt(ctx, req, "")
}

// AdaptStream implements adapterv1.AdapterServiceServer. Requests are
// answered in order; a request that cannot be answered at all (unknown
// subject, idmap down) ends the stream with its status, whose message names
// the request's sequence, because a stream response has no error field.
func (s *Server) AdaptStream(stream grpc.BidiStreamingServer[adapterv1.AdaptStreamRequest, adapterv1.AdaptStreamResponse]) error {
	ctx := stream.Context()
	return rpcerr.AnswerEach(stream, func(req *adapterv1.AdaptStreamRequest) (*adapterv1.AdaptStreamResponse, error) {
		resp, err := s.adapt(ctx, req.GetRequest(), fmt.Sprintf("request sequence %d: ", req.GetSequence()))
		if err != nil {
			return nil, err
		}
		return &adapterv1.AdaptStreamResponse{Sequence: req.GetSequence(), Response: resp}, nil
	})
}

// adapt answers one batch; where prefixes messages of request-level errors.
func (s *Server) adapt(ctx context.Context, req *adapterv1.AdaptRequest, where string) (*adapterv1.AdaptResponse, error) {
	decoded := req.GetDecoded()
	if decoded != nil && req.GetBatch() != nil {
		return nil, rpcerr.InvalidArgument(where+"invalid adapt request: both batch and decoded are set",
			rpcerr.FieldViolation{Field: "decoded", Description: "send the records once: as batch or as decoded records"})
	}
	if err := validateTarget(req.GetSubject(), req.GetVersion(), req.GetBatch(), decoded != nil, where); err != nil {
		return nil, err
	}
	c, err := s.plans.get(ctx, req.GetSubject(), req.GetVersion())
	if err != nil {
		return nil, err
	}
	// The decoded records and the mapped batch are reused for later
	// batches once the response, which copies what it needs, is built.
	dec := c.decoders.Get()
	defer c.decoders.Put(dec)
	var recs []record.Record
	if decoded != nil {
		recs, err = decodePacked(dec, decoded, where)
	} else {
		recs, err = s.decodeBatch(dec, req.GetBatch(), where)
	}
	if err != nil {
		return nil, err
	}
	// The identifiers go to idmap while the other fields are mapped.
	batch := c.plan.Start(recs)
	defer batch.Release()
	translated := make(chan error, 1)
	if slices.ContainsFunc(batch.Lookups(), func(l *mapping.Lookup) bool { return len(l.IDs) > 0 }) {
		go func() { translated <- s.translate(ctx, batch) }()
	} else {
		translated <- nil
	}
	batch.MapRest()
	if err := <-translated; err != nil {
		return nil, err
	}
	finish := batch.Results
	if req.GetAnswer() == adapterv1.AdaptAnswer_ADAPT_ANSWER_FAILURES {
		finish = batch.Outcomes // no record id is answered
	}
	results, err := finish()
	if err != nil {
		return nil, err
	}
	var resp *adapterv1.AdaptResponse
	switch req.GetAnswer() {
	case adapterv1.AdaptAnswer_ADAPT_ANSWER_PACKED, adapterv1.AdaptAnswer_ADAPT_ANSWER_FAILURES:
		resp = packedResponse(c, results, req.GetAnswer() == adapterv1.AdaptAnswer_ADAPT_ANSWER_PACKED)
	default:
		resp = resultsResponse(c, req, results)
	}
	s.count(ctx, req.GetSubject(), resp.Adapted, resp.Failed)
	traceAdapt(ctx, req, resp, where != "")
	return resp, nil
}

// traceAdapt puts what a batch became on the call's span: attributes for
// a unary call, an event per request on a stream's span.
func traceAdapt(ctx context.Context, req *adapterv1.AdaptRequest, resp *adapterv1.AdaptResponse, stream bool) {
	attrs := []attribute.KeyValue{attribute.String("seam.subject", req.GetSubject()), attribute.Int64("seam.contract.version", int64(resp.GetVersion())),
		attribute.String("seam.partition", req.GetPartition()), attribute.String("seam.batch.id", req.GetBatchId()),
		attribute.Int64("seam.records.received", resp.GetAdapted()+resp.GetFailed()), attribute.Int64("seam.records.adapted", resp.GetAdapted()),
		attribute.Int64("seam.records.failed", resp.GetFailed())}
	span := trace.SpanFromContext(ctx)
	if stream {
		span.AddEvent("seam.adapt", trace.WithAttributes(attrs...))
		return
	}
	span.SetAttributes(attrs...)
}

// resultsResponse answers one AdaptResult per record.
func resultsResponse(c *compiled, req *adapterv1.AdaptRequest, results []mapping.Result) *adapterv1.AdaptResponse {
	resp := &adapterv1.AdaptResponse{Version: c.version, Results: make([]*adapterv1.AdaptResult, len(results))}
	objects := req.GetBatch().GetObjects() != nil
	var out []byte
	if !objects {
		out = make([]byte, 0, 256*len(results))
	}
	for i := range results {
		r := &results[i]
		ar := &adapterv1.AdaptResult{Index: r.Index, Position: r.Position}
		resp.Results[i] = ar
		if !r.OK() {
			ar.Errors = r.RecordErrors()
			resp.Failed++
			continue
		}
		resp.Adapted++
		cr := &recordv1.CanonicalRecord{
			RecordId: r.ID.String(),
			Provenance: &recordv1.Provenance{
				Subject: req.GetSubject(), ContractVersion: c.version,
				Canonical: c.canonical, CanonicalVersion: c.canonicalVersion,
				Index: r.Index, Position: r.Position,
				Partition: req.GetPartition(), BatchId: req.GetBatchId(),
			},
		}
		if objects {
			cr.Body = &recordv1.CanonicalRecord_Object{Object: c.plan.Struct(r.Values)}
		} else {
			start := len(out)
			out = c.plan.AppendJSON(out, r.Values)
			cr.Body = &recordv1.CanonicalRecord_Json{Json: out[start:len(out):len(out)]}
		}
		ar.Record = cr
	}
	return resp
}

// packedResponse answers the results packed: the adapted records' JSON
// and ids each in one buffer (when records is set), the failures as
// AdaptResults, so an adapted record costs no message of its own.
func packedResponse(c *compiled, results []mapping.Result, records bool) *adapterv1.AdaptResponse {
	p := &adapterv1.PackedResults{Canonical: c.canonical, CanonicalVersion: c.canonicalVersion}
	resp := &adapterv1.AdaptResponse{Version: c.version, Packed: p}
	if records {
		p.Json = make([]byte, 0, 256*len(results))
		p.JsonEnds = make([]uint32, 0, len(results))
		p.RecordIds = make([]byte, 0, len(mapping.RecordID{})*len(results))
	}
	for i := range results {
		r := &results[i]
		if !r.OK() {
			p.Failures = append(p.Failures, &adapterv1.AdaptResult{Index: r.Index, Position: r.Position, Errors: r.RecordErrors()})
			resp.Failed++
			continue
		}
		resp.Adapted++
		if records {
			p.Json = c.plan.AppendJSON(p.Json, r.Values)
			p.JsonEnds = append(p.JsonEnds, uint32(len(p.Json)))
			p.RecordIds = append(p.RecordIds, r.ID[:]...)
		}
	}
	return resp
}

func (s *Server) count(ctx context.Context, subject string, adapted, failed int64) {
	s.records.Add(ctx, adapted, metric.WithAttributes(attribute.String("subject", subject), attribute.String("outcome", "adapted")))
	s.records.Add(ctx, failed, metric.WithAttributes(attribute.String("subject", subject), attribute.String("outcome", "failed")))
}

// validateTarget checks the parts of a request every RPC needs.
func validateTarget(subject string, version int32, batch *recordv1.RecordBatch, decoded bool, where string) error {
	var v []rpcerr.FieldViolation
	if subject == "" {
		v = append(v, rpcerr.FieldViolation{Field: "subject", Description: "empty; name the subject whose records these are, such as shop.orders"})
	}
	if version < 0 {
		v = append(v, rpcerr.FieldViolation{Field: "version", Description: fmt.Sprintf("%d is negative; send a registered version or 0 for the active one", version)})
	}
	if !decoded {
		v = append(v, validateBatch(batch)...)
	}
	if len(v) > 0 {
		return rpcerr.InvalidArgument(where+"invalid adapt request: "+v[0].Field+": "+v[0].Description, v...)
	}
	return nil
}

func validateBatch(batch *recordv1.RecordBatch) []rpcerr.FieldViolation {
	switch {
	case batch == nil || batch.GetBody() == nil:
		return []rpcerr.FieldViolation{{Field: "batch", Description: "no records; send batch.raw (bytes with a format) or batch.objects"}}
	case batch.GetRaw() != nil:
		switch batch.GetRaw().GetFormat() {
		case recordv1.Format_FORMAT_JSON, recordv1.Format_FORMAT_NDJSON, recordv1.Format_FORMAT_CSV:
		default:
			return []rpcerr.FieldViolation{{Field: "batch.raw.format", Description: fmt.Sprintf("%v is not a record format; send FORMAT_JSON, FORMAT_NDJSON or FORMAT_CSV", batch.GetRaw().GetFormat())}}
		}
	}
	return nil
}

// decodePacked reads records a caller decoded by the same contract
// version. Values that do not follow the layout, or that a JSON decode
// would not have produced, fail the whole call: they come from a peer
// service, not a source, so there is no record to blame.
func decodePacked(dec *record.Decoder, d *adapterv1.DecodedRecords, where string) ([]record.Record, error) {
	if d.GetCount() > int64(len(d.GetValues())) {
		return nil, rpcerr.InvalidArgument(fmt.Sprintf("%sdecoded records: %d records cannot fit in %d bytes", where, d.GetCount(), len(d.GetValues())),
			rpcerr.FieldViolation{Field: "decoded.count", Description: "more records than bytes"})
	}
	b, err := dec.DecodePacked(d.GetFields(), d.GetValues(), int(d.GetCount()))
	if err != nil {
		return nil, rpcerr.InvalidArgument(where+err.Error(), rpcerr.FieldViolation{Field: "decoded", Description: err.Error()})
	}
	return b.Records, nil
}

// decodeBatch decodes a batch with the plan's source schema. Per-record
// failures stay in the records; only a batch whose records cannot be
// delimited is refused.
func (s *Server) decodeBatch(dec *record.Decoder, batch *recordv1.RecordBatch, where string) ([]record.Record, error) {
	var (
		b   *record.Batch
		err error
	)
	if objs := batch.GetObjects(); objs != nil {
		b, err = dec.DecodeObjects(objs.GetRecords(), batch.GetFirstOffset())
	} else {
		b, err = dec.Decode(batch.GetRaw().GetFormat(), batch.GetRaw().GetData(), batch.GetFirstOffset())
	}
	if err != nil {
		return nil, rpcerr.InvalidArgument(where+"the batch cannot be decoded: "+err.Error(),
			rpcerr.FieldViolation{Field: "batch", Description: err.Error()})
	}
	return b.Records, nil
}
