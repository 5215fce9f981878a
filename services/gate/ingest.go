package gate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/platform/rpcerr"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// batchInput is one batch to ingest, from a unary call or a stream chunk.
type batchInput struct {
	subject, partition, batchID string
	version                     int32
	batch                       *recordv1.RecordBatch
	// withRecords is set when the answer carries canonical records; it
	// must then fit in one message.
	withRecords bool
}

// idState says whether a quarantined record's identifier was counted in
// its partition's match rate, so a replay that releases it counts it
// exactly once.
const (
	idUncounted = 0 // not looked up (contained batch, or no identifier value)
	idUnmatched = 1
	idMatched   = 2
)

// quarantined is one record set aside by a batch.
type quarantined struct {
	id       string
	index    int64
	position int64
	raw      []byte
	reasons  []*recordv1.RecordError
	idState  int
}

// outcome is everything a batch writes, decided before the write
// transaction so the transaction does no network I/O.
type outcome struct {
	in      batchInput
	cv      *compiled
	format  recordv1.Format
	resp    *gatev1.IngestResponse
	blocked *gatev1.BlockedDetail
	quar    []quarantined
	// stats is nil when the batch was not validated (blocked or contained).
	stats *check.Stats
	// idField is the identifier field whose match rate the partition
	// reports; idChecked and idMatched its counts in this batch.
	idField              string
	idChecked, idMatched int64
	// shapes are the clustered failure shapes of this batch, by field.
	shapes []shapeCluster
	// recordAlerts counts, by check index, the records that failed an
	// ALERT check.
	recordAlerts map[int]int64
}

// errDuplicateBatch aborts a write transaction that lost the race for a
// batch's idempotency key to another request or replica.
var errDuplicateBatch = errors.New("batch already ingested")

// Ingest validates, adapts and routes one batch.
func (s *Server) Ingest(ctx context.Context, req *gatev1.IngestRequest) (*gatev1.IngestResponse, error) {
	in := batchInput{subject: strings.TrimSpace(req.GetSubject()), partition: strings.TrimSpace(req.GetPartition()),
		version: req.GetContractVersion(), batch: req.GetBatch(), withRecords: !req.GetSummaryOnly()}
	switch id := req.GetIdentity().(type) {
	case *gatev1.IngestRequest_BatchId:
		in.batchID = strings.TrimSpace(id.BatchId)
	case *gatev1.IngestRequest_Offsets:
		if id.Offsets.GetEnd() < id.Offsets.GetStart() {
			return nil, rpcerr.InvalidArgument("bad batch identity", rpcerr.FieldViolation{Field: "offsets",
				Description: fmt.Sprintf("end %d is before start %d; send the source offsets the batch covers", id.Offsets.GetEnd(), id.Offsets.GetStart())})
		}
		in.batchID = fmt.Sprintf("offsets:%d-%d", id.Offsets.GetStart(), id.Offsets.GetEnd())
	}
	if err := validateInput(in, "batch_id or offsets"); err != nil {
		return nil, err
	}
	resp, err := s.ingest(ctx, in)
	if err != nil {
		return nil, err
	}
	if req.GetSummaryOnly() {
		resp = summaryOnly(resp)
	}
	return resp, nil
}

func validateInput(in batchInput, idField string) error {
	var bad []rpcerr.FieldViolation
	if in.subject == "" {
		bad = append(bad, rpcerr.FieldViolation{Field: "subject", Description: "name the source subject, for example shop.orders"})
	}
	if in.partition == "" {
		bad = append(bad, rpcerr.FieldViolation{Field: "partition", Description: "name the batch's partition, for example its event date 2025-03-01"})
	}
	if in.batchID == "" {
		bad = append(bad, rpcerr.FieldViolation{Field: idField, Description: "give the batch an identity so a retry is recognised and written once"})
	}
	if in.version < 0 {
		bad = append(bad, rpcerr.FieldViolation{Field: "contract_version", Description: "a version is positive; send 0 for the active version"})
	}
	switch b := in.batch.GetBody().(type) {
	case *recordv1.RecordBatch_Raw:
		f := b.Raw.GetFormat()
		if f != recordv1.Format_FORMAT_JSON && f != recordv1.Format_FORMAT_NDJSON && f != recordv1.Format_FORMAT_CSV {
			bad = append(bad, rpcerr.FieldViolation{Field: "batch.raw.format", Description: "declare FORMAT_JSON, FORMAT_NDJSON or FORMAT_CSV"})
		}
	case *recordv1.RecordBatch_Objects:
	default:
		bad = append(bad, rpcerr.FieldViolation{Field: "batch", Description: "send records as raw bytes with a format, or as objects"})
	}
	if len(bad) > 0 {
		return rpcerr.InvalidArgument("the batch cannot be ingested as sent", bad...)
	}
	return nil
}

// summaryOnly drops canonical records from a response.
func summaryOnly(r *gatev1.IngestResponse) *gatev1.IngestResponse {
	out := &gatev1.IngestResponse{Summary: r.GetSummary(), Alerts: r.GetAlerts(), Records: make([]*gatev1.RecordVerdict, len(r.GetRecords()))}
	for i, v := range r.GetRecords() {
		out.Records[i] = &gatev1.RecordVerdict{Index: v.GetIndex(), Position: v.GetPosition(), Status: v.GetStatus(), Reasons: v.GetReasons(), Alerts: v.GetAlerts()}
	}
	return out
}

// ingest runs one batch through the gate. The idempotency row is read
// first so a retry costs one query; the write transaction inserts it
// again under its unique key, so concurrent duplicates (other requests,
// other replicas) are decided by the database.
func (s *Server) ingest(ctx context.Context, in batchInput) (*gatev1.IngestResponse, error) {
	if stored, ok, err := s.store.Batch(ctx, in.subject, in.partition, in.batchID); err != nil {
		return nil, err
	} else if ok {
		return s.storedAnswer(in, stored)
	}
	cv, err := s.contracts.resolve(ctx, in.subject, in.version, false)
	if err != nil {
		return nil, err
	}
	cont, contained, err := s.store.Containment(ctx, in.subject)
	if err != nil {
		return nil, err
	}
	dec := cv.decoder()
	defer cv.release(dec)
	decoded, format, err := decode(dec, in.batch)
	if err != nil {
		return nil, err
	}
	var o *outcome
	if contained && cont.Contained {
		o = containedOutcome(in, cv, format, decoded, cont)
	} else {
		o, err = s.validate(ctx, in, cv, format, decoded)
		if err != nil {
			return nil, err
		}
	}
	if in.withRecords {
		if err := s.fits(o.resp, in); err != nil {
			return nil, err
		}
	}
	alerts, err := s.commitBatch(ctx, o)
	if errors.Is(err, errDuplicateBatch) {
		stored, ok, err := s.store.Batch(ctx, in.subject, in.partition, in.batchID)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("batch %s of %s/%s: lost the idempotency race but found no stored row", in.batchID, in.subject, in.partition)
		}
		return s.storedAnswer(in, stored)
	}
	if err != nil {
		return nil, err
	}
	s.metrics.batch(ctx, o)
	for _, a := range alerts {
		s.metrics.alert(ctx, a.GetSubject(), a.GetKind())
	}
	if o.blocked != nil {
		return nil, blockedError(in, o.blocked)
	}
	o.resp.Alerts = alerts
	return o.resp, nil
}

// fits refuses, before anything is written, an answer with canonical
// records that could not be sent in one message: a pipeline retrying
// Unavailable forever is worse than being told to ask for less.
func (s *Server) fits(resp *gatev1.IngestResponse, in batchInput) error {
	limit := s.cfg.MaxMessageBytes - s.cfg.MaxMessageBytes/16 // room for alerts and the partition's state
	if n := proto.Size(resp); n > limit {
		return rpcerr.WithReason(codes.ResourceExhausted, "ANSWER_TOO_LARGE",
			fmt.Sprintf("the answer to batch %s with its canonical records would be %d bytes, over the gate's message limit of %d bytes; nothing was written — send the batch with summary_only, or in smaller batches",
				in.batchID, n, s.cfg.MaxMessageBytes),
			map[string]string{"limit_bytes": fmt.Sprint(s.cfg.MaxMessageBytes), "answer_bytes": fmt.Sprint(n), "batch_id": in.batchID})
	}
	return nil
}

// storedAnswer repeats a stored batch's verdicts.
func (s *Server) storedAnswer(in batchInput, b storedBatch) (*gatev1.IngestResponse, error) {
	if b.status == gatev1.BatchStatus_BATCH_STATUS_BLOCKED {
		return nil, blockedError(in, b.blocked)
	}
	b.resp.Summary.Retried = true
	return b.resp, nil
}

// decode decodes a batch. A batch whose records cannot be delimited is
// refused whole: some of its records could not be accounted for.
func decode(dec *record.Decoder, b *recordv1.RecordBatch) (*record.Batch, recordv1.Format, error) {
	var out *record.Batch
	var err error
	format := recordv1.Format_FORMAT_JSON
	switch body := b.GetBody().(type) {
	case *recordv1.RecordBatch_Raw:
		format = body.Raw.GetFormat()
		out, err = dec.Decode(format, body.Raw.GetData(), b.GetFirstOffset())
	case *recordv1.RecordBatch_Objects:
		out, err = dec.DecodeObjects(body.Objects.GetRecords(), b.GetFirstOffset())
	}
	if err != nil {
		return nil, format, rpcerr.InvalidArgument("the batch cannot be decoded: "+err.Error(),
			rpcerr.FieldViolation{Field: "batch", Description: "fix the encoding at the offset named; records after it cannot be counted, so nothing of the batch was taken"})
	}
	if len(out.Records) == 0 {
		return nil, format, rpcerr.InvalidArgument("the batch holds no records", rpcerr.FieldViolation{Field: "batch", Description: "send at least one record"})
	}
	return out, format, nil
}

// quarantineID is a quarantined record's id: the same record of the same
// batch always gets the same id.
func quarantineID(subject, partition, batchID string, index int64) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s%d:%s%d:%s%d", len(subject), subject, len(partition), partition, len(batchID), batchID, index)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// rawOf returns what a quarantined record keeps as its raw bytes: the
// record as sent, and for CSV the header line first so the row can be
// read (and replayed) on its own.
func rawOf(format recordv1.Format, header []byte, r *record.Record) []byte {
	if format != recordv1.Format_FORMAT_CSV {
		return r.Raw
	}
	out := make([]byte, 0, len(header)+1+len(r.Raw))
	out = append(out, header...)
	out = append(out, '\n')
	return append(out, r.Raw...)
}

// csvHeader returns a CSV batch's header line.
func csvHeader(b *recordv1.RecordBatch) []byte {
	data := bytes.TrimPrefix(b.GetRaw().GetData(), []byte("\xef\xbb\xbf"))
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		data = data[:i]
	}
	return bytes.TrimSuffix(data, []byte("\r"))
}

func newOutcome(in batchInput, cv *compiled, format recordv1.Format, n int) *outcome {
	return &outcome{in: in, cv: cv, format: format, resp: &gatev1.IngestResponse{
		Summary: &gatev1.BatchSummary{Received: int64(n), ContractVersion: cv.version},
		Records: make([]*gatev1.RecordVerdict, n),
	}}
}

func (o *outcome) quarantine(header []byte, r *record.Record, reasons []*recordv1.RecordError, idState int) {
	o.resp.Records[r.Index] = &gatev1.RecordVerdict{Index: r.Index, Position: r.Position, Status: gatev1.RecordStatus_RECORD_STATUS_QUARANTINED, Reasons: reasons}
	o.quar = append(o.quar, quarantined{id: quarantineID(o.in.subject, o.in.partition, o.in.batchID, r.Index), index: r.Index,
		position: r.Position, raw: rawOf(o.format, header, r), reasons: reasons, idState: idState})
}

func (o *outcome) finish() {
	sum := o.resp.Summary
	sum.Quarantined = int64(len(o.quar))
	sum.Accepted = sum.Received - sum.Quarantined
	switch {
	case sum.Quarantined == 0:
		sum.Status = gatev1.BatchStatus_BATCH_STATUS_ACCEPTED
	case sum.Accepted == 0:
		sum.Status = gatev1.BatchStatus_BATCH_STATUS_QUARANTINED
	default:
		sum.Status = gatev1.BatchStatus_BATCH_STATUS_PARTIAL
	}
}

// containedOutcome quarantines every record of a contained source's batch
// without validating or adapting it: nothing of it may propagate.
//
// The match rate is the share of a partition's records whose identifier
// resolves; a held record's does not (yet), so each counts as looked up and
// unmatched, and a replay that releases it adds only the match. Otherwise
// containing a source would hide the very drop that made someone contain it.
func containedOutcome(in batchInput, cv *compiled, format recordv1.Format, b *record.Batch, c containment) *outcome {
	o := newOutcome(in, cv, format, len(b.Records))
	header := csvHeader(in.batch)
	msg := fmt.Sprintf("source %s is contained (by %s: %s); its records are held until it is released and they are replayed", in.subject, c.Principal, c.Reason)
	idState := idUncounted
	if field := matchRateField(cv); field != "" {
		idState = idUnmatched
		o.idField, o.idChecked = field, int64(len(b.Records))
	}
	for i := range b.Records {
		r := &b.Records[i]
		reasons := []*recordv1.RecordError{{Code: recordv1.ErrorCode_ERROR_CODE_SOURCE_CONTAINED, Message: msg, Check: "containment"}}
		if r.Err != nil {
			reasons = append(reasons, r.Err)
		}
		o.quarantine(header, r, reasons, idState)
	}
	o.finish()
	return o
}

// matchRateField is the identifier field of the contract's first
// match-rate check, or "".
func matchRateField(cv *compiled) string {
	for _, ch := range cv.plan.Checks() {
		if ch.Kind == check.KindMatchRate {
			return ch.Field
		}
	}
	return ""
}

// validate runs the checks, and for a batch that is not blocked the
// adapter and the identifier lookups, which are the only network calls of
// a batch; they run concurrently.
func (s *Server) validate(ctx context.Context, in batchInput, cv *compiled, format recordv1.Format, b *record.Batch) (*outcome, error) {
	plan := cv.plan
	res := plan.Validate(b.Records)
	o := newOutcome(in, cv, format, len(b.Records))
	if res.Blocked {
		o.blocked = blockedDetail(plan, res)
		o.resp.Summary.Status = gatev1.BatchStatus_BATCH_STATUS_BLOCKED
		return o, nil
	}
	checks := plan.Checks()
	header := csvHeader(in.batch)
	var passing []*record.Record
	for i := range res.Records {
		if !res.Records[i].Quarantined {
			passing = append(passing, &b.Records[i])
		}
	}
	var (
		wg       sync.WaitGroup
		results  map[int64]*adapterv1.AdaptResult
		adaptErr error
		present  [][]bool
		idErr    error
	)
	if len(passing) > 0 {
		wg.Go(func() {
			results, adaptErr = s.adaptRecords(ctx, adaptTarget{subject: in.subject, partition: in.partition, batchID: in.batchID, version: cv.version},
				format, header, passing)
		})
	}
	wg.Go(func() { present, idErr = s.lookupIdentifiers(ctx, res.Identifiers) })
	wg.Wait()
	if adaptErr != nil {
		return nil, adaptErr
	}
	if idErr != nil {
		return nil, peerError("idmap", idErr)
	}

	// Identifier match: per record of the first match-rate field, and the
	// batch's counts per field for the partition's statistics.
	recIDState := make([]int, len(b.Records))
	for k, ids := range res.Identifiers {
		matched := int64(0)
		for j, ok := range present[k] {
			if ok {
				matched++
			}
			if k == 0 {
				recIDState[ids.Records[j]] = idUnmatched
				if ok {
					recIDState[ids.Records[j]] = idMatched
				}
			}
		}
		fs := res.Stats.Fields[ids.Field]
		fs.Matched = matched
		res.Stats.Fields[ids.Field] = fs
		if k == 0 {
			o.idField, o.idChecked, o.idMatched = ids.Field, int64(len(ids.Values)), matched
		}
	}
	o.stats = &res.Stats

	for i := range b.Records {
		r := &b.Records[i]
		rr := &res.Records[i]
		var alerts []string
		var reasons []*recordv1.RecordError
		for _, f := range rr.Failures {
			ch := &checks[f.Check]
			if ch.Policy == contractPolicyAlert {
				alerts = append(alerts, ch.Name)
				if o.recordAlerts == nil {
					o.recordAlerts = map[int]int64{}
				}
				o.recordAlerts[f.Check]++
				continue
			}
			reasons = append(reasons, &recordv1.RecordError{Code: f.Code, Field: f.Field, Message: f.Message, Check: ch.Name})
		}
		if rr.Quarantined {
			o.quarantine(header, r, reasons, recIDState[i])
			o.resp.Records[i].Alerts = alerts
			continue
		}
		ar := results[r.Index]
		switch {
		case ar == nil:
			return nil, peerError("adapter", fmt.Errorf("the adapter returned no result for record %d of %d", r.Index, len(b.Records)))
		case len(ar.GetErrors()) > 0:
			for _, e := range ar.GetErrors() {
				if e.GetCheck() == "" {
					e.Check = "mapping"
				}
			}
			o.quarantine(header, r, ar.GetErrors(), recIDState[i])
			o.resp.Records[i].Alerts = alerts
		default:
			o.resp.Records[i] = &gatev1.RecordVerdict{Index: r.Index, Position: r.Position, Status: gatev1.RecordStatus_RECORD_STATUS_ACCEPTED,
				Record: ar.GetRecord(), Alerts: alerts}
		}
	}
	o.shapes = clusters(plan, b, res, s.cfg.UnannouncedShare)
	o.finish()
	return o, nil
}

// peerError turns a failed call to a peer service into the gate's answer:
// Unavailable (retry) when the peer could not answer, so a batch is never
// passed with values missing.
func peerError(peer string, err error) error {
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition:
			// The peer refused the batch itself; that is the caller's to fix
			// and retrying will not help. Keep the peer's message.
			return status.Errorf(st.Code(), "%s refused the batch: %s", peer, st.Message())
		}
	}
	return rpcerr.Unavailable(peer, err)
}

// lookupIdentifiers asks idmap, once per identifier field, which of the
// batch's identifier values resolve in their namespace.
func (s *Server) lookupIdentifiers(ctx context.Context, ids []check.IdentifierValues) ([][]bool, error) {
	out := make([][]bool, len(ids))
	for k, iv := range ids {
		if len(iv.Values) == 0 {
			continue
		}
		vals := make([]string, len(iv.Values))
		for j, v := range iv.Values {
			vals[j] = string(v)
		}
		resp, err := s.idmap.Contains(ctx, &idmapv1.ContainsRequest{Namespace: iv.Namespace, Format: iv.Format, Ids: vals})
		if err != nil {
			return nil, err
		}
		if len(resp.GetPresent()) != len(vals) {
			return nil, fmt.Errorf("idmap answered %d of %d identifiers of %s", len(resp.GetPresent()), len(vals), iv.Field)
		}
		out[k] = resp.GetPresent()
	}
	return out, nil
}

// blockedDetail describes the first blocking check of a batch.
func blockedDetail(plan *check.Plan, res *check.BatchResult) *gatev1.BlockedDetail {
	for i, cr := range res.Checks {
		if !cr.Blocked {
			continue
		}
		ch := plan.Checks()[i]
		d := &gatev1.BlockedDetail{Check: ch.Name, Failures: cr.Failures, Received: int64(len(res.Records)), SamplePositions: cr.Samples}
		if ch.Threshold.IsFraction {
			d.Threshold = thresholdFraction(ch.Threshold.Fraction)
		} else {
			d.Threshold = thresholdCount(ch.Threshold.Count)
		}
		return d
	}
	return &gatev1.BlockedDetail{Received: int64(len(res.Records))}
}

// blockedError is the FAILED_PRECONDITION answer to a blocked batch. It is
// built from the stored detail alone, so a retry gets the same answer.
func blockedError(in batchInput, d *gatev1.BlockedDetail) error {
	pos := make([]string, len(d.GetSamplePositions()))
	for i, p := range d.GetSamplePositions() {
		pos[i] = fmt.Sprint(p)
	}
	msg := fmt.Sprintf("batch %s of %s partition %s is BLOCKED: check %s failed for %d of %d records, over its threshold (%s); sample positions %s; nothing of the batch was passed on — fix the records and send the batch again under a new batch id",
		in.batchID, in.subject, in.partition, d.GetCheck(), d.GetFailures(), d.GetReceived(), thresholdText(d), strings.Join(pos, ", "))
	st, err := status.New(codes.FailedPrecondition, msg).WithDetails(
		&errdetails.ErrorInfo{Reason: "BATCH_BLOCKED", Domain: rpcerr.Domain, Metadata: map[string]string{
			"subject": in.subject, "partition": in.partition, "batch_id": in.batchID, "check": d.GetCheck()}},
		d)
	if err != nil {
		return status.Error(codes.FailedPrecondition, msg)
	}
	return st.Err()
}
